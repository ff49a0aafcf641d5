import { api } from '../api.js'
import { h, ms, ago } from '../dom.js'

/** One monitor: the latest runs per location and mode, then recent runs. */
export async function renderMonitor (view, id) {
  async function draw () {
    const [monitor, { items }] = await Promise.all([api.monitor(id), api.results(id, { limit: 200 })])
    const latest = new Map()
    for (const r of items) {
      const key = `${r.location_id}/${r.mode}`
      if (!latest.has(key)) latest.set(key, r)
    }
    const cards = monitor.locations.map((loc) => h('section', { class: 'card' },
      h('h2', {}, loc),
      h('table', { class: 'grid compact' },
        h('thead', {}, h('tr', {}, ['Mode', 'Protocol', 'TTFB', 'Load', 'Status'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, monitor.modes.map((mode) => {
          const r = latest.get(`${loc}/${mode}`)
          if (!r) return h('tr', {}, h('td', {}, mode.toUpperCase()), h('td', { colspan: 4, class: 'muted' }, 'no runs yet'))
          return h('tr', {},
            h('td', {}, mode.toUpperCase()),
            h('td', {}, h('span', { class: `proto ${r.protocol_ok ? 'ok' : 'bad'}` }, r.observed_protocol ?? 'none')),
            h('td', {}, ms(r.ttfb_ms)),
            h('td', {}, ms(r.load_ms)),
            h('td', { class: r.status === 'ok' ? '' : 'bad' }, r.status === 'ok' ? `ok, ${ago(r.measured_at)}` : `${r.status}${r.error ? `: ${r.error}` : ''}`))
        })))))
    const recent = items.slice(0, 40).map((r) => h('tr', {},
      h('td', {}, new Date(r.measured_at).toLocaleTimeString()),
      h('td', {}, r.location_id),
      h('td', {}, r.mode.toUpperCase()),
      h('td', {}, h('span', { class: `proto ${r.protocol_ok ? 'ok' : 'bad'}` }, r.observed_protocol ?? 'none')),
      h('td', {}, ms(r.ttfb_ms)),
      h('td', {}, ms(r.load_ms)),
      h('td', { class: r.status === 'ok' ? '' : 'bad' }, r.status === 'ok' ? 'ok' : `${r.status}${r.error ? `: ${r.error}` : ''}`)))
    view.replaceChildren(
      h('div', { class: 'title-row' },
        h('div', {}, h('h1', {}, monitor.label || monitor.url), h('div', { class: 'sub' }, monitor.url, ` · every ${monitor.interval_s} s`)),
        h('a', { class: 'button secondary', href: `#/monitors/${id}/edit` }, 'Edit')),
      items.length ? null : h('p', { class: 'state' }, 'Waiting for the first round… results appear here within a minute.'),
      h('div', { class: 'cards' }, cards),
      h('h2', {}, 'Recent runs'),
      items.length
        ? h('table', { class: 'grid' },
            h('thead', {}, h('tr', {}, ['Time', 'Location', 'Mode', 'Protocol', 'TTFB', 'Load', 'Status'].map((t) => h('th', { scope: 'col' }, t)))),
            h('tbody', {}, recent))
        : h('p', { class: 'muted' }, 'No runs yet.')
    )
  }
  await draw()
  const timer = setInterval(() => draw().catch(() => {}), 10000)
  return () => clearInterval(timer)
}
