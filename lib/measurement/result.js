// What a result is, whoever measured it (the Puppeteer agent, a WebPageTest
// agent, an import): the fields it submits, its empty form before anything
// was measured, and how a measurement becomes a submission (protocol judged,
// round trips accounted). The metric columns come from the catalogue
// (./metrics.js), the protocol judging from ./protocol.js, the RTT notes
// from ./rtt.js.
import { TIMING_COLUMNS } from './metrics.js'
import { rttAccounting } from './rtt.js'
import { isPageDocument, protocolReason } from './protocol-reason.js'
import { storableText } from '../runtime/text.js'

export { normalizeProtocol, protocolMatchesMode } from './protocol.js'

/**
 * A result's view: the first (cold) load; a repeat load in the same browser
 * context (warm cache, live connections); and for the auto arm the
 * returning visit, a browser started again on the first visit's profile: it
 * knows what the first visit learnt about the origin (Alt-Svc, H3 marked
 * broken) but has no live connection and, so the protocol is not measured
 * through the cache, no cached response (agents/visits.js says why).
 */
export const VIEWS = Object.freeze(['first', 'repeat', 'returning'])
/** The views each mode can have: the forced arms have no returning visit. */
export const VIEWS_OF_MODE = Object.freeze({
  h2: Object.freeze(['first', 'repeat']),
  h3: Object.freeze(['first', 'repeat']),
  auto: Object.freeze(['first', 'returning', 'repeat'])
})
/** The views the forced comparison (H2 against H3) has. */
export const FORCED_VIEWS = VIEWS_OF_MODE.h2

/** A load's requests at most (results.requests): a page with more is no page a browser loads. */
export const MAX_REQUESTS = 100_000
/**
 * The requests a result keeps in its evidence (details.requests), the
 * first in the order they started; its counts, bytes and shares are of
 * every request. A page of 10,000 requests made a round of tens of MB,
 * past what the API takes, and lost it.
 */
export const MAX_KEPT_REQUESTS = 1000
/**
 * A kept request's URL at most, in characters (a WebPageTest result's too,
 * ./wpt/devtools.js): a longer one keeps its start and says its whole
 * length (url_length). A page of 1,000 requests with 20 kB URLs made a
 * round of tens of MB, past what the API takes, and lost it.
 */
export const MAX_KEPT_URL = 4000
/** The origins a result keeps (details.origins), the first seen; the store folds no more (lib/store/monitor-origins.js). */
export const MAX_KEPT_ORIGINS = 200
/** An origin's Alt-Svc as a result keeps it, in characters. */
export const MAX_KEPT_ALT_SVC = 1000
/** What the API takes in one request of results, in bytes (api/routes/agent-protocol.js): one round, or a batch of them. */
export const RESULTS_BODY_LIMIT = 32 * 1024 * 1024
/**
 * What a round's results may weigh as JSON once its evidence is cut
 * (withinRoundLimit): three quarters of what the API takes, the rest for
 * what a submission adds around them.
 */
export const ROUND_RESULTS_BYTES = RESULTS_BODY_LIMIT / 4 * 3

/** Fields of a result besides its round's keys (time, job, monitor, location, agent), as stored and exported. */
export const RESULT_FIELDS = Object.freeze([
  'mode', 'view', 'probe', 'status', 'error', 'observed_protocol', 'protocol_ok', ...TIMING_COLUMNS, 'bytes', 'requests',
  'h3_request_share', 'h3_byte_share', 'rtt_ms', 'connect_rtt', 'ttfb_rtt', 'upload_mbps', 'notes', 'browser_version',
  'agent_version', 'flags', 'details'
])

/** Fields of a measurement that are submitted as they are; the rest goes to details. */
const COLUMNS = Object.freeze([
  'mode', 'view', 'probe', 'status', 'error', 'observed_protocol', 'protocol_ok', ...TIMING_COLUMNS, 'bytes', 'requests',
  'h3_request_share', 'h3_byte_share', 'upload_mbps', 'browser_version', 'flags'
])
/** Evidence that goes to details when a measurement has it. */
const DETAILS = ['samples', 'warmup', 'repeat', 'netlog', 'filmstrip', 'upload_bytes', 'target_url', 'arm_protocol', 'failure_kind', 'forced_origins', 'context',
  // A journey's steps (the whole journey's result) and a named step's bounds (its own).
  'journey', 'step']

/**
 * @param {string} mode the arm: h2 or h3
 * @param {{ probe?: string, view?: string }} [key]
 * @returns {Record<string, any>}
 */
export function emptyResult (mode, { probe = 'page', view = 'first' } = {}) {
  return {
    mode,
    view,
    probe,
    status: 'error',
    error: null,
    observed_protocol: null,
    protocol_ok: false,
    ...Object.fromEntries(TIMING_COLUMNS.map((c) => [c, null])),
    bytes: 0,
    requests: 0,
    h3_request_share: null,
    h3_byte_share: null,
    browser_version: null
  }
}

/** A result's notes at most (the API refuses more). */
export const MAX_NOTES = 50

/**
 * A result's notes as the API takes them: beyond MAX_NOTES, the first ones
 * and a last that says how many more there were.
 * @param {{ code: string, message: string }[]} notes
 */
export function withinNoteLimit (notes) {
  if (notes.length <= MAX_NOTES) return notes
  return [...notes.slice(0, MAX_NOTES - 1), { code: 'notes_left_out', message: `${notes.length - MAX_NOTES + 1} more notes left out` }]
}

/**
 * @param {Record<string, any>} m one measurement
 * @param {{ rtt: number | null, rttSource?: string | null, options?: Record<string, any> }} ctx
 */
export function toSubmission (m, { rtt, rttSource = null }) {
  /** @type {Record<string, any>} */
  const out = {}
  for (const k of COLUMNS) if (m[k] !== undefined) out[k] = m[k]
  out.rtt_ms = rtt
  const { connect_rtt: connectRtt, ttfb_rtt: ttfbRtt, notes } = rttAccounting(
    { protocol: m.observed_protocol ?? null, connect_ms: m.connect_ms ?? null, ttfb_ms: m.ttfb_ms ?? null }, rtt)
  out.connect_rtt = connectRtt
  out.ttfb_rtt = ttfbRtt
  out.notes = withinNoteLimit([...notes, ...(m.notes ?? []), ...(m.netlog?.summary?.findings ?? []).map((/** @type {import('./netlog.js').Finding} */ f) => ({ ...f, source: `netlog (${m.netlog.kind})` })),
    // Requests the private-target guard refused (agents/target-guard.js).
    ...(m.guard_notes ?? [])])
  out.measured_at = new Date().toISOString()
  const requests = m.requests_detail ?? []
  out.details = { requests: requests.slice(0, MAX_KEPT_REQUESTS), ...(requests.length > MAX_KEPT_REQUESTS ? { requests_not_kept: requests.length - MAX_KEPT_REQUESTS } : {}), origins: m.origins ?? [], wall_ms: m.wall_ms ?? null, rtt_source: rttSource, protocol_reason: protocolReason(m) }
  for (const k of DETAILS) if (m[k] !== undefined) out.details[k] = m[k]
  return out
}

/**
 * A round's results as the API takes them, however heavy the page: each
 * request list (a page's and a probe's warm-up's) to its first
 * MAX_KEPT_REQUESTS, each kept request's URL cut to MAX_KEPT_URL
 * characters (a journey step's address and a named step's navigations
 * too), each result's origins to MAX_KEPT_ORIGINS and their Alt-Svc
 * to MAX_KEPT_ALT_SVC; and when the round is still over `limit` bytes of
 * JSON (a journey of 30 steps on a heavy page has 124 results of up to
 * 1,000 requests each), every request list keeps only its first requests,
 * as many as fit, the same number in each. What is cut is said: url_length
 * on a request or a journey step, requests_not_kept beside a list, origins_not_kept on a
 * result. Counts, bytes and shares are of every request, as measured. Done
 * after a journey's secrets are masked, so that a cut never leaves the
 * start of a secret. A round over the limit even with no request keeps
 * none: the limit leaves room below what the API takes, where it may fit.
 * @param {Record<string, any>[]} results submissions (toSubmission)
 * @param {number} [limit] bytes
 * @returns {Record<string, any>[]}
 */
export function withinRoundLimit (results, limit = ROUND_RESULTS_BYTES) {
  const cut = results.map(cutEvidence)
  // Each result's JSON without its requests, and each request's (with the
  // comma after it), counted once; the round's JSON at k requests a list
  // is then a sum, never more than the JSON itself.
  const bare = cut.map((r) => jsonBytes(keepFirst(r, 0)))
  const sizes = cut.map((r) => requestLists(r).map((list) => list.map((q) => requestBytes(q) + 1)))
  const weight = (/** @type {number} */ k) => cut.reduce((total, _, i) => total + bare[i] + sizes[i].reduce((sum, list) => sum + list.slice(0, k).reduce((a, b) => a + b, 0), 0), 0) + cut.length + 1
  const most = Math.max(0, ...sizes.flat().map((list) => list.length))
  if (weight(most) <= limit) return cut
  // The most requests a list that fit: weight grows with k.
  let lo = 0
  let hi = most
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    if (weight(mid) <= limit) lo = mid
    else hi = mid - 1
  }
  return cut.map((r) => keepFirst(r, lo))
}

/**
 * Where a result keeps requests: its own (details.requests) and a probe's
 * warm-up's (details.warmup.requests_detail), each with the count of those
 * not kept beside it.
 * @type {{ get: (d: Record<string, any>) => unknown, notKept: (d: Record<string, any>) => number | undefined, set: (d: Record<string, any>, list: unknown[], notKept: number) => Record<string, any> }[]}
 */
const REQUEST_LISTS = [
  {
    get: (d) => d.requests,
    notKept: (d) => d.requests_not_kept,
    set: (d, list, notKept) => ({ ...d, requests: list, ...(notKept ? { requests_not_kept: notKept } : {}) })
  },
  {
    get: (d) => (d.warmup && typeof d.warmup === 'object' ? d.warmup.requests_detail : undefined),
    notKept: (d) => d.warmup.requests_not_kept,
    set: (d, list, notKept) => ({ ...d, warmup: { ...d.warmup, requests_detail: list, ...(notKept ? { requests_not_kept: notKept } : {}) } })
  }
]

/**
 * A result's request lists (REQUEST_LISTS), those it has.
 * @param {Record<string, any>} r
 * @returns {any[][]}
 */
function requestLists (r) {
  const d = r.details
  if (!d || typeof d !== 'object') return []
  return REQUEST_LISTS.map((l) => l.get(d)).filter(Array.isArray)
}

/**
 * A result with its request lists, URLs, origins and Alt-Svc values cut (withinRoundLimit).
 * @param {Record<string, any>} r
 */
function cutEvidence (r) {
  const d = keepFirst(r, MAX_KEPT_REQUESTS).details
  if (!d || typeof d !== 'object') return r
  let out = { ...d }
  for (const l of REQUEST_LISTS) {
    const list = l.get(out)
    if (!Array.isArray(list)) continue
    out = l.set(out, list.map(withCutUrl), l.notKept(out) ?? 0)
  }
  // A journey's steps (the whole journey's result) and a named step's
  // navigations: 30 steps at most, each address as long as a page made it.
  if (Array.isArray(d.journey?.steps)) {
    out.journey = { ...d.journey, steps: d.journey.steps.map(withCutUrl) }
  }
  if (Array.isArray(d.step?.navigations)) {
    out.step = { ...d.step, navigations: d.step.navigations.map((/** @type {unknown} */ u) => (typeof u === 'string' ? storableText(u, MAX_KEPT_URL) : u)) }
  }
  if (Array.isArray(d.origins)) {
    out.origins = d.origins.slice(0, MAX_KEPT_ORIGINS)
      .map((/** @type {any} */ o) => (typeof o?.alt_svc === 'string' && o.alt_svc.length > MAX_KEPT_ALT_SVC ? { ...o, alt_svc: storableText(o.alt_svc, MAX_KEPT_ALT_SVC) } : o))
    if (d.origins.length > MAX_KEPT_ORIGINS) out.origins_not_kept = d.origins.length - MAX_KEPT_ORIGINS
  }
  return { ...r, details: out }
}

/**
 * A request or a journey step with its URL cut to MAX_KEPT_URL characters,
 * and how long it was (url_length); as it is when shorter.
 * @param {any} q
 */
function withCutUrl (q) {
  return typeof q?.url === 'string' && q.url.length > MAX_KEPT_URL ? { ...q, url: storableText(q.url, MAX_KEPT_URL), url_length: q.url.length } : q
}

/**
 * A result whose request lists keep only their first `k` requests; the
 * rest count in the list's requests_not_kept.
 * @param {Record<string, any>} r
 * @param {number} k
 */
function keepFirst (r, k) {
  if (!requestLists(r).some((list) => list.length > k)) return r
  let d = r.details
  for (const l of REQUEST_LISTS) {
    const list = l.get(d)
    if (!Array.isArray(list) || list.length <= k) continue
    d = l.set(d, list.slice(0, k), (l.notKept(d) ?? 0) + list.length - k)
  }
  return { ...r, details: d }
}

/** @param {unknown} v */
function jsonBytes (v) {
  return Buffer.byteLength(JSON.stringify(v) ?? '')
}

/**
 * A request's bytes of JSON, its URL counted without writing it out again
 * (most of a heavy request is its URL, printable ASCII in the browsers'
 * events: as many bytes as characters).
 * @param {any} q
 */
function requestBytes (q) {
  if (!q || typeof q !== 'object' || typeof q.url !== 'string') return jsonBytes(q)
  const plain = /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/.test(q.url)
  return jsonBytes({ ...q, url: '' }) + (plain ? q.url.length : jsonBytes(q.url) - 2)
}

/**
 * How a view's requests got their connections: what a repeat view is for,
 * and how a journey's later steps ride the connections its first opened.
 * 0-RTT and TLS resumption are not in the DevTools events; a net log of the
 * run has them (details.netlog).
 * @param {{ type?: string | null, protocol?: string | null, from_cache?: boolean, connection_reused?: boolean | null, connection_id?: unknown, subframe?: true }[]} requests
 *   as agents/network.js RequestDetail has them
 */
export function reuseOf (requests) {
  const fetched = requests.filter((r) => r.protocol && !r.from_cache)
  const document = requests.find(isPageDocument)
  return {
    document_connection_reused: document?.connection_reused ?? null,
    requests_on_reused_connections: fetched.filter((r) => r.connection_reused).length,
    requests_on_new_connections: fetched.filter((r) => r.connection_reused === false).length,
    new_connections: new Set(fetched.filter((r) => r.connection_reused === false).map((r) => r.connection_id)).size,
    from_cache: requests.filter((r) => r.from_cache).length,
    zero_rtt: null,
    tls_resumed: null
  }
}
