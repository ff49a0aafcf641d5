import { api } from '../api.js'
import { h, ago } from '../dom.js'

export async function renderLocations (view) {
  const [locations, agents] = await Promise.all([api.locations(), api.agents()])
  const profile = (p) => p && Object.keys(p).length
    ? Object.entries(p).filter(([, v]) => typeof v !== 'object').map(([k, v]) => `${k} ${v}`).join(' · ')
    : '—'
  view.replaceChildren(
    h('h1', {}, 'Locations and agents'),
    h('table', { class: 'grid' },
      h('thead', {}, h('tr', {}, ['Location', 'Region', 'Kind', 'Network profile', 'Agents'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, locations.map((l) => h('tr', {},
        h('td', {}, l.id), h('td', {}, l.region), h('td', {}, l.kind), h('td', { class: 'sub' }, profile(l.profile)),
        h('td', {}, agents.filter((a) => a.location_id === l.id && !a.revoked_at).map((a) =>
          h('div', {}, h('span', { class: `dot ${a.alive ? 'ok' : 'bad'}`, 'aria-label': a.alive ? 'alive' : 'not seen recently' }),
            ` ${a.name} · ${a.version ?? '?'} · ${a.browser_version ?? ''} · seen ${ago(a.last_seen_at)}`))))))))
}
