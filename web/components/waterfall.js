// Run detail parts: timing bars (with RTT units) and the request waterfall
// with each request's protocol, Chromium's race outcome (why QUIC was or was
// not used) and connection.
import { h, ms, bytes } from '../dom.js'
import { PAGE_METRICS, usageOf } from '../catalogue.js'

/**
 * The run's timings as the catalogue draws them (each metric's timeline):
 * the durations first (the connection's phases), then the times since
 * navigation start; each group shortest first, so the second reads as the
 * page's own timeline.
 * @param {any} r result
 */
function timingsOf (r) {
  const value = (m) => r[m.column] ?? Infinity
  const group = (kind) => PAGE_METRICS.filter((m) => m.timeline === kind).sort((a, b) => value(a) - value(b))
  return [...group('span'), ...group('mark')]
}

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
  const timings = timingsOf(r)
  const max = Math.max(...timings.map((m) => r[m.column] ?? 0), 1)
  const kinds = `${timings.filter((m) => m.timeline === 'span').map((m) => m.label).join(', ')} are durations; the others are times since navigation start.`
  return h('div', { class: 'timings' },
    h('table', { class: 'timing-table' },
      h('caption', { class: 'sr-only' }, `Navigation timings: ${kinds}`),
      h('tbody', {}, timings.map((m) => {
        const v = r[m.column]
        const own = r[m.column.replace(/_ms$/, '_rtt')]
        const units = !m.rttFloor ? null : own === null || own === undefined ? inRtt(v, rtt?.ms) : `${own.toFixed(1)} RTT`
        const bar = h('span', { class: `tbar ${m.timeline} ${r.mode}` })
        bar.style.width = `${v ? Math.max(0.4, v / max * 100) : 0}%`
        return h('tr', { 'data-metric': m.id },
          h('th', { scope: 'row', title: `${m.long}: ${m.description}` }, m.label),
          h('td', { class: 'track-cell' }, h('span', { class: 'track' }, bar)),
          h('td', { class: 'num' }, ms(v), units ? h('span', { class: 'rtt' }, ` = ${units}`) : null))
      }))),
    h('p', { class: 'hint' }, rtt
      ? `RTT ${ms(rtt.ms)}, from ${rtt.source}. A fresh H2 connection needs 2 RTT (TCP + TLS 1.3) before the request can go out, H3 needs 1.`
      : 'The RTT of this run is unknown, so there are no RTT units.',
    ` ${kinds}`))
}

/**
 * Whether a request's URL is only its start: the agent keeps a long URL's
 * first characters and its whole length (lib/measurement/result.js MAX_KEPT_URL).
 * @param {any} q
 */
function cutUrl (q) {
  return typeof q.url === 'string' && Number.isInteger(q.url_length) && q.url_length > q.url.length
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
        const cut = cutUrl(q)
        return h('tr', {},
          h('td', { class: 'num muted' }, i + 1),
          h('td', { class: 'wf-url', title: cut ? `${q.url}… (the first ${q.url.length.toLocaleString('en')} of its ${q.url_length.toLocaleString('en')} characters)` : q.url },
            h('span', { class: 'wf-url-text' }, hosts.size > 1 ? h('span', { class: 'muted' }, hostOf(q.url)) : null, shortUrl(q.url), cut ? '…' : null)),
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
