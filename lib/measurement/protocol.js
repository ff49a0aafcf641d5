// Browsers and servers spell protocols many ways ('h3-29', 'QUIC',
// 'http/2+quic/46', 'HTTP/2'); results store one spelling, so every
// comparison between a run and its mode, every per-request protocol and every
// Alt-Svc entry goes through here.
import { PROTOCOL_OF_MODE } from './modes.js'

/**
 * @param {string | null | undefined} value
 * @returns {string | null} 'h3', 'h2', 'http/1.1', 'http/1.0', another lower-cased name, or null
 */
export function normalizeProtocol (value) {
  if (value === null || value === undefined) return null
  const s = String(value).trim().toLowerCase()
  if (s === '') return null
  // Before the HTTP/2 test: Google QUIC announced itself as 'http/2+quic/NN'.
  if (s.startsWith('h3') || s.includes('quic') || s === 'http/3' || s === 'http/3.0') return 'h3'
  if (s === 'h2' || s === 'http/2' || s === 'http/2.0') return 'h2'
  return s
}

/**
 * Whether a run loaded over its mode's protocol; for a mode that forces
 * none (auto), whether it loaded over any.
 * @param {string | null | undefined} protocol as observed, any spelling
 * @param {string} mode
 */
export function protocolMatchesMode (protocol, mode) {
  const expected = /** @type {Record<string, string | null | undefined>} */ (PROTOCOL_OF_MODE)[mode]
  const seen = normalizeProtocol(protocol)
  if (expected === undefined || seen === null) return false
  return expected === null || seen === expected
}
