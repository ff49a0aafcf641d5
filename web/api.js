// The one client every view uses to talk to the h3lens API. It adds the
// stored API key, and on a 401 asks for a key once and retries.
import { askForKey } from './auth.js'

const KEY_STORAGE = 'h3lens.apiKey'
const BASE = '/api/v1'

export class ApiError extends Error {
  /** @param {string} message @param {number} status @param {string} [field] */
  constructor (message, status, field) {
    super(message)
    this.status = status
    this.field = field
    this.title = status === 404 ? 'Not found' : status === 401 ? 'API key needed' : status >= 500 ? 'The server had a problem' : 'The request was refused'
  }
}

export const apiKey = {
  get: () => { try { return localStorage.getItem(KEY_STORAGE) || null } catch { return null } },
  set: (key) => localStorage.setItem(KEY_STORAGE, key),
  clear: () => localStorage.removeItem(KEY_STORAGE)
}

function headers (extra = {}) {
  const key = apiKey.get()
  return key ? { ...extra, authorization: `Bearer ${key}` } : extra
}

/**
 * @param {string} method
 * @param {string} path below /api/v1
 * @param {any} [body]
 * @param {{ retried?: boolean, fresh?: boolean }} [opts] fresh: Cache-Control: no-cache (an answer computed now)
 */
async function request (method, path, body, { retried = false, fresh = false } = {}) {
  let res
  try {
    res = await fetch(`${BASE}${path}`, {
      method,
      headers: headers({ ...(body ? { 'content-type': 'application/json' } : {}), ...(fresh ? { 'cache-control': 'no-cache' } : {}) }),
      body: body ? JSON.stringify(body) : undefined
    })
  } catch (err) {
    throw new ApiError('The h3lens server cannot be reached. Is it running?', 0)
  }
  if (res.status === 401 && !retried) {
    const data = await res.json().catch(() => ({}))
    if (await askForKey(data.message)) return request(method, path, body, { retried: true, fresh })
    throw new ApiError('This h3lens needs an API key to show this page.', 401)
  }
  if (res.status === 204) return null
  const data = await res.json().catch(() => ({}))
  if (!res.ok) throw new ApiError(data.message ?? `${res.status} ${res.statusText}`, res.status, data.field)
  return data
}

/** Query string from an object, leaving out empty values; Dates become ISO. */
export function qs (params = {}) {
  const out = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue
    out.set(k, v instanceof Date ? v.toISOString() : Array.isArray(v) ? v.join(',') : String(v))
  }
  const s = out.toString()
  return s ? `?${s}` : ''
}

export const api = {
  monitors: () => request('GET', '/monitors').then((d) => d.items),
  monitor: (id) => request('GET', `/monitors/${id}`),
  createMonitor: (body) => request('POST', '/monitors', body),
  updateMonitor: (id, body) => request('PATCH', `/monitors/${id}`, body),
  deleteMonitor: (id) => request('DELETE', `/monitors/${id}`),
  /** { url | monitor_id, journey } → { steps, named_steps } or an ApiError naming the step and field */
  checkJourney: (body) => request('POST', '/journeys/check', body),
  /** "Try it": { location_id, url?, monitor_id?, journey } → a trial, queued */
  tryJourney: (body) => request('POST', '/journeys/trials', body),
  journeyTrial: (id) => request('GET', `/journeys/trials/${id}`),
  /** @returns {Promise<{ items: any[], next_cursor: string | null }>} */
  results: (id, params = {}) => request('GET', `/monitors/${id}/results${qs(params)}`),
  result: (id) => request('GET', `/results/${id}`),
  /** The measurement catalogue: { metrics, probes, modes, views, default_metric } */
  catalogue: () => request('GET', '/catalogue'),
  locations: () => request('GET', '/locations').then((d) => d.items),
  /** Locations with the lab origin's server: { items, lab_origin }. */
  locationsAndLab: () => request('GET', '/locations'),
  agents: () => request('GET', '/agents').then((d) => d.items),
  /** { from, to, metric, percentiles, probe, view }; fresh: computed now, not the answer the API keeps for up to a minute */
  comparison: (id, params, { fresh = false } = {}) => request('GET', `/monitors/${id}/comparison${qs(params)}`, undefined, { fresh }),
  /** { from, to, probe } → the browsers the monitor has rounds of in the window, run now or before */
  browsersWithRounds: (id, params) => request('GET', `/monitors/${id}/browsers-with-rounds${qs(params)}`),
  /** { from, to, metric, percentile, analysis } → each location's H3 gain in every browser, side by side (docs/BROWSERS.md) */
  browsers: (id, params, { fresh = false } = {}) => request('GET', `/monitors/${id}/browsers${qs(params)}`, undefined, { fresh }),
  /** As users get it: { from, to, metric, percentiles } → the auto arm per location (story, H3 share by visit, against the forced arms) */
  auto: (id, params) => request('GET', `/monitors/${id}/auto${qs(params)}`),
  /** { from, to, metric, bucket, percentiles } */
  trends: (id, params) => request('GET', `/monitors/${id}/trends${qs(params)}`),
  /** { from, to, metric } */
  distribution: (id, params) => request('GET', `/monitors/${id}/distribution${qs(params)}`),
  /** { state, monitor_id, location_id, rule_id, limit } → { current, history } */
  alerts: (params = {}) => request('GET', `/alerts${qs(params)}`),
  rules: () => request('GET', '/alert-rules').then((d) => d.items),
  createRule: (body) => request('POST', '/alert-rules', body),
  deleteRule: (id) => request('DELETE', `/alert-rules/${id}`),
  channels: () => request('GET', '/channels').then((d) => d.items),
  createChannel: (body) => request('POST', '/channels', body),
  deleteChannel: (id) => request('DELETE', `/channels/${id}`),
  testChannel: (id) => request('POST', `/channels/${id}/test`),
  rumSites: () => request('GET', '/rum/sites').then((d) => d.items),
  rumSite: (id) => request('GET', `/rum/sites/${id}`),
  createRumSite: (body) => request('POST', '/rum/sites', body),
  revokeRumSite: (id) => request('DELETE', `/rum/sites/${id}`),
  /** { from, to } */
  rumSummary: (id, params) => request('GET', `/rum/sites/${id}/summary${qs(params)}`),
  /** { from, to, bucket } */
  rumTrends: (id, params) => request('GET', `/rum/sites/${id}/trends${qs(params)}`),
  /** The real users of a monitor's origin: { site, summary } (both null when no site has it). */
  rumOfMonitor: (id, params) => request('GET', `/rum/monitors/${id}${qs(params)}`),
  setLocationCountries: (id, countries) => request('PATCH', `/locations/${id}`, { countries }),
  /** A result's frames: { kind, step_ms, frames: [{ seq, t_ms, url }], progress }; 404 (ApiError) says why there are none. */
  filmstrip: (id) => request('GET', `/results/${id}/filmstrip`),
  /** { location, percentile, metric, from, to } → the round nearest the percentile's Δ, both arms' filmstrips */
  sideBySide: (id, params) => request('GET', `/monitors/${id}/side-by-side${qs(params)}`)
}

/** Frames fetched once per page load: blob URLs by API URL. */
const frames = new Map()

/**
 * A frame's API URL as a blob URL an <img> can show: the request carries the
 * API key, which an <img> cannot send.
 * @param {string} url /api/v1/results/{id}/filmstrip/{seq}
 * @returns {Promise<string>}
 */
export function frameUrl (url) {
  if (!frames.has(url)) {
    frames.set(url, fetch(url, { headers: headers() }).then(async (res) => {
      if (!res.ok) throw new ApiError(`frame ${url}: ${res.status}`, res.status)
      return URL.createObjectURL(await res.blob())
    }).catch((err) => { frames.delete(url); throw err }))
  }
  return frames.get(url)
}

/** Download links, with the view's current filters. */
export const exportUrl = {
  trends: (id, params, format) => `${BASE}/monitors/${id}/trends${qs({ ...params, format })}`,
  results: (params, format) => `${BASE}/results${qs({ ...params, format })}`
}

/**
 * A plain link cannot carry the Authorization header, so with a stored key
 * the download is fetched here and handed to the browser as a file.
 * @param {MouseEvent} ev
 */
export async function downloadWithKey (ev) {
  const a = /** @type {HTMLAnchorElement} */ (ev.currentTarget)
  if (!apiKey.get()) return
  ev.preventDefault()
  const res = await fetch(a.href, { headers: headers() })
  if (!res.ok) throw new ApiError(`Export failed: ${res.status} ${res.statusText}`, res.status)
  const url = URL.createObjectURL(await res.blob())
  const tmp = Object.assign(document.createElement('a'), { href: url, download: a.getAttribute('download') || 'h3lens-export' })
  document.body.append(tmp)
  tmp.click()
  tmp.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10000)
}
