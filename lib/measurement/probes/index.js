// The probe catalogue: one file per probe (./page.js, ./parallel.js,
// ./upload.js), which owns everything about it: its arms, the metric its
// samples feed, its outlier rule, its monitor options (JSON schema,
// defaults), their validation (`check`), the URLs among them its agent
// fetches (`targets`) and the values the agent runs with (`effective`).
// Here: PROBES, the one list of them, and the monitor options
// (monitors.options) built from the probes' own plus those of every run
// (which origins are forced onto QUIC, when a net log is captured), used by
// the API (validation) and by the agents (effective values).
//
// Adding a probe: its file here, its entry in PROBES, and the agent's
// measurement of it, agents/probes/<id>.js (its `run`), which the agent
// finds by the id. A probe whose results feed existing metric columns needs
// no migration: which probes a result may have is checked against this list
// (the API's schemas, the import), not by the database.
//
// One list rather than reading the folder: it gives the order forms and
// tables show, its imports are static (the type checker follows them), and
// a search for a probe's name finds where it is registered. Everything else
// (schemas, the import, the catalogue route, the agents' runners) derives
// from it.
import { ValidationError } from '../../runtime/errors.js'
import { badPortReason } from '../ports.js'
import { oneOf, trueOrFalse } from './option-checks.js'
import { page } from './page.js'
import { parallel, PARALLEL_REQUESTS, LAB_NOOP_PATH } from './parallel.js'
import { upload, UPLOAD_BYTES, LAB_UPLOAD_PATH } from './upload.js'
import { journey, splitProbe } from './journey.js'

export { PARALLEL_REQUESTS, LAB_NOOP_PATH, UPLOAD_BYTES, LAB_UPLOAD_PATH }

/**
 * @typedef {object} Probe
 * @property {string} id
 * @property {string} label
 * @property {string} hint
 * @property {readonly import('../modes.js').Mode[]} modes the arms it runs in
 * @property {readonly import('../browsers/index.js').BrowserName[]} [browsers] the browsers it runs in; every one when absent
 * @property {string | null} samplesMetric the catalogue metric its details.samples feed (lib/measurement/metrics.js), or null
 * @property {{ label: string, rule: 'column' | 'max_sample' | 'first_sample', column: string | null }} outlier
 *   the value a run is judged by for net-log capture: a column, the largest sample, or the first sample
 * @property {Readonly<Record<string, Record<string, any>>>} options JSON-schema properties of its monitor options
 *   (each key is the probe's own, prefixed with its id by convention)
 * @property {Readonly<Record<string, any>>} defaults
 * @property {readonly string[]} targets its options that name a URL its agent fetches: resolved against the monitor
 *   URL, kept on the monitor's origin unless options.allow_cross_origin, and checked by the private-target guard
 * @property {(options: Record<string, any>, ctx: { pageUrl: URL, probes: readonly string[] }) => void} check
 *   its options' values and cross-field rules (a ValidationError naming the option); runs whether or not the
 *   monitor runs the probe, so stored options are always valid
 * @property {(options: Record<string, any>, pageUrl: URL) => Record<string, any>} effective
 *   what its agent runs with: its options with defaults applied
 */

/** Every probe, in the order forms and tables show them. */
export const PROBES = Object.freeze([page, parallel, upload, journey])
export const PROBE_IDS = Object.freeze(PROBES.map((p) => p.id))
/** The probe a result has when it names none. */
export const DEFAULT_PROBE = 'page'
const BY_ID = new Map(PROBES.map((p) => [p.id, p]))

/**
 * @param {string} id
 * @returns {Probe}
 */
export function probeOf (id) {
  // A journey step's results carry the step in their probe ('journey:login',
  // ./journey.js): they are the journey probe's.
  const p = BY_ID.get(splitProbe(id).probe)
  if (!p) throw new TypeError(`unknown probe ${JSON.stringify(id)}; expected one of ${PROBE_IDS.join(', ')}`)
  return p
}

/**
 * The value a run is judged by for outlier capture (its probe's outlier
 * rule), from a measurement (samples at the top) or a stored result
 * (samples in details).
 * @param {Record<string, any>} r
 * @returns {number | null}
 */
export function outlierValue (r) {
  const rule = BY_ID.get(splitProbe(r.probe ?? DEFAULT_PROBE).probe)?.outlier
  if (!rule) return null
  const samples = r.samples ?? r.details?.samples
  if (rule.rule === 'column') return r[/** @type {string} */ (rule.column)] ?? null
  if (!Array.isArray(samples) || !samples.length) return null
  return rule.rule === 'max_sample' ? Math.max(...samples) : samples[0]
}

/** 'main': only the page's origin is forced onto QUIC; 'all': also every origin seen advertising h3. */
export const FORCE_QUIC = Object.freeze(['main', 'all'])
/** 'outliers': capture only to explain runs above the p99; 'always': every run; 'off': never. */
export const NETLOG = Object.freeze(['outliers', 'always', 'off'])
/** Which page loads get a filmstrip: 'outliers' re-runs those above the p99 with capture, like the net log. */
export const FILMSTRIP = Object.freeze(['off', 'outliers', 'always'])

/**
 * options.filmstrip when a monitor does not say: bench/filmstrip-capture.js
 * measured what capture does to the timings (docs/BENCHMARKS.md,
 * "Filmstrip capture").
 */
export const DEFAULT_FILMSTRIP = 'outliers'

/** JSON schema of monitors.options for the API; cross-field rules are in checkOptions. */
export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'Probe settings. Every field is optional; the defaults are shown.',
  properties: {
    ...Object.assign({}, ...PROBES.map((p) => p.options)),
    allow_cross_origin: { type: 'boolean', description: `Allow ${PROBES.flatMap((p) => p.targets).join(' and ')} on another origin than the monitor URL (default false): such requests run on their own connection, and need CORS` },
    force_quic: { type: 'string', enum: FORCE_QUIC, description: 'h3 mode forces QUIC on the page origin only (main, default) or also on every origin seen advertising h3 (all)' },
    netlog: { type: 'string', enum: NETLOG, description: 'Chromium net log capture: outliers (default; runs above the p99 of recent runs are run again with capture), always, or off' },
    filmstrip: { type: 'string', enum: FILMSTRIP, description: `page probe: frames captured while the page loads, and the visual metrics from them: ${DEFAULT_FILMSTRIP} (default; docs/FILMSTRIPS.md says why), off, outliers (runs above the p99 of recent runs are run again with capture) or always` }
  }
}

/**
 * Checks options against each other and the monitor URL; returns them with
 * URLs normalised. Throws ValidationError naming the field.
 * @param {Record<string, any> | null | undefined} options
 * @param {{ url: string, probes: string[] }} monitor
 */
export function checkOptions (options, { url, probes }) {
  if (options === null || options === undefined) options = {}
  if (typeof options !== 'object' || Array.isArray(options)) throw new ValidationError('options must be an object', 'options')
  const known = new Set(Object.keys(optionsSchema.properties))
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw new ValidationError(`unknown option "${key}"; known options are ${[...known].join(', ')}`, `options.${key}`)
  }
  const out = { ...options }
  const pageUrl = new URL(url)
  for (const p of PROBES) p.check(options, { pageUrl, probes })
  oneOf(options, 'force_quic', FORCE_QUIC)
  oneOf(options, 'netlog', NETLOG)
  oneOf(options, 'filmstrip', FILMSTRIP)
  trueOrFalse(options, 'allow_cross_origin')
  for (const key of PROBES.flatMap((p) => p.targets)) {
    if (options[key] === undefined) continue
    const target = probeUrl(options[key], key, pageUrl)
    if (target.origin !== pageUrl.origin && !options.allow_cross_origin) {
      throw new ValidationError(`options.${key} (${target.origin}) is on another origin than the monitor URL (${pageUrl.origin}); requests there would not use the page's connection. Use the same origin, or set options.allow_cross_origin to true`, `options.${key}`)
    }
    out[key] = target.toString()
  }
  return out
}

/**
 * The URLs a monitor's options make its agents fetch besides the monitor
 * URL (every probe's `targets`), with the option naming each.
 * @param {Record<string, any>} options checked or effective options
 * @returns {{ key: string, url: string }[]}
 */
export function probeTargets (options) {
  return PROBES.flatMap((p) => p.targets).filter((key) => options[key]).map((key) => ({ key, url: String(options[key]) }))
}

/**
 * What the agent does for each probe of a job: options with defaults applied.
 * @param {string} url the monitor URL
 * @param {Record<string, any>} [options]
 */
export function effectiveOptions (url, options = {}) {
  const pageUrl = new URL(url)
  return {
    ...Object.assign({}, ...PROBES.map((p) => p.effective(options, pageUrl))),
    force_quic: options.force_quic ?? 'main',
    netlog: options.netlog ?? 'outliers',
    filmstrip: options.filmstrip ?? DEFAULT_FILMSTRIP
  }
}

/**
 * @param {unknown} value the option as given
 * @param {string} key
 * @param {URL} page the monitor URL
 */
function probeUrl (value, key, page) {
  let u
  try {
    u = new URL(String(value), page)
  } catch {
    throw new ValidationError(`options.${key} is not a valid URL`, `options.${key}`)
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new ValidationError(`options.${key} must use http or https`, `options.${key}`)
  if (u.username || u.password) throw new ValidationError(`options.${key} must not contain a user name or password`, `options.${key}`)
  const badPort = badPortReason(u)
  if (badPort) throw new ValidationError(`options.${key}: ${badPort}`, `options.${key}`)
  return u
}
