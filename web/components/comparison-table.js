// The regional comparison table: rows are percentiles, column groups are
// locations (all locations first); each cell shows H2, H3, the delta in ms
// and % with its 95% interval, coloured by the verdict, not by the sign.
import { h, ms, pct, srOnly, VERDICT, verdictClass } from '../dom.js'

/** @param {any} cmp response of GET /monitors/:id/comparison */
export function comparisonTable (cmp) {
  const locs = [...cmp.locations.filter((l) => l.location_id === null), ...cmp.locations.filter((l) => l.location_id !== null)]
  const head = h('tr', {},
    h('th', { scope: 'col', class: 'pcol' }, h('span', { class: 'sr-only' }, 'Percentile')),
    locs.map((l) => h('th', { scope: 'col', class: l.location_id === null ? 'all-col' : null },
      h('span', { class: 'loc-name' }, l.name),
      h('span', { class: 'loc-meta' }, [l.rtt_ms ? `RTT ${l.rtt_ms} ms` : l.region, `n ${l.n_h2} H2 / ${l.n_h3} H3`].filter(Boolean).join(' · ')))))
  const body = cmp.percentiles.map((p, i) => h('tr', {},
    h('th', { scope: 'row' }, `p${p}`),
    locs.map((l) => {
      if (l.insufficient_data) {
        return i === 0
          ? h('td', { class: `v-none${l.location_id === null ? ' all-col' : ''}`, rowspan: cmp.percentiles.length },
              h('p', { class: 'none-text' }, 'Not enough data'), h('p', { class: 'cell-sub' }, l.reason ?? ''))
          : null
      }
      return cell(l.rows.find((r) => r.percentile === p), p, l)
    })))
  const foot = h('tr', {},
    h('th', { scope: 'row', title: 'Whole-distribution tests' }, 'All'),
    locs.map((l) => h('td', { class: l.location_id === null ? 'all-col' : null }, l.insufficient_data ? '—' : wholeDistribution(l))))
  return h('div', { class: 'table-scroll' },
    h('table', { class: 'compare' },
      h('caption', { class: 'sr-only' }, `H2 against H3 per percentile and location, ${cmp.metric}; delta is H3 minus H2, negative means HTTP/3 is faster`),
      h('thead', {}, head), h('tbody', {}, body), h('tfoot', {}, foot)))
}

function cell (r, p, loc) {
  const all = loc.location_id === null ? ' all-col' : ''
  if (!r || r.h2_ms === null || r.h3_ms === null) return h('td', { class: `v-none${all}` }, '—')
  const v = VERDICT[r.verdict] ?? VERDICT.insufficient_data
  return h('td', { class: `cmp-cell ${verdictClass(r.verdict, r.delta_pct)}${all}`, title: `${loc.name}, p${p}: ${v.label}` },
    h('div', { class: 'delta' },
      h('span', { 'aria-hidden': 'true', class: 'glyph' }, v.glyph),
      h('span', {}, ms(r.delta_ms, { signed: true })),
      h('span', { class: 'pct' }, pct(r.delta_pct, { signed: true })),
      srOnly(`, ${v.label}`)),
    h('div', { class: 'vals' },
      h('span', {}, h('span', { class: 'k-h2' }, 'H2 '), h('b', {}, ms(r.h2_ms))),
      h('span', {}, h('span', { class: 'k-h3' }, 'H3 '), h('b', {}, ms(r.h3_ms)))),
    h('div', { class: 'ci' }, '95% CI ', ms(r.ci_low_ms, { signed: true }), ' … ', ms(r.ci_high_ms, { signed: true })))
}

function wholeDistribution (l) {
  const p = l.mann_whitney_p
  const pText = p === null || p === undefined ? '—' : p < 0.001 ? '< 0.001' : p.toFixed(3)
  const d = l.cliffs_delta
  return h('span', { title: 'Cliff\'s δ of H3 against H2 (negative: H3 tends to be faster) and the two-sided Mann–Whitney U p-value over the whole distributions' },
    `Cliff's δ ${d === null || d === undefined ? '—' : d.toFixed(2).replace('-', '−')} · p ${pText}`)
}
