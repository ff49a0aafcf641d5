// Alt-Svc (RFC 7838) as servers send it: `h3=":443"; ma=86400, h3-29=":443"`,
// or `clear`. Only what discovery needs: which protocols, where, how long.
import { normalizeProtocol } from './protocol.js'

/**
 * @param {string | null | undefined} header
 * @returns {{ protocol: string, authority: string | null, max_age_s: number | null }[]}
 */
export function parseAltSvc (header) {
  if (typeof header !== 'string') return []
  const out = []
  // Several headers arrive joined with newlines (CDP) or commas (HTTP).
  for (const entry of header.split(/[\n,]/)) {
    const [first, ...params] = entry.split(';').map((s) => s.trim())
    const m = /^([^=\s]+)\s*=\s*"([^"]*)"$/.exec(first ?? '')
    if (!m) continue
    const ma = params.map((p) => /^ma\s*=\s*(\d+)$/i.exec(p)).find(Boolean)
    out.push({ protocol: decodeURIComponent(m[1]), authority: m[2] || null, max_age_s: ma ? Number(ma[1]) : null })
  }
  return out
}

/**
 * Whether an Alt-Svc header offers HTTP/3 in any spelling (h3, h3-29, quic).
 * @param {string | null | undefined} header
 */
export function advertisesH3 (header) {
  return parseAltSvc(header).some((a) => normalizeProtocol(a.protocol) === 'h3')
}
