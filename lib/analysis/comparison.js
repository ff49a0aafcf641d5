// The regional comparison (docs/STATISTICS.md), built around the round: one round at
// one location runs both arms moments apart on the same path, so every
// inferential number of a location — H2, H3, Δ, its interval, the paired
// test and the verdict — comes from one matched set of rounds, and the
// table says how many rounds that is and why the others were left out.
//
// Two analyses of the same rounds (`analysis`):
// - matched (default): the rounds in which both arms loaded with the
//   protocol they were forced to. A round where one arm failed or fell back
//   is left out of both arms, so a protocol that fails on the slowest paths
//   cannot look faster by losing them; its failures are reported and tested
//   on their own (failure asymmetry, below).
// - itt (intention to treat): every round in which both arms ran; a load
//   with no value of the metric (it failed before reaching it) counts at
//   the page timeout, any other load at what it measured.
//
// Per location and percentile: Δ = Q_p(H3) − Q_p(H2) over the samples of the
// rounds used, with a seeded round-level bootstrap (lib/analysis/stats/round-bootstrap.js).
// All locations: per-location effects averaged with equal weight, the
// bootstrap stratified by location; never a pool of raw samples whose
// regional mix differs by arm.
// Verdict of a cell: faster or slower only when its adjusted p-value (a
// column screen, then Benjamini–Hochberg within the column) is ≤ 0.05, the 95%
// interval excludes 0, |Δ| is at least the monitor's practical minimum
// (default max(2% of H2, 1 ms)), and the percentile has its minimum number
// of rounds (more for the tail). docs/STATISTICS.md explains, and
// bench/calibration.js measures the false-positive rate and power.
import { readRoundWindow } from '../store/round-summaries.js'
import { listLocations } from '../store/locations.js'
import { BROWSER_CATALOGUE } from '../measurement/browsers/index.js'
import { DEFAULT_PERCENTILES, MIN_ROUNDS, minRoundsFor } from '../measurement/metrics.js'
import { isJourneyProbe } from '../measurement/probes/journey.js'
import { stepNames } from '../measurement/journey/steps.js'
import {
  roundBootstrap, bootstrapSummary, wilcoxonSignedRank, hodgesLehmann, wilsonInterval, mcnemarExactP,
  benjaminiHochberg, screenedBenjaminiHochberg, mannWhitneyU, cliffsDelta, normalSurvival, normalQuantile, exactQuantile
} from './stats/index.js'

export const VERDICTS = Object.freeze({
  H3_FASTER: 'h3_faster',
  H3_SLOWER: 'h3_slower',
  NO_CLEAR_DIFFERENCE: 'no_clear_difference',
  INSUFFICIENT_DATA: 'insufficient_data',
  H3_NOT_SUPPORTED: 'h3_not_supported'
})
export const FAILURE_VERDICTS = Object.freeze({
  H3_FAILS_MORE: 'h3_fails_more',
  H3_FAILS_LESS: 'h3_fails_less',
  NO_CLEAR_DIFFERENCE: 'no_clear_difference',
  INSUFFICIENT_DATA: 'insufficient_data',
  H3_NOT_SUPPORTED: 'h3_not_supported'
})
export const ANALYSES = Object.freeze(['matched', 'itt'])
export const ARM_STATES = Object.freeze(['ok', 'failed', 'fallback', 'unsupported', 'no_value', 'missing'])

export const FDR_Q = 0.05
export const BOOTSTRAP_ITERATIONS = 1000
// Rounds per location the bootstrap resamples. Above it, an evenly spaced
// subsample over the whole window (every k-th matched round by time), so a
// 30-day answer describes 30 days, while the percentiles and Δ are those of
// every round (see locationEntry); the entry says how many were resampled.
// 2,000 rounds keep the bootstrap at ~25 ms per location.
export const ROUND_CAP = 2000
// The share of a cell's bootstrap draws on one value that marks tied
// timings (testedRow): smooth timings' draws spread over many values.
const LATTICE_SHARE = 0.05
// Above ROUND_CAP a cell's interval is scaled from the subsample to all
// rounds by the rate its spread shrinks at (spreadRate): ½ for smooth
// timings. Below SLOW_RATE the percentile sits where timings are scarce (the
// gap between a cache hit's and a miss's), and the subsample must show the
// difference on its own as well (testedRow).
const SMOOTH_RATE = 0.5
const SLOW_RATE = 0.25
// The practical minimum a difference must pass to be a verdict, unless the
// monitor sets its own: the larger of 2% and 1 ms.
export const DEFAULT_MIN_EFFECT = Object.freeze({ pct: 2, ms: 1 })

/**
 * @typedef {{ id: number, locations: string[], aa_protocol?: string | null, min_effect_pct?: number, min_effect_ms?: number, results_changed_at?: Date | string | null, journey?: any }} ComparedMonitor
 * @typedef {{ job_id: string, h2: number[], h3: number[], h2_state: string, h3_state: string }} RoundRow
 * @typedef {{ id: string, name?: string | null, region?: string | null, kind?: string | null, profile?: any, browsers?: string[] }} EntryLocation profile: the location's network profile (JSON); browsers: those its agents have
 * @typedef {Record<string, any>} Entry a location's (or all locations') part of the answer, see locationEntry
 * @typedef {Record<string, any>} Row one percentile's cell, see testedRow and emptyRow
 * @typedef {{ pct: number, ms: number }} MinEffect
 * @typedef {ReturnType<typeof tableSummary>['arms']} Arms
 * @typedef {{ h2: number[], h3: number[], n_h2: number, n_h3: number }} Exact each arm's percentiles over all usable rounds of a subsampled location, and its samples
 * @typedef {{ only: number, missing: number, share: number, at: number[], median: number }} WorstArm see worstShifts
 * @typedef {{ h2: WorstArm, h3: WorstArm }} Worst
 */

/**
 * The percentiles a view's correction covers: the monitor table's
 * (DEFAULT_PERCENTILES) and any others asked. A cell's adjusted p-value,
 * and so its verdict, is then the same in every view that shows it (the
 * overview's p50 and p95, the monitor's table, an alert rule, the
 * cross-browser view), whichever of the default percentiles it asks for.
 * Percentiles beyond them join the family, and may turn a verdict at the
 * edge: the method says so.
 * @param {readonly number[]} asked
 */
export function correctionFamily (asked) {
  return [...new Set([...DEFAULT_PERCENTILES, ...asked])].sort((a, b) => a - b)
}

/**
 * The tables a journey monitor's steps view holds side by side: the whole
 * journey and each named step. A step's cells are corrected for all of
 * them, so a steps table of identical arms claims a difference in at most
 * 5% of journeys, and a step reads the same there and in its own table.
 * @param {{ journey?: any }} monitor
 */
export function journeyTables (monitor) {
  return 1 + stepNames(monitor.journey ?? null).length
}

/**
 * @param {import('pg').Pool} db
 * @param {{ monitor: ComparedMonitor, metric: string, percentiles: number[], probe: string, view: string, from: Date, to: Date,
 *   analysis?: string, timeoutMs?: number, browser?: string }} q browser: whose rounds (Chromium's when not said)
 */
export async function regionalComparison (db, { monitor, metric, percentiles: asked, probe, view, from, to, analysis = 'matched', timeoutMs = 30000, browser = 'chromium' }) {
  const percentiles = correctionFamily(asked)
  const window = { monitorId: monitor.id, metric, probe, view, browser, from, to }
  const locRows = await listLocations(db)
  const locations = new Map(locRows.map((l) => [l.id, l]))
  const qs = percentiles.map((p) => p / 100)
  const { states, imported, rounds } = await readRounds(db, { ...window, analysis, timeoutMs, qs })
  const ids = [...new Set([...monitor.locations, ...states.keys()])]
  const minEffect = { pct: monitor.min_effect_pct ?? DEFAULT_MIN_EFFECT.pct, ms: monitor.min_effect_ms ?? DEFAULT_MIN_EFFECT.ms }
  // The seed names what is compared, not the window: the same rounds get the
  // same resamples, and so the same interval and verdict, in any window that
  // holds them (seeded by the window, a paused monitor's cells could turn at
  // each 5-minute mark). Chromium's names no browser, as before browsers.
  const seedBase = `${monitor.id}|${metric}|${probe}|${view}|${analysis}${browser === 'chromium' ? '' : `|${browser}`}`

  const entries = ids.map((id) => locationEntry({
    location: locations.get(id) ?? { id, name: id, region: null, kind: null, profile: {} },
    table: states.get(id) ?? new Map(),
    imported: imported.get(id) ?? new Map(),
    rounds: rounds.get(id) ?? { used: [], available: 0, exact: null },
    percentiles,
    qs,
    seed: `${seedBase}|${id}`,
    browser,
    analysis
  }))
  const all = allLocationsEntry(entries, percentiles, ids.map((id) => states.get(id) ?? new Map()))

  // The cells of the view are corrected in two levels, a screen per column
  // (a location, or all locations) and Benjamini–Hochberg within it
  // (screenedBenjaminiHochberg says why).
  // A journey's steps are read side by side (the steps table), each step's
  // comparison a table of its own: Bonferroni over them.
  const tables = isJourneyProbe(probe) ? journeyTables(monitor) : 1
  const families = [...entries, all].map((e) => e.rows.filter((/** @type {Row} */ r) => r.p_value !== null)).filter((f) => f.length)
  screenedBenjaminiHochberg(families.map((f) => f.map((/** @type {Row} */ c) => c.p_value)))
    .forEach((adjusted, j) => families[j].forEach((/** @type {Row} */ c, /** @type {number} */ i) => { c.p_adjusted = Math.min(1, adjusted[i] * tables) }))
  for (const e of [...entries, all]) for (const row of e.rows) row.verdict = cellVerdict(row, minEffect)
  withholdWhereLocationsDisagree(all, entries)
  const paired = [...entries, all].filter((e) => e.paired.p !== null)
  // A journey step's location verdict is corrected over the steps as its
  // cells are. Its failure test is not: "H3 fails more" withholds a gain,
  // and a harder bar for it would let more gains stand.
  benjaminiHochberg(paired.map((e) => e.paired.p)).forEach((p, i) => { paired[i].paired.p_adjusted = p === null ? null : Math.min(1, p * tables) })
  const failures = [...entries, all].filter((e) => e.failure.p !== null)
  benjaminiHochberg(failures.map((e) => e.failure.p)).forEach((p, i) => { failures[i].failure.p_adjusted = p })
  for (const e of [...entries, all]) {
    e.failure.verdict = failureVerdict(e)
    e.verdict = locationVerdict(e, minEffect)
    if (analysis === 'matched') withholdGainOfFailingArm(e)
    withholdGainOfMissingArm(e)
    // Intention to treat counts failures at the timeout, but cannot count a
    // load that has no result at all: its worst case is of those alone.
    withholdGainFailuresCouldExplain(e, minEffect, analysis)
  }
  const flagged = (/** @type {Entry} */ e) => e.rows.filter((/** @type {Row} */ r) => r.verdict === VERDICTS.H3_FASTER || r.verdict === VERDICTS.H3_SLOWER).length
  for (const e of [...entries, all]) {
    e.rows = e.rows.filter((/** @type {Row} */ r) => asked.includes(r.percentile))
    for (const r of e.rows) delete r.draws
    e.cells = { tested: e.rows.filter((/** @type {Row} */ r) => r.p_value !== null).length, flagged: flagged(e) }
    delete e.draws
    delete e.subsample
    delete e.h2_median
    delete e.worst
  }

  return {
    monitor_id: monitor.id,
    metric,
    probe,
    view,
    browser,
    analysis,
    from: from.toISOString(),
    to: to.toISOString(),
    percentiles: asked,
    aa_protocol: monitor.aa_protocol ?? null,
    min_effect: minEffect,
    cells: { tested: [...entries, all].reduce((n, e) => n + e.cells.tested, 0), flagged: [...entries, all].reduce((n, e) => n + e.cells.flagged, 0) },
    method: method({ analysis, timeoutMs, minEffect, percentiles: asked, family: percentiles, tables }),
    locations: [...entries, all]
  }
}

/** @param {{ analysis: string, timeoutMs: number, minEffect: MinEffect, percentiles: number[], family: number[], tables: number }} o */
function method ({ analysis, timeoutMs, minEffect, percentiles, family, tables }) {
  return {
    unit: 'the round: both arms of one round at one location, run moments apart',
    rounds_used: analysis === 'matched'
      ? 'matched rounds: both arms loaded with the protocol they were forced to; other rounds are counted under rounds.excluded'
      : `intention to treat: every round where both arms ran; a load without a value of this metric (it failed before it, or fell back without it) counts as ${timeoutMs} ms (the page timeout), any other at its measured value (a load that failed after its first byte keeps its TTFB)`,
    round_cap: `the bootstrap, the paired test and the unpaired ones read at most ${ROUND_CAP} rounds per location (rounds.resampled); above that an evenly spaced subsample over the window, ` +
      'and the interval is the subsample\'s bootstrap spread scaled by (resampled / used)^rate around the Δ of every round used (m-out-of-n bootstrap), ' +
      'the rate being how fast the spread shrinks from a quarter of the subsample to all of it (½ for smooth timings); where it hardly shrinks (a percentile between a cache hit\'s and a miss\'s) ' +
      'or the timings are tied, the subsample must show the difference on its own too',
    percentiles: 'percentile_cont of the samples of the rounds used (H2, H3 and Δ from the same rounds)',
    interval: `95% percentile interval of a round-level bootstrap (${BOOTSTRAP_ITERATIONS} resamples of whole rounds, seeded by what is compared (monitor, metric, probe, view, analysis, browser) and the location, not the window: the same rounds give the same interval in any window)`,
    verdict: `faster or slower only when the cell's adjusted p-value is ≤ ${FDR_Q} (its column passes a Simes screen, Bonferroni over the columns, then Benjamini–Hochberg within the column), the interval excludes 0, ` +
      `|Δ| ≥ max(${minEffect.pct}% of H2, ${minEffect.ms} ms), and the percentile has its minimum rounds (${percentiles.map((p) => `p${p}: ${minRoundsFor(p)}`).join(', ')}); ` +
      `a column holds the percentiles ${family.map((p) => `p${p}`).join(', ')} whichever are shown, so a cell's verdict is the same in every view that asks only for the default percentiles (the dashboard's do); ` +
      'asking for others adds them to the column, which may turn a verdict at the edge' +
      (tables > 1 ? `; a journey's ${tables} tables (the whole journey and each named step) are read side by side, so the adjusted p-values are multiplied by ${tables} (Bonferroni)` : ''),
    paired_test: 'Wilcoxon signed-rank on per-round differences (H3 − H2; a round\'s median for multi-sample probes), Hodges–Lehmann shift with its 95% interval',
    unpaired: 'Mann–Whitney U and Cliff\'s δ on the same samples, unpaired, for description',
    all_locations: 'per-location effects averaged with equal weight (stratified), never pooled samples',
    failures: 'per arm: failure and fallback rates with Wilson 95% intervals; paired: exact McNemar test on rounds where exactly one arm did not load with its protocol'
  }
}

/**
 * The window's rounds from their summaries (lib/store/round-summaries.js):
 * how many rounds at each location fell into each pair of arm states, and
 * the rounds the analysis uses with their values, evenly subsampled to
 * ROUND_CAP per location. Per-round summaries rather than the window's
 * results grouped into rounds: the same answer in about half the time, a
 * 30-day comparison of 432,000 results in ~0.5–0.7 s against ~1.0–1.8 s on
 * the busy 2-core machine (node bench/query.js --monitors 1 --days 30;
 * docs/BENCHMARKS.md, "Regional comparison and trends from rollups").
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, metric: string, probe: string, view: string, browser: string, from: Date, to: Date, analysis: string, timeoutMs: number, qs: number[] }} w
 * @returns {Promise<{ states: Map<string, Map<string, number>>, imported: Map<string, Map<string, number>>,
 *   rounds: Map<string, { used: RoundRow[], available: number, exact: Exact | null }> }>}
 *   states: per location, the rounds by their arms' states; imported: of them, those that lack an arm and no agent measured
 */
async function readRounds (db, w) {
  const rows = await readRoundWindow(db, { ...w, cap: ROUND_CAP })
  const states = new Map()
  /** @type {Map<string, Map<string, number>>} */
  const imported = new Map()
  const add = (/** @type {Map<string, Map<string, number>>} */ to, /** @type {string} */ location, /** @type {string} */ key, /** @type {number} */ n) => {
    if (!to.has(location)) to.set(location, new Map())
    const t = /** @type {Map<string, number>} */ (to.get(location))
    t.set(key, (t.get(key) ?? 0) + n)
  }
  /** @type {Map<string, { used: RoundRow[], available: number, exact: Exact | null }>} */
  const rounds = new Map()
  const used = []
  /** @type {Map<string, Exact>} */
  const exact = new Map()
  for (const r of rows) {
    if (r.kind === 'used') { used.push(r); continue }
    if (r.kind === 'exact') { exact.set(r.location_id, { h2: r.h2_q.map(Number), h3: r.h3_q.map(Number), n_h2: r.h2_n, n_h3: r.h3_n }); continue }
    add(states, r.location_id, `${r.h2}|${r.h3}`, r.n)
    if (r.imported) add(imported, r.location_id, `${r.h2}|${r.h3}`, r.n)
  }
  // In the order of the window (by time), as the bootstrap's seed expects.
  used.sort((a, b) => (a.location_id < b.location_id ? -1 : a.location_id > b.location_id ? 1 : 0) || a.k - b.k)
  for (const r of used) {
    if (!rounds.has(r.location_id)) rounds.set(r.location_id, { used: [], available: r.n, exact: exact.get(r.location_id) ?? null })
    const h2 = r.h2_v ? r.h2_v.map(Number) : null
    const h3 = r.h3_v ? r.h3_v.map(Number) : null
    // Intention to treat: an arm with no value (it failed, or fell back
    // without this metric) counts at the timeout, as often as the other arm
    // has samples.
    const fill = (/** @type {number[] | null} */ own, /** @type {number[] | null} */ other) => (own && own.length ? own : Array((other?.length) || 1).fill(w.timeoutMs))
    const entry = /** @type {{ used: RoundRow[] }} */ (rounds.get(r.location_id))
    entry.used.push({ job_id: r.job_id, h2_state: r.h2, h3_state: r.h3, h2: fill(h2, h3), h3: fill(h3, h2) })
  }
  return { states, imported, rounds }
}

/**
 * Everything the table says about one location.
 *
 * Above ROUND_CAP usable rounds the bootstrap resamples an evenly spaced
 * subsample of m of the n rounds, while H2, H3 and Δ are the percentiles of
 * all n (exact, from the database): an m-out-of-n bootstrap. Its spread
 * around the subsample's Δ, scaled by (m/n)^rate (spreadRate: ½ for smooth
 * timings, whose percentiles converge at 1/√rounds; not at all for tied
 * timings or a percentile in a gap, see testedRow), is laid around the Δ
 * of all n rounds, so the interval and p-value describe the estimate that
 * is shown. Below the cap m = n and nothing is scaled. The paired test,
 * Mann–Whitney and Cliff's δ read the m rounds and say so (paired.rounds).
 * @param {{ location: EntryLocation, table: Map<string, number>, imported: Map<string, number>, rounds: { used: RoundRow[], available: number, exact: Exact | null },
 *   percentiles: number[], qs: number[], seed: string, browser: string, analysis: string }} o
 *   imported: the rounds of `table` that lack an arm and no agent measured
 * @returns {Entry}
 */
function locationEntry ({ location, table, imported, rounds, percentiles, qs, seed, browser, analysis }) {
  const { total, matched, excluded, arms } = tableSummary(table)
  const used = rounds.used
  const exact = used.length && used.length < rounds.available ? rounds.exact : null
  const n = exact ? rounds.available : used.length
  const base = {
    location_id: location.id,
    name: location.name ?? location.id,
    region: location.region ?? null,
    kind: location.kind ?? null,
    rtt_ms: location.profile?.rtt_ms > 0 ? location.profile.rtt_ms : null,
    rounds: { total, matched, available: rounds.available, used: n, resampled: used.length, excluded },
    arms,
    failure: failureTest(table),
    h3_supported: arms.h3.unsupported > 0 && arms.h3.ok + arms.h3.fallback === 0 ? false : (arms.h3.ok > 0 ? true : null),
    n_h2: exact ? exact.n_h2 : used.reduce((k, r) => k + r.h2.length, 0),
    n_h3: exact ? exact.n_h3 : used.reduce((k, r) => k + r.h3.length, 0),
    ...legacyCounts(arms)
  }
  if (!used.length) {
    // Rounds whose arms loaded without this metric's value (a page without
    // an LCP, a whole journey's TTFB) are no failures: the reason says so.
    const loadedWithout = [...table].filter(([k]) => k.split('|').includes('no_value') && k.split('|').every((s) => s === 'ok' || s === 'no_value'))
      .reduce((n, [, v]) => n + v, 0)
    const ofTotal = base.rounds.total ? ` (of ${base.rounds.total} in the window)` : ''
    let reason = loadedWithout
      ? `both arms loaded in ${loadedWithout} round${loadedWithout === 1 ? '' : 's'}, but without a value of this metric in both${ofTotal}`
      : `no round in which both arms loaded${ofTotal}`
    // A location whose agents lack the browser gets no round of it.
    if (!total && location.browsers && !location.browsers.includes(browser)) {
      reason = `no agent at ${base.name} runs ${BROWSER_CATALOGUE.find((b) => b.id === browser)?.label ?? browser}, so no round of it is scheduled there`
    }
    return {
      ...base,
      insufficient_data: true,
      reason,
      paired: emptyPaired(),
      mann_whitney_p: null,
      cliffs_delta: null,
      rows: percentiles.map((p) => emptyRow(p, 0)),
      draws: null
    }
  }
  // Below MIN_ROUNDS the values are shown, untested: no interval, no verdict.
  const enough = used.length >= MIN_ROUNDS
  const boot = roundBootstrap({ rounds: used, qs, iterations: enough ? BOOTSTRAP_ITERATIONS : 0, seed })
  const point = exact ?? boot
  // Above the cap: how fast each cell's spread shrinks, from a quarter of
  // the subsample to all of it, and so how far it is scaled to n rounds.
  const quarter = exact && enough ? roundBootstrap({ rounds: used.filter((_, i) => i % 4 === 0), qs, iterations: BOOTSTRAP_ITERATIONS, seed: `${seed}|quarter` }) : null
  // The scaling does not hold for tied timings or a percentile in a gap
  // (testedRow): their interval is the subsample's own, unscaled, and the
  // subsample's own draws and Δ must show the difference too, here and in
  // the all-locations column.
  const rates = quarter ? boot.deltas.map((draws, k) => spreadRate(quarter.deltas[k], draws)) : null
  const subsample = exact && rates
    ? { draws: boot.deltas, deltas: boot.h3.map((v, k) => v - boot.h2[k]), unscalable: boot.deltas.map((draws, k) => rates[k] < SLOW_RATE || onALattice(draws)) }
    : null
  const deltas = exact && rates && subsample
    ? boot.deltas.map((draws, k) => {
        const all = point.h3[k] - point.h2[k]
        const scale = subsample.unscalable[k] ? 1 : (used.length / n) ** rates[k]
        return draws.map((d) => all + (d - subsample.deltas[k]) * scale)
      })
    : boot.deltas
  const rows = percentiles.map((p, k) => {
    const h2 = point.h2[k]
    const h3 = point.h3[k]
    if (n < minRoundsFor(p)) return { ...emptyRow(p, n), h2_ms: h2, h3_ms: h3, delta_ms: h3 - h2, delta_pct: h2 ? (h3 - h2) / h2 * 100 : null }
    if (!subsample?.unscalable[k]) return testedRow(p, n, h2, h3, deltas[k])
    // Its interval and p-value are the subsample's own: say on how many rounds.
    return { ...testedRow(p, n, h2, h3, deltas[k], { draws: subsample.draws[k], delta: subsample.deltas[k] }), interval_rounds: used.length }
  })
  const h2All = used.flatMap((r) => r.h2)
  const h3All = used.flatMap((r) => r.h3)
  const h2Sorted = Float64Array.from(h2All).sort()
  return {
    ...base,
    insufficient_data: !enough,
    reason: enough ? undefined : `need at least ${MIN_ROUNDS} rounds in which both arms loaded for a verdict; have ${used.length}`,
    paired: enough ? pairedTest(used) : emptyPaired(),
    mann_whitney_p: enough ? mannWhitneyU(h3All, h2All).p : null,
    // Of H3 against H2: negative means H3 values tend to be smaller.
    cliffs_delta: enough ? cliffsDelta(h3All, h2All) : null,
    rows,
    draws: enough ? deltas : null,
    subsample,
    h2_median: exactQuantile(h2Sorted, 0.5),
    // Against every round used (n), as the failure counts are: a subsample's samples stand for them.
    worst: enough ? worstShifts({ h2: h2Sorted, h3: Float64Array.from(h3All).sort() }, unloaded(base.failure, table, imported, analysis), n, qs) : null
  }
}

/**
 * The rounds each arm has no load of where the other arm loaded, as the
 * worst case of failures counts them (worstShifts): in matched rounds the
 * ones it failed in (the failure test's) and the ones it has no result in
 * at all; in intention to treat, which counts a failure at the timeout,
 * the latter only. A round without one arm's result is in neither view,
 * and the failure test does not see it: were the missing loads the arm's
 * slowest, the loads it kept would look faster. Only imported rounds can
 * lack an arm that was run: an agent stores every arm of its round
 * together, so an agent's round without one is a round that did not ask
 * for it (the monitor's modes changed) and counts for nothing here.
 * @param {{ h2_only: number, h3_only: number }} failure
 * @param {Map<string, number>} table "h2state|h3state" → rounds
 * @param {Map<string, number>} imported of them, the imported rounds that lack an arm
 * @param {string} analysis
 * @returns {{ h2_only: number, h3_only: number, missing: { h2: number, h3: number } }}
 */
export function unloaded (failure, table, imported, analysis) {
  const { h2, h3 } = missingArms(table, imported, ['h2', 'h3'])
  const missing = { h2, h3 }
  const failed = analysis === 'matched' ? failure : { h2_only: 0, h3_only: 0 }
  return { h2_only: failed.h2_only + missing.h2, h3_only: failed.h3_only + missing.h3, missing }
}

/**
 * Per arm, the imported rounds with no result of it in which another arm
 * loaded; an arm no round of the location has (a monitor that does not
 * run it) is missing nowhere.
 * @param {Map<string, number>} table "state|state[|state]" (the arms in `arms`' order) → rounds
 * @param {Map<string, number>} imported of them, the imported rounds that lack an arm
 * @param {string[]} arms
 * @returns {Record<string, number>}
 */
export function missingArms (table, imported, arms) {
  /** @type {Record<string, number>} */
  const missing = Object.fromEntries(arms.map((a) => [a, 0]))
  const runs = armsRun(table, arms.length)
  for (const [k, n] of imported) {
    const states = k.split('|')
    arms.forEach((a, i) => {
      if (runs[i] && states[i] === 'missing' && states.some((s, j) => j !== i && s !== 'missing' && !notLoaded(s))) missing[a] += n
    })
  }
  return missing
}

/**
 * Per arm (by position in a table's keys), whether any round of the table
 * has it: an arm none has is one the monitor did not run.
 * @param {Map<string, number>} table "state|state[|state]" → rounds
 * @param {number} arms how many arms a key names
 * @returns {boolean[]}
 */
export function armsRun (table, arms) {
  return Array.from({ length: arms }, (_, i) => [...table.keys()].some((k) => k.split('|')[i] !== 'missing'))
}

/**
 * How much slower each arm's percentiles could be, were the rounds only it
 * did not load in (failure.h2_only, h3_only) its own slowest loads
 * (worstShift): per percentile of `qs`, and at the median for the paired
 * shift.
 * @param {{ h2: Float64Array, h3: Float64Array }} samples each arm's samples in the rounds used, ascending
 * @param {{ h2_only: number, h3_only: number, missing: { h2: number, h3: number } }} failure the rounds each arm did not load
 *   in (unloaded), and of them those it has no result in
 * @param {number} used the rounds used
 * @param {number[]} qs
 * @returns {Worst}
 */
function worstShifts (samples, failure, used, qs) {
  const arm = (/** @type {Float64Array} */ sorted, /** @type {number} */ only, /** @type {number} */ missing) => {
    const shift = worstShift(sorted, only, used)
    return { only, missing, share: only / (used + only), at: qs.map(shift), median: shift(0.5) }
  }
  return { h2: arm(samples.h2, failure.h2_only, failure.missing.h2), h3: arm(samples.h3, failure.h3_only, failure.missing.h3) }
}

/**
 * What a table of rounds by arm states says: how many rounds, how many
 * matched, which were left out, and each arm's counts and rates.
 * @param {Map<string, number>} table "h2state|h3state" → rounds
 */
function tableSummary (table) {
  const count = (/** @type {(...pair: string[]) => boolean} */ pred) => [...table].reduce((n, [k, v]) => (pred(...k.split('|')) ? n + v : n), 0)
  const total = count(() => true)
  const arm = (/** @type {number} */ i) => {
    const st = (/** @type {string} */ s) => count((...pair) => pair[i] === s)
    const attempted = total - st('missing')
    const failed = st('failed')
    const unsupported = st('unsupported')
    const fallback = st('fallback')
    return {
      attempted,
      ok: st('ok') + st('no_value'),
      failed,
      fallback,
      unsupported,
      failure_rate: wilsonInterval(failed + unsupported, attempted),
      fallback_rate: wilsonInterval(fallback, attempted)
    }
  }
  return {
    total,
    matched: table.get('ok|ok') ?? 0,
    excluded: [...table].filter(([k]) => k !== 'ok|ok')
      .map(([k, n]) => ({ h2: k.split('|')[0], h3: k.split('|')[1], rounds: n }))
      .sort((a, b) => b.rounds - a.rounds),
    arms: { h2: arm(0), h3: arm(1) }
  }
}

/**
 * The older flat counts, kept for clients of the first API version.
 * @param {Arms} arms
 */
function legacyCounts (arms) {
  const runs = (/** @type {Arms['h2']} */ a) => ({ total: a.attempted, ok: a.ok, errors: a.failed + a.unsupported, fallbacks: a.fallback })
  return {
    runs: { h2: runs(arms.h2), h3: runs(arms.h3) },
    fallback_rate: { h2: arms.h2.fallback_rate.rate, h3: arms.h3.fallback_rate.rate },
    error_rate: { h2: arms.h2.failure_rate.rate, h3: arms.h3.failure_rate.rate }
  }
}

/**
 * A tested cell. Above ROUND_CAP its draws are the subsample's, scaled
 * around the Δ of all rounds by the rate their spread shrinks at
 * (locationEntry, spreadRate). That rate is ½ for timings that vary
 * smoothly, whose percentiles' error shrinks as 1/√n, and the scaling then
 * holds. Two kinds of percentile break it: for those the draws are the
 * subsample's, unscaled (locationEntry), and the subsample must show the
 * difference on its own too (the same sign, and the p-value is the larger
 * of the two), from its own draws and Δ passed here as `ownAgreement`:
 * - tied timings (whole milliseconds, say; one value holds LATTICE_SHARE of
 *   the subsample's draws): a percentile sits on one value and Δ moves by a
 *   whole step however many rounds there are, and with identical arms the
 *   scaled draws could all fall on one side of 0 (3 tables in 10 claimed a
 *   1 ms difference at 10,000 rounds);
 * - a percentile in a gap, where timings are scarce (between a cache hit's
 *   and a miss's): it sits in one mode or the other, so Δ is about 0 or the
 *   whole gap, and its spread hardly shrinks with more rounds (a rate below
 *   SLOW_RATE). Scaled as smooth timings, identical arms read ±30–70% at
 *   p90 in 7 of 40 tables with a 10% miss share at 5,000 rounds.
 * @param {number} p
 * @param {number} rounds
 * @param {number} h2
 * @param {number} h3
 * @param {Float64Array} draws
 * @param {{ draws: Float64Array, delta: number }} [ownAgreement] the subsample's own draws and Δ, unscaled, when the scaling does not hold
 * @returns {Row}
 */
function testedRow (p, rounds, h2, h3, draws, ownAgreement) {
  const delta = h3 - h2
  const s = bootstrapSummary(draws, delta)
  let pValue = s.p
  if (ownAgreement) {
    pValue = Math.sign(ownAgreement.delta) === Math.sign(delta) ? Math.max(pValue, bootstrapSummary(ownAgreement.draws, ownAgreement.delta).p) : 1
  }
  return {
    percentile: p,
    h2_ms: h2,
    h3_ms: h3,
    delta_ms: delta,
    delta_pct: h2 ? delta / h2 * 100 : null,
    ci_low_ms: s.lo,
    ci_high_ms: s.hi,
    // The worst case of failures reads them (withholdGainFailuresCouldExplain); not answered.
    draws,
    p_value: pValue,
    p_adjusted: null,
    rounds,
    min_rounds: minRoundsFor(p),
    verdict: VERDICTS.NO_CLEAR_DIFFERENCE,
    reason: null,
    reason_code: null
  }
}

/**
 * The rate a cell's bootstrap spread (the width of its central 95%) shrinks
 * at as the rounds resampled grow from a quarter to all of the subsample:
 * width(¼ m) / width(m) = 4^rate. Smooth percentiles shrink as 1/√m, rate
 * ½ (the most the scaling uses); a percentile in a gap hardly shrinks. The
 * rate of subsampled statistics estimated from their spread at two sizes
 * follows Bertail, Politis and Romano (1999).
 * @param {Float64Array} quarter the draws from a quarter of the rounds
 * @param {Float64Array} whole the draws from all of them
 */
function spreadRate (quarter, whole) {
  const a = centralWidth(quarter)
  const b = centralWidth(whole)
  if (!(b > 0)) return SMOOTH_RATE
  if (!(a > 0)) return 0
  return Math.min(SMOOTH_RATE, Math.max(0, Math.log(a / b) / Math.log(4)))
}

/** @param {Float64Array} draws */
function centralWidth (draws) {
  const s = Float64Array.from(draws).sort()
  const at = (/** @type {number} */ q) => s[Math.round(q * (s.length - 1))]
  return at(0.975) - at(0.025)
}

/**
 * Whether bootstrap draws sit on a few values, as the percentiles of tied
 * timings do: one value holds at least LATTICE_SHARE of them.
 * @param {Float64Array} draws
 */
function onALattice (draws) {
  /** @type {Map<number, number>} */
  const counts = new Map()
  let most = 0
  for (const v of draws) {
    const c = (counts.get(v) ?? 0) + 1
    counts.set(v, c)
    if (c > most) most = c
  }
  return most >= LATTICE_SHARE * draws.length
}

/**
 * @param {number} p
 * @param {number} rounds
 * @returns {Row}
 */
function emptyRow (p, rounds) {
  return {
    percentile: p,
    h2_ms: null,
    h3_ms: null,
    delta_ms: null,
    delta_pct: null,
    ci_low_ms: null,
    ci_high_ms: null,
    p_value: null,
    p_adjusted: null,
    rounds,
    min_rounds: minRoundsFor(p),
    verdict: VERDICTS.INSUFFICIENT_DATA,
    reason: `p${p} needs at least ${minRoundsFor(p)} rounds; have ${rounds}`,
    reason_code: null
  }
}

function emptyPaired () {
  return { rounds: 0, p: null, p_adjusted: null, method: null, hodges_lehmann_ms: null, ci_low_ms: null, ci_high_ms: null }
}

/**
 * Wilcoxon signed-rank on per-round differences of the round's medians,
 * with the Hodges–Lehmann shift and its interval.
 * @param {RoundRow[]} used
 */
function pairedTest (used) {
  // A used round has at least one load of each arm, so never null.
  const median = (/** @type {number[] | null} */ xs) => {
    const s = Float64Array.from(/** @type {number[]} */ (xs)).sort()
    return /** @type {number} */ (exactQuantile(s, 0.5))
  }
  const d = used.map((r) => median(r.h3) - median(r.h2))
  const w = wilcoxonSignedRank(d)
  const hl = hodgesLehmann(d)
  return { rounds: d.length, p: w.p, p_adjusted: null, z: w.z, method: w.method, hodges_lehmann_ms: hl.estimate, ci_low_ms: hl.lo, ci_high_ms: hl.hi }
}

/**
 * Whether an arm's state in a round is one in which it did not load with
 * its protocol: it failed, fell back or met an origin without H3.
 * @param {string} state
 */
export function notLoaded (state) {
  return state === 'failed' || state === 'fallback' || state === 'unsupported'
}

/**
 * Does one arm fail (or fall back) more often than the other in the same
 * rounds? Rounds where both arms ran; discordant = exactly one arm did not
 * load with its protocol.
 * @param {Map<string, number>} table
 */
function failureTest (table) {
  let h3Only = 0
  let h2Only = 0
  let both = 0
  for (const [k, n] of table) {
    const [a, b] = k.split('|')
    if (a === 'missing' || b === 'missing') continue
    both += n
    if (notLoaded(b) && !notLoaded(a)) h3Only += n
    if (notLoaded(a) && !notLoaded(b)) h2Only += n
  }
  return {
    rounds: both,
    h3_only: h3Only,
    h2_only: h2Only,
    p: both >= MIN_ROUNDS ? mcnemarExactP(h2Only, h3Only) : null,
    p_adjusted: null,
    verdict: FAILURE_VERDICTS.INSUFFICIENT_DATA
  }
}

/**
 * All locations, stratified: each percentile's effect is the equal-weight
 * mean of the locations that have enough rounds for it, and its bootstrap
 * the mean of theirs (each location resampled within itself).
 * @param {Record<string, any>[]} entries
 * @param {number[]} percentiles
 * @param {Map<string, number>[]} tables the locations' round-state tables
 * @returns {Record<string, any>}
 */
function allLocationsEntry (entries, percentiles, tables) {
  const withData = entries.filter((e) => e.draws)
  const rows = percentiles.map((p, k) => {
    const parts = withData.filter((e) => e.rows[k].p_value !== null)
    if (!parts.length) {
      const r = emptyRow(p, 0)
      r.reason = `no location has the ${minRoundsFor(p)} rounds p${p} needs`
      return { ...r, locations: [] }
    }
    const mean = (/** @type {(e: Entry) => number} */ f) => parts.reduce((s, e) => s + f(e), 0) / parts.length
    const draws = new Float64Array(parts[0].draws[k].length)
    for (const e of parts) e.draws[k].forEach((/** @type {number} */ v, /** @type {number} */ i) => { draws[i] += v / parts.length })
    // Where the scaling does not hold at any location (testedRow), the
    // mean of the subsamples' own draws must show the difference too (a
    // location below the cap adds its own). Averaged, several locations'
    // tied draws no longer sit on a few values, so each location says.
    const own = parts.some((e) => e.subsample?.unscalable[k]) ? { draws: new Float64Array(draws.length), delta: mean((e) => (e.subsample ? e.subsample.deltas[k] : e.rows[k].delta_ms)) } : undefined
    if (own) for (const e of parts) (e.subsample ? e.subsample.draws[k] : e.draws[k]).forEach((/** @type {number} */ v, /** @type {number} */ i) => { own.draws[i] += v / parts.length })
    const row = testedRow(p, parts.reduce((n, e) => n + e.rows[k].rounds, 0), mean((e) => e.rows[k].h2_ms), mean((e) => e.rows[k].h3_ms), draws, own)
    return { ...row, locations: parts.map((e) => e.location_id) }
  })
  const sum = (/** @type {(e: Entry) => number} */ f) => entries.reduce((n, e) => n + f(e), 0)
  // Round counts add up over locations, so the whole table is the sum of theirs.
  const table = new Map()
  for (const t of tables) for (const [k, n] of t) table.set(k, (table.get(k) ?? 0) + n)
  const { total, matched, excluded, arms } = tableSummary(table)
  const pairedParts = withData.filter((e) => e.paired.p !== null)
  return {
    location_id: null,
    name: 'All locations',
    region: null,
    kind: null,
    rtt_ms: null,
    stratified: true,
    rounds: { total, matched, available: sum((e) => e.rounds.available), used: sum((e) => e.rounds.used), resampled: sum((e) => e.rounds.resampled), excluded },
    arms,
    failure: failureTest(table),
    h3_supported: entries.some((e) => e.h3_supported === true) ? true : (entries.length && entries.every((e) => e.h3_supported === false) ? false : null),
    n_h2: sum((e) => e.n_h2),
    n_h3: sum((e) => e.n_h3),
    ...legacyCounts(arms),
    insufficient_data: !withData.length,
    reason: withData.length ? undefined : `no location has ${MIN_ROUNDS} rounds in which both arms loaded`,
    paired: combinePaired(pairedParts),
    mann_whitney_p: null,
    cliffs_delta: null,
    rows,
    draws: null,
    h2_median: withData.length ? withData.reduce((s, e) => s + e.h2_median, 0) / withData.length : null,
    worst: withData.length ? pooledWorst(withData, percentiles, pairedParts) : null
  }
}

/**
 * How much slower an arm's percentile q could be, were the `only` rounds it
 * did not load in (the other arm loading) its slowest loads: over those and
 * the `used` rounds its percentile q is the percentile q / (1 − f) of the
 * loads it completed, f the share of such rounds; beyond its slowest load,
 * Infinity. 0 when it always loaded. f is the upper end of the share's 95%
 * Wilson interval, not the share itself: the share seen is an estimate, and
 * with it the moved interval still let 2.2% of cells between identical arms
 * read as a gain (7 tables in 30) where one arm failed its own slowest 5%
 * and the other 5% at random.
 * @param {Float64Array} sorted the arm's samples in the rounds used, ascending
 * @param {number} only
 * @param {number} used
 * @returns {(q: number) => number}
 */
export function worstShift (sorted, only, used) {
  if (!only) return () => 0
  const f = /** @type {number} */ (wilsonInterval(only, used + only).hi)
  return (q) => {
    const worse = q / (1 - f)
    return worse > 1 ? Infinity : /** @type {number} */ (exactQuantile(sorted, worse)) - /** @type {number} */ (exactQuantile(sorted, q))
  }
}

/**
 * A difference moved by the worst case of its faster side (worstShift):
 * null when it still stands, else the moved Δ (±Infinity beyond the
 * slowest load). It stands when its moved interval is on its side of 0,
 * |Δ| is at least `threshold`, and, given the cell's bootstrap draws, the
 * p-value of the moved draws passes the cell's correction as its own
 * p-value did (scaled by the ratio of the cell's adjusted to its plain
 * p-value, at most FDR_Q): the moved interval alone is a single cell's 95%,
 * and among many cells with failures a few passed it by chance (0.7% of
 * the auto view's H3 − H2 cells where H3 failed its own slowest 5%).
 * @param {{ delta: number, lo: number, hi: number, threshold: number, draws?: ArrayLike<number> | null, p?: number | null, pAdjusted?: number | null }} effect
 *   Δ and its interval, negative: the first side is faster; draws, p and pAdjusted: the cell's
 * @param {number} shift how much slower the faster side could be
 * @returns {number | null}
 */
export function fallsInWorstCase ({ delta, lo, hi, threshold, draws = null, p = null, pAdjusted = null }, shift) {
  if (!(shift > 0)) return null
  const sign = delta < 0 ? 1 : -1 // the first side faster: it could be slower, Δ up; the second: Δ down
  const moved = { delta: delta + sign * shift, lo: lo + sign * shift, hi: hi + sign * shift }
  const holds = delta < 0 ? moved.hi < 0 : moved.lo > 0
  if (!holds || Math.abs(moved.delta) < threshold) return moved.delta
  if (draws && p !== null && pAdjusted !== null) {
    const movedDraws = Float64Array.from(draws, (d) => d + sign * shift)
    const correction = p > 0 ? pAdjusted / p : 1
    if (bootstrapSummary(movedDraws, moved.delta).p * correction > FDR_Q) return moved.delta
  }
  return null
}

/**
 * All locations' worst-case shifts (worstShifts), as their effects are
 * pooled: at each percentile the mean over the locations in its cell, at
 * the median over those in the paired test; each location's own failures
 * count at that location only.
 * @param {Entry[]} withData
 * @param {number[]} percentiles
 * @param {Entry[]} pairedParts
 * @returns {Worst}
 */
function pooledWorst (withData, percentiles, pairedParts) {
  const mean = (/** @type {Entry[]} */ parts, /** @type {(e: Entry) => number} */ f) => (parts.length ? parts.reduce((s, e) => s + f(e), 0) / parts.length : 0)
  const arm = (/** @type {'h2' | 'h3'} */ a) => {
    const only = withData.reduce((n, e) => n + e.worst[a].only, 0)
    const used = withData.reduce((n, e) => n + e.rounds.used, 0)
    return {
      only,
      missing: withData.reduce((n, e) => n + e.worst[a].missing, 0),
      share: only / (used + only),
      at: percentiles.map((p, k) => mean(withData.filter((e) => e.rows[k].p_value !== null), (e) => e.worst[a].at[k])),
      median: mean(pairedParts, (e) => e.worst[a].median)
    }
  }
  return { h2: arm('h2'), h3: arm('h3') }
}

/**
 * Stouffer's combination of tests that each weigh the same: each two-sided
 * p-value as a z-score, signed by the direction of its effect, summed over
 * the square root of their number.
 * @param {{ p: number, direction: number }[]} parts direction: the effect, whose sign counts
 */
function stoufferZ (parts) {
  const zs = parts.map(({ p, direction }) => Math.sign(direction || 0) * (p >= 1 ? 0 : -normalQuantile(Math.max(p, 1e-300) / 2)))
  return zs.reduce((s, v) => s + v, 0) / Math.sqrt(parts.length)
}

/**
 * Stratified paired test: per-location signed-rank z-scores combined with
 * equal weight (Stouffer), and the mean of the per-location shifts with an
 * interval from their standard errors.
 * @param {Entry[]} parts
 */
function combinePaired (parts) {
  if (!parts.length) return emptyPaired()
  const z1 = normalQuantile(0.975)
  const z = stoufferZ(parts.map((e) => ({ p: e.paired.p, direction: e.paired.hodges_lehmann_ms })))
  const hl = parts.reduce((s, e) => s + e.paired.hodges_lehmann_ms, 0) / parts.length
  const se = Math.sqrt(parts.reduce((s, e) => s + ((e.paired.ci_high_ms - e.paired.ci_low_ms) / (2 * z1)) ** 2, 0)) / parts.length
  return {
    rounds: parts.reduce((n, e) => n + e.paired.rounds, 0),
    p: Math.min(1, 2 * normalSurvival(Math.abs(z))),
    p_adjusted: null,
    z,
    method: 'stouffer',
    hodges_lehmann_ms: hl,
    ci_low_ms: hl - z1 * se,
    ci_high_ms: hl + z1 * se
  }
}

/** Why a tested cell claims no difference, as a code for programs. */
export const NO_DIFFERENCE_CODES = /** @type {const} */ (['interval_includes_zero', 'not_significant', 'below_minimum_effect', 'faster_arm_fails_more', 'faster_arm_failures', 'faster_arm_missing', 'locations_disagree'])

/**
 * How a reason names what it is about: a cell's Δ, corrected over the
 * cells tested beside it, or a location's paired shift (Hodges–Lehmann),
 * corrected over the locations.
 * @typedef {{ interval: string, correction: string, effect: (delta: number) => string }} ReasonWords
 */
/** @type {ReasonWords} */
const CELL_WORDS = { interval: 'the 95% interval includes 0', correction: 'the false-discovery-rate correction', effect: () => '|Δ|' }
/** @type {ReasonWords} */
const SHIFT_WORDS = { interval: 'the shift\'s 95% interval includes 0', correction: 'the correction over locations', effect: (delta) => `the shift of ${round1(delta)} ms` }

/**
 * Why a tested cell claims no difference, in the order the rule looks: its
 * 95% interval includes 0; or (the interval excluding it) its p-value is
 * above FDR_Q once corrected for the cells tested beside it; or |Δ| is below
 * the practical minimum. Null when none holds: the cell is a difference.
 * The code is for programs (the dashboard's short words), the text for
 * people. One rule for the forced table, the auto arm's contrasts and a
 * location's paired test (in its own words).
 * @param {Record<string, any>} cell ci_low_ms, ci_high_ms, p_adjusted, delta_ms
 * @param {number} threshold the practical minimum |Δ|, ms
 * @param {ReasonWords} [words]
 * @returns {{ code: typeof NO_DIFFERENCE_CODES[number], text: string } | null}
 */
export function noDifferenceReason (cell, threshold, words = CELL_WORDS) {
  if (!(cell.ci_low_ms > 0 || cell.ci_high_ms < 0)) return { code: 'interval_includes_zero', text: words.interval }
  if (!(cell.p_adjusted !== null && cell.p_adjusted <= FDR_Q)) {
    const adjusted = cell.p_adjusted === null ? '—' : cell.p_adjusted.toPrecision(2)
    return { code: 'not_significant', text: `not significant after ${words.correction} (adjusted p = ${adjusted}, above ${FDR_Q})` }
  }
  if (Math.abs(cell.delta_ms) < threshold) return { code: 'below_minimum_effect', text: `${words.effect(cell.delta_ms)} is below the practical minimum of ${round1(threshold)} ms` }
  return null
}

/**
 * The smallest |Δ| that counts as a difference against a reference value
 * (H2's, or a contrast's reference arm's): the monitor's share of it, or
 * its floor in ms, whichever is larger.
 * @param {number} reference ms
 * @param {MinEffect} minEffect
 */
export function practicalMinimum (reference, minEffect) {
  return Math.max(minEffect.pct / 100 * Math.abs(reference), minEffect.ms)
}

/**
 * A cell's verdict, and why when it is not a difference (reason, and
 * reason_code for a tested cell).
 * @param {Row} row
 * @param {MinEffect} minEffect
 */
export function cellVerdict (row, minEffect) {
  if (row.p_value === null) return VERDICTS.INSUFFICIENT_DATA
  const threshold = practicalMinimum(row.h2_ms, minEffect)
  row.min_effect_ms = threshold
  const why = noDifferenceReason(row, threshold)
  row.reason = why?.text ?? null
  row.reason_code = why?.code ?? null
  if (why) return VERDICTS.NO_CLEAR_DIFFERENCE
  return row.delta_ms < 0 ? VERDICTS.H3_FASTER : VERDICTS.H3_SLOWER
}

/**
 * The all-locations cells average the locations' Δ in ms, so a location
 * with ten times the others' timings outweighs them: seven locations 10%
 * slower over H3 and one slow one 30% faster read "H3 faster" at every
 * percentile. Where the locations' own cells, each weighing the same
 * (Stouffer's z of their signed p-values), lean the other way than that
 * mean, the cell is no clear difference and says so, as the location
 * verdict does (locationVerdict).
 * @param {Entry} all
 * @param {Entry[]} entries
 */
function withholdWhereLocationsDisagree (all, entries) {
  all.rows.forEach((/** @type {Row} */ row, /** @type {number} */ k) => {
    if (row.verdict !== VERDICTS.H3_FASTER && row.verdict !== VERDICTS.H3_SLOWER) return
    const cells = entries.map((e) => e.rows[k]).filter((/** @type {Row} */ r) => r.p_value !== null)
    const z = stoufferZ(cells.map((/** @type {Row} */ r) => ({ p: /** @type {number} */ (r.p_value), direction: r.delta_ms })))
    if (z * row.delta_ms >= 0) return
    const leaning = cells.filter((/** @type {Row} */ r) => Math.sign(r.delta_ms) === Math.sign(z)).length
    row.verdict = VERDICTS.NO_CLEAR_DIFFERENCE
    row.reason_code = 'locations_disagree'
    row.reason = `the locations disagree: their cells, each weighing the same, lean to H3 ${z < 0 ? 'faster' : 'slower'} (${leaning} of ${cells.length}), ` +
      `while their Δ average ${row.delta_ms > 0 ? '+' : ''}${round1(row.delta_ms)} ms, where the locations with the slowest loads weigh most; each location's own cell says which way it goes`
  })
}

/**
 * One word per location for overviews: the paired test's verdict.
 * @param {Entry} e
 * @param {MinEffect} minEffect
 */
function locationVerdict (e, minEffect) {
  if (e.h3_supported === false) {
    e.reason = 'H3 not supported: the origin refused QUIC and advertises no Alt-Svc h3'
    return VERDICTS.H3_NOT_SUPPORTED
  }
  const t = e.paired
  if (t.p === null) return VERDICTS.INSUFFICIENT_DATA
  const threshold = practicalMinimum(e.h2_median ?? 0, minEffect)
  // The cells' rule, on the paired test's shift and its interval.
  const why = noDifferenceReason({ ci_low_ms: t.ci_low_ms, ci_high_ms: t.ci_high_ms, p_adjusted: t.p_adjusted, delta_ms: t.hodges_lehmann_ms }, threshold, SHIFT_WORDS)
  if (why) {
    e.reason ??= why.text
    return VERDICTS.NO_CLEAR_DIFFERENCE
  }
  // All locations: the p-value combines the locations' tests with equal
  // weight (combinePaired), the shift is the mean of their shifts in ms.
  // Where they point opposite ways (two locations 10% faster over H3, a
  // third with ten times their timings 10% slower), neither is the answer.
  if (t.method === 'stouffer' && t.z * t.hodges_lehmann_ms < 0) {
    e.reason ??= `the locations disagree: their tests, each weighing the same, lean to H3 ${t.z < 0 ? 'faster' : 'slower'}, ` +
      `while their shifts average ${t.hodges_lehmann_ms > 0 ? '+' : ''}${round1(t.hodges_lehmann_ms)} ms, where the locations with the slowest loads weigh most; each location's own verdict says which way it goes`
    return VERDICTS.NO_CLEAR_DIFFERENCE
  }
  return t.hodges_lehmann_ms < 0 ? VERDICTS.H3_FASTER : VERDICTS.H3_SLOWER
}

/**
 * In matched rounds, an arm that fails more often than the other loses
 * loads the other keeps; when those are its own slowest (a handshake that
 * stalls until the timeout), the loads it completes look faster than it
 * is, at every percentile, and leaving the whole round out does not undo
 * it. So where the paired failure test says one arm fails more, that arm
 * being faster is no verdict, in the cells and for the location: the
 * intention-to-treat view, which counts a failure at the timeout, answers
 * for it.
 * @param {Entry} e
 */
function withholdGainOfFailingArm (e) {
  const f = e.failure
  const h3FailsMore = f.verdict === FAILURE_VERDICTS.H3_FAILS_MORE
  if (!h3FailsMore && f.verdict !== FAILURE_VERDICTS.H3_FAILS_LESS) return
  const faster = h3FailsMore ? VERDICTS.H3_FASTER : VERDICTS.H3_SLOWER
  const [arm, other, only, otherOnly] = h3FailsMore ? ['H3', 'H2', f.h3_only, f.h2_only] : ['H2', 'H3', f.h2_only, f.h3_only]
  withholdGain(e, faster, 'faster_arm_fails_more', `${arm} failed or fell back more often in these rounds (${only} rounds where only ${arm} failed or fell back, ${otherOnly} where only ${other} did): ` +
    `among the loads that completed ${arm} looks faster, as it would by failing its slowest loads; the intention-to-treat analysis counts the failures`)
}

/**
 * Every cell of `e` that reads `faster`, and its location's verdict, become
 * no clear difference, saying why.
 * @param {Entry} e
 * @param {string} faster H3_FASTER or H3_SLOWER
 * @param {typeof NO_DIFFERENCE_CODES[number]} code
 * @param {string} reason
 */
function withholdGain (e, faster, code, reason) {
  for (const r of e.rows) {
    if (r.verdict !== faster) continue
    r.verdict = VERDICTS.NO_CLEAR_DIFFERENCE
    r.reason = reason
    r.reason_code = code
  }
  if (e.verdict === faster) {
    e.verdict = VERDICTS.NO_CLEAR_DIFFERENCE
    e.reason = reason
  }
}

/**
 * The failure test's rule for the rounds where one arm has no result at
 * all (unloaded), which neither analysis holds and the failure test does
 * not see: where one arm lacks its result in more rounds than the other
 * (an exact McNemar test on those rounds, at FDR_Q), that arm being faster
 * is no verdict, in the cells and for the location, in both analyses
 * (reason_code faster_arm_missing).
 * @param {Entry} e
 */
function withholdGainOfMissingArm (e) {
  const worst = /** @type {Worst | null} */ (e.worst)
  if (!worst) return
  const [h2, h3] = [worst.h2.missing, worst.h3.missing]
  if (h2 === h3 || !(mcnemarExactP(h2, h3) <= FDR_Q)) return
  const h3Lacks = h3 > h2
  const [arm, other, lacks, otherLacks] = h3Lacks ? ['H3', 'H2', h3, h2] : ['H2', 'H3', h2, h3]
  withholdGain(e, h3Lacks ? VERDICTS.H3_FASTER : VERDICTS.H3_SLOWER, 'faster_arm_missing',
    `${arm} has no result in ${lacks} rounds where ${other} loaded (${other} in ${otherLacks} where ${arm} did)${e.location_id === null ? ' over the locations' : ''}: ` +
    `in the rounds with both, ${arm} looks faster, as it would were its missing loads its slowest; a round without an arm's result is in neither analysis: ` +
    `record or import its ${arm} loads, a failed one as a failure`)
}

/**
 * The failure test finds an arm failing more only when it does; an arm may
 * also fail its own slowest loads while the other fails as often for other
 * reasons (at random, say), and then the loads it completes still look
 * faster than it is, with no test to tell. So in matched rounds a gain of
 * an arm that did not load in some rounds the other did stands only if it
 * holds with those rounds counted as its slowest loads (worstShifts): its
 * percentile moved by as much as that could move it, the cell's interval
 * with it, the interval still on its side of 0 and |Δ| still at least the
 * practical minimum. The same for the location's paired shift, at the
 * median. The intention-to-treat view, which counts a failure at the
 * timeout, answers for such a cell.
 * Rounds where an arm has no result at all are counted so in both
 * analyses (unloaded).
 * @param {Entry} e
 * @param {MinEffect} minEffect
 * @param {string} analysis
 */
function withholdGainFailuresCouldExplain (e, minEffect, analysis) {
  const worst = /** @type {Worst | null} */ (e.worst)
  if (!worst) return
  const words = (/** @type {'h2' | 'h3'} */ a, /** @type {string} */ what, /** @type {number} */ moved) => {
    const [arm, other] = a === 'h3' ? ['H3', 'H2'] : ['H2', 'H3']
    const w = worst[a]
    const at = Number.isFinite(moved) ? `Δ ${round1(moved)} ms` : 'slower than any load it completed'
    const how = w.missing === w.only ? `has no result in ${w.only} rounds where ${other} loaded`
      : w.missing ? `did not load in ${w.only} rounds where ${other} did (in ${w.missing} of them it has no result at all)`
        : `did not load in ${w.only} rounds where ${other} did`
    const then = w.missing === w.only ? `; a round without an arm's result is in neither analysis: record or import its ${arm} loads, a failed one as a failure`
      : analysis === 'matched' ? '; the intention-to-treat analysis counts the failures' : ''
    return `${arm} ${how} (${round1(w.share * 100)}%${e.location_id === null ? ', over the locations' : ''}): ` +
      `counted as its slowest loads, its gain ${what} does not hold (${at})${then}`
  }
  e.rows.forEach((/** @type {Row} */ r, /** @type {number} */ k) => {
    if (r.verdict !== VERDICTS.H3_FASTER && r.verdict !== VERDICTS.H3_SLOWER) return
    const a = r.verdict === VERDICTS.H3_FASTER ? 'h3' : 'h2'
    const shift = worst[a].at[k]
    const moved = fallsInWorstCase({ delta: r.delta_ms, lo: r.ci_low_ms, hi: r.ci_high_ms, threshold: r.min_effect_ms, draws: r.draws, p: r.p_value, pAdjusted: r.p_adjusted }, shift)
    if (moved === null) return
    r.verdict = VERDICTS.NO_CLEAR_DIFFERENCE
    r.reason = words(a, `at p${r.percentile}`, moved)
    r.reason_code = worst[a].missing === worst[a].only ? 'faster_arm_missing' : 'faster_arm_failures'
  })
  if (e.verdict === VERDICTS.H3_FASTER || e.verdict === VERDICTS.H3_SLOWER) {
    const a = e.verdict === VERDICTS.H3_FASTER ? 'h3' : 'h2'
    const t = e.paired
    const threshold = practicalMinimum(e.h2_median ?? 0, minEffect)
    const shift = worst[a].median
    const moved = fallsInWorstCase({ delta: t.hodges_lehmann_ms, lo: t.ci_low_ms, hi: t.ci_high_ms, threshold }, shift)
    if (moved !== null) {
      e.verdict = VERDICTS.NO_CLEAR_DIFFERENCE
      e.reason = words(a, 'in the paired shift', moved)
    }
  }
}

/** @param {Entry} e */
function failureVerdict (e) {
  if (e.h3_supported === false) return FAILURE_VERDICTS.H3_NOT_SUPPORTED
  const f = e.failure
  if (f.p === null) return FAILURE_VERDICTS.INSUFFICIENT_DATA
  if (!(f.p_adjusted <= FDR_Q)) return FAILURE_VERDICTS.NO_CLEAR_DIFFERENCE
  return f.h3_only > f.h2_only ? FAILURE_VERDICTS.H3_FAILS_MORE : FAILURE_VERDICTS.H3_FAILS_LESS
}

const round1 = (/** @type {number} */ v) => Math.round(v * 10) / 10
