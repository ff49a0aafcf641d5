// Recent runs, newest first; each links to its run detail. Every run says
// its arm and view, and why its page came over its protocol.
import { h, ms, when } from '../dom.js'
import { href } from '../query.js'
import { PAGE_METRICS, storedReasonText } from '../catalogue.js'

const STATUS_TEXT = { ok: 'ok', error: 'error', timeout: 'timed out', protocol_mismatch: 'fallback' }

/** The observed protocol, red when it is not the one the mode forced. */
export function protocolBadge (r) {
  const p = r.observed_protocol
  const cls = !r.protocol_ok && r.status === 'protocol_mismatch' ? 'mismatch' : p === 'h3' ? 'h3' : p === 'h2' ? 'h2' : 'other'
  const title = r.mode === 'auto'
    ? `Nothing forced: the browser chose ${p ?? 'nothing'}`
    : r.protocol_ok ? 'The navigation used the forced protocol' : `Forced ${r.mode.toUpperCase()}, loaded over ${p ?? 'nothing'}`
  return h('span', { class: `proto ${cls}`, title }, p ?? 'none')
}

const VIEW_SHORT = { first: 'first visit', returning: 'returning visit', repeat: 'repeat view' }

/** "H3 run", "Auto run, returning visit". */
export function runName (r) {
  if (r.mode === 'auto') return `Auto run, ${VIEW_SHORT[r.view] ?? r.view}`
  return `${r.mode.toUpperCase()} run${r.view === 'repeat' ? ', repeat view' : ''}`
}

export function statusCell (r) {
  const text = STATUS_TEXT[r.status] ?? r.status
  if (r.status === 'ok') return h('td', {}, h('span', { class: 'dot ok', 'aria-hidden': 'true' }), ' ', text)
  return h('td', { class: 'bad' }, h('span', { class: `dot ${r.status === 'protocol_mismatch' ? 'warn' : 'bad'}`, 'aria-hidden': 'true' }), ' ', text,
    r.error ? h('div', { class: 'sub ellipsis', title: r.error }, r.error) : null)
}

/**
 * Every run with its summary metrics (the catalogue's `summary`).
 * @param {any[]} items results
 */
export function runsTable (items, locationName = (id) => id) {
  const metrics = PAGE_METRICS.filter((m) => m.summary)
  return h('div', { class: 'table-scroll' },
    h('table', { class: 'grid runs' },
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col' }, 'Time'), h('th', { scope: 'col' }, 'Location'), h('th', { scope: 'col' }, 'Mode'),
        h('th', { scope: 'col' }, 'View'), h('th', { scope: 'col' }, 'Protocol'),
        h('th', { scope: 'col', title: 'Why the page came over its protocol: the forced arm\'s switch, or the browser\'s own choice in the auto arm' }, 'Why'),
        metrics.map((m) => h('th', { scope: 'col', class: 'num', title: m.long }, m.label)),
        h('th', { scope: 'col' }, 'Status'))),
      h('tbody', {}, items.map((r) => h('tr', { 'data-mode': r.mode, 'data-view': r.view },
        h('td', {}, h('a', { href: href(`/results/${r.id}`), title: 'Run detail: timings, requests and flags' }, when(r.measured_at))),
        h('td', {}, locationName(r.location_id)),
        h('td', {}, h('span', { class: `k-${r.mode}` }, r.mode.toUpperCase())),
        h('td', {}, VIEW_SHORT[r.view] ?? r.view),
        h('td', {}, protocolBadge(r)),
        h('td', { class: `reason${r.mode === 'auto' ? '' : ' muted'}` }, storedReasonText(r.protocol_reason) ?? '—'),
        metrics.map((m) => h('td', { class: 'num', 'data-metric': m.id }, ms(r[m.column]))),
        statusCell(r))))))
}
