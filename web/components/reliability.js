// Fallback and error rates per location and mode: runs that did not count.
import { h, share } from '../dom.js'

const rateCell = (rate, count) => rate > 0
  ? h('td', { class: 'num bad' }, share(rate), h('span', { class: 'sub' }, ` (${count})`))
  : h('td', { class: 'num muted' }, rate === 0 ? '0' : '—')

/** @param {any[]} locations comparison entries, all-locations last */
export function reliabilityTable (locations) {
  const rows = [...locations.filter((l) => l.location_id !== null), ...locations.filter((l) => l.location_id === null)]
  return h('div', { class: 'table-scroll' },
    h('table', { class: 'grid rates' },
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col' }, 'Location'),
        h('th', { scope: 'col', class: 'num' }, 'H2 runs'), h('th', { scope: 'col', class: 'num' }, 'H3 runs'),
        h('th', { scope: 'col', class: 'num', title: 'Loaded over another protocol than the one forced; never averaged in' }, 'H2 fallback'),
        h('th', { scope: 'col', class: 'num', title: 'Loaded over another protocol than the one forced; never averaged in' }, 'H3 fallback'),
        h('th', { scope: 'col', class: 'num', title: 'Failed or timed out' }, 'H2 errors'),
        h('th', { scope: 'col', class: 'num', title: 'Failed or timed out' }, 'H3 errors'))),
      h('tbody', {}, rows.map((l) => h('tr', { class: l.location_id === null ? 'total' : null },
        h('th', { scope: 'row' }, l.name),
        h('td', { class: 'num' }, l.runs?.h2?.total ?? 0),
        h('td', { class: 'num' }, l.runs?.h3?.total ?? 0),
        rateCell(l.fallback_rate?.h2, l.runs?.h2?.fallbacks),
        rateCell(l.fallback_rate?.h3, l.runs?.h3?.fallbacks),
        rateCell(l.error_rate?.h2, l.runs?.h2?.errors),
        rateCell(l.error_rate?.h3, l.runs?.h3?.errors))))))
}
