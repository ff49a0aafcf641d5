// Real users (GET /api/v1/rum/sites/:id/summary): the regions table, the
// association cells and the metrics by protocol. Every comparison here is
// an association, not a controlled comparison, and says so; it is coloured
// only when the API's verdict (the synthetic table's rules) says so.
import { h, ms, pct, count, shareInterval, msInterval, VERDICT, verdictClass } from '../dom.js'

/** An association's verdict, in words that do not claim a cause. */
export const ASSOCIATION_LABEL = {
  h3_faster: 'H3 page views faster',
  h3_slower: 'H3 page views slower',
  no_clear_difference: 'No clear difference',
  insufficient_data: 'Not enough page views'
}

/** The notice shown with every real-user comparison. */
export function associationNotice (summary) {
  const rest = summary.association.replace(/^An association, not a controlled comparison: (.)/, (_, c) => c.toUpperCase())
  return h('p', { class: 'notice association', role: 'note' }, h('strong', {}, 'An association, not a controlled comparison. '), rest)
}

/**
 * One association cell: Δ H3 − H2 at a percentile with its interval, coloured by the verdict.
 * @param {any} row a comparison row of the summary
 */
export function associationCell (row, { compact = false } = {}) {
  if (!row) return h('td', { class: 'v-none' }, '—')
  const tested = row.verdict !== 'insufficient_data'
  const v = VERDICT[row.verdict] ?? VERDICT.insufficient_data
  const label = ASSOCIATION_LABEL[row.verdict] ?? row.verdict
  const views = row.page_views ? `${count(row.page_views.h3)} page views over H3 and ${count(row.page_views.h2)} over H2` : null
  const title = [`p${row.percentile}: ${label} (association)`, tested ? `95% ${msInterval(row.ci_low_ms, row.ci_high_ms)}` : null, row.reason, tested ? `strata: ${row.strata.join(', ')}` : null, views ? `rests on ${views}` : null].filter(Boolean).join('; ')
  return h('td', { class: `assoc ${tested ? verdictClass(row.verdict, row.delta_pct) : 'v-none'}`, title },
    row.delta_ms === null
      ? h('span', { class: 'muted' }, compact ? 'too few' : `too few page views (needs ${count(row.min_page_views)} per protocol in a stratum)`)
      : [
          h('span', { class: 'delta' }, tested ? h('span', { 'aria-hidden': 'true', class: 'glyph' }, v.glyph) : null, ` ${ms(row.delta_ms, { signed: true })} `, h('span', { class: 'pct' }, pct(row.delta_pct, { signed: true }))),
          compact ? null : h('span', { class: 'ci' }, ` 95% ${msInterval(row.ci_low_ms, row.ci_high_ms)}`),
          // The page views this percentile rests on: its strata's, not the region's total.
          compact ? null : h('span', { class: 'sub views' }, ` ${count(row.page_views.h3)} H3 / ${count(row.page_views.h2)} H2 views`),
          compact ? h('span', { class: 'sr-only' }, `, ${label}`) : h('span', { class: 'verdict-label' }, ` ${label}`)
        ])
}

/**
 * Regions as rows: page views, H3 share, the lab's returning-visit share
 * beside it, and the association at p50 and p75 of TTFB and LCP.
 * @param {any} summary
 */
export function regionsTable (summary) {
  const shown = [50, 75].filter((p) => summary.percentiles.includes(p))
  const metrics = [['ttfb_ms', 'TTFB'], ['lcp_ms', 'LCP']]
  return h('div', { class: 'table-scroll' },
    h('table', { class: 'grid rum-regions' },
      h('caption', { class: 'sr-only' }, 'Real users per region: page views, share over HTTP/3 with 95% interval, the lab\'s returning-visit share, and H3 − H2 within strata (an association)'),
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col' }, 'Region'),
        h('th', { scope: 'col', class: 'num' }, 'Page views'),
        h('th', { scope: 'col' }, 'H3 share (95%)'),
        h('th', { scope: 'col' }, 'Lab, returning visit'),
        metrics.flatMap(([, name]) => shown.map((p) => h('th', { scope: 'col' }, `${name} p${p}: H3 − H2`))))),
      h('tbody', {}, summary.regions.map((r) => h('tr', { class: r.region_id === null ? 'all-row' : null },
        h('th', { scope: 'row' }, r.name, r.location_countries ? h('span', { class: 'sub' }, ` ${r.location_countries.join(' ')}`) : null),
        h('td', { class: 'num' }, count(r.page_views)),
        h('td', {}, shareInterval(r.h3_share), h('span', { class: 'sub' }, ` of ${count(r.h3_share.known)}`)),
        h('td', {}, r.lab ? [shareInterval(r.lab.returning), h('span', { class: 'sub' }, ` of ${count(r.lab.returning_visits)}`)] : h('span', { class: 'muted' }, '—')),
        metrics.flatMap(([id]) => shown.map((p) => associationCell(r.comparison[id].find((row) => row.percentile === p), { compact: true }))))))))
}

/**
 * Per region and browser, each protocol's percentiles with their intervals.
 * @param {any} summary
 * @param {string} metric ttfb_ms or lcp_ms
 */
export function protocolTable (summary, metric) {
  const rows = summary.regions.filter((r) => r.region_id !== null).flatMap((r) => r.browsers.map((b) => ({ r, b })))
  if (!rows.length) return h('p', { class: 'muted' }, 'No page views in this window.')
  // A value no view of that protocol gave (a known visit and connection kind each) still says on how many it rests.
  const cell = (x) => (x.value === null ? ['—', h('span', { class: 'sub views' }, ` of ${count(x.n ?? 0)}`)] : [ms(x.value), x.ci_low === null ? null : h('span', { class: 'sub' }, ` ${ms(x.ci_low)}–${ms(x.ci_high)}`),
    h('span', { class: 'sub views' }, ` of ${count(x.n)}`)])
  return h('div', { class: 'table-scroll' },
    h('table', { class: 'grid rum-protocols' },
      h('caption', { class: 'sr-only' }, `${metric} percentiles by protocol, region and browser, with 95% bootstrap intervals and the page views each rests on; not a comparison of the protocols`),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Region'), h('th', { scope: 'col' }, 'Browser'), h('th', { scope: 'col' }, 'H3 share'),
        summary.percentiles.flatMap((p) => [h('th', { scope: 'col', class: 'k-h2' }, `H2 p${p}`), h('th', { scope: 'col', class: 'k-h3' }, `H3 p${p}`)]))),
      h('tbody', {}, rows.map(({ r, b }) => h('tr', {},
        h('th', { scope: 'row' }, r.name), h('td', {}, `${b.family} (${count(b.page_views)})`), h('td', {}, shareInterval(b.h3_share)),
        summary.percentiles.flatMap((p, k) => [h('td', {}, cell(b.metrics[metric].h2[k])), h('td', {}, cell(b.metrics[metric].h3[k]))]))))))
}
