import { api } from '../api.js'
import { h, ms, ago, stateMessage } from '../dom.js'

/** Monitors list with each monitor's latest TTFB per mode. */
export async function renderMonitors (view) {
  const monitors = await api.monitors()
  if (!monitors.length) {
    view.replaceChildren(
      h('h1', {}, 'Monitors'),
      stateMessage('No monitors yet. Add a URL to compare HTTP/3 with HTTP/2 for it.'),
      h('p', {}, h('a', { class: 'button', href: '#/new' }, 'Add a URL'))
    )
    return
  }
  const latest = await Promise.all(monitors.map((m) => api.results(m.id, { limit: 20 }).then((r) => r.items, () => [])))
  const rows = monitors.map((m, i) => {
    const pick = (mode) => latest[i].find((r) => r.mode === mode)
    const cell = (r) => r
      ? h('td', { class: r.status === 'ok' ? '' : 'bad' }, r.status === 'ok' ? ms(r.ttfb_ms) : r.status.replace('_', ' '))
      : h('td', { class: 'muted' }, '—')
    return h('tr', {},
      h('td', {}, h('a', { href: `#/monitors/${m.id}` }, m.label || m.url), h('div', { class: 'sub' }, m.url)),
      h('td', {}, m.locations.join(', ')),
      h('td', {}, `${m.interval_s} s`, m.paused ? h('span', { class: 'badge' }, 'paused') : null),
      cell(pick('h2')),
      cell(pick('h3')),
      h('td', { class: 'muted' }, ago(latest[i][0]?.measured_at))
    )
  })
  view.replaceChildren(
    h('div', { class: 'title-row' }, h('h1', {}, 'Monitors'), h('a', { class: 'button', href: '#/new' }, 'Add a URL')),
    h('table', { class: 'grid' },
      h('thead', {}, h('tr', {}, ['Monitor', 'Locations', 'Every', 'Last H2 TTFB', 'Last H3 TTFB', 'Last run'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, rows))
  )
  const timer = setInterval(() => renderMonitors(view).catch(() => {}), 15000)
  return () => clearInterval(timer)
}
