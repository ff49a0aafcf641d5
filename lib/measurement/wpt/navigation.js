// A WPT run's TTFB and connection phases, defined as for Puppeteer agents:
// TTFB is the time from the start of the navigation to the first byte of
// its document (Navigation Timing's responseStart − startTime), and DNS,
// connect and TLS are the durations of the document's own connection set-up.
//
// Where the upload has the run's Chromium trace, the TTFB is read from it
// (./trace.js): the navigation's start and the document's first byte, on the
// browser's clock, the same figure an h3lens agent stores. wptagent writes
// one for a Chromium run unasked; the agent's own times are the fallback,
// and each is kept in details.wpt.ttfb_check.
//
// The agent's own times start at the first network activity it recorded,
// which is not the navigation's start, and not the same moment in both arms
// (./trace.js). The navigation starts, as far as they tell, at the earliest
// phase of its requests (the base-page request and the redirects before
// it): its DNS lookup, connect or TLS handshake, or the request itself on a
// connection that existed. Where the phases lie depends on where the agent
// read them:
//   - H2 (and H1): from DevTools, on the request's clock, before load_start
//     (recorded-real/165205_h3l_16_h2: ssl 7–46, load_start 46, first byte 252);
//   - H3: from its net log, on another clock, after load_start, sometimes
//     after the first byte (recorded-real/165154_h3l_16_h3: ssl 147–227,
//     load_start 81, first byte 297; 164917_h3l_11_h3: ssl 60–90,
//     load_start 30, first byte 41). A connection is set up before its
//     request is sent, so such phases count by their durations, ending at
//     load_start: the H3 navigation starts at 81 − 80 = 1, not at 81.
//
// Without a trace, the agent's page-level TTFB (pageData.TTFB: the first 200
// response's load_start + ttfb_ms, from the run's first activity) is used
// when it is this navigation's (the same request, and no other request
// started before the navigation did), the base-request figure otherwise
// (the agent's own start page, recorded/131150_SPIKE_H1_0001). Both fall
// short of the navigation's TTFB, the H3 arm's by more (docs/WPT.md).

import { normalizeProtocol } from '../protocol.js'

/**
 * How far the base-request TTFB and the agent's own page TTFB of the same
 * navigation may differ. Each time is rounded to 1 ms, and in the recorded
 * uploads the request is sent up to 1 ms after its handshake ends; a start
 * page or a misplaced phase is tens of ms.
 */
export const TTFB_AGREEMENT_MS = 5

const PHASES = /** @type {const} */ (['dns', 'connect', 'ssl'])

/**
 * @typedef {{ start: number | null, end: number | null, ms: number | null }} Phase
 * start/end: where the agent placed it (null when it recorded none); ms: its duration
 */

/**
 * @param {Record<string, any>[]} requests the run's requests
 * @param {Record<string, any>} base the base-page request (pageData.final_base_page_request)
 * @param {Record<string, any>} page pageData
 * @param {number | null} [fromTrace] the navigation's TTFB from the run's trace (./trace.js traceTtfb), when it has one
 * @returns {{ problem: string | null, ttfb_ms: number | null, dns_ms: number | null, connect_ms: number | null, tls_ms: number | null,
 *   check: { source: 'trace' | 'agent' | 'base_request' | null, trace_ttfb_ms: number | null, navigation_start: number | null,
 *     base_ttfb_ms: number | null, page_ttfb_ms: number | null, page_ttfb_is_navigation: boolean },
 *   note: { code: string, message: string } | null }}
 *   problem: why the timings cannot be a page load, or null; check: what the cross-check compared
 *   (details.wpt.ttfb_check); note: set when the stored page-level figure and the base request's disagree
 */
export function navigationTimings (requests, base, page, fromTrace = null) {
  const chain = navigationRequests(requests, base)
  const inChain = new Set(chain)
  // A loop, not Math.min(...starts): an upload's chain may be longer than
  // the arguments a call can take.
  const from = chain.map(earliestStart).filter(isNumber).reduce((/** @type {number | null} */ a, b) => (a === null || b < a ? b : a), null)
  const firstByte = nonNegative(base.ttfb_end) ?? sum(nonNegative(base.load_start), nonNegative(base.ttfb_ms))
  const baseTtfb = from !== null && firstByte !== null ? firstByte - from : null

  // The page-level figure is this navigation's when it is the base request's
  // first byte and nothing else started before the navigation.
  const pageTtfb = nonNegative(page.TTFB)
  const samePage = pageTtfb !== null && firstByte !== null && Math.abs(pageTtfb - firstByte) <= 1 &&
    from !== null && !requests.some((r) => !inChain.has(r) && (requestStart(r) ?? Infinity) < from - 1)
  const agentTtfb = samePage ? pageTtfb : baseTtfb
  const ttfb = fromTrace ?? agentTtfb
  const source = fromTrace !== null ? 'trace' : samePage ? 'agent' : agentTtfb !== null ? 'base_request' : null
  let note = null
  if (fromTrace === null && samePage && (baseTtfb === null || Math.abs(baseTtfb - pageTtfb) > TTFB_AGREEMENT_MS)) {
    note = {
      code: 'wpt_page_ttfb',
      message: `the base-page request's timings give a TTFB of ${baseTtfb ?? 'nothing'}${baseTtfb === null ? '' : ' ms'}, ` +
        `more than ${TTFB_AGREEMENT_MS} ms from the agent's own page TTFB of ${pageTtfb} ms for the same navigation; the agent's figure is stored`
    }
  }

  // A QUIC handshake of 0 ms is none the agent saw: it had ended before the
  // agent's clock started (recorded-real-journey/021545_h3l_8_h3: ssl
  // 62–62, Chromium's own timing connect 0–0), and no handshake takes no
  // time. Its phases are not known, rather than 0.
  const ssl = phase(base, 'ssl').ms
  const unseen = normalizeProtocol(base.protocol) === 'h3' && ssl === 0
  const dns = unseen ? null : phase(base, 'dns').ms
  const tcp = unseen ? null : phase(base, 'connect').ms
  const tls = unseen ? null : ssl
  return {
    // A first byte before the navigation began is no measurement; the arm is
    // stored as an error with this reason (lib/store/wpt-tests.js).
    problem: fromTrace === null && ttfb !== null && ttfb < 0 ? `the base-page request's first byte (${firstByte} ms) comes before its navigation began (${from} ms)` : null,
    ttfb_ms: ttfb !== null && ttfb < 0 ? null : ttfb,
    dns_ms: dns,
    // As Navigation Timing gives it: TCP + TLS for H2, the QUIC handshake
    // for H3 (the agent's connect_ms is TCP alone, −1 or 0 on QUIC; its
    // ssl_ms is the TLS or QUIC handshake).
    connect_ms: tcp === null && tls === null ? null : (tcp ?? 0) + (tls ?? 0),
    tls_ms: tls,
    check: { source, trace_ttfb_ms: fromTrace, navigation_start: from, base_ttfb_ms: baseTtfb, page_ttfb_ms: pageTtfb, page_ttfb_is_navigation: samePage },
    note
  }
}

/**
 * The base-page request and the redirects that led to it: DevTools keeps one
 * request id through a navigation's redirects, which the agent keeps as
 * raw_id.
 * @param {Record<string, any>[]} requests
 * @param {Record<string, any>} base
 */
function navigationRequests (requests, base) {
  if (typeof base.raw_id !== 'string' || base.raw_id === '') return [base]
  return requests.filter((r) => r === base || (r.raw_id === base.raw_id && (num(r.responseCode) ?? 0) >= 300 && (num(r.responseCode) ?? 0) < 400))
}

/**
 * When a request's navigation work began: its earliest phase placed before
 * the request was sent, or load_start less the phases placed after it
 * (which happened before it, on another clock).
 * @param {Record<string, any>} r
 * @returns {number | null}
 */
function earliestStart (r) {
  const sent = nonNegative(r.load_start)
  if (sent === null) return null
  let earliest = sent
  let elsewhere = 0
  for (const name of PHASES) {
    const p = phase(r, name)
    // Before the request was sent on its clock: started before it and
    // ended by then. A phase that straddles load_start (an H3 handshake at
    // 75–164 with load_start 90, a real agent's) is on another clock, and
    // counts by its duration, as one wholly after it does.
    if (p.start !== null && p.start <= sent && (p.end === null || p.end <= sent)) earliest = Math.min(earliest, p.start)
    else if (p.start !== null && p.ms !== null) elsewhere += p.ms
  }
  return Math.min(earliest, sent - elsewhere)
}

/**
 * A phase as the agent recorded it. Its duration is the agent's `*_ms`, or
 * end − start where the agent wrote −1 for it: the agent treats a phase
 * starting at 0 as unset, though 0 is the run's first activity and often
 * the base request's own DNS lookup (recorded-real/165205: dns 0–0, dns_ms −1).
 * @param {Record<string, any>} r
 * @param {typeof PHASES[number]} name
 * @returns {Phase}
 */
function phase (r, name) {
  const start = nonNegative(r[`${name}_start`])
  const end = nonNegative(r[`${name}_end`])
  const ms = nonNegative(r[`${name}_ms`]) ?? (start !== null && end !== null && end >= start ? end - start : null)
  return { start, end, ms }
}

/** @param {Record<string, any>} r */
const requestStart = (r) => nonNegative(r.all_start) ?? nonNegative(r.load_start)

// v: a value of the agent's JSON, not yet checked.
const num = (/** @type {any} */ v) => (typeof v === 'number' && Number.isFinite(v) ? v : null)
// The agent writes −1 for a time it did not see; an hour is no page load.
const nonNegative = (/** @type {any} */ v) => (num(v) !== null && v >= 0 && v < 3600000 ? v : null)
const sum = (/** @type {number | null} */ a, /** @type {number | null} */ b) => (a === null || b === null ? null : a + b)
const isNumber = /** @type {(v: number | null) => v is number} */ ((v) => v !== null)
