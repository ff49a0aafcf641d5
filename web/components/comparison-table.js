// The regional comparison table: rows are percentiles, column groups are
// locations (all locations first, stratified). Each column says how many
// rounds its numbers rest on and why the others were left out; each cell
// shows H2, H3, the delta in ms and % with its 95% interval and the verdict,
// coloured by the verdict, not by the sign. The foot holds the
// location-level paired test and the unpaired description.
import { h, ms, pct, count, pValue, msInterval, srOnly, armNames, shareInterval, VERDICT, verdictClass } from '../dom.js'
import { ASSOCIATION_LABEL } from './real-users.js'

/**
 * @param {any} cmp response of GET /monitors/:id/comparison
 * @param {{ highlight?: number | null, realUsers?: any }} [o] highlight: a percentile to mark (the row an alert's evidence
 *   points at); realUsers: GET /rum/monitors/:id, whose regions get a "Real users" row
 */
export function comparisonTable (cmp, { highlight = null, realUsers = null } = {}) {
  const names = armNames(cmp)
  const locs = [...cmp.locations.filter((l) => l.location_id === null), ...cmp.locations.filter((l) => l.location_id !== null)]
  const head = h('tr', {},
    h('th', { scope: 'col', class: 'pcol' }, h('span', { class: 'sr-only' }, 'Percentile')),
    locs.map((l) => columnHead(l, cmp, names)))
  const body = cmp.percentiles.map((p, i) => h('tr', { class: p === highlight ? 'evidence-row' : null },
    h('th', { scope: 'row' }, `p${p}`),
    locs.map((l) => {
      const all = l.location_id === null ? ' all-col' : ''
      if (l.h3_supported === false) {
        return i === 0
          ? h('td', { class: `v-unsupported whole${all}`, rowspan: cmp.percentiles.length },
              h('p', { class: 'none-text' }, 'H3 not supported'),
              h('p', { class: 'cell-sub' }, unsupportedText(l)))
          : null
      }
      if (l.insufficient_data && l.rows.every((r) => r.h2_ms === null)) {
        return i === 0
          ? h('td', { class: `v-none whole${all}`, rowspan: cmp.percentiles.length },
              h('p', { class: 'none-text' }, 'Not enough data'), h('p', { class: 'cell-sub' }, numbers(l.reason ?? '')))
          : null
      }
      return cell(l.rows.find((r) => r.percentile === p), p, l, names)
    })))
  const foot = [
    h('tr', {},
      h('th', { scope: 'row', title: 'Location-level paired test on per-round differences' }, 'Paired'),
      locs.map((l) => h('td', { class: l.location_id === null ? 'all-col' : null }, pairedText(l, names)))),
    h('tr', {},
      h('th', { scope: 'row', title: 'Unpaired description of the same samples' }, 'Unpaired'),
      locs.map((l) => h('td', { class: l.location_id === null ? 'all-col' : null }, unpairedText(l)))),
    realUsers?.summary ? realUsersRow(locs, realUsers) : null
  ]
  const analysis = cmp.analysis === 'itt' ? 'intention to treat' : 'matched rounds'
  return h('div', { class: 'table-scroll' },
    h('table', { class: 'compare', 'data-analysis': cmp.analysis ?? 'matched' },
      h('caption', { class: 'sr-only' }, `${names.h2} against ${names.h3} per percentile and location, ${cmp.metric}, ${analysis}; delta is ${names.h3} minus ${names.h2}, negative means ${names.h3} is faster`),
      h('thead', {}, head), h('tbody', {}, body), h('tfoot', {}, foot)))
}

function columnHead (l, cmp, names) {
  const isAll = l.location_id === null
  const averaged = isAll ? [...new Set(l.rows.flatMap((r) => r.locations ?? []))].length : 0
  return h('th', { scope: 'col', class: isAll ? 'all-col' : null },
    h('span', { class: 'loc-name' }, l.name, l.h3_supported === false ? h('span', { class: 'badge unsupported' }, 'H3 not supported') : null),
    isAll
      ? h('span', { class: 'loc-meta stratified', title: 'Each location\'s effect counts once, whatever its number of rounds; raw samples are never pooled across locations' },
          `stratified: equal-weight average of ${averaged ? `${averaged} location${averaged === 1 ? '' : 's'}` : 'the locations with enough rounds'}`)
      : h('span', { class: 'loc-meta' }, [l.rtt_ms ? `RTT ${l.rtt_ms} ms` : null, l.region].filter(Boolean).join(' · ')),
    roundsText(l, cmp, names))
}

const STATE = { failed: 'failed', fallback: 'fell back', unsupported: 'refused QUIC', no_value: 'had no value', missing: 'did not run' }
const COUNTED_IN_ITT = new Set(['ok', 'failed', 'fallback', 'unsupported'])

/** "H3 failed", "H2 fell back, H3 failed", "both failed". */
function pairText (x, names) {
  const a = x.h2 !== 'ok' ? x.h2 : null
  const b = x.h3 !== 'ok' ? x.h3 : null
  if (a && b && a === b) return `both ${STATE[a] ?? a}`
  return [a && `${names.h2} ${STATE[a] ?? a}`, b && `${names.h3} ${STATE[b] ?? b}`].filter(Boolean).join(', ')
}

/** "12 H3 failed, 6 H2 fell back" from rounds.excluded entries (largest first, at most 4 kinds). */
function excludedList (entries, names) {
  const byText = new Map()
  for (const x of entries) byText.set(pairText(x, names), (byText.get(pairText(x, names)) ?? 0) + x.rounds)
  const kinds = [...byText].sort((a, b) => b[1] - a[1])
  const shown = kinds.slice(0, 4).map(([text, n]) => `${count(n)} ${text}`)
  const rest = kinds.slice(4).reduce((n, [, k]) => n + k, 0)
  return [...shown, rest ? `${count(rest)} other` : null].filter(Boolean).join(', ')
}

/**
 * The rounds a column rests on and why the others were left out:
 * "412 matched rounds of 430" / "18 excluded: 12 H3 failed, 6 H2 fell back".
 */
function roundsText (l, cmp, names) {
  const r = l.rounds
  if (!r) return null
  const itt = cmp.analysis === 'itt'
  const sum = (xs) => xs.reduce((n, x) => n + x.rounds, 0)
  const lines = []
  if (itt) {
    const counted = r.excluded.filter((x) => COUNTED_IN_ITT.has(x.h2) && COUNTED_IN_ITT.has(x.h3))
    const left = r.excluded.filter((x) => !counted.includes(x))
    lines.push(h('span', { class: 'rounds-main' }, `${count(r.available)} rounds of ${count(r.total)}`))
    if (counted.length) lines.push(h('span', { class: 'rounds-excl' }, `incl. ${count(sum(counted))} where an arm did not load (failures at the timeout): ${excludedList(counted, names)}`))
    if (left.length) lines.push(h('span', { class: 'rounds-excl' }, `${count(sum(left))} excluded: ${excludedList(left, names)}`))
  } else {
    lines.push(h('span', { class: 'rounds-main' }, `${count(r.matched)} matched round${r.matched === 1 ? '' : 's'} of ${count(r.total)}`))
    if (r.excluded.length) lines.push(h('span', { class: 'rounds-excl' }, `${count(sum(r.excluded))} excluded: ${excludedList(r.excluded, names)}`))
  }
  if (r.resampled < r.used) lines.push(h('span', { class: 'rounds-excl' }, `intervals and tests resampled from an evenly spaced ${count(r.resampled)} of them`))
  return h('span', { class: 'loc-rounds' }, lines)
}

function unsupportedText (l) {
  const n = l.arms?.h3?.unsupported ?? 0
  return `The origin refused QUIC and advertises no Alt-Svc h3${n ? ` (${count(n)} of ${count(l.arms.h3.attempted)} H3 attempts)` : ''}; there is no H3 to compare.`
}

/** Long numbers in API reasons with separators: "1000 rounds" → "1,000 rounds". */
const numbers = (text) => String(text).replace(/\b\d{4,}\b/g, (n) => count(Number(n)))

/** Why a tested cell is grey, in a few words: the API's reason_code, its words otherwise. */
const SHORT_REASONS = {
  interval_includes_zero: () => 'interval includes 0',
  not_significant: () => 'not significant after correction',
  below_minimum_effect: (r) => `|Δ| below the ${ms(r.min_effect_ms)} minimum`,
  faster_arm_fails_more: (r, names) => `${r.delta_ms < 0 ? names.h3 : names.h2} faster, but fails more: see intention to treat`,
  faster_arm_failures: (r, names) => `${r.delta_ms < 0 ? names.h3 : names.h2} faster, but its failures could explain it: see intention to treat`,
  faster_arm_missing: (r, names) => `${r.delta_ms < 0 ? names.h3 : names.h2} faster, but it has no result in some rounds: import them`
}
const whyNoDifference = (r, names) => SHORT_REASONS[r.reason_code]?.(r, names) ?? numbers(r.reason ?? '')

function cell (r, p, loc, names) {
  const all = loc.location_id === null ? ' all-col' : ''
  if (!r) return h('td', { class: `v-none${all}` }, '—')
  const tested = r.verdict !== 'insufficient_data'
  const label = names.verdict(r.verdict)
  const v = VERDICT[r.verdict] ?? VERDICT.insufficient_data
  const why = r.verdict === 'no_clear_difference' ? whyNoDifference(r, names) : r.verdict === 'insufficient_data' ? numbers(r.reason ?? '') : null
  // All locations: the average and the rounds it rests on.
  const averaged = loc.location_id === null && r.locations ? `average of ${r.locations.length} location${r.locations.length === 1 ? '' : 's'}, ${count(r.rounds)} rounds` : null
  const title = [`${loc.name}, p${p}: ${label}`, r.reason ? numbers(r.reason) : null,
    r.p_adjusted !== null && r.p_adjusted !== undefined ? `${pValue(r.p_adjusted)} (adjusted: column screen, then Benjamini–Hochberg)` : null,
    r.min_effect_ms ? `practical minimum ${ms(r.min_effect_ms)}` : null,
    averaged,
    r.interval_rounds ? `interval and p-value from an evenly spaced ${count(r.interval_rounds)} of the ${count(r.rounds)} rounds (a percentile that does not move smoothly: not scaled to all)` : null].filter(Boolean).join('; ')
  const hasValues = r.h2_ms !== null && r.h3_ms !== null
  return h('td', { class: `cmp-cell ${tested ? verdictClass(r.verdict, r.delta_pct) : 'v-none'}${tested ? '' : ' untested'}${all}`, title },
    hasValues
      ? [
          h('div', { class: 'delta' },
            tested ? h('span', { 'aria-hidden': 'true', class: 'glyph' }, v.glyph) : h('span', { class: 'untested-tag' }, 'untested'),
            h('span', {}, ms(r.delta_ms, { signed: true })),
            h('span', { class: 'pct' }, pct(r.delta_pct, { signed: true }))),
          h('div', { class: 'vals' },
            h('span', {}, h('span', { class: 'k-h2' }, `${names.h2} `), h('b', {}, ms(r.h2_ms))),
            h('span', {}, h('span', { class: 'k-h3' }, `${names.h3} `), h('b', {}, ms(r.h3_ms)))),
          tested ? h('div', { class: 'ci' }, '95% CI ', msInterval(r.ci_low_ms, r.ci_high_ms)) : null
        ]
      : null,
    h('div', { class: 'verdict-line' },
      h('span', { class: 'verdict-label' }, label),
      why ? h('span', { class: 'why' }, why) : null),
    averaged && tested ? h('div', { class: 'why' }, averaged) : null)
}

/** Hodges–Lehmann shift with its interval and the Wilcoxon p, and the location verdict. */
function pairedText (l, names) {
  const t = l.paired
  if (l.h3_supported === false) return h('span', {}, 'H3 not supported')
  if (!t || t.p === null || t.p === undefined) return h('span', { class: 'muted' }, 'not enough rounds')
  const stratified = l.location_id === null
  const test = stratified ? 'Wilcoxon, combined (Stouffer)' : 'Wilcoxon'
  const p = t.p_adjusted ?? t.p
  const v = VERDICT[l.verdict] ?? VERDICT.insufficient_data
  return h('span', {
    class: 'paired',
    title: `${stratified ? 'Mean of the per-location shifts (equal weight), ' : ''}Hodges–Lehmann estimate of the per-round shift ${names.h3} − ${names.h2} with its 95% interval; ${test} signed-rank test on ${count(t.rounds)} rounds, ${pValue(t.p)}${t.p_adjusted !== null && t.p_adjusted !== undefined ? `, ${pValue(t.p_adjusted)} Benjamini–Hochberg adjusted` : ''}`
  },
  h('span', { class: 'paired-shift' }, 'shift ', h('b', {}, ms(t.hodges_lehmann_ms, { signed: true }))),
  ` (95% ${msInterval(t.ci_low_ms, t.ci_high_ms)}) · ${test} ${pValue(p)}`,
  ' · ', h('span', { class: `verdict-chip ${v.cls}`, title: l.reason ?? '' }, names.verdict(l.verdict)))
}

function unpairedText (l) {
  const p = l.mann_whitney_p
  const d = l.cliffs_delta
  if ((p === null || p === undefined) && (d === null || d === undefined)) return h('span', { class: 'muted' }, '—')
  // Above the cap both come from the subsample the bootstrap reads: say how many rounds that is.
  const rounds = l.rounds?.resampled ?? l.rounds?.used
  const over = rounds ? ` over ${count(rounds)} rounds${l.rounds?.used > rounds ? ` (an even subsample of the ${count(l.rounds.used)} used)` : ''}` : ''
  return h('span', { title: `Cliff's δ of H3 against H2 (negative: H3 tends to be faster) and the two-sided Mann–Whitney U p-value${over}, treated as unpaired; for description only` },
    `Cliff's δ ${d === null || d === undefined ? '—' : d.toFixed(2).replace('-', '−')} · Mann–Whitney ${pValue(p)} (unpaired${rounds ? `, ${count(rounds)} rounds` : ''})`,
    srOnly(', not used for the verdict'))
}

/**
 * Under each region, its real users: their share over H3 beside the lab's
 * returning visit, and the association of H3 with TTFB at p75 (coloured
 * only under the same rules as the cells above).
 * @param {any[]} locs the table's columns
 * @param {{ site: any, summary: any }} rum
 */
function realUsersRow (locs, { site, summary }) {
  return h('tr', { class: 'real-users' },
    h('th', { scope: 'row', title: `Real users of ${site.name}: beacons from its visitors, observed, never paired` }, h('a', { href: `#/rum/${site.id}` }, 'Real users')),
    locs.map((l) => {
      const r = summary.regions.find((x) => x.region_id === l.location_id)
      const all = l.location_id === null ? 'all-col' : ''
      if (!r || !r.page_views) return h('td', { class: `${all} muted` }, 'no page views from here')
      const row = r.comparison.ttfb_ms.find((x) => x.percentile === 75)
      const tested = row && row.verdict !== 'insufficient_data'
      return h('td', { class: all },
        h('div', {}, `H3 share ${shareInterval(r.h3_share)}`, h('span', { class: 'sub' }, ` of ${count(r.h3_share.known)} page views`)),
        r.lab ? h('div', { class: 'sub' }, `lab, returning visit: ${shareInterval(r.lab.returning)}`) : null,
        row && row.delta_ms !== null
          ? h('div', { class: `assoc ${tested ? verdictClass(row.verdict, row.delta_pct) : 'v-none'}`, title: `TTFB p75, H3 − H2 within strata: ${ASSOCIATION_LABEL[row.verdict]} (an association, not a controlled comparison)` },
              `TTFB p75 ${ms(row.delta_ms, { signed: true })} (${ASSOCIATION_LABEL[row.verdict]}, association)`)
          : h('div', { class: 'sub' }, 'TTFB: too few page views to compare'))
    }))
}
