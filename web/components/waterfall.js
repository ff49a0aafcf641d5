// Run detail parts: timing bars (with RTT units) and the request waterfall
// with each request's protocol, Chromium's race outcome (why QUIC was or was
// not used) and connection.
import { h, ms, bytes } from '../dom.js'
import { usageOf } from '../catalogue.js'

const TIMINGS = [
  { key: 'dns_ms', label: 'DNS', kind: 'span' },
  { key: 'connect_ms', label: 'Connect', kind: 'span', rtt: true, note: 'TCP + TLS for H2; the QUIC handshake for H3' },
  { key: 'tls_ms', label: 'TLS', kind: 'span' },
  { key: 'ttfb_ms', label: 'TTFB', kind: 'mark', rtt: true },
  { key: 'fcp_ms', label: 'FCP', kind: 'mark' },
  { key: 'lcp_ms', label: 'LCP', kind: 'mark' },
  { key: 'dcl_ms', label: 'DOMContentLoaded', kind: 'mark' },
  { key: 'load_ms', label: 'Load', kind: 'mark' }
]

/** "182 ms = 3.0 RTT" when the RTT is known. */
export function inRtt (value, rtt) {
  if (value === null || value === undefined || !(rtt > 0)) return null
  return `${(value / rtt).toFixed(1)} RTT`
}

/**
 * @param {any} r result
 * @param {{ ms: number, source: string } | null} rtt round-trip time, when known
 */
export function timingBars (r, rtt) {
  const max = Math.max(...TIMINGS.map((t) => r[t.key] ?? 0), 1)
  return h('div', { class: 'timings' },
    h('table', { class: 'timing-table' },
      h('caption', { class: 'sr-only' }, 'Navigation timings: DNS, connect and TLS are durations; the others are times since navigation start'),
      h('tbody', {}, TIMINGS.map((t) => {
        const v = r[t.key]
        const own = r[t.key.replace('_ms', '_rtt')]
        const units = !t.rtt ? null : own === null || own === undefined ? inRtt(v, rtt?.ms) : `${own.toFixed(1)} RTT`
        const bar = h('span', { class: `tbar ${t.kind} ${r.mode}` })
        bar.style.width = `${v ? Math.max(0.4, v / max * 100) : 0}%`
        return h('tr', {},
          h('th', { scope: 'row', title: t.note ?? null }, t.label),
          h('td', { class: 'track-cell' }, h('span', { class: 'track' }, bar)),
          h('td', { class: 'num' }, ms(v), units ? h('span', { class: 'rtt' }, ` = ${units}`) : null))
      }))),
    h('p', { class: 'hint' }, rtt
      ? `RTT ${ms(rtt.ms)}, from ${rtt.source}. A fresh H2 connection needs 2 RTT (TCP + TLS 1.3) before the request can go out, H3 needs 1.`
      : 'The RTT of this run is unknown, so there are no RTT units.',
    ' DNS, Connect and TLS are durations; the others are times since navigation start.'))
}

/** Path and query of a URL, for the waterfall's first column. */
function shortUrl (url) {
  try {
    const u = new URL(url)
    return `${u.pathname}${u.search}` || '/'
  } catch {
    return url
  }
}

/** @param {any[]} requests details.requests */
export function waterfall (requests) {
  const end = Math.max(...requests.map((q) => q.end_ms ?? q.start_ms ?? 0), 1)
  const hosts = new Set(requests.map((q) => hostOf(q.url)))
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const t = h('span', { class: 'tick' }, ms(end * f))
    t.style.left = `${f * 100}%`
    return t
  })
  return h('div', { class: 'table-scroll' },
    h('table', { class: 'grid waterfall' },
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col', class: 'num' }, '#'), h('th', { scope: 'col' }, 'Request'), h('th', { scope: 'col' }, 'Protocol'),
        h('th', { scope: 'col', title: 'Chromium\'s alternateProtocolUsage: why QUIC was or was not used for the request (reported where a new connection was chosen)' }, 'Race'),
        h('th', { scope: 'col', class: 'num' }, 'Status'), h('th', { scope: 'col', class: 'num' }, 'Size'),
        h('th', { scope: 'col' }, 'Connection'), h('th', { scope: 'col', class: 'wf-col' }, h('span', { class: 'sr-only' }, 'Timeline'), h('span', { class: 'ticks', 'aria-hidden': 'true' }, ticks)))),
      h('tbody', {}, requests.map((q, i) => {
        const start = q.start_ms ?? 0
        const bar = h('span', { class: `wbar ${protoClass(q.protocol)}${q.from_cache ? ' cached' : ''}` }, phaseSegments(q, start))
        bar.style.left = `${start / end * 100}%`
        bar.style.width = `${Math.max(0.5, ((q.end_ms ?? start) - start) / end * 100)}%`
        return h('tr', {},
          h('td', { class: 'num muted' }, i + 1),
          h('td', { class: 'wf-url', title: q.url }, hosts.size > 1 ? h('span', { class: 'muted' }, hostOf(q.url)) : null, shortUrl(q.url)),
          h('td', {}, h('span', { class: `proto ${protoClass(q.protocol)}` }, q.protocol ?? '—')),
          h('td', { class: 'usage-cell' }, usageBadge(q.alternate_protocol_usage)),
          h('td', { class: `num${q.status >= 400 || q.failed ? ' bad' : ''}`, title: q.failed ?? null }, q.status ?? (q.failed ? 'failed' : '—')),
          h('td', { class: 'num' }, bytes(q.bytes)),
          h('td', { class: 'sub conn' }, connection(q)),
          h('td', { class: 'wf-col', title: `${ms(q.start_ms)} → ${ms(q.end_ms)}${phaseText(q.timing)}` },
            h('span', { class: 'wtrack' }, bar), h('span', { class: 'sr-only' }, `${ms(q.start_ms)} to ${ms(q.end_ms)}`)))
      }))))
}

/** Chromium's alternateProtocolUsage as a short label, its meaning in the tooltip. */
function usageBadge (value) {
  if (!value) return h('span', { class: 'muted' }, '—')
  const u = usageOf(value)
  return h('span', { class: 'badge usage', title: `${value}: ${u.text}`, 'data-usage': value }, u.label, h('span', { class: 'sr-only' }, `: ${u.text}`))
}

/** "#12 reused" or "#12 new": a reused connection had its handshake paid already. */
function connection (q) {
  if (q.from_cache) return h('span', { class: 'badge' }, 'cache')
  if (q.connection_id === null || q.connection_id === undefined) return '—'
  return [`#${q.connection_id} `, q.connection_reused
    ? h('span', { class: 'badge reused', title: 'The request went over a connection opened earlier: no handshake' }, 'reused')
    : h('span', { title: 'A new connection: its handshake is in this request' }, 'new')]
}

// Phases of a request drawn inside its bar: set-up (DNS, connect, TLS or
// the QUIC handshake, send), waiting for the first byte, downloading.
/** @type {[string, string[]][]} */
const PHASES = [['setup', ['dns_ms', 'connect_ms', 'send_ms']], ['wait', ['wait_ms']], ['receive', ['receive_ms']]]

function phaseSegments (q, start) {
  const t = q.timing
  const total = (q.end_ms ?? start) - start
  if (!t || !(total > 0)) return null
  return PHASES.map(([name, keys]) => {
    const d = keys.reduce((sum, k) => sum + (t[k] > 0 ? t[k] : 0), 0)
    if (!(d > 0)) return null
    const seg = h('span', { class: `seg ${name}` })
    seg.style.width = `${Math.min(100, d / total * 100)}%`
    return seg
  })
}

function phaseText (t) {
  if (!t) return ''
  const parts = [['DNS', t.dns_ms], ['connect', t.connect_ms], ['TLS', t.ssl_ms], ['send', t.send_ms], ['wait', t.wait_ms], ['download', t.receive_ms]]
    .filter(([, v]) => v !== null && v !== undefined && v >= 0).map(([k, v]) => `${k} ${ms(v)}`)
  return parts.length ? `\n${parts.join(' · ')}` : ''
}

function hostOf (url) {
  try { return new URL(url).host } catch { return '' }
}

const protoClass = (p) => (p === 'h3' ? 'h3' : p === 'h2' ? 'h2' : 'other')
