// SQL for the locations table.
import { NotFoundError, ValidationError } from '../runtime/errors.js'
import { countryCodeProblem } from '../measurement/rum/country.js'

const COLUMNS = 'id, name, region, kind, profile, browsers, countries, last_refusal, created_at, updated_at'

/** @param {import('pg').Pool} db */
export async function listLocations (db) {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM locations ORDER BY kind, id`)
  return rows
}

/** @param {import('pg').Pool} db @param {string} id */
export async function getLocation (db, id) {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM locations WHERE id = $1`, [id])
  return rows[0] ?? null
}

/**
 * Create or update a location; lab start-up uses this to publish profiles.
 * @param {import('pg').Pool} db
 * @param {{ id: string, name: string, region: string, kind: 'lab'|'real'|'wpt', profile?: object }} loc
 */
export async function upsertLocation (db, { id, name, region, kind, profile = {} }) {
  // Shown on every location's card and in the comparison's columns.
  if (typeof region !== 'string' || !region.trim() || region.length > 100 || /\p{Cc}/u.test(region)) {
    throw new ValidationError('a location\'s region is 1 to 100 characters without control characters, such as "Europe" or "Frankfurt, DE"', 'region')
  }
  const { rows } = await db.query(
    `INSERT INTO locations (id, name, region, kind, profile) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (id) DO UPDATE SET name = $2, region = $3, kind = $4, profile = $5, updated_at = now()
     RETURNING ${COLUMNS}`,
    [id, name, region, kind, profile])
  return rows[0]
}

/**
 * The countries a location stands for (ISO 3166-1 alpha-2), so real users
 * from them are shown under it; an empty list clears it. A country may
 * stand under one location only.
 * @param {import('pg').Pool} db
 * @param {string} id
 * @param {string[]} countries
 */
export async function setLocationCountries (db, id, countries) {
  const given = countries.map((c) => String(c).trim().toUpperCase())
  given.forEach((c, i) => {
    const problem = countryCodeProblem(c)
    if (problem) throw new ValidationError(`countries.${i}: ${problem}`, `countries.${i}`)
  })
  const codes = [...new Set(given)]
  const { rows: taken } = await db.query(
    'SELECT id, c FROM locations, unnest(countries) AS c WHERE id <> $1 AND c = ANY ($2::text[]) ORDER BY c', [id, codes])
  if (taken.length) throw new ValidationError(`countries: ${taken.map((t) => `${t.c} stands under ${t.id} already`).join(', ')}; a country belongs to one location`, 'countries')
  const { rows } = await db.query(
    `UPDATE locations SET countries = $2, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`, [id, codes.length ? codes : null])
  if (!rows[0]) throw new NotFoundError(`location ${id} does not exist`)
  return rows[0]
}

/**
 * Keep what was refused last at a location (its WebPageTest agents'
 * uploads): shown on its page, so a user sees why its rounds are missing.
 * @param {import('pg').Pool | import('pg').PoolClient} db
 * @param {string} locationId
 * @param {{ agent: string | null, test_id: string | null, status: number, reason: string }} refusal
 *   status: the HTTP status answered (200 when the upload was stored as an error result)
 */
export async function recordRefusal (db, locationId, { agent, test_id: testId, status, reason }) {
  await db.query(
    "UPDATE locations SET last_refusal = jsonb_build_object('at', now(), 'agent', $2::text, 'test_id', $3::text, 'status', $4::int, 'reason', $5::text) WHERE id = $1",
    [locationId, agent, testId, status, reason.slice(0, 2000)])
}
