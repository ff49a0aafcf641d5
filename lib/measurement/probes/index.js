// Monitor options (monitors.options): what each probe does, which origins are
// forced onto QUIC, when a net log is captured. One definition of each
// option, its default and its bounds, used by the API (validation) and by the
// agent (effective values).
import { ValidationError } from '../../runtime/errors.js'
import { LAB_HOSTNAME } from '../../runtime/lab-host.js'

export const PARALLEL_REQUESTS = Object.freeze({ default: 5, min: 1, max: 50 })
export const UPLOAD_BYTES = Object.freeze({ default: 1024 * 1024, min: 1024, max: 100 * 1024 * 1024 })
/** 'main': only the page's origin is forced onto QUIC; 'all': also every origin seen advertising h3. */
export const FORCE_QUIC = Object.freeze(['main', 'all'])
/** 'outliers': capture only to explain runs above the p99; 'always': every run; 'off': never. */
export const NETLOG = Object.freeze(['outliers', 'always', 'off'])
/** The lab origin's upload sink and no-op endpoint. */
export const LAB_UPLOAD_PATH = '/upload'
export const LAB_NOOP_PATH = '/noop'

/** JSON schema of monitors.options for the API; cross-field rules are in checkOptions. */
export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'Probe settings. Every field is optional; the defaults are shown.',
  properties: {
    parallel_requests: { type: 'integer', minimum: PARALLEL_REQUESTS.min, maximum: PARALLEL_REQUESTS.max, description: `parallel probe: requests sent at once after the warm-up navigation (default ${PARALLEL_REQUESTS.default})` },
    parallel_url: { type: 'string', minLength: 1, maxLength: 2048, description: `parallel probe: URL the requests go to (default: the monitor URL; the lab has ${LAB_NOOP_PATH}, an empty 204)` },
    upload_bytes: { type: 'integer', minimum: UPLOAD_BYTES.min, maximum: UPLOAD_BYTES.max, description: `upload probe: POST body size in bytes, 1 KB to 100 MB (default ${UPLOAD_BYTES.default})` },
    upload_url: { type: 'string', minLength: 1, maxLength: 2048, description: `upload probe: URL that accepts the POST (default for lab monitors: ${LAB_UPLOAD_PATH} on the lab origin; required for other sites)` },
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
  const int = (key, { min, max }, unit) => {
    const v = options[key]
    if (v === undefined) return
    if (!Number.isInteger(v) || v < min || v > max) throw new ValidationError(`options.${key} must be a whole number from ${min} to ${max}${unit}`, `options.${key}`)
  }
  int('parallel_requests', PARALLEL_REQUESTS, '')
  int('upload_bytes', UPLOAD_BYTES, ' bytes (1 KB to 100 MB)')
  const oneOf = (key, allowed) => {
    if (options[key] !== undefined && !allowed.includes(options[key])) throw new ValidationError(`options.${key} must be one of ${allowed.join(', ')}`, `options.${key}`)
  }
  oneOf('force_quic', FORCE_QUIC)
  oneOf('netlog', NETLOG)
  if (options.allow_cross_origin !== undefined && typeof options.allow_cross_origin !== 'boolean') {
    throw new ValidationError('options.allow_cross_origin must be true or false', 'options.allow_cross_origin')
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
    force_quic: options.force_quic ?? 'main',
    netlog: options.netlog ?? 'outliers'
  }
}

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
