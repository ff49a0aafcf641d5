// "As users get it": the auto arm (the browser's defaults, nothing forced)
// beside the forced comparison, per location. First the location's story
// in words; then the H3 share of each visit with the race outcomes the
// browser reported; then, per visit and percentile, the auto arm against
// H2 and forced H3 in the same rounds, and the received gain. The cells
// follow the forced table's conventions (comparison-table.js): green or red
// only for a verdict, grey for no clear difference, hatched for too few
// rounds, and every number says the rounds it rests on.
import { h, ms, pct, count, share, shareInterval, msInterval, emptyState, VERDICT } from '../dom.js'
import { href } from '../query.js'
import { reasonText, usageOf } from '../catalogue.js'

export const VISIT_NAMES = { first: 'First visit', returning: 'Returning visit', repeat: 'Repeat view' }
const VISIT_HINTS = {
  first: 'cold: a new browser profile, the origin not yet known',
  returning: 'the browser started again on that profile: what it learnt of the origin (Alt-Svc, QUIC marked broken) kept, no live connection, no cached response',
  repeat: 'a second page view right after the returning visit, on its live connections'
}
const CONTRASTS = [
  { id: 'auto_vs_h2', ref: 'H2', title: 'auto − H2: what users gain over H2' },
  { id: 'auto_vs_h3', ref: 'forced H3', title: 'auto − H3: what users miss of forced H3' }
]
const CELL = {
  faster: { glyph: '▼', cls: VERDICT.h3_faster.cls, text: (ref) => `auto faster than ${ref}` },
  slower: { glyph: '▲', cls: VERDICT.h3_slower.cls, text: (ref) => `auto slower than ${ref}` },
  no_clear_difference: { glyph: '=', cls: VERDICT.no_clear_difference.cls, text: () => 'No clear difference' },
  insufficient_data: { glyph: '·', cls: VERDICT.insufficient_data.cls, text: () => 'Not enough data' }
}

/**
 * @param {any} a response of GET /monitors/:id/auto
 * @param {{ monitor: any, label: string }} o label: the metric's
 */
export function usersGet (a, { monitor, label }) {
  const withVisits = a.locations.filter((l) => l.story.code !== 'no_data')
  if (monitor.aa_protocol) {
    return emptyState('An A/A calibration monitor has no auto arm',
      `Its two arms both load over ${monitor.aa_protocol} to show the noise floor; the auto arm belongs to monitors that compare H2 with H3.`)
  }
  if (!withVisits.length) {
    return a.has_auto
      ? emptyState('No visit of the auto arm in this window', 'The auto arm runs in every round with the forced arms; its visits show here after the next rounds. Choose a longer window to see earlier ones.')
      : emptyState('This monitor does not run the auto arm',
          'Turn it on to see what users get: edit the monitor and tick “As users get it (auto)” under Modes. It adds a third arm with nothing forced and two visits, a first and a returning one: per round, two more page loads and two browser starts.',
          h('a', { class: 'button secondary', href: href(`/monitors/${monitor.id}/edit`) }, 'Edit monitor'))
  }
  const order = [...monitor.locations.filter((id) => withVisits.some((l) => l.location_id === id)), ...withVisits.map((l) => l.location_id).filter((id) => !monitor.locations.includes(id))]
  return [
    a.has_auto ? null : h('p', { class: 'notice' }, 'This monitor no longer runs the auto arm; these are the visits it made in this window.'),
    legend(a),
    h('div', { class: 'users-locs' }, order.map((id) => locationCard(withVisits.find((l) => l.location_id === id), a, label)))
  ]
}

function legend (a) {
  const item = (cls, glyph, text) => h('span', { class: 'legend-item' }, h('span', { class: `swatch ${cls}`, 'aria-hidden': 'true' }, glyph), text)
  const min = a.min_effect
  return h('div', { class: 'legend-block', role: 'note', 'aria-label': 'What the colours mean' },
    h('div', { class: 'legend' },
      item(CELL.faster.cls, '▼', 'auto faster'), item(CELL.slower.cls, '▲', 'auto slower'),
      item(CELL.no_clear_difference.cls, '=', 'No clear difference'), item(CELL.insufficient_data.cls, '·', 'Not enough data')),
    h('p', { class: 'legend-note' },
      h('b', {}, 'Green or red'), ` only when Δ is significant after correcting for the ${count(a.cells?.tested ?? 0)} cells tested here (a column per location, visit and comparison: columns selected by Benjamini–Hochberg over their Simes p-values, then Benjamini–Hochberg within each selected column), its 95% interval excludes 0 and |Δ| is at least max(${min.pct}% of the forced arm, ${min.ms} ms); as in the forced table. `,
      h('b', {}, 'Received gain'), ' = (H2 − auto) / (H2 − H3): 100% means users get all of the forced H3 gain, 0% none of it; above 100%, the auto arm is faster than forced H3, below 0%, slower than H2. It is shown only where forced H3 is clearly faster than H2 in the same rounds. Shown in some cells and not others, its intervals are widened for that choice: each is at 1 − 5% × shown / tested (95% when every forced gain tested is shown), so that 5% or fewer of those shown miss the truth.'))
}

function locationCard (l, a, label) {
  // A WebPageTest agent makes the first visit only: no returning visit is missing there.
  const firstOnly = l.kind === 'wpt' && !l.shares.returning?.visits
  const views = ['first', 'returning', 'repeat'].filter((v) => (v !== 'repeat' || l.shares.repeat?.visits) && (v !== 'returning' || !firstOnly))
  return h('article', { class: 'users-loc', 'data-location': l.location_id, 'aria-labelledby': `users-${l.location_id}` },
    h('h3', { id: `users-${l.location_id}` }, l.name, l.region ? h('span', { class: 'loc-meta' }, l.region) : null),
    h('p', { class: `story story-${l.story.code}`, 'data-story': l.story.code }, l.story.text),
    firstOnly ? h('p', { class: 'muted', 'data-note': 'wpt-first-visit' }, 'A WebPageTest agent makes the first visit only: its browser cannot be started again on the same profile, so this location has no returning visit.') : null,
    h('div', { class: 'table-scroll' }, shareTable(l, views)),
    h('div', { class: 'table-scroll' }, timingTable(l, a, label, firstOnly ? ['first'] : ['first', 'returning'])))
}

/** Per visit: the H3 share of pages and bytes, and what the browser said about each visit. */
function shareTable (l, views) {
  return h('table', { class: 'grid users-share' },
    h('caption', {}, 'H3 share by visit, and why the browser chose its protocol'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Visit'),
      h('th', { scope: 'col', title: 'Visits whose page came over H3, of the visits that loaded, with a Wilson 95% interval' }, 'Pages over H3'),
      h('th', { scope: 'col', title: 'Bytes over H3 of all bytes the loaded visits fetched, with a 95% interval' }, 'Bytes over H3'),
      h('th', { scope: 'col', title: 'The reason each visit gives for its protocol' }, 'Why (visits)'),
      h('th', { scope: 'col', title: 'Chromium\'s alternateProtocolUsage of the page\'s document, per visit that loaded: how the race between QUIC and TCP went' }, 'Race outcome (visits)'))),
    h('tbody', {}, views.map((v) => {
      const s = l.shares[v]
      return h('tr', { 'data-visit': v },
        h('th', { scope: 'row', title: VISIT_HINTS[v] }, VISIT_NAMES[v]),
        h('td', { class: 'share-pages' }, pagesText(s)),
        h('td', { class: 'share-bytes' }, bytesText(s)),
        h('td', {}, countList(s.reasons, (code) => h('span', {}, reasonText(code)))),
        h('td', {}, countList(s.alternate_protocol_usage, usageText)))
    })))
}

/** "63% (45–78%) of 40 visits", with the visits that did not load. */
function pagesText (s) {
  if (!s.visits) return h('span', { class: 'muted' }, 'no visits')
  if (!s.loaded) return h('span', { class: 'muted' }, `none of ${count(s.visits)} visits loaded`)
  const failed = s.visits - s.loaded
  return [h('b', {}, shareInterval(s.navigation_share)), ` of ${count(s.loaded)} visit${s.loaded === 1 ? '' : 's'}`,
    failed ? h('span', { class: 'sub' }, ` (${count(failed)} more did not load)`) : null]
}

/** "71% (60–80%) of bytes, 40 visits": the visits that fetched bytes, which the share rests on. */
function bytesText (s) {
  if (!s.loaded) return '—'
  if (!s.byte_share.n) return h('span', { class: 'muted' }, 'no bytes counted')
  return [`${shareInterval(s.byte_share)} of bytes`, h('span', { class: 'sub' }, `, ${count(s.byte_share.n)} visit${s.byte_share.n === 1 ? '' : 's'}`)]
}

function usageText (value) {
  if (value === 'none') return h('span', { class: 'muted' }, 'not reported')
  const u = usageOf(value)
  return h('span', { title: `${value}: ${u.text}` }, u.text)
}

/** Largest first: "Not H3: TCP won the race 31". */
function countList (counts, label) {
  const entries = Object.entries(counts ?? {}).sort((x, y) => y[1] - x[1])
  if (!entries.length) return h('span', { class: 'muted' }, '—')
  return h('ul', { class: 'counts' }, entries.map(([k, n]) => h('li', { 'data-key': k }, label(k), ' ', h('span', { class: 'count' }, count(n)))))
}

/** Per visit and percentile: the three arms, auto − H2, auto − H3, the received gain. */
function timingTable (l, a, label, visits) {
  const body = visits.flatMap((v) => visitRows(l.visits[v], v, a))
  return h('table', { class: 'grid users-timing' },
    h('caption', {}, `${label} of the auto arm against the forced arms, in the same rounds`),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Percentile')),
      h('th', { scope: 'col', class: 'num' }, 'H2'), h('th', { scope: 'col', class: 'num' }, 'H3'), h('th', { scope: 'col', class: 'num' }, 'Auto'),
      CONTRASTS.map((c) => h('th', { scope: 'col', title: c.title }, `auto − ${c.ref}`)),
      h('th', { scope: 'col', title: '(H2 − auto) / (H2 − H3) with its round-bootstrap interval, at 1 − 5% × shown / tested (each cell says its level), widened for each arm\'s loads that did not complete' }, 'Received gain'))),
    h('tbody', {}, body))
}

function visitRows (visit, v, a) {
  const head = h('tr', { class: 'visit-head', 'data-visit': v },
    h('th', { scope: 'rowgroup', colspan: 7 }, h('span', { title: VISIT_HINTS[v] }, VISIT_NAMES[v]), ' ', h('span', { class: 'rounds-note' }, roundsText(visit))))
  if (visit.insufficient_data && visit.rows.every((r) => r.auto_ms === null)) {
    return [head, h('tr', { 'data-visit': v }, h('td', { colspan: 7, class: 'v-none whole' }, h('span', { class: 'none-text' }, 'Not enough data: '), visit.reason ?? ''))]
  }
  return [head, ...visit.rows.map((r) => h('tr', { 'data-visit': v, 'data-percentile': r.percentile },
    h('th', { scope: 'row' }, `p${r.percentile}`),
    h('td', { class: 'num' }, ms(r.h2_ms)), h('td', { class: 'num' }, ms(r.h3_ms)), h('td', { class: 'num' }, h('b', {}, ms(r.auto_ms))),
    CONTRASTS.map((c) => contrastCell(r.contrasts[c.id], c, r, a)),
    gainCell(r.received_gain, r)))]
}

/** "68 rounds in which all three arms loaded, of 72; 4 left out: 4 H3 failed". */
function roundsText (visit) {
  const r = visit.rounds
  if (!r.total) return 'no rounds in this window'
  const out = r.excluded.reduce((n, x) => n + x.rounds, 0)
  const why = r.excluded.slice(0, 3).map((x) => `${count(x.rounds)} ${excludedText(x)}`).join(', ')
  // Above the round cap the numbers rest on an evenly spaced subsample: said, as the forced table says it.
  const sampled = r.used && r.used < r.matched ? `; the numbers below rest on ${count(r.used)} of them, evenly spaced` : ''
  return `${count(r.matched)} round${r.matched === 1 ? '' : 's'} in which all three arms loaded, of ${count(r.total)}${out ? `; ${count(out)} left out: ${why}${r.excluded.length > 3 ? ', …' : ''}` : ''}${sampled}`
}

const STATE = { failed: 'failed', fallback: 'fell back', unsupported: 'refused QUIC', no_value: 'had no value', missing: 'did not run' }

function excludedText (x) {
  const arms = [['H2', x.h2], ['H3', x.h3], ['auto', x.auto]].filter(([, s]) => s !== 'ok')
  return arms.map(([name, s]) => `${name} ${STATE[s] ?? s}`).join(', ')
}

function contrastCell (c, spec, row, a) {
  const k = CELL[c.verdict] ?? CELL.insufficient_data
  const tested = c.verdict !== 'insufficient_data'
  const why = c.verdict === 'no_clear_difference' || !tested ? c.reason : null
  const title = [`p${row.percentile}, ${spec.title}: ${k.text(spec.ref)}`, c.reason, c.p_adjusted !== null && c.p_adjusted !== undefined ? `adjusted p = ${c.p_adjusted.toPrecision(2)}` : null,
    `${count(row.rounds)} rounds`].filter(Boolean).join('; ')
  return h('td', { class: `cmp-cell ${tested ? k.cls : 'v-none untested'}`, title, 'data-contrast': spec.id, 'data-verdict': c.verdict },
    c.delta_ms === null
      ? null
      : h('div', { class: 'delta' },
          tested ? h('span', { 'aria-hidden': 'true', class: 'glyph' }, k.glyph) : h('span', { class: 'untested-tag' }, 'untested'),
          h('span', {}, ms(c.delta_ms, { signed: true })), h('span', { class: 'pct' }, pct(c.delta_pct, { signed: true }))),
    tested && c.ci_low_ms !== null ? h('div', { class: 'ci' }, '95% CI ', msInterval(c.ci_low_ms, c.ci_high_ms)) : null,
    h('div', { class: 'verdict-line' }, h('span', { class: 'verdict-label' }, k.text(spec.ref)), why ? h('span', { class: 'why' }, why) : null))
}

/** "87% of the H3 gain (97.5% 62–104%)", or why it is not shown. */
function gainCell (g, row) {
  if (!g?.shown) {
    return h('td', { class: 'gain not-shown', 'data-shown': 'false' }, h('span', { class: 'muted' }, 'not shown: '), h('span', { class: 'gain-why' }, g?.reason ?? 'no forced gain to receive'))
  }
  const level = `${Math.round((g.level ?? 0.95) * 1000) / 10}%`
  const interval = g.ci_low !== null && g.ci_high !== null ? `${level} ${pct(g.ci_low * 100)} … ${pct(g.ci_high * 100)}` : 'no interval'
  return h('td', { class: 'gain', 'data-shown': 'true', title: `(H2 − auto) / (H2 − H3) at p${row.percentile} over ${count(row.rounds)} rounds; its ${level} interval holds the shares r for which (H2 − auto) − r × (H2 − H3) is not clearly different from 0 over round-bootstrap resamples` },
    h('b', {}, `${share(g.value)} of the H3 gain`), h('div', { class: 'ci' }, interval))
}
