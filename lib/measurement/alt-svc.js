// Alt-Svc (RFC 7838) as servers send it: `h3=":443"; ma=86400, h3-29=":443"`,
// or `clear`. Only what discovery needs: which protocols, where, how long.

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
    // ma is delta-seconds, bare or quoted (RFC 7838 §3); an entry whose ma is
    // anything else (ma=-1) is one browsers do not take.
    const maParam = params.find((p) => /^ma\s*=/i.test(p))
    const ma = maParam === undefined ? null : /^ma\s*=\s*(?:(\d+)|"(\d+)")$/i.exec(maParam)
    if (ma === null && maParam !== undefined) continue
    // The protocol id is percent-encoded (RFC 7838 §3); an entry whose id
    // does not decode (`h3%=":443"`, from any origin a page loads) is one
    // browsers skip, never a reason to fail the page.
    let protocol
    try { protocol = decodeURIComponent(m[1]) } catch { continue }
    out.push({ protocol, authority: m[2] || null, max_age_s: ma ? Number(ma[1] ?? ma[2]) : null })
  }
  return out
}

/**
 * Whether an Alt-Svc header offers the HTTP/3 today's browsers speak: `h3`
 * (RFC 9114) with a lifetime. Chromium and Firefox no longer speak the
 * drafts (`h3-29`) or Google QUIC (`quic`), and an entry with `ma=0` has
 * expired as it arrives: an origin that offers only those offers a user
 * no HTTP/3. Another port is fine (browsers go there).
 * @param {string | null | undefined} header
 */
export function advertisesH3 (header) {
  return parseAltSvc(header).some((a) => a.protocol.toLowerCase() === 'h3' && a.max_age_s !== 0)
}
