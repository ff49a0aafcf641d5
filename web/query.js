// What a view shows is kept in the hash query (#/monitors/3?window=24h&metric=ttfb_ms)
// so any view can be shared as a link and survives a reload.
import { catalogue, metricId } from './catalogue.js'

export const WINDOWS = Object.freeze({ '1h': 3600e3, '24h': 86400e3, '7d': 7 * 86400e3, '30d': 30 * 86400e3 })
export const DEFAULT_WINDOW = '24h'
const LABELS = { '1h': 'last hour', '24h': 'last 24 hours', '7d': 'last 7 days', '30d': 'last 30 days' }

// Metrics come from the server's catalogue (web/catalogue.js).
export { METRICS, metricLabel } from './catalogue.js'

// Which rounds a comparison uses (GET /monitors/:id/comparison?analysis=).
export const ANALYSES = Object.freeze([
  { id: 'matched', label: 'Matched rounds', long: 'Only rounds in which both arms loaded with the protocol they were forced to; failures and fallbacks are counted and tested on their own below.' },
  { id: 'itt', label: 'Intention to treat', long: 'Every round in which both arms ran; a failed load counts at the page timeout, so losing the slowest loads can never look like a gain.' }
])
export const DEFAULT_ANALYSIS = 'matched'

// Kept when following a link to another page, so the window travels along.
const STICKY = ['window', 'from', 'to', 'metric', 'analysis']

/** @param {string} [hash] */
export function parseHash (hash = location.hash) {
  const raw = hash.replace(/^#/, '') || '/'
  const i = raw.indexOf('?')
  const path = (i < 0 ? raw : raw.slice(0, i)) || '/'
  return { path, params: new URLSearchParams(i < 0 ? '' : raw.slice(i + 1)) }
}

/**
 * A link to `path`, keeping the sticky parameters of the current view and
 * applying `patch` (null removes a key).
 * @param {string} path
 * @param {Record<string, string | null>} [patch]
 */
export function href (path, patch = {}) {
  const current = parseHash().params
  const next = new URLSearchParams()
  for (const k of STICKY) if (current.has(k)) next.set(k, /** @type {string} */ (current.get(k)))
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || v === undefined) next.delete(k)
    else next.set(k, v)
  }
  const qs = next.toString()
  return `#${path}${qs ? `?${qs}` : ''}`
}

/** Change parameters of the current view, keeping the others. */
export function setParams (patch) {
  const { path, params } = parseHash()
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || v === undefined) params.delete(k)
    else params.set(k, v)
  }
  const qs = params.toString()
  const target = `#${path}${qs ? `?${qs}` : ''}`
  if (target !== location.hash) location.hash = target
}

/**
 * The time window a view should show. Rolling windows end now; a custom
 * window is fixed. `error` is set (and the default used) when the query is bad.
 * @param {URLSearchParams} params
 * @returns {{ name: string, custom: boolean, from: Date, to: Date, label: string, error?: string }}
 */
export function timeWindow (params, now = Date.now()) {
  const name = params.get('window') ?? DEFAULT_WINDOW
  if (name === 'custom') {
    const from = Date.parse(params.get('from') ?? '')
    const toText = params.get('to')
    const to = toText ? Date.parse(toText) : now
    if (Number.isFinite(from) && Number.isFinite(to) && from < to) {
      // The API compares at most MAX_WINDOW_DAYS; a longer window is said here, once, not as every row's error.
      if (to - from > MAX_WINDOW_DAYS * 86400e3) return { ...rolling(DEFAULT_WINDOW, now), error: `The custom window is longer than ${MAX_WINDOW_DAYS} days, the most a comparison reads; showing the last 24 h.` }
      // Dates carry their year when the window reaches past this one.
      const withYear = new Date(from).getFullYear() !== new Date(now).getFullYear() || new Date(to).getFullYear() !== new Date(now).getFullYear()
      return { name, custom: true, from: new Date(from), to: new Date(to), label: `${fmt(from, withYear)} – ${fmt(to, withYear)}` }
    }
    return { ...rolling(DEFAULT_WINDOW, now), error: 'The custom window needs a start before its end; showing the last 24 h.' }
  }
  if (!WINDOWS[name]) return { ...rolling(DEFAULT_WINDOW, now), error: `Unknown window "${name}"; showing the last 24 h.` }
  return rolling(name, now)
}

function rolling (name, now) {
  return { name, custom: false, from: new Date(now - WINDOWS[name]), to: new Date(now), label: LABELS[name] }
}

const fmt = (t, withYear = false) => new Date(t).toLocaleString(undefined, { ...(withYear ? { year: 'numeric' } : {}), month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' })

/** The longest window the API compares (api/routes/comparison.js). */
const MAX_WINDOW_DAYS = 400

const BUCKETS = Object.freeze({ '5m': 300e3, '1h': 3600e3, '1d': 86400e3 })

/**
 * Trend bucket: the finest that holds at least 8 rounds (so a bucket's p95
 * is not just its slowest run) and still gives at least 12 points; an
 * explicit `bucket` in the query wins.
 * @param {{ from: Date, to: Date }} win
 * @param {number} intervalS the monitor's interval
 * @param {URLSearchParams} [params]
 */
export function bucketFor ({ from, to }, intervalS, params) {
  const asked = params?.get('bucket')
  if (asked && BUCKETS[asked]) return asked
  const span = +to - +from
  const fits = Object.entries(BUCKETS).filter(([, w]) => span / w >= 12 && span / w <= 2000)
  const full = fits.find(([, w]) => w / (intervalS * 1000) >= 8)
  return (full ?? fits.at(-1) ?? ['5m'])[0]
}

export const BUCKET_NAMES = Object.keys(BUCKETS)

/** @param {URLSearchParams} params */
export function metricOf (params) {
  return metricId(params.get('metric')) ?? catalogue.defaultMetric
}

/** @param {URLSearchParams} params */
export function analysisOf (params) {
  const a = params.get('analysis')
  return a !== null && ANALYSES.some((x) => x.id === a) ? a : DEFAULT_ANALYSIS
}
