// Recent runs, newest first; each links to its run detail.
import { h, ms, when } from '../dom.js'
import { href } from '../query.js'

const STATUS_TEXT = { ok: 'ok', error: 'error', timeout: 'timed out', protocol_mismatch: 'fallback' }

/** The observed protocol, red when it is not the one the mode forced. */
export function protocolBadge (r) {
  const p = r.observed_protocol
  const cls = !r.protocol_ok && r.status === 'protocol_mismatch' ? 'mismatch' : p === 'h3' ? 'h3' : p === 'h2' ? 'h2' : 'other'
  return h('span', { class: `proto ${cls}`, title: r.protocol_ok ? 'The navigation used the forced protocol' : `Forced ${r.mode.toUpperCase()}, loaded over ${p ?? 'nothing'}` }, p ?? 'none')
}

export function statusCell (r) {
  const text = STATUS_TEXT[r.status] ?? r.status
  if (r.status === 'ok') return h('td', {}, h('span', { class: 'dot ok', 'aria-hidden': 'true' }), ' ', text)
  return h('td', { class: 'bad' }, h('span', { class: `dot ${r.status === 'protocol_mismatch' ? 'warn' : 'bad'}`, 'aria-hidden': 'true' }), ' ', text,
    r.error ? h('div', { class: 'sub ellipsis', title: r.error }, r.error) : null)
}

/** @param {any[]} items results */
export function runsTable (items, locationName = (id) => id) {
  return h('div', { class: 'table-scroll' },
    h('table', { class: 'grid runs' },
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col' }, 'Time'), h('th', { scope: 'col' }, 'Location'), h('th', { scope: 'col' }, 'Mode'),
        h('th', { scope: 'col' }, 'Protocol'), h('th', { scope: 'col', class: 'num' }, 'TTFB'),
        h('th', { scope: 'col', class: 'num' }, 'FCP'), h('th', { scope: 'col', class: 'num' }, 'Load'),
        h('th', { scope: 'col' }, 'Status'))),
      h('tbody', {}, items.map((r) => h('tr', {},
        h('td', {}, h('a', { href: href(`/results/${r.id}`), title: 'Run detail: timings, requests and flags' }, when(r.measured_at))),
        h('td', {}, locationName(r.location_id)),
        h('td', {}, h('span', { class: `k-${r.mode}` }, r.mode.toUpperCase())),
        h('td', {}, protocolBadge(r)),
        h('td', { class: 'num' }, ms(r.ttfb_ms)),
        h('td', { class: 'num' }, ms(r.fcp_ms)),
        h('td', { class: 'num' }, ms(r.load_ms)),
        statusCell(r))))))
}
