// Per-request truth from the DevTools network events: for every request its
// protocol (normalised), connection id and reuse, why that protocol was used
// (alternateProtocolUsage), timing phases, bytes on the wire and the Alt-Svc
// its origin advertised. Navigation Timing covers the document only; this
// covers everything the page fetched.
import { advertisesH3 } from '../lib/measurement/alt-svc.js'
import { normalizeProtocol } from '../lib/measurement/protocol.js'
import { round } from '../lib/measurement/units.js'
import { CDPSessionEvent } from 'puppeteer-core'

/**
 * @typedef {{ dns_ms: number | null, connect_ms: number | null, ssl_ms: number | null, send_ms: number | null,
 *   wait_ms: number | null, receive_ms: number | null }} RequestPhases
 * @typedef {{
 *   url: string, type: string | null, method: string | null, protocol: string | null, status: number | null, bytes: number,
 *   start_ms: number | null, end_ms: number | null, connection_id: number | null,
 *   connection_reused: boolean | null, from_cache: boolean, alternate_protocol_usage: string | null,
 *   remote_address: string | null, timing: RequestPhases | null, failed: string | null, subframe?: true
 * }} RequestDetail subframe: an iframe's document
 * @typedef {{ origin: string, alt_svc: string | null, h3_advertised: boolean, requests: { h3: number, h2: number, other: number } }} OriginSeen
 * @typedef {{
 *   url: string, type: string | null, method: string | null, protocol: string | null, status: number | null, bytes: number,
 *   start: number, end: number | null, connection_id: number | null, connection_reused: boolean | null, from_cache: boolean,
 *   alternate_protocol_usage: string | null, remote_address: string | null, alt_svc: string | null,
 *   timingRaw: import('puppeteer-core').Protocol.Network.ResourceTiming | null, failed: string | null, responded: boolean,
 *   declared_bytes: number | null, content_encoding: string | null, media_type: string | null, received_bytes: number,
 *   received_encoded_bytes: number, canceled: boolean, finished: boolean, subframe?: true
 * }} RequestRecord one request as recorded from the DevTools events; timestamps in seconds
 */

/**
 * @typedef {{ documentProtocol: () => string | null, mainDocument: () => DocumentOutcome | null, documentCount: () => number,
 *   take: () => Promise<ReturnType<typeof summarizeRequests>>,
 *   mark?: () => number, range?: (from: number, to?: number) => ReturnType<typeof summarizeRequests>,
 *   unfinished: () => Unfinished[] }} NetworkRecording
 * what a run's requests recording offers, for Chromium (here) and Firefox (agents/browsers/firefox-network.js)
 * @typedef {{ url: string, responded: boolean }} Unfinished a request neither finished nor failed yet, besides the top frame's document
 */

/**
 * Start recording the page's requests. `take()` returns what was recorded
 * since the previous `take()` (a repeat view gets only its own requests).
 * @param {import('puppeteer-core').Page} page
 */
export async function recordNetwork (page) {
  return /** @type {NetworkRecording} */ (await recordCdp(page))
}

/** The targets a page's recording attaches to: its frames and workers in processes of their own, nothing else. */
const ATTACHED_TARGETS = [{ type: 'iframe', exclude: false }, { type: 'worker', exclude: false }, { exclude: true }]

/** @param {import('puppeteer-core').Page} page */
async function recordCdp (page) {
  const cdp = await page.createCDPSession()
  /** @type {Map<string, RequestRecord>} */
  const open = new Map()
  /** @type {RequestRecord[]} */
  const all = []
  /** @type {number | null} */
  let firstTimestamp = null
  /** @type {RequestRecord | null} */
  let documentRecord = null
  // The top frame's latest document request (each redirect hop and each
  // navigation replaces it): what a page load's completeness is judged on.
  /** @type {RequestRecord | null} */
  let mainDocument = null
  let mainDocuments = 0
  let taken = 0
  /** Where the top frame's latest document request is in `all`: its view's requests follow. */
  let viewFrom = 0
  /** The requests' events recorded (id and time), whichever session reported them. @type {Set<string>} */
  const reported = new Set()
  const { frameTree } = await cdp.send('Page.getFrameTree')
  const mainFrameId = frameTree.frame.id

  /**
   * @param {RequestRecord} rec
   * @param {import('puppeteer-core').Protocol.Network.Response} response
   */
  const respond = (rec, response) => {
    rec.protocol = normalizeProtocol(response.protocol)
    rec.status = response.status
    rec.connection_id = response.connectionId ?? null
    rec.connection_reused = response.connectionReused ?? null
    rec.from_cache ||= Boolean(response.fromDiskCache || response.fromPrefetchCache || response.fromServiceWorker)
    rec.alternate_protocol_usage = response.alternateProtocolUsage ?? null
    rec.remote_address = response.remoteIPAddress ? `${response.remoteIPAddress}:${response.remotePort}` : null
    rec.alt_svc ??= headerValue(response.headers, 'alt-svc')
    rec.timingRaw = response.timing ?? null
    const declared = Number.parseInt(headerValue(response.headers, 'content-length') ?? '', 10)
    rec.declared_bytes = Number.isSafeInteger(declared) && declared >= 0 ? declared : null
    rec.content_encoding = headerValue(response.headers, 'content-encoding')
    rec.media_type = mediaType(headerValue(response.headers, 'content-type') ?? response.mimeType)
    rec.responded = true
  }
  /**
   * Record the requests a session reports: the page's own, and those of
   * the frames and workers that run in processes of their own (a
   * cross-site iframe: an ad, an embed), which report theirs on their own
   * target. A request two sessions both report (an iframe's document) is
   * counted once.
   * @param {import('puppeteer-core').CDPSession} session
   */
  const listen = (session) => {
    session.on('Network.requestWillBeSent', (e) => {
      const previous = open.get(e.requestId)
      // Reported already, by another session (a redirect hop too).
      const event = `${e.requestId} ${e.timestamp}`
      if (reported.has(event)) return
      reported.add(event)
      if (previous && e.redirectResponse) {
        // A redirect reuses the request id: close the hop that just ended.
        respond(previous, e.redirectResponse)
        previous.bytes = e.redirectResponse.encodedDataLength ?? 0
        previous.end = e.timestamp
      }
      // data: and blob: URLs never touch the network.
      if (!/^https?:/.test(e.request.url)) return
      firstTimestamp ??= e.timestamp
      /** @type {RequestRecord} */
      const rec = {
        url: e.request.url, type: e.type ?? null, method: e.request.method ?? null, protocol: null, status: null, bytes: 0,
        start: e.timestamp, end: null, connection_id: null, connection_reused: null, from_cache: false,
        alternate_protocol_usage: null, remote_address: null, alt_svc: null, timingRaw: null, failed: null,
        responded: false, declared_bytes: null, content_encoding: null, media_type: null, received_bytes: 0, received_encoded_bytes: 0, canceled: false, finished: false
      }
      if (e.type === 'Document' && !documentRecord) documentRecord = rec
      if (e.type === 'Document' && e.frameId === mainFrameId) {
        mainDocument = rec
        mainDocuments++
        viewFrom = all.length
      }
      // An iframe's document: not the page's (the journey's last document, the run's reason).
      if (e.type === 'Document' && e.frameId !== mainFrameId) rec.subframe = true
      open.set(e.requestId, rec)
      all.push(rec)
    })
    session.on('Network.responseReceived', (e) => {
      const rec = open.get(e.requestId)
      if (rec) respond(rec, e.response)
    })
    // The raw headers, for responses whose headers the renderer does not see
    // in full: Alt-Svc is often only here.
    session.on('Network.responseReceivedExtraInfo', (e) => {
      const rec = open.get(e.requestId)
      const altSvc = headerValue(e.headers, 'alt-svc')
      if (rec && altSvc) rec.alt_svc = altSvc
    })
    session.on('Network.requestServedFromCache', (e) => {
      const rec = open.get(e.requestId)
      if (rec) rec.from_cache = true
    })
    session.on('Network.dataReceived', (e) => {
      const rec = open.get(e.requestId)
      if (!rec) return
      const event = `${e.requestId} ${e.timestamp} data`
      if (reported.has(event)) return
      reported.add(event)
      rec.received_bytes += e.dataLength
      rec.received_encoded_bytes += e.encodedDataLength ?? 0
    })
    session.on('Network.loadingFinished', (e) => {
      const rec = open.get(e.requestId)
      if (!rec) return
      rec.bytes = e.encodedDataLength
      rec.end = e.timestamp
      rec.finished = true
      open.delete(e.requestId)
    })
    session.on('Network.loadingFailed', (e) => {
      const rec = open.get(e.requestId)
      if (!rec) return
      rec.end = e.timestamp
      rec.failed = e.errorText || 'failed'
      rec.canceled = Boolean(e.canceled)
      // No loadingFinished, so no encodedDataLength: what arrived before the
      // failure (a body cut short: the 1,024 bytes that came, not 0).
      rec.bytes = arrivedBytes(rec)
      open.delete(e.requestId)
    })
  }
  listen(cdp)
  // A service worker the page registered answers its later loads itself
  // (a repeat view, the auto arm's returning visit): the navigation's
  // nextHopProtocol is then empty and the protocol the network used is
  // unknown. Its requests go to the network instead, as on a first visit.
  const enable = async (/** @type {import('puppeteer-core').CDPSession} */ session) => {
    await session.send('Network.enable')
    await session.send('Network.setBypassServiceWorker', { bypass: true })
  }
  await enable(cdp)
  // Frames and workers in processes of their own are attached as they
  // start (a frame's own frames too: an ad's chain of iframes), held until
  // their requests are recorded too. Nothing else the page starts (its
  // service worker, a prerendered page, worklets) is attached: it is not
  // the page's load.
  /** @param {import('puppeteer-core').CDPSession} session */
  const attachFrames = async (session) => {
    session.on(CDPSessionEvent.SessionAttached, (/** @type {import('puppeteer-core').CDPSession} */ child) => {
      listen(child)
      // A worker has no service-worker bypass, nor frames; one gone already has nothing to record.
      enable(child).catch(() => {})
        .then(() => attachFrames(child)).catch(() => {})
        .finally(() => child.send('Runtime.runIfWaitingForDebugger').catch(() => {}))
    })
    await session.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true, filter: ATTACHED_TARGETS })
  }
  await attachFrames(cdp)

  const sinceFirst = (/** @type {number | null} */ t) => (t === null || firstTimestamp === null ? null : round((t - firstTimestamp) * 1000))
  return {
    // What the top frame's latest document came over (in a redirect chain,
    // the hop the load ended on, not the first), when it was answered.
    documentProtocol: () => (mainDocument ?? documentRecord)?.protocol ?? null,
    /** The top frame's latest document: its URL, whether it got a response, how it failed, and whether it arrived whole. */
    mainDocument: () => (mainDocument ? documentOutcome(mainDocument) : null),
    /** How many document requests the top frame made so far (a redirect's hops each count): a page that went on to another asked for one more. */
    documentCount: () => mainDocuments,
    /** The requests besides the top frame's document that have neither finished nor failed, in the order they started. */
    unfinished: () => unfinishedOf(open.values(), mainDocument, all.slice(viewFrom)),
    /** Requests recorded since the last call, and their totals (async as Firefox's, agents/browsers/firefox-network.js). */
    async take () {
      const recs = all.slice(taken)
      taken = all.length
      return summarizeRequests(recs.map((rec) => toDetail(rec, sinceFirst)), recs)
    },
    /** How many requests were recorded so far: a mark for range(). */
    mark: () => all.length,
    /**
     * The requests recorded between two marks (a journey step's), as they
     * stand now, and their totals; take() is not moved.
     * @param {number} from
     * @param {number} [to]
     */
    range (from, to = all.length) {
      const recs = all.slice(from, to)
      return summarizeRequests(recs.map((rec) => toDetail(rec, sinceFirst)), recs)
    }
  }
}

/**
 * Requests a page's load event does not wait for: named after those it
 * does when a load timed out (unfinishedOf).
 */
const NOT_HOLDING_LOAD = new Set(['XHR', 'Fetch', 'EventSource', 'WebSocket', 'Ping', 'Prefetch', 'Preflight', 'CSPViolationReport'])

/**
 * The requests of the page under way (since the top frame last asked for a
 * document) that have neither finished nor failed, besides that document:
 * those the load event waits for first, each in the order they started.
 * @param {Iterable<Record<string, any>>} open the recording's requests not yet ended
 * @param {Record<string, any> | null} mainDocument
 * @param {Record<string, any>[]} view the requests recorded since the top frame's latest document request, that one first
 * @returns {Unfinished[]}
 */
export function unfinishedOf (open, mainDocument, view) {
  const recent = new Set(view)
  const waits = (/** @type {Record<string, any>} */ rec) => (NOT_HOLDING_LOAD.has(rec.type) ? 1 : 0)
  return [...open].filter((rec) => recent.has(rec) && rec !== mainDocument && !rec.finished && !rec.failed)
    .sort((a, b) => waits(a) - waits(b) || a.start - b.start)
    .map((rec) => ({ url: rec.url, responded: Boolean(rec.responded) }))
}

/**
 * @typedef {{ url: string, responded: boolean, failed: string | null, incomplete: string | null, arriving: boolean, arrived_bytes: number, media_type: string | null, viewer: string | null }} DocumentOutcome
 *   arriving: answered, and its body still coming (neither finished nor failed); arrived_bytes: what came so far, counted as the
 *   request's bytes are (on the wire where the browser reports it); media_type: its Content-Type's; viewer: the browser's own viewer the document is shown in
 *   instead of as a page (VIEWERS), else null
 */

/**
 * Media types a browser shows in a viewer of its own rather than as a
 * page, by the type the server declared. Chromium hands a PDF's body to its
 * PDF viewer as it arrives: the page's requests report none or part of it
 * (a whole PDF read as "received 601 of 20,193 declared bytes"), and what
 * paints is the viewer. Firefox shows it in PDF.js, which gives the
 * response a type of its own (text/html) as it takes the body over. Neither
 * is the page load the metrics describe.
 */
const VIEWERS = new Map([['application/pdf', 'PDF viewer']])

/**
 * A Content-Type's media type, lower case, without parameters.
 * @param {string | null | undefined} value
 */
export function mediaType (value) {
  const type = String(value ?? '').split(';')[0].trim().toLowerCase()
  return type || null
}

/**
 * Whether a document arrived whole. Chromium accepts an HTTP/2 or HTTP/3
 * response body that ends before its Content-Length (a backend that closes
 * early behind a proxy ends the stream cleanly), and the page loads; only
 * HTTP/1.1 fails with ERR_CONTENT_LENGTH_MISMATCH. So the bytes are counted:
 * without a Content-Encoding the decoded bytes are the body bytes; with one,
 * the encoded bytes received (headers included) cannot be fewer than the
 * body. Responses without a body of their own (304, 204, cache) are whole.
 * A network error after the headers of a 2xx or 3xx arrived is incomplete too.
 * @param {Record<string, any>} rec
 * @returns {DocumentOutcome}
 */
export function documentOutcome (rec) {
  const grouped = (/** @type {number} */ n) => n.toLocaleString('en-US')
  // A 304 is the cached document's revalidation (a repeat view).
  const viewer = rec.responded && (rec.status < 300 || rec.status === 304) ? VIEWERS.get(rec.media_type) ?? null : null
  let incomplete = null
  // An error status's body is not the page (Chromium fails a 4xx/5xx
  // navigation with ERR_HTTP_RESPONSE_CODE_FAILURE), and an abort is ours.
  if (rec.responded && rec.failed && !rec.canceled && rec.status < 400 && !/ERR_(ABORTED|HTTP_RESPONSE_CODE_FAILURE)$/.test(rec.failed)) {
    // Chromium reports a body's bytes as the page reads them; a navigation
    // that fails before the page takes its body (HTTP/2 and HTTP/3 often
    // do) reports none of what arrived.
    incomplete = rec.received_bytes > 0
      ? `network error after the headers (${rec.failed}) at ${grouped(rec.received_bytes)} bytes of the body`
      : `network error after the headers (${rec.failed}) before the browser reported any of the body`
  } else if (!viewer && rec.finished && rec.declared_bytes !== null && !rec.from_cache && rec.status !== 204 && rec.status !== 304 && rec.method !== 'HEAD') {
    const identity = rec.content_encoding === null || /^\s*identity\s*$/i.test(rec.content_encoding)
    const got = identity ? rec.received_bytes : rec.bytes
    if (got < rec.declared_bytes) incomplete = `received ${grouped(got)} of ${grouped(rec.declared_bytes)} declared bytes`
  }
  return { url: rec.url, responded: rec.responded, failed: rec.failed, incomplete, arriving: Boolean(rec.responded && rec.end === null), arrived_bytes: arrivedBytes(rec), media_type: rec.media_type ?? null, viewer }
}

/**
 * What of a response has arrived so far, as the data events counted it: on
 * the wire where the browser reports it, else as decoded.
 * @param {Record<string, any>} rec
 */
function arrivedBytes (rec) {
  return rec.received_encoded_bytes || rec.received_bytes
}

/**
 * @param {Record<string, any>} rec
 * @param {(t: number | null) => number | null} sinceFirst
 * @returns {RequestDetail}
 */
function toDetail (rec, sinceFirst) {
  return {
    url: rec.url,
    type: rec.type,
    method: rec.method,
    protocol: rec.protocol,
    status: rec.status,
    // A response still arriving (a load that timed out on a document that
    // streams without end) has what came so far; one that ended (finished,
    // failed, or a redirect hop) its count.
    bytes: rec.end !== null ? rec.bytes : arrivedBytes(rec),
    start_ms: sinceFirst(rec.start),
    end_ms: sinceFirst(rec.end),
    connection_id: rec.connection_id,
    connection_reused: rec.connection_reused,
    from_cache: rec.from_cache,
    alternate_protocol_usage: rec.alternate_protocol_usage,
    remote_address: rec.remote_address,
    timing: phases(rec.timingRaw, rec.end),
    failed: rec.failed,
    ...(rec.subframe ? { subframe: true } : {})
  }
}

/**
 * Timing phases of one request from the DevTools ResourceTiming (offsets in
 * ms from requestTime, -1 when a phase did not happen). For QUIC the
 * handshake is inside connect, and ssl covers the same span.
 * @param {Record<string, number> | null} t
 * @param {number | null} end loadingFinished timestamp, seconds
 * @returns {RequestPhases | null}
 */
export function phases (t, end) {
  if (!t) return null
  const span = (/** @type {string} */ a, /** @type {string} */ b) => (t[a] >= 0 && t[b] >= t[a] ? round(t[b] - t[a]) : null)
  const headersStart = t.receiveHeadersStart > 0 ? t.receiveHeadersStart : t.receiveHeadersEnd
  const finished = end !== null && t.requestTime > 0 ? (end - t.requestTime) * 1000 : null
  return {
    dns_ms: span('dnsStart', 'dnsEnd'),
    connect_ms: span('connectStart', 'connectEnd'),
    ssl_ms: span('sslStart', 'sslEnd'),
    send_ms: span('sendStart', 'sendEnd'),
    wait_ms: t.sendEnd >= 0 && headersStart >= t.sendEnd ? round(headersStart - t.sendEnd) : null,
    receive_ms: finished !== null && t.receiveHeadersEnd >= 0 && finished >= t.receiveHeadersEnd ? round(finished - t.receiveHeadersEnd) : null
  }
}

/**
 * A run's requests and their totals: bytes, count, the H3 shares, and the
 * origins seen with the Alt-Svc each advertised.
 * @param {RequestDetail[]} details
 * @param {Record<string, any>[]} recs the same requests, with their Alt-Svc
 */
export function summarizeRequests (details, recs) {
  const sum = (/** @type {RequestDetail[]} */ list) => list.reduce((total, r) => total + r.bytes, 0)
  // Shares count what came over the network, where a protocol was chosen.
  const fetched = details.filter((r) => r.protocol && !r.from_cache)
  const overH3 = fetched.filter((r) => r.protocol === 'h3')
  const fetchedBytes = sum(fetched)
  return {
    bytes: sum(details),
    requests: details.length,
    h3_request_share: fetched.length ? round(overH3.length / fetched.length, 3) : null,
    h3_byte_share: fetchedBytes ? round(sum(overH3) / fetchedBytes, 3) : null,
    requests_detail: details,
    origins: originsSeen(details, recs)
  }
}

/**
 * @param {RequestDetail[]} details
 * @param {Record<string, any>[]} recs
 * @returns {OriginSeen[]}
 */
function originsSeen (details, recs) {
  const byOrigin = new Map()
  details.forEach((d, i) => {
    let origin
    try { origin = new URL(d.url).origin } catch { return }
    let o = byOrigin.get(origin)
    if (!o) byOrigin.set(origin, (o = { origin, alt_svc: null, h3_advertised: false, requests: { h3: 0, h2: 0, other: 0 } }))
    if (d.protocol && !d.from_cache) o.requests[d.protocol === 'h3' || d.protocol === 'h2' ? d.protocol : 'other']++
    const altSvc = recs[i].alt_svc
    if (altSvc) {
      o.alt_svc = altSvc
      o.h3_advertised = advertisesH3(altSvc)
    }
  })
  return [...byOrigin.values()]
}

/**
 * Case-insensitive header lookup in a CDP headers object.
 * @param {Record<string, unknown> | undefined} headers
 * @param {string} name lower case
 */
function headerValue (headers, name) {
  if (!headers) return null
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return String(v)
  return null
}
