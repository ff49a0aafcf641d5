// The probe catalogue: one file per probe (./page.js, ./parallel.js,
// ./upload.js) with its options, their defaults, the metric its samples feed
// and its outlier rule. Here: the list, and the monitor options
// (monitors.options) built from the probes' own plus those of every run
// (which origins are forced onto QUIC, when a net log is captured). One
// definition of each option, its default and its bounds, used by the API
// (validation) and by the agent (effective values).
//
// Adding a probe: a file here, its entry in PROBES, and the agent's
// measurement of it (agents/probes/, registered in agents/probes/index.js).
import { ValidationError } from '../../runtime/errors.js'
import { LAB_HOSTNAME } from '../../runtime/lab-host.js'
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
 * @property {string | null} samplesMetric the catalogue metric its details.samples feed (lib/measurement/metrics.js), or null
 * @property {{ label: string, rule: 'column' | 'max_sample' | 'first_sample', column: string | null }} outlier
 *   the value a run is judged by for net-log capture: a column, the largest sample, or the first sample
 * @property {Readonly<Record<string, Record<string, any>>>} options JSON-schema properties of its monitor options
 * @property {Readonly<Record<string, any>>} defaults
 */

/** Every probe, in the order forms and tables show them. */
export const PROBES = Object.freeze([page, parallel, upload, journey])
export const PROBE_IDS = Object.freeze(PROBES.map((p) => p.id))
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
  const rule = BY_ID.get(splitProbe(r.probe ?? 'page').probe)?.outlier
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

/** JSON schema of monitors.options for the API; cross-field rules are in checkOptions. */
export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'Probe settings. Every field is optional; the defaults are shown.',
  properties: {
    ...Object.assign({}, ...PROBES.map((p) => p.options)),
    allow_cross_origin: { type: 'boolean', description: 'Allow parallel_url and upload_url on another origin than the monitor URL (default false): such requests run on their own connection, and need CORS' },
    force_quic: { type: 'string', enum: FORCE_QUIC, description: 'h3 mode forces QUIC on the page origin only (main, default) or also on every origin seen advertising h3 (all)' },
    netlog: { type: 'string', enum: NETLOG, description: 'Chromium net log capture: outliers (default; runs above the p99 of recent runs are run again with capture), always, or off' }
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
  /**
   * @param {string} key
   * @param {{ min: number, max: number }} range
   * @param {string} unit
   */
  const int = (key, { min, max }, unit) => {
    const v = options[key]
    if (v === undefined) return
    if (!Number.isInteger(v) || v < min || v > max) throw new ValidationError(`options.${key} must be a whole number from ${min} to ${max}${unit}`, `options.${key}`)
  }
  int('parallel_requests', PARALLEL_REQUESTS, '')
  int('upload_bytes', UPLOAD_BYTES, ' bytes (1 KB to 100 MB)')
  const oneOf = (/** @type {string} */ key, /** @type {readonly string[]} */ allowed) => {
    if (options[key] !== undefined && !allowed.includes(options[key])) throw new ValidationError(`options.${key} must be one of ${allowed.join(', ')}`, `options.${key}`)
  }
  oneOf('force_quic', FORCE_QUIC)
  oneOf('netlog', NETLOG)
  for (const key of ['allow_cross_origin', 'allow_empty']) {
    if (options[key] !== undefined && typeof options[key] !== 'boolean') throw new ValidationError(`options.${key} must be true or false`, `options.${key}`)
  }
  const page = new URL(url)
  for (const key of ['parallel_url', 'upload_url']) {
    if (options[key] === undefined) continue
    const target = probeUrl(options[key], key, page)
    if (target.origin !== page.origin && !options.allow_cross_origin) {
      throw new ValidationError(`options.${key} (${target.origin}) is on another origin than the monitor URL (${page.origin}); requests there would not use the page's connection. Use the same origin, or set options.allow_cross_origin to true`, `options.${key}`)
    }
    out[key] = target.toString()
  }
  if (probes.includes('upload') && options.upload_url === undefined && page.hostname !== LAB_HOSTNAME) {
    throw new ValidationError('the upload probe needs options.upload_url: an endpoint of this site that accepts a POST body (only lab monitors default to the lab\'s /upload sink)', 'options.upload_url')
  }
  return out
}

/**
 * What the agent does for each probe of a job: options with defaults applied.
 * @param {string} url the monitor URL
 * @param {Record<string, any>} [options]
 */
export function effectiveOptions (url, options = {}) {
  const page = new URL(url)
  return {
    parallel_requests: options.parallel_requests ?? PARALLEL_REQUESTS.default,
    // Stored options are absolute already; relative ones (a path) are
    // resolved against the page, as the API does when it stores them.
    parallel_url: new URL(options.parallel_url ?? page, page).toString(),
    upload_bytes: options.upload_bytes ?? UPLOAD_BYTES.default,
    upload_url: options.upload_url ? new URL(options.upload_url, page).toString() : (page.hostname === LAB_HOSTNAME ? new URL(LAB_UPLOAD_PATH, page).toString() : null),
    allow_empty: options.allow_empty ?? false,
    force_quic: options.force_quic ?? 'main',
    netlog: options.netlog ?? 'outliers'
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
  return u
}
