// What h3lens reads of a wptagent's Chromium trace (`1_trace.json.gz`): when
// each navigation started and when each request's first byte came, on the
// browser's own clock. From them a WPT run's TTFB is Navigation Timing's, as
// an h3lens agent measures it (responseStart − startTime): from the start of
// the navigation to the first byte of its document.
//
// Why not the agent's own times: wptagent counts from the first network
// activity it saw, and what it sees differs by protocol. On H2 the document's
// TCP connect is that activity, a few ms after the navigation began; on H3
// the QUIC handshake is on its net log's clock, not its own, and the clock
// starts when the request is created, later in the navigation, sometimes
// after a handshake that had already ended. In the recorded uploads the
// agent's TTFB fell short of Navigation Timing's by 5–8 ms on H2 and by
// 15–22 ms on H3 for pages (docs/WPT.md), enough to turn which arm was
// faster.

/**
 * @typedef {{ dns_ms: number, connect_ms: number, tls_ms: number | null }} TracePhases
 *   a request's connection set-up as Navigation Timing gives it: domainLookupEnd − domainLookupStart,
 *   connectEnd − connectStart (TCP and TLS, or the QUIC handshake), connectEnd − secureConnectionStart
 *   (null without TLS); 0 for a connection that existed
 * @typedef {{ navigations: Record<string, number>, firstBytes: Record<string, number>, phases: Record<string, TracePhases> }} TraceTimes
 *   navigations: each navigation's start by its id, in ms on the trace's clock;
 *   firstBytes: each request's first byte of its (final) response by its DevTools request id, on the same clock;
 *   phases: each request's connection set-up of its (final) response, by the same id
 */

/**
 * The times a trace holds that a TTFB needs. The file comes from the
 * network: anything not shaped as Chromium writes it is skipped.
 * @param {unknown} trace the parsed trace: `{ traceEvents: [...] }` or the bare array
 * @returns {TraceTimes | null} null when the trace has neither
 */
export function traceTimes (trace) {
  const events = Array.isArray(trace) ? trace : isObject(trace) && Array.isArray(trace.traceEvents) ? trace.traceEvents : null
  if (!events) return null
  /** @type {Record<string, number>} */
  const navigations = Object.create(null)
  /** @type {Record<string, number>} */
  const firstBytes = Object.create(null)
  /** @type {Record<string, TracePhases>} */
  const phases = Object.create(null)
  for (const e of events) {
    if (!isObject(e) || !isObject(e.args) || !isObject(e.args.data)) continue
    const data = e.args.data
    if (e.name === 'navigationStart') {
      // The main frame's navigations: a subframe's start says nothing of the page's.
      const id = data.navigationId
      if (typeof id === 'string' && data.isLoadingMainFrame === true && finite(e.ts) && !(id in navigations)) navigations[id] = e.ts / 1000
    } else if (e.name === 'ResourceReceiveResponse') {
      const id = data.requestId
      const t = isObject(data.timing) ? data.timing : null
      if (typeof id !== 'string' || !t || !finite(t.requestTime)) continue
      // The first byte of the headers; receiveHeadersEnd where the trace has no receiveHeadersStart.
      const at = [t.receiveHeadersStart, t.receiveHeadersEnd].find((v) => finite(v) && v >= 0)
      // A redirect's hops share the id; the last response is the document's.
      if (at !== undefined) firstBytes[id] = t.requestTime * 1000 + at
      phases[id] = {
        dns_ms: span(t.dnsStart, t.dnsEnd),
        connect_ms: span(t.connectStart, t.connectEnd),
        tls_ms: finite(t.sslStart) && t.sslStart >= 0 ? span(t.sslStart, t.connectEnd) : null
      }
    }
  }
  return Object.keys(navigations).length || Object.keys(firstBytes).length ? { navigations, firstBytes, phases } : null
}

/**
 * A phase's duration from Chromium's timing: its start and end in ms from
 * the request's start, −1 when it did not happen (a connection that
 * existed), which takes no time.
 * @param {unknown} start
 * @param {unknown} end
 */
function span (start, end) {
  return finite(start) && finite(end) && start >= 0 && end >= start ? Math.round((end - start) * 10) / 10 : 0
}

/**
 * The connection set-up of a base-page request's document, from the trace:
 * as an h3lens agent's Navigation Timing gives it. The agent's own DevTools
 * times count a connection Chromium opened before the request whole
 * (15 ms more on H2 at the median in a real agent's uploads, up to 67).
 * @param {TraceTimes | null} times
 * @param {Record<string, any>} base the agent's base-page request
 * @returns {TracePhases | null}
 */
export function tracePhases (times, base) {
  if (!times?.phases || typeof base.request_id !== 'string') return null
  return times.phases[base.request_id.replace(/-\d+$/, '')] ?? null
}

/**
 * The navigation TTFB of a base-page request: from the start of its
 * navigation to its document's first byte, both from the trace. DevTools
 * gives a navigation's request the navigation's id, and keeps it through
 * redirects (the agent adds `-1`, `-2`… to the later hops' `request_id`).
 * @param {TraceTimes | null} times
 * @param {Record<string, any>} base the agent's base-page request
 * @returns {number | null} ms, to 0.1 ms; null when the trace lacks either time or they cannot be one navigation's
 */
export function traceTtfb (times, base) {
  if (!times || typeof base.request_id !== 'string') return null
  const id = base.request_id.replace(/-\d+$/, '')
  const start = times.navigations[id]
  const firstByte = times.firstBytes[id]
  if (start === undefined || firstByte === undefined) return null
  const ms = firstByte - start
  // An hour is no page load, and a first byte cannot come before its navigation.
  return ms >= 0 && ms < 3600000 ? Math.round(ms * 10) / 10 : null
}

/** @param {unknown} v @returns {v is Record<string, any>} */
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v)
/** @param {unknown} v @returns {v is number} */
const finite = (v) => typeof v === 'number' && Number.isFinite(v)
