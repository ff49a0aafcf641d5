// Per-request truth of a Firefox run, as agents/network.js has it for
// Chromium from DevTools: every request's protocol, status, bytes on the
// wire, timing phases, failure and the Alt-Svc its origin sent, from the
// WebDriver BiDi network events (network.beforeRequestSent,
// responseCompleted, fetchError). The protocol of the navigation and of
// every same-origin request is read in the page, from Navigation and
// Resource Timing (nextHopProtocol), as for Chromium's navigation: that is
// what a run is judged on. Firefox 153's BiDi also reports a response's
// protocol; it stands in only where the page cannot say (a cross-origin
// request without Timing-Allow-Origin, whose nextHopProtocol is empty).
// What BiDi does not have stays absent, never made up: connection ids and
// reuse, and why the protocol was chosen (Chromium's alternateProtocolUsage).
import { documentOutcome, mediaType, summarizeRequests, unfinishedOf } from '../network.js'
import { evaluateIsolated } from '../page-metrics.js'
import { normalizeProtocol } from '../../lib/measurement/protocol.js'
import { round } from '../../lib/measurement/units.js'

/** How long reading Resource Timing from the page may take before the BiDi protocols are kept. */
const READ_TIMEOUT_MS = 3000

/** BiDi's request destinations as DevTools names the resource types. */
const TYPES = Object.freeze(/** @type {Record<string, string>} */ ({
  document: 'Document',
  iframe: 'Document',
  frame: 'Document',
  image: 'Image',
  script: 'Script',
  style: 'Stylesheet',
  font: 'Font',
  audio: 'Media',
  video: 'Media',
  track: 'Media',
  manifest: 'Manifest',
  worker: 'Script',
  sharedworker: 'Script',
  serviceworker: 'Script'
}))

/**
 * @typedef {{ name: string, value: { type: string, value: string } }} BidiHeader
 * @typedef {Record<string, number>} BidiTimings
 */

/**
 * Start recording the requests of a Firefox page. The interface is
 * agents/network.js recordNetwork's: take() returns what was recorded since
 * the previous take().
 * @param {import('puppeteer-core').Page} page
 * @returns {Promise<import('../network.js').NetworkRecording>}
 */
export async function recordFirefoxNetwork (page) {
  const connection = /** @type {any} */ (page.browser()).connection
  if (!connection?.on) throw new Error('this Firefox connection gives no BiDi network events')
  const mainContext = /** @type {any} */ (page.mainFrame())._id
  /** @type {Map<string, Record<string, any>>} */
  const open = new Map()
  /** @type {Record<string, any>[]} */
  const all = []
  /** @type {number | null} */
  let firstTimestamp = null
  /** @type {Record<string, any> | null} */
  let documentRecord = null
  /** @type {Record<string, any> | null} */
  let mainDocument = null
  let mainDocuments = 0
  let taken = 0
  /** Where the top frame's latest document request is in `all`: its view's requests follow. */
  let viewFrom = 0

  const keyOf = (/** @type {any} */ e) => `${e.request.request}:${e.redirectCount ?? 0}`
  /** @param {any} e @param {boolean} finished */
  const respond = (e, finished) => {
    const rec = open.get(keyOf(e))
    if (!rec || !e.response) return null
    const r = e.response
    rec.protocol_bidi = normalizeProtocol(r.protocol)
    rec.protocol ??= rec.protocol_bidi
    rec.status = r.status ?? null
    rec.from_cache = Boolean(r.fromCache)
    rec.alt_svc ??= header(r.headers, 'alt-svc')
    const declared = Number.parseInt(header(r.headers, 'content-length') ?? '', 10)
    rec.declared_bytes = Number.isSafeInteger(declared) && declared >= 0 ? declared : null
    rec.content_encoding = header(r.headers, 'content-encoding')
    // The declared type, kept from the first event: PDF.js's own (text/html) comes later.
    rec.media_type ??= mediaType(header(r.headers, 'content-type') ?? r.mimeType)
    rec.responded = true
    rec.bytes = r.bytesReceived ?? 0
    rec.received_bytes = r.bodySize ?? 0
    rec.received_encoded_bytes = r.bytesReceived ?? 0
    rec.timings = e.request.timings ?? null
    if (finished) {
      rec.finished = true
      rec.end = e.timestamp
    }
    return rec
  }
  const listeners = {
    'network.beforeRequestSent': (/** @type {any} */ e) => {
      const url = e.request.url
      if (!/^https?:/.test(url)) return
      firstTimestamp ??= e.timestamp
      const destination = e.request.destination ?? ''
      const type = TYPES[destination] ?? (['fetch', 'xmlhttprequest', 'beacon'].includes(e.request.initiatorType) ? (e.request.initiatorType === 'xmlhttprequest' ? 'XHR' : 'Fetch') : (destination || 'Other'))
      const rec = {
        url, type, method: e.request.method ?? null, protocol: null, protocol_bidi: null, status: null, bytes: 0,
        start: e.timestamp, end: null, from_cache: false, alt_svc: null, timings: null, failed: null, responded: false,
        declared_bytes: null, content_encoding: null, media_type: null, received_bytes: 0, received_encoded_bytes: 0, canceled: false, finished: false,
        same_origin_as: null,
        /** @type {true | undefined} */ subframe: undefined
      }
      if (type === 'Document' && !documentRecord) documentRecord = rec
      if (type === 'Document' && e.context === mainContext && e.navigation) {
        mainDocument = rec
        mainDocuments++
        viewFrom = all.length
      }
      // An iframe's document: not the page's (the journey's last document, the run's reason).
      if (type === 'Document' && e.context !== mainContext) rec.subframe = true
      open.set(keyOf(e), rec)
      all.push(rec)
    },
    'network.responseStarted': (/** @type {any} */ e) => { respond(e, false) },
    'network.responseCompleted': (/** @type {any} */ e) => {
      respond(e, true)
      open.delete(keyOf(e))
    },
    'network.fetchError': (/** @type {any} */ e) => {
      const rec = open.get(keyOf(e))
      if (!rec) return
      rec.end = e.timestamp
      rec.failed = e.errorText || 'failed'
      rec.canceled = /NS_BINDING_ABORTED/.test(rec.failed)
      open.delete(keyOf(e))
    }
  }
  for (const [event, fn] of Object.entries(listeners)) connection.on(event, fn)
  page.once('close', () => { for (const [event, fn] of Object.entries(listeners)) connection.off(event, fn) })

  /**
   * The protocols the page's own Resource Timing and Navigation Timing
   * report (empty for cross-origin requests without Timing-Allow-Origin),
   * by URL, in the order the entries were made.
   * @returns {Promise<Map<string, string[]>>}
   */
  async function pageProtocols () {
    /** @type {[string, string][]} */
    let entries = []
    try {
      entries = await Promise.race([
        evaluateIsolated(page, () => [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')]
          .map((e) => /** @type {[string, string]} */ ([e.name, /** @type {PerformanceResourceTiming} */ (e).nextHopProtocol]))),
        new Promise((resolve, reject) => setTimeout(() => reject(new Error('timeout')), READ_TIMEOUT_MS).unref())
      ])
    } catch {
      // A page that failed or hangs: the BiDi protocols stand.
    }
    /** @type {Map<string, string[]>} */
    const byUrl = new Map()
    for (const [name, protocol] of entries) if (protocol) byUrl.set(name, [...(byUrl.get(name) ?? []), protocol])
    return byUrl
  }

  const sinceFirst = (/** @type {number | null} */ t) => (t === null || firstTimestamp === null ? null : round(t - firstTimestamp))
  return {
    // What the top frame's latest document came over (in a redirect chain,
    // the hop the load ended on, not the first), when it was answered.
    documentProtocol: () => (mainDocument ?? documentRecord)?.protocol ?? null,
    mainDocument: () => (mainDocument ? documentOutcome(/** @type {Record<string, any>} */ (mainDocument)) : null),
    documentCount: () => mainDocuments,
    unfinished: () => unfinishedOf(open.values(), mainDocument, all.slice(viewFrom)),
    /** Requests recorded since the last call, and their totals. */
    async take () {
      const recs = all.slice(taken)
      taken = all.length
      const fromPage = await pageProtocols()
      // Entries and requests of one URL pair in order; a URL the page has
      // fewer entries for (a redirect hop, a cached response) keeps BiDi's.
      /** @type {Map<string, number>} */
      const used = new Map()
      for (const rec of recs) {
        const list = fromPage.get(rec.url)
        const i = used.get(rec.url) ?? 0
        if (list && i < list.length && !rec.from_cache) {
          rec.protocol = normalizeProtocol(list[i])
          rec.protocol_source = 'timing'
          used.set(rec.url, i + 1)
        } else {
          rec.protocol_source = rec.protocol ? 'bidi' : null
        }
      }
      return summarizeRequests(recs.map((rec) => toDetail(rec, sinceFirst)), recs)
    }
  }
}

/**
 * @param {Record<string, any>} rec
 * @param {(t: number | null) => number | null} sinceFirst
 * @returns {import('../network.js').RequestDetail}
 */
function toDetail (rec, sinceFirst) {
  return {
    url: rec.url,
    type: rec.type,
    method: rec.method,
    protocol: rec.protocol,
    status: rec.status,
    bytes: rec.bytes,
    start_ms: sinceFirst(rec.start),
    end_ms: sinceFirst(rec.end),
    connection_id: null,
    connection_reused: null,
    from_cache: rec.from_cache,
    alternate_protocol_usage: null,
    remote_address: null,
    timing: phases(rec.timings, rec.end),
    failed: rec.failed,
    ...(rec.subframe ? { subframe: true } : {})
  }
}

/**
 * Timing phases of one request from BiDi's FetchTimingInfo (ms since the
 * epoch; 0 when a phase did not happen: a reused connection has no DNS,
 * connect or TLS). For QUIC the handshake is inside connect, as in Chromium.
 * @param {BidiTimings | null} t
 * @param {number | null} end the responseCompleted timestamp
 * @returns {import('../network.js').RequestPhases | null}
 */
export function phases (t, end) {
  if (!t) return null
  const span = (/** @type {string} */ a, /** @type {string} */ b) => (t[a] > 0 && t[b] >= t[a] ? round(t[b] - t[a]) : null)
  return {
    dns_ms: span('dnsStart', 'dnsEnd'),
    connect_ms: span('connectStart', 'connectEnd'),
    ssl_ms: span('tlsStart', 'tlsEnd'),
    send_ms: null,
    wait_ms: span('requestStart', 'responseStart'),
    receive_ms: end !== null && t.responseStart > 0 && end >= t.responseStart ? round(end - t.responseStart) : span('responseStart', 'responseEnd')
  }
}

/**
 * @param {BidiHeader[] | undefined} headers
 * @param {string} name lower case
 */
function header (headers, name) {
  const h = headers?.find((x) => x.name.toLowerCase() === name)
  return h?.value?.type === 'string' ? h.value.value : null
}
