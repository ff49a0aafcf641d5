// Round trips: the location's RTT, and connect and TTFB expressed in it,
// against the physical floor of each protocol on a fresh connection without
// loss (docs/DESIGN.md §5):
//   connect  QUIC (transport + TLS 1.3 in one)      1 RTT
//            TCP + TLS 1.3                          2 RTT
//   TTFB     H3                                     2 RTT
//            H2 (or HTTP/1.1) over TCP + TLS 1.3    3 RTT
// A run more than half a round trip above its floor gets a note that says so,
// in words a person can act on.
import { round } from './units.js'
import { metricOf } from './metrics.js'

// The floors are the catalogue's (each metric's rttFloor), which the
// dashboard shows beside the values.
export const CONNECT_FLOOR_RTT = /** @type {Readonly<{ h3: number, tcp: number }>} */ (metricOf('connect_ms').rttFloor)
export const TTFB_FLOOR_RTT = /** @type {Readonly<{ h3: number, tcp: number }>} */ (metricOf('ttfb_ms').rttFloor)
/** How far above its floor a value may be before it is worth a note: jitter and server think time. */
export const NOTE_MARGIN_RTT = 0.5

/**
 * @typedef {{ code: string, message: string, metric?: string | null, protocol?: string | null, rtt?: number | null,
 *   floor?: number | null, extra_ms?: number | null, extra_rtt?: number | null, source?: string | null }} Note
 */

/**
 * @param {{ protocol: string | null, connect_ms: number | null, ttfb_ms: number | null, status?: string }} result
 * @param {number | null} rttMs
 * @returns {{ connect_rtt: number | null, ttfb_rtt: number | null, notes: Note[] }}
 */
export function rttAccounting ({ protocol, connect_ms: connectMs, ttfb_ms: ttfbMs }, rttMs) {
  /** @type {Note[]} */
  const notes = []
  if (rttMs === null || !(rttMs > 0)) return { connect_rtt: null, ttfb_rtt: null, notes }
  const quic = protocol === 'h3'
  const kind = quic ? 'h3' : 'tcp'
  const inRtt = (/** @type {number | null | undefined} */ ms) => (ms === null || ms === undefined ? null : round(ms / rttMs, 2))
  const connectRtt = inRtt(connectMs)
  const ttfbRtt = inRtt(ttfbMs)
  // A connect of 0 is a connection that was already there (repeat view,
  // warm-up before a probe): its TTFB has no handshake in it, so no floor.
  const reused = connectMs === 0
  if (reused) {
    notes.push({ code: 'connection_reused', message: 'the navigation reused an open connection: no handshake in this TTFB', metric: 'connect', protocol, rtt: 0, floor: null, source: 'timing' })
    return { connect_rtt: connectRtt, ttfb_rtt: ttfbRtt, notes }
  }
  const handshake = quic ? 'QUIC handshake' : 'TCP+TLS connect'
  if (connectRtt !== null && connectRtt >= CONNECT_FLOOR_RTT[kind] + NOTE_MARGIN_RTT) {
    notes.push(note('slow_handshake', 'connect', protocol, connectRtt, CONNECT_FLOOR_RTT[kind], rttMs, `${handshake} took ${fmt(connectRtt)} RTT (floor ${CONNECT_FLOOR_RTT[kind]})`))
  }
  if (ttfbRtt !== null && connectRtt !== null && ttfbRtt >= TTFB_FLOOR_RTT[kind] + NOTE_MARGIN_RTT) {
    const extraConnect = Math.max(0, connectRtt - CONNECT_FLOOR_RTT[kind])
    const why = extraConnect >= NOTE_MARGIN_RTT ? `, ${fmt(extraConnect)} of them in the handshake` : ''
    notes.push(note('slow_ttfb', 'ttfb', protocol, ttfbRtt, TTFB_FLOOR_RTT[kind], rttMs,
      `TTFB took ${fmt(ttfbRtt)} RTT (floor ${TTFB_FLOOR_RTT[kind]} for ${quic ? 'H3' : 'H2'} on a new connection): ${fmt(ttfbRtt - TTFB_FLOOR_RTT[kind])} RTT over${why}`))
  }
  return { connect_rtt: connectRtt, ttfb_rtt: ttfbRtt, notes }
}

/**
 * @param {string} code
 * @param {string} metric
 * @param {string | null} protocol
 * @param {number} rtt
 * @param {number} floor
 * @param {number} rttMs
 * @param {string} message
 * @returns {Note}
 */
function note (code, metric, protocol, rtt, floor, rttMs, message) {
  return { code, message, metric, protocol, rtt, floor, extra_rtt: round(rtt - floor, 2), extra_ms: round((rtt - floor) * rttMs), source: 'timing' }
}

/**
 * One decimal, without a trailing ".0": "3.9", "4".
 * @param {number} x
 */
function fmt (x) {
  return String(round(x, 1))
}
