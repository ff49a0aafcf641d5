// One view of a WPT run (`N_devtools_requests.json.gz`: {pageData, requests})
// → one h3lens result, in the shape Puppeteer agents submit. What counts is
// the base-page request: its protocol is the run's observed protocol, and
// the navigation's TTFB and connection phases come from it and the
// redirects before it, cross-checked against the agent's page-level TTFB
// (./navigation.js). Which metric comes from where is the catalogue's (each
// metric's `wpt`, ../metrics.js); a metric without it stays null.
import { storableText } from '../../runtime/text.js'
import { normalizeProtocol } from '../protocol.js'
import { advertisesH3 } from '../alt-svc.js'
import { emptyResult, MAX_KEPT_ALT_SVC, MAX_KEPT_ORIGINS, MAX_KEPT_REQUESTS, MAX_KEPT_URL } from '../result.js'
import { COLUMN_METRICS } from '../metrics.js'
import { failRun, IMPLAUSIBLE } from '../checks.js'
import { navigationTimings } from './navigation.js'
import { tracePhases, traceTtfb } from './trace.js'
import { AGENT_ORIGIN } from './job.js'
import { originOf } from '../origin.js'

/** pageData.result: 0 = ok; 99999 = the page loaded but some request failed. */
const CONTENT_ERROR = 99999
/** pageData.result: the page did not finish loading within the test's time (99997; 99998 where the browser's own timeout ended it). */
const PAGE_TIMEOUTS = new Set([99997, 99998])
/** The column metrics a WPT result has: from the navigation (./navigation.js), or a pageData field. */
const FROM_NAVIGATION = Object.freeze(COLUMN_METRICS.filter((m) => m.wpt && 'navigation' in m.wpt).map((m) => /** @type {string} */ (m.column)))
/** @type {readonly { column: string, field: string, agentClock: boolean }[]} */
const FROM_PAGE_DATA = Object.freeze(COLUMN_METRICS.flatMap((m) => (m.wpt && 'pageData' in m.wpt
  ? [{ column: String(m.column), field: m.wpt.pageData, agentClock: m.wpt.agentClock === true }]
  : [])))

/**
 * @param {Record<string, any> | null} devtools the parsed file, or null when the zip had none for this view
 * @param {{ mode: string, view: 'first' | 'repeat', expected: string | null, agentError?: string | null, trace?: import('./trace.js').TraceTimes | null }} ctx
 *   expected: the protocol the arm was forced to (null: none, any counts); agentError: workdone's `error=`;
 *   trace: the view's trace times (./zip.js), which give its navigation's TTFB
 * @returns {Record<string, any>} a result row (status, timings, details)
 */
export function resultFromDevtools (devtools, { mode, view, expected, agentError = null, trace = null }) {
  const row = emptyRow(mode, view)
  if (!devtools || typeof devtools !== 'object') {
    row.error = agentError ?? `the agent returned no ${view} view`
    return row
  }
  const page = isObject(devtools.pageData) ? devtools.pageData : {}
  const listed = Array.isArray(devtools.requests) ? devtools.requests.filter(isObject) : []
  // The agent's own server (its start page, its favicon, its step markers)
  // is no request of the page: a run whose page failed lists the agent's
  // favicon as its "base page".
  const own = (/** @type {Record<string, any>} */ r) => originOf(r.full_url) === AGENT_ORIGIN
  const requests = listed.filter((r) => !own(r))
  const named = Number.isInteger(page.final_base_page_request) ? listed[page.final_base_page_request] ?? null : null
  const document = navigationDocument(requests, page)
  const base = document === undefined ? (named && !own(named) ? named : null) : document
  row.browser_version = text(page.browser_version ?? page.browserVersion, 200)
  row.observed_protocol = base ? normalizeProtocol(text(base.protocol, 64)) : null
  const timings = base ? navigationTimings(requests, base, page, traceTtfb(trace, base)) : null
  // The connection set-up from the trace too, where it has the request's.
  const fromTrace = base ? tracePhases(trace, base) : null
  if (timings && fromTrace) Object.assign(timings, fromTrace)
  const shown = markConnectionReuse(requests.slice(0, MAX_KEPT_REQUESTS).map(requestDetail))
  row.details = {
    requests: shown,
    ...(requests.length > MAX_KEPT_REQUESTS ? { requests_not_kept: requests.length - MAX_KEPT_REQUESTS } : {}),
    ...originsOf(requests.slice(0, MAX_KEPT_REQUESTS)),
    wpt: {
      test_id: text(page.testID, 200),
      result: num(page.result),
      tester: text(page.tester, 200),
      final_url: text(page.final_url, 4000),
      page_ttfb_ms: num(page.TTFB),
      ttfb_check: timings?.check ?? null,
      phases_source: timings ? (fromTrace ? 'trace' : 'agent') : null
    }
  }
  if (timings) for (const c of FROM_NAVIGATION) row[c] = /** @type {Record<string, any>} */ (timings)[c] ?? null
  // The agent writes 0 for a time it did not see. Its own times (its trace's
  // paints, its video) count from its first activity, before the
  // navigation began: they are moved to the navigation's start, as every
  // other time of a result counts, or left unknown without it.
  const navigationAt = navigationOnAgentClock(page)
  row.details.wpt.navigation_on_agent_clock_ms = navigationAt
  for (const { column, field, agentClock } of FROM_PAGE_DATA) {
    const v = measured(page[field])
    row[column] = !agentClock || v === null ? v : navigationAt === null || v < navigationAt ? null : round1(v - navigationAt)
  }
  // Bounded like an imported result's bytes (lib/store/results-import.js): a hostile file must not overflow the column.
  const ownBytes = listed.filter(own).reduce((sum, r) => sum + (num(r.bytesIn) ?? 0), 0)
  row.bytes = Math.min(1e12, Math.max(0, Math.round((num(page.bytesIn) ?? 0) - ownBytes)))
  row.requests = requests.length
  const withProtocol = requests.filter((r) => r.protocol)
  if (withProtocol.length) {
    const h3 = withProtocol.filter((r) => normalizeProtocol(r.protocol) === 'h3')
    row.h3_request_share = h3.length / withProtocol.length
    const bytes = withProtocol.reduce((s, r) => s + (num(r.bytesIn) ?? 0), 0)
    row.h3_byte_share = bytes > 0 ? h3.reduce((s, r) => s + (num(r.bytesIn) ?? 0), 0) / bytes : null
  }

  const result = num(page.result)
  const baseStatus = base ? num(base.responseCode) : null
  if (agentError || !loadedResult(result) || !base) {
    // A failed run's page timings are the agent's zeros and leftovers, not a load.
    failRun(row, agentError ?? text(page.error, 4000) ?? (base ? `the agent reported result ${result}` : noBase(view, page)))
    // As a Puppeteer agent's load past its timeout: the timeout back-off counts it.
    if (result !== null && PAGE_TIMEOUTS.has(result)) row.status = 'timeout'
  } else if (baseStatus !== null && baseStatus >= 400) {
    // As for Puppeteer agents: a page answered with an HTTP error did not
    // load, whatever its error page then loaded.
    row.status = 'error'
    row.error = `HTTP ${baseStatus}: ${text(base.full_url, 4000) ?? ''}`.trim()
  } else if (timings?.problem) {
    failRun(row, `${IMPLAUSIBLE}: ${timings.problem}`)
  } else {
    row.status = expected === null || row.observed_protocol === normalizeProtocol(expected) ? 'ok' : 'protocol_mismatch'
    // WebPageTest itself counts 99999 as a successful test (a subresource
    // failed, the page loaded); so does a Puppeteer agent. Said in a note.
    if (result === CONTENT_ERROR) {
      const failed = requests.filter((r) => (num(r.responseCode) ?? 0) >= 400 || num(r.responseCode) === -1).length
      row.notes = [{ code: 'content_error', message: `${failed || 'some'} request${failed === 1 ? '' : 's'} of the page failed (WPT result 99999)` }]
    }
    if (timings?.note) row.notes = [...(row.notes ?? []), timings.note]
    // Without the trace the TTFB runs from the agent's first activity, which
    // comes later in an H3 navigation than in an H2 one (./trace.js).
    if (timings && timings.ttfb_ms !== null && timings.check.source !== 'trace') {
      row.notes = [...(row.notes ?? []), {
        code: 'wpt_ttfb_agent_clock',
        message: 'the upload has no readable Chromium trace, so TTFB is the agent\'s own, from its first network activity: on H3 that comes later in the navigation than on H2, which makes an H3 TTFB look shorter (docs/WPT.md)'
      }]
    }
  }
  row.protocol_ok = row.status === 'ok'
  return row
}

/**
 * Whether pageData.result says the page loaded: 0, or 99999 (loaded, some
 * request failed).
 * @param {number | null} result
 */
export function loadedResult (result) {
  return result === 0 || result === CONTENT_ERROR
}

/**
 * Whether a view's own record says its page loaded.
 * @param {Record<string, any> | null} devtools the view's parsed file
 */
export function loadedByItsRecord (devtools) {
  const page = devtools?.pageData
  return isObject(page) && loadedResult(num(page.result))
}

/**
 * The navigation's document: the main frame's first Document request,
 * through its redirect hops. The agent's own choice
 * (pageData.final_base_page_request) is the main frame's first request that
 * answered 200 or 304, whatever its type: where the document answered 500
 * and its error page loaded a stylesheet, that stylesheet; where a repeat
 * view took the document from its cache, a subresource fetched again.
 * Null when the requests have types and none is the main frame's document
 * (no navigation of the network, or none in a journey's step); undefined
 * when the agent gives no request a type, and its own choice stands.
 * @param {Record<string, any>[]} requests the run's requests, the agent's own left out
 * @param {Record<string, any>} page pageData
 * @returns {Record<string, any> | null | undefined}
 */
export function navigationDocument (requests, page) {
  if (!requests.some((r) => typeof r.request_type === 'string')) return undefined
  const main = typeof page.main_frame === 'string' ? page.main_frame : null
  const documents = requests.filter((r) => r.request_type === 'Document' && (main === null || r.frame_id === main))
  let i = 0
  while (i + 1 < documents.length && isRedirect(num(documents[i].responseCode))) i++
  return documents[i] ?? null
}

/** @param {number | null} status */
const isRedirect = (status) => status !== null && status >= 300 && status < 400 && status !== 304

/**
 * Why a view has no base-page request. A repeat view whose page the
 * browser took from its cache records no request for it, though its load
 * event came (the origin sent no Cache-Control, and the browser cached it
 * by its own rules): no load of the network to compare.
 * @param {'first' | 'repeat'} view
 * @param {Record<string, any>} page the view's pageData
 */
function noBase (view, page) {
  const loaded = (num(page.loadEventStart) ?? 0) > 0 || (num(page.loadTime) ?? 0) > 0
  return view === 'repeat' && loaded
    ? 'the repeat view recorded no request for the page: the browser took it from its cache, so there is no network load to compare'
    : 'the agent recorded no base-page request'
}

/**
 * Marks each request that rode a connection an earlier one opened: the
 * agent names each request's socket, and the first request on one opened
 * it (in the order the agent lists them, by start). `seen` carries the
 * sockets of earlier steps, for a journey's.
 * @template {{ connection_id: number | null, connection_reused: boolean | null }} R
 * @param {R[]} requests request details (requestDetail)
 * @param {Set<number>} [seen]
 * @returns {R[]} the same requests
 */
export function markConnectionReuse (requests, seen = new Set()) {
  for (const q of requests) {
    if (q.connection_id === null || q.connection_id < 0) continue
    q.connection_reused = seen.has(q.connection_id)
    seen.add(q.connection_id)
  }
  return requests
}

/**
 * When the navigation began on the agent's own clock: the load event on
 * its clock (chromeUserTiming.loadEventStart, or loadTime, the same time)
 * less the load event as Navigation Timing gives it, from the navigation's
 * start (loadEventStart). In the recorded uploads 9–16 ms; a real agent's
 * 0–71 ms (docs/WPT.md).
 * @param {Record<string, any>} page pageData
 * @returns {number | null}
 */
export function navigationOnAgentClock (page) {
  const onAgentClock = measured(page['chromeUserTiming.loadEventStart']) ?? measured(page.loadTime)
  const fromNavigation = measured(page.loadEventStart)
  if (onAgentClock === null || fromNavigation === null) return null
  const at = onAgentClock - fromNavigation
  return at >= 0 && at < 60000 ? at : null
}

const round1 = (/** @type {number} */ v) => Math.round(v * 10) / 10

/**
 * A WPT request as h3lens shows requests (agents/network.js RequestDetail).
 * @param {Record<string, any>} r
 */
function requestDetail (r) {
  const start = positive(r.all_start) ?? positive(r.load_start)
  const end = positive(r.all_end) ?? positive(r.load_end)
  const url = text(r.full_url, Infinity) ?? text(r.url, Infinity) ?? ''
  return {
    // A long URL's start, and its length, as the h3lens agent keeps it (../result.js).
    url: storableText(url, MAX_KEPT_URL),
    ...(url.length > MAX_KEPT_URL ? { url_length: url.length } : {}),
    type: text(r.request_type, 100),
    method: text(r.method, 20),
    protocol: normalizeProtocol(text(r.protocol, 64)),
    status: num(r.responseCode),
    bytes: Math.max(0, Math.round(num(r.bytesIn) ?? 0)),
    start_ms: start,
    end_ms: end,
    connection_id: num(r.socket),
    // Set from the run's requests together (resultFromDevtools).
    connection_reused: /** @type {boolean | null} */ (null),
    from_cache: false,
    alternate_protocol_usage: null,
    remote_address: text(r.ip_addr, 100),
    timing: {
      dns_ms: positive(r.dns_ms),
      connect_ms: positive(r.connect_ms),
      ssl_ms: positive(r.ssl_ms),
      send_ms: null,
      wait_ms: positive(r.ttfb_ms),
      receive_ms: positive(r.download_ms)
    },
    failed: null
  }
}

/**
 * Per origin: how its requests were served and the Alt-Svc it sent, as the
 * h3lens agent reports them (details.origins), so a wpt location feeds the
 * monitor's origin capabilities too. WPT keeps response headers as
 * "name: value" lines.
 * @param {Record<string, any>[]} requests
 */
function originsSeen (requests) {
  const byOrigin = new Map()
  for (const r of requests) {
    let origin
    try { origin = new URL(r.full_url).origin } catch { continue }
    let o = byOrigin.get(origin)
    if (!o) byOrigin.set(origin, (o = { origin, alt_svc: null, h3_advertised: false, requests: { h3: 0, h2: 0, other: 0 } }))
    const protocol = normalizeProtocol(text(r.protocol, 64))
    if (protocol) o.requests[protocol === 'h3' || protocol === 'h2' ? protocol : 'other']++
    const lines = Array.isArray(r.headers?.response) ? r.headers.response : []
    const altSvc = lines.find((/** @type {unknown} */ l) => typeof l === 'string' && /^alt-svc:/i.test(l))
    if (altSvc) {
      const value = storableText(altSvc.slice(altSvc.indexOf(':') + 1).trim(), Infinity)
      o.alt_svc = storableText(value, MAX_KEPT_ALT_SVC)
      o.h3_advertised = advertisesH3(value)
    }
  }
  return [...byOrigin.values()]
}

/**
 * A run's origins as a result keeps them: the first MAX_KEPT_ORIGINS, and how many more.
 * @param {Record<string, any>[]} requests
 */
function originsOf (requests) {
  const all = originsSeen(requests)
  return { origins: all.slice(0, MAX_KEPT_ORIGINS), ...(all.length > MAX_KEPT_ORIGINS ? { origins_not_kept: all.length - MAX_KEPT_ORIGINS } : {}) }
}

/** @param {string} mode @param {string} view @returns {Record<string, any>} */
function emptyRow (mode, view) {
  return {
    ...emptyResult(mode, { view }),
    details: { requests: [], origins: [] }
  }
}

// v: a value of the agent's JSON, not yet checked.
const isObject = (/** @type {any} */ v) => v !== null && typeof v === 'object' && !Array.isArray(v)
const num = (/** @type {any} */ v) => (typeof v === 'number' && Number.isFinite(v) ? v : null)
const positive = (/** @type {any} */ v) => (num(v) !== null && v >= 0 && v < 3600000 ? v : null)
const measured = (/** @type {any} */ v) => (positive(v) !== null && v > 0 ? v : null)
const text = (/** @type {any} */ v, /** @type {number} */ max) => (typeof v === 'string' && v !== '' ? storableText(v, max) : null)
