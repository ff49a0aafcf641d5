// As users get it: the auto arm (the browser's defaults, nothing forced)
// beside the forced arms, per location. The forced comparison
// (./comparison.js) says what H3 could do; this says what a user's browser
// gets of it:
//   - the H3 share of each visit (first, returning, repeat): navigations
//     over H3 with a Wilson interval, bytes over H3 with a ratio interval
//     (lib/analysis/stats/proportions.js ratioInterval),
//     and why the browser chose its protocol (the runs' protocol reasons and
//     Chromium's alternateProtocolUsage);
//   - per visit and percentile, paired per round: auto − H2, auto − H3, and
//     the forced gain H3 − H2 of the same rounds, each with a round-level
//     bootstrap interval and a verdict under the same rules as the forced
//     table;
//   - the received gain (H2 − auto) / (H2 − H3): the share of the forced H3
//     gain the auto arm gets, with an interval from the same resamples,
//     shown only where that forced gain is itself a verdict (H3 faster);
//   - the location's story in words ("QUIC blocked on this path: users get
//     H2").
// One matched set per visit: the rounds in which all three arms loaded
// (the forced arms with their protocol) and have the metric. The returning
// visit is paired with the forced arms' first view (lib/store/round-summaries.js
// readVisitRounds says why). docs/STATISTICS.md explains;
// bench/calibration.js measures the false-positive rate and the received
// gain's coverage.
import { readVisitRounds } from '../store/round-summaries.js'
import { autoVisitOutcomes } from '../store/results.js'
import { listLocations } from '../store/locations.js'
import { armsBootstrap, bootstrapSummary, ratioInterval, resampledRatioInterval, selectiveBenjaminiHochberg, wilsonInterval } from './stats/index.js'
import { BOOTSTRAP_ITERATIONS, DEFAULT_MIN_EFFECT, FDR_Q, ROUND_CAP, armsRun, noDifferenceReason, correctionFamily, fallsInWorstCase, notLoaded, practicalMinimum, worstShift } from './comparison.js'
import { MIN_ROUNDS, minRoundsFor } from '../measurement/metrics.js'

/** The visits the analysis pairs with the forced arms; a repeat view is only counted (its share and reasons). */
export const AUTO_VISITS = Object.freeze(['first', 'returning'])
/** Views whose H3 share is shown, in order. */
export const SHARE_VIEWS = Object.freeze(['first', 'returning', 'repeat'])
const ARMS = ['h2', 'h3', 'auto']

/** The paired differences of every visit: arm − ref. */
export const CONTRASTS = Object.freeze([
  Object.freeze({ id: 'auto_vs_h2', arm: 'auto', ref: 'h2', label: 'auto − H2: what users gain over H2' }),
  Object.freeze({ id: 'auto_vs_h3', arm: 'auto', ref: 'h3', label: 'auto − H3: what users miss of forced H3' }),
  Object.freeze({ id: 'h3_vs_h2', arm: 'h3', ref: 'h2', label: 'H3 − H2 forced, in the same rounds: the gain there is to receive' })
])

export const CONTRAST_VERDICTS = Object.freeze({
  FASTER: 'faster',
  SLOWER: 'slower',
  NO_CLEAR_DIFFERENCE: 'no_clear_difference',
  INSUFFICIENT_DATA: 'insufficient_data'
})

/** What a location's users get, in words. */
export const STORIES = Object.freeze({
  h3_returning: 'Users get H3 from their second visit on',
  not_announced: 'The origin does not announce H3: users get H2',
  quic_blocked: 'QUIC blocked on this path: users get H2',
  broken: 'H3 marked broken after failures: users get H2',
  tcp_wins: 'TCP wins the race: users mostly get H2',
  h2_mostly: 'Users mostly get H2',
  no_data: 'No visit of the auto arm in the window',
  undecided: 'Too few visits to say what most users get',
  first_visit_only: 'First visits only here (a WebPageTest agent makes no returning visit): what users get from their second visit on is not measured',
  page_fails: 'Most visits of the auto arm failed: users\' loads fail here'
})

// A story about what users get claims a majority: of the auto arm's
// visits failing, of the returning visits over H3 (or over H2), or of the
// forced H3 loads failing; and claims it only when its 95% Wilson interval
// lies wholly above half, so one visit, or 3 of 3, tells no story (4 of 4
// does).
const MAJORITY = 0.5
/** @param {number} k @param {number} n */
const confidentMajority = (k, n) => n > 0 && /** @type {number} */ (wilsonInterval(k, n).lo) > MAJORITY

/**
 * @typedef {import('./comparison.js').ComparedMonitor & { modes?: string[] }} AutoMonitor
 * @typedef {{ pct: number, ms: number }} MinEffect
 */

/**
 * @param {import('pg').Pool} db
 * @param {{ monitor: AutoMonitor, metric: string, percentiles: number[], from: Date, to: Date, browser?: string }} q browser: whose rounds (Chromium's when not said)
 */
export async function autoComparison (db, { monitor, metric, percentiles: asked, from, to, browser = 'chromium' }) {
  const percentiles = correctionFamily(asked)
  const qs = percentiles.map((p) => p / 100)
  const minEffect = { pct: monitor.min_effect_pct ?? DEFAULT_MIN_EFFECT.pct, ms: monitor.min_effect_ms ?? DEFAULT_MIN_EFFECT.ms }
  const [locRows, outcomes, ...visitRows] = await Promise.all([
    listLocations(db),
    autoVisitOutcomes(db, { monitorId: monitor.id, from, to, browser }),
    ...AUTO_VISITS.map((visit) => readVisitRounds(db, { monitorId: monitor.id, metric, visit: /** @type {'first' | 'returning'} */ (visit), browser, from, to, cap: ROUND_CAP }))
  ])
  const locations = new Map(locRows.map((l) => [l.id, l]))
  const seen = new Set([...outcomes.totals.map((r) => r.location_id), ...visitRows.flat().map((r) => r.location_id)])
  const ids = [...new Set([...monitor.locations, ...seen])]
  // As the forced comparison's: a browser other than Chromium is named.
  const seedBase = `auto|${monitor.id}|${metric}${browser === 'chromium' ? '' : `|${browser}`}`
  // The forced arms the monitor does not run: with one missing, no round
  // can have all three arms, however long one waits.
  const lacking = monitor.modes ? ['h2', 'h3'].filter((m) => !monitor.modes?.includes(m)) : []

  /** @type {Record<string, any>[]} */
  const entries = ids.map((id) => {
    const l = locations.get(id)
    const visits = Object.fromEntries(AUTO_VISITS.map((visit, v) => [visit, visitEntry({
      // One seed for both visits: where their rounds are the same, so are their forced H3 − H2 cells.
      rows: visitRows[v].filter((r) => r.location_id === id), percentiles, qs, seed: `${seedBase}|${id}`, lacking
    })]))
    const shares = sharesOf(outcomes, id)
    return {
      location_id: id,
      name: l?.name ?? id,
      region: l?.region ?? null,
      kind: l?.kind ?? null,
      shares,
      visits,
      story: null
    }
  })

  // Every tested cell of the view, a column per (location, visit,
  // contrast), corrected together: columns selected by Benjamini–Hochberg
  // over their Simes p-values, Benjamini–Hochberg within the selected ones
  // (selectiveBenjaminiHochberg says why not the forced table's screen).
  /** @type {Record<string, any>[][]} */
  const columns = []
  for (const e of entries) {
    for (const visit of AUTO_VISITS) {
      for (const c of CONTRASTS) columns.push(e.visits[visit].rows.map((/** @type {any} */ r) => r.contrasts[c.id]).filter((/** @type {any} */ cell) => cell.p_value !== null))
    }
  }
  selectiveBenjaminiHochberg(columns.map((col) => col.map((cell) => cell.p_value)), FDR_Q)
    .forEach((adjusted, j) => columns[j].forEach((cell, i) => { cell.p_adjusted = adjusted[i] }))
  const allRows = entries.flatMap((e) => AUTO_VISITS.flatMap((visit) => e.visits[visit].rows))
  for (const row of allRows) {
    for (const c of CONTRASTS) {
      judgeCell(row.contrasts[c.id], minEffect, row.worst?.[c.id])
      delete row.contrasts[c.id].draws
    }
  }
  // The received gain is shown only in the cells whose forced gain is a
  // verdict: R selected of the m tested. An interval picked for a large
  // forced gain covers less than its level (the winner's curse), so each
  // shown one is at 1 − q·R/m, which keeps the share of non-covering
  // intervals among those shown at q (Benjamini and Yekutieli's
  // false-coverage rate).
  const forced = allRows.map((r) => r.contrasts.h3_vs_h2).filter((c) => c.p_value !== null)
  const selected = forced.filter((c) => c.verdict === CONTRAST_VERDICTS.FASTER).length
  const level = selected ? 1 - FDR_Q * selected / forced.length : 1 - FDR_Q
  for (const row of allRows) {
    row.received_gain = receivedGain(row, level)
    delete row.gain_draws
    delete row.worst
  }
  for (const e of entries) {
    e.story = storyOf(e)
    for (const visit of AUTO_VISITS) e.visits[visit].rows = e.visits[visit].rows.filter((/** @type {any} */ r) => asked.includes(r.percentile))
  }
  const cells = entries.flatMap((e) => AUTO_VISITS.flatMap((visit) => e.visits[visit].rows.flatMap((/** @type {any} */ r) => CONTRASTS.map((c) => r.contrasts[c.id]))))
    .filter((c) => c.p_value !== null)
  return {
    monitor_id: monitor.id,
    metric,
    from: from.toISOString(),
    to: to.toISOString(),
    percentiles: asked,
    has_auto: (monitor.modes ?? []).includes('auto'),
    min_effect: minEffect,
    cells: { tested: cells.length, flagged: cells.filter((c) => c.verdict === CONTRAST_VERDICTS.FASTER || c.verdict === CONTRAST_VERDICTS.SLOWER).length },
    method: method(minEffect, asked, percentiles),
    locations: entries
  }
}

/**
 * One visit of one location: its rounds, and per percentile the three
 * arms' values, the contrasts and what the received gain needs.
 * @param {{ rows: import('../store/round-summaries.js').VisitRoundRow[], percentiles: number[], qs: number[], seed: string, lacking?: string[] }} o lacking: the forced arms the monitor does not run
 */
function visitEntry ({ rows, percentiles, qs, seed, lacking = [] }) {
  /** @type {Map<string, number>} */
  const table = new Map()
  /** @type {Map<string, number>} of them, the imported rounds that lack an arm (comparison.js unloaded) */
  const imported = new Map()
  /** @type {Exclude<import('../store/round-summaries.js').VisitRoundRow, { kind: 'count' }>[]} */
  const used = []
  let available = 0
  for (const r of rows) {
    if (r.kind === 'count') {
      const key = `${r.h2}|${r.h3}|${r.auto}`
      table.set(key, (table.get(key) ?? 0) + r.n)
      if (r.imported) imported.set(key, (imported.get(key) ?? 0) + r.n)
    } else {
      used.push(r)
      available = r.n
    }
  }
  used.sort((a, b) => (a.kind === 'used' && b.kind === 'used' ? a.k - b.k : 0))
  const total = [...table.values()].reduce((n, v) => n + v, 0)
  const rounds = {
    total,
    matched: table.get('ok|ok|ok') ?? 0,
    available,
    used: used.length,
    excluded: [...table].filter(([k]) => k !== 'ok|ok|ok')
      .map(([k, n]) => { const [h2, h3, auto] = k.split('|'); return { h2, h3, auto, rounds: n } })
      .sort((a, b) => b.rounds - a.rounds)
  }
  const attempted = (/** @type {number} */ i) => [...table].filter(([k]) => k.split('|')[i] !== 'missing').reduce((n, [, v]) => n + v, 0)
  // A forced arm that fell back to the other protocol did not load as forced: it fails, as in the comparison.
  const failing = (/** @type {number} */ i) => [...table].filter(([k]) => ['failed', 'unsupported', 'fallback'].includes(k.split('|')[i])).reduce((n, [, v]) => n + v, 0)
  const failures = Object.fromEntries(ARMS.map((arm, i) => [arm, { attempted: attempted(i), failed: failing(i), rate: wilsonInterval(failing(i), attempted(i)) }]))
  if (!used.length) {
    // An arm that failed in every round it was tried in: more rounds add
    // nothing while it does, and the reason says so rather than asking for them.
    const alwaysFailed = ARMS.filter((arm) => failures[arm].attempted > 0 && failures[arm].failed === failures[arm].attempted)
    const never = alwaysFailed.length
      ? `${alwaysFailed.map((arm) => arm === 'auto' ? 'the auto arm' : `forced ${arm.toUpperCase()}`).join(' and ')} did not load in any round (${failures[alwaysFailed[0]].failed} of ${failures[alwaysFailed[0]].attempted}), so no round has all three arms loaded; more rounds add none while that lasts`
      : null
    const reason = lacking.length
      ? `this monitor does not run the ${lacking.join(' and ')} arm, and the auto arm is compared with both forced arms: add ${lacking.join(' and ')} to its modes`
      : never ?? `no round in which all three arms loaded${total ? ` (of ${total} in the window)` : ''}`
    return {
      rounds, failures, insufficient_data: true, reason,
      rows: percentiles.map((p) => emptyVisitRow(p, 0, never))
    }
  }
  const enough = used.length >= MIN_ROUNDS
  const boot = armsBootstrap({
    rounds: used.map((r) => r.kind === 'used' ? { h2: [r.h2_v], h3: [r.h3_v], auto: [r.auto_v] } : { h2: [], h3: [], auto: [] }),
    arms: ARMS, qs, iterations: enough ? BOOTSTRAP_ITERATIONS : 0, seed
  })
  const n = used.length
  // Each contrast's sides' worst cases (worstShift): the rounds where one
  // side did not load and the other did, counted as that side's slowest
  // loads; a side with no result at all in an imported round did not load
  // either, where the location's rounds have that arm elsewhere (the forced
  // table's rule, comparison.js unloaded: an agent's round lacks only an
  // arm it was not asked for).
  const runs = armsRun(table, ARMS.length)
  const count = (/** @type {Map<string, number>} */ t, /** @type {(states: string[]) => boolean} */ pred) =>
    [...t].filter(([key]) => pred(key.split('|'))).reduce((m, [, v]) => m + v, 0)
  const onlyMissing = (/** @type {number} */ i, /** @type {number} */ j) => count(imported, (s) => runs[i] && s[i] === 'missing' && s[j] === 'ok')
  const onlyFailed = (/** @type {number} */ i, /** @type {number} */ j) => count(table, (s) => notLoaded(s[i]) && s[j] === 'ok') + onlyMissing(i, j)
  const sorted = Object.fromEntries(ARMS.map((arm) => [arm, Float64Array.from(used.flatMap((r) => r.kind === 'used' ? [r[/** @type {'h2_v' | 'h3_v' | 'auto_v'} */ (`${arm}_v`)]] : [])).sort()]))
  const worst = Object.fromEntries(CONTRASTS.map((c) => {
    const [i, j] = [ARMS.indexOf(c.arm), ARMS.indexOf(c.ref)]
    const side = (/** @type {number} */ a, /** @type {number} */ b) => {
      const only = onlyFailed(a, b)
      // Against every round with all three arms (available), as the counts are; the samples may be a subsample of them.
      const all = Math.max(available, n)
      return { arm: ARMS[a], only, missing: onlyMissing(a, b), share: only / (all + only), shift: worstShift(sorted[ARMS[a]], only, all) }
    }
    return [c.id, { arm: side(i, j), ref: side(j, i) }]
  }))
  const out = percentiles.map((p, k) => {
    const v = Object.fromEntries(ARMS.map((arm) => [arm, boot.point[arm][k]]))
    const tested = enough && n >= minRoundsFor(p)
    /** @type {Record<string, any>} */
    const contrasts = {}
    for (const c of CONTRASTS) {
      const estimate = v[c.arm] - v[c.ref]
      const base = { arm: c.arm, ref: c.ref, delta_ms: estimate, delta_pct: v[c.ref] ? estimate / v[c.ref] * 100 : null, ref_ms: v[c.ref] }
      if (!tested) {
        contrasts[c.id] = { ...base, ci_low_ms: null, ci_high_ms: null, p_value: null, p_adjusted: null, verdict: CONTRAST_VERDICTS.INSUFFICIENT_DATA, reason: insufficientReason(p, n), reason_code: null }
        continue
      }
      const draws = boot.draws[c.arm][k].map((x, i) => x - boot.draws[c.ref][k][i])
      const s = bootstrapSummary(draws, estimate)
      // draws: for the worst case of failures (judgeCell); not answered.
      contrasts[c.id] = { ...base, ci_low_ms: s.lo, ci_high_ms: s.hi, p_value: s.p, p_adjusted: null, verdict: null, reason: null, reason_code: null, draws }
    }
    const row = {
      percentile: p, rounds: n, min_rounds: minRoundsFor(p),
      h2_ms: v.h2, h3_ms: v.h3, auto_ms: v.auto,
      contrasts,
      received_gain: null,
      gain_draws: tested ? gainDraws(boot.draws, k) : null,
      worst: Object.fromEntries(CONTRASTS.map((c) => [c.id, { arm: { ...worst[c.id].arm, shift: worst[c.id].arm.shift(qs[k]) }, ref: { ...worst[c.id].ref, shift: worst[c.id].ref.shift(qs[k]) } }]))
    }
    return row
  })
  return {
    rounds, failures,
    insufficient_data: !enough,
    reason: enough ? undefined : `need at least ${MIN_ROUNDS} rounds in which all three arms loaded for a verdict; have ${n}`,
    rows: out
  }
}

/**
 * What users receive (H2 − auto) and the forced gain (H2 − H3), each in
 * every resample: the received gain's interval is read from the pairs.
 * @param {Record<string, Float64Array[]>} draws
 * @param {number} k
 * @returns {{ received: Float64Array, forced: Float64Array }}
 */
function gainDraws (draws, k) {
  const received = new Float64Array(draws.h2[k].length)
  const forced = new Float64Array(draws.h2[k].length)
  for (let i = 0; i < received.length; i++) {
    received[i] = draws.h2[k][i] - draws.auto[k][i]
    forced[i] = draws.h2[k][i] - draws.h3[k][i]
  }
  return { received, forced }
}

/**
 * The share of the forced gain users receive, or why it is not shown.
 * @param {Record<string, any>} row
 * @param {number} level the interval's confidence: 1 − q·R/m, R of the m tested forced gains shown
 */
function receivedGain (row, level) {
  const forced = row.contrasts.h3_vs_h2
  const value = row.h2_ms !== row.h3_ms ? (row.h2_ms - row.auto_ms) / (row.h2_ms - row.h3_ms) : null
  if (forced.verdict !== CONTRAST_VERDICTS.FASTER) {
    /** @type {Record<string, string>} */
    const reasons = {
      [CONTRAST_VERDICTS.INSUFFICIENT_DATA]: forced.reason,
      [CONTRAST_VERDICTS.NO_CLEAR_DIFFERENCE]: forced.reason_code === 'faster_arm_failures' || forced.reason_code === 'faster_arm_missing'
        ? `no H3 gain to receive: ${forced.reason}`
        : 'no H3 gain to receive: forced H3 shows no clear difference from H2 in these rounds',
      [CONTRAST_VERDICTS.SLOWER]: 'no H3 gain to receive: forced H3 is slower than H2 in these rounds'
    }
    const why = reasons[forced.verdict]
    return { shown: false, value: null, ci_low: null, ci_high: null, level: null, reason: why }
  }
  // Each arm's loads that did not complete (or left no result), were they
  // its slowest, make that arm look faster than it is, by up to its worst
  // shift (as judgeCell holds a lead to): auto faster makes the share
  // larger; forced H3 faster makes the gain larger, and the share smaller;
  // forced H2 faster takes as much from what users receive as from the gain,
  // and moves the share away from 1. The interval holds every such case:
  // each end at the worst of them.
  const sides = {
    auto: row.worst?.auto_vs_h2?.arm ?? NO_FAILURES,
    'forced H3': row.worst?.h3_vs_h2?.arm ?? NO_FAILURES,
    // H2's failures where H3 loaded move the gain, those where auto loaded what users receive: the larger.
    'forced H2': largerShift(row.worst?.h3_vs_h2?.ref ?? NO_FAILURES, row.worst?.auto_vs_h2?.ref ?? NO_FAILURES)
  }
  const gain = row.h2_ms - row.h3_ms
  for (const [arm, side] of Object.entries(sides)) {
    const other = arm === 'forced H2' ? 'another arm' : 'H2'
    const noBound = !Number.isFinite(side.shift) ? 'it could be slower than any load it completed' : arm === 'forced H3' && side.shift >= gain ? 'the gain could be none' : null
    if (noBound) {
      return {
        shown: false, value: null, ci_low: null, ci_high: null, level: null,
        reason: `${arm === 'auto' ? 'the auto arm' : arm} did not load in ${side.only} rounds where ${other} did (${pctText(side.share)}): ` +
          `counted as its slowest loads, ${noBound}, so the share of the gain users receive cannot be told`
      }
    }
  }
  const { received, forced: gains } = /** @type {{ received: Float64Array, forced: Float64Array }} */ (row.gain_draws)
  const interval = resampledRatioInterval(received, gains, /** @type {number} */ (value), (1 - level) / 2)
  if (!interval) {
    return {
      shown: false, value: null, ci_low: null, ci_high: null, level: null,
      reason: `the forced H3 gain is not clear of 0 in the resamples of these rounds at the share's ${pctText(level)} level: ` +
        'the share of a gain that may be 0 has no bound'
    }
  }
  const shifted = (/** @type {number} */ share) => {
    const out = []
    for (const auto of [0, sides.auto.shift]) {
      for (const h2 of [0, sides['forced H2'].shift]) {
        for (const h3 of [0, sides['forced H3'].shift]) out.push((share * gain + h2 - auto) / (gain + h2 - h3))
      }
    }
    return out
  }
  return { shown: true, value, ci_low: Math.min(...shifted(interval.lo)), ci_high: Math.max(...shifted(interval.hi)), level, reason: null }
}

/** A side none of whose loads failed. */
const NO_FAILURES = Object.freeze({ only: 0, share: 0, shift: 0 })

/**
 * @param {{ only: number, share: number, shift: number }} a
 * @param {{ only: number, share: number, shift: number }} b
 */
function largerShift (a, b) {
  return b.shift > a.shift ? b : a
}

/** @param {number} level */
function pctText (level) {
  return `${Math.round(level * 1000) / 10}%`
}

/**
 * A contrast cell's verdict under the forced table's rule: corrected
 * p-value ≤ FDR_Q, interval excluding 0, |Δ| at least the practical
 * minimum of the reference arm's value; and, as in the forced table's
 * matched view, the difference must hold with the rounds its faster side
 * did not load in (the other side loading) counted as that side's slowest
 * loads (reason_code faster_arm_failures; faster_arm_missing where all of
 * them are imported rounds with no result of it).
 * @param {Record<string, any>} cell
 * @param {MinEffect} minEffect
 * @param {{ arm: WorstSide, ref: WorstSide }} [worst] the contrast's sides' worst cases at the cell's percentile
 */
function judgeCell (cell, minEffect, worst) {
  if (cell.p_value === null) return
  const threshold = practicalMinimum(cell.ref_ms, minEffect)
  cell.min_effect_ms = threshold
  const why = noDifferenceReason(cell, threshold)
  cell.reason = why?.text ?? null
  cell.reason_code = why?.code ?? null
  if (why) {
    cell.verdict = CONTRAST_VERDICTS.NO_CLEAR_DIFFERENCE
    return
  }
  const [faster, other] = worst ? (cell.delta_ms < 0 ? [worst.arm, worst.ref] : [worst.ref, worst.arm]) : [null, null]
  const moved = faster ? fallsInWorstCase({ delta: cell.delta_ms, lo: cell.ci_low_ms, hi: cell.ci_high_ms, threshold, draws: cell.draws, p: cell.p_value, pAdjusted: cell.p_adjusted }, faster.shift) : null
  if (faster && other && moved !== null) {
    const name = ARM_NAMES[faster.arm]
    const lacking = faster.missing === faster.only
    cell.verdict = CONTRAST_VERDICTS.NO_CLEAR_DIFFERENCE
    cell.reason_code = lacking ? 'faster_arm_missing' : 'faster_arm_failures'
    cell.reason = `${name[0].toUpperCase()}${name.slice(1)} ${lacking ? `has no result in ${faster.only} rounds where ${ARM_NAMES[other.arm]} loaded` : `did not load in ${faster.only} rounds where ${ARM_NAMES[other.arm]} did`} ` +
      `(${Math.round(faster.share * 1000) / 10}%): counted as its slowest loads, ` +
      `its lead does not hold (${Number.isFinite(moved) ? `Δ ${Math.round(moved * 10) / 10} ms` : 'slower than any load it completed'})`
    return
  }
  cell.verdict = cell.delta_ms < 0 ? CONTRAST_VERDICTS.FASTER : CONTRAST_VERDICTS.SLOWER
}

/** @typedef {{ arm: string, only: number, missing: number, share: number, shift: number }} WorstSide missing: of `only`, the imported rounds with no result of it */
/** @type {Record<string, string>} */
const ARM_NAMES = { h2: 'H2', h3: 'H3', auto: 'the auto arm' }

/**
 * Each view's H3 share and reasons at one location.
 * @param {Awaited<ReturnType<typeof autoVisitOutcomes>>} outcomes
 * @param {string} id
 */
export function sharesOf (outcomes, id) {
  return Object.fromEntries(SHARE_VIEWS.map((view) => {
    const t = outcomes.totals.find((r) => r.location_id === id && r.view === view)
    const mine = outcomes.reasons.filter((r) => r.location_id === id && r.view === view)
    /** @type {Record<string, number>} */
    const reasons = {}
    /** @type {Record<string, number>} */
    const usage = {}
    for (const r of mine) {
      reasons[r.code] = (reasons[r.code] ?? 0) + r.n
      if (r.loaded) usage[r.usage] = (usage[r.usage] ?? 0) + r.n
    }
    return [view, {
      visits: t?.runs ?? 0,
      loaded: t?.loaded ?? 0,
      h3: t?.h3 ?? 0,
      navigation_share: wilsonInterval(t?.h3 ?? 0, t?.loaded ?? 0),
      byte_share: t ? { ...ratioInterval({ n: t.byte_n, sx: t.sx, sy: t.sy, sxx: t.sxx, syy: t.syy, sxy: t.sxy }), n: t.byte_n } : { rate: null, lo: null, hi: null, n: 0 },
      reasons,
      alternate_protocol_usage: usage
    }]
  }))
}

/**
 * The auto arm's H3 shares alone, per location (first, returning and repeat
 * visits), without the paired analysis: what real users' share is shown
 * beside (lib/analysis/rum.js).
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, from: Date, to: Date }} w
 * @returns {Promise<Map<string, ReturnType<typeof sharesOf>>>}
 */
export async function autoShares (db, w) {
  const outcomes = await autoVisitOutcomes(db, w)
  const ids = [...new Set(outcomes.totals.map((r) => r.location_id))]
  return new Map(ids.map((id) => [id, sharesOf(outcomes, id)]))
}

/**
 * What the location's users get, in words, from the returning visits'
 * share and reasons and the forced arms' failures.
 * @param {Record<string, any>} e
 * @returns {{ code: string, text: string }}
 */
export function storyOf (e) {
  const story = (/** @type {keyof typeof STORIES} */ code, /** @type {string} */ detail = '') => ({ code, text: `${STORIES[code]}${detail}` })
  const returning = e.shares.returning
  const all = SHARE_VIEWS.map((v) => e.shares[v])
  if (!all.some((s) => s.visits)) return story('no_data')
  // A page that mostly fails as users would load it has no protocol's
  // story: forced H3 failing there says nothing of the path.
  const visits = all.reduce((n, s) => n + s.visits, 0)
  const failed = visits - all.reduce((n, s) => n + s.loaded, 0)
  if (confidentMajority(failed, visits)) {
    // Whether the forced arms fail too: the page, or the browser as users run it.
    const h2 = e.visits.first.failures.h2
    const forced = !h2?.attempted ? ''
      : confidentMajority(h2.failed, h2.attempted) ? ', whatever the protocol'
        : confidentMajority(h2.attempted - h2.failed, h2.attempted) ? `, though forced H2 loaded in ${h2.attempted - h2.failed} of ${h2.attempted} rounds: what fails is the browser as users run it, not the page`
          : ''
    return story('page_fails', ` (${failed} of ${visits} visit${visits === 1 ? '' : 's'} failed)${forced}`)
  }
  const share = returning.navigation_share.rate
  const pct = (/** @type {number} */ x) => `${Math.round(x * 100)}%`
  // The returning visits that did not load are said beside the share of those that did.
  const notLoaded = returning.visits - returning.loaded
  const visitsWord = (/** @type {number} */ n) => `${n} returning visit${n === 1 ? '' : 's'}${notLoaded > 0 ? ` that loaded; ${notLoaded} of ${returning.visits} failed` : ''}`
  if (confidentMajority(returning.h3, returning.loaded)) return story('h3_returning', ` (${pct(share)} of ${visitsWord(returning.loaded)})`)
  /** @type {Record<string, number>} */
  const reasons = {}
  for (const s of all) for (const [code, n] of Object.entries(s.reasons)) reasons[code] = (reasons[code] ?? 0) + /** @type {number} */ (n)
  const loadedReasons = Object.entries(reasons).filter(([code]) => code !== 'failed')
  const loaded = loadedReasons.reduce((n, [, v]) => n + v, 0)
  if (confidentMajority(reasons.not_announced ?? 0, loaded)) return story('not_announced', ` (${reasons.not_announced} of ${loaded} visit${loaded === 1 ? '' : 's'} that loaded)`)
  const h3Failures = e.visits.first.failures.h3
  if (confidentMajority(h3Failures.failed, h3Failures.attempted)) {
    return story('quic_blocked', ` (forced H3 failed or fell back in ${h3Failures.failed} of ${h3Failures.attempted} rounds)`)
  }
  // A location that makes first visits only (a WebPageTest agent) has no
  // returning visit to tell the stories below: it says what it has.
  if (!returning.visits && e.shares.first.loaded) {
    const first = e.shares.first
    return story('first_visit_only', ` (${pct(/** @type {number} */ (first.navigation_share.rate))} of ${first.loaded} first visit${first.loaded === 1 ? '' : 's'} over H3)`)
  }
  // The stories below say users get H2: most returning visits, confidently.
  if (!confidentMajority(returning.loaded - returning.h3, returning.loaded)) {
    return story('undecided', share !== null ? ` (${pct(share)} of ${visitsWord(returning.loaded)} over H3)` : ' (no returning visit loaded)')
  }
  const own = /** @type {Record<string, number>} */ (returning.reasons)
  const [top, topN] = Object.entries(own).filter(([code]) => code !== 'failed').sort((a, b) => b[1] - a[1])[0] ?? []
  const ofReturning = ` (${topN} of ${visitsWord(returning.loaded)})`
  if (top === 'broken') return story('broken', ofReturning)
  if (top === 'tcp_won') return story('tcp_wins', ofReturning)
  return story('h2_mostly', ` (${pct(/** @type {number} */ (share))} of ${visitsWord(returning.loaded)} over H3)`)
}

/**
 * @param {number} p
 * @param {number} rounds
 * @param {string | null} [why] the reason, when it is not too few rounds
 */
function emptyVisitRow (p, rounds, why = null) {
  const reason = why ?? insufficientReason(p, rounds)
  const empty = (/** @type {{ arm: string, ref: string }} */ c) => ({
    arm: c.arm, ref: c.ref, delta_ms: null, delta_pct: null, ref_ms: null, ci_low_ms: null, ci_high_ms: null, p_value: null, p_adjusted: null,
    verdict: CONTRAST_VERDICTS.INSUFFICIENT_DATA, reason
  })
  return {
    percentile: p, rounds, min_rounds: minRoundsFor(p), h2_ms: null, h3_ms: null, auto_ms: null,
    contrasts: Object.fromEntries(CONTRASTS.map((c) => [c.id, empty(c)])),
    received_gain: { shown: false, value: null, ci_low: null, ci_high: null, level: null, reason },
    gain_draws: null
  }
}

/**
 * @param {number} p
 * @param {number} rounds
 */
function insufficientReason (p, rounds) {
  return rounds < MIN_ROUNDS
    ? `need at least ${MIN_ROUNDS} rounds in which all three arms loaded; have ${rounds}`
    : `p${p} needs at least ${minRoundsFor(p)} rounds; have ${rounds}`
}

/**
 * @param {MinEffect} minEffect
 * @param {number[]} percentiles the percentiles shown
 * @param {number[]} family the percentiles the correction covers
 */
function method (minEffect, percentiles, family) {
  return {
    unit: 'the round: the forced arms and the auto arm of one round at one location, run moments apart in random order',
    visits: 'first: a cold visit in a new browser profile; returning: the browser started again on that profile (what it learnt about the origin kept, ' +
      'no live connection, no cached response), paired with the forced arms\' cold first view',
    rounds_used: 'per visit, the rounds in which both forced arms loaded with their protocol and the auto visit loaded, each with the metric; ' +
      `above ${ROUND_CAP} such rounds per location, an evenly spaced subsample of ${ROUND_CAP} over the window`,
    interval: `95% percentile interval of a round-level bootstrap (${BOOTSTRAP_ITERATIONS} resamples of whole rounds; every arm of a resample sees the same rounds)`,
    verdict: `faster or slower only when the cell's adjusted p-value is ≤ ${FDR_Q} (a column per location, visit and contrast; the columns selected by ` +
      `Benjamini–Hochberg over their Simes p-values, then Benjamini–Hochberg within each selected column at ${FDR_Q} × selected / columns), the interval excludes 0, |Δ| ≥ max(${minEffect.pct}% of the reference arm, ${minEffect.ms} ms), ` +
      `and the percentile has its minimum rounds (${percentiles.map((p) => `p${p}: ${minRoundsFor(p)}`).join(', ')}); ` +
      `a column holds the percentiles ${family.map((p) => `p${p}`).join(', ')} whichever are shown, so a cell's verdict is the same in every view`,
    received_gain: '(H2 − auto) / (H2 − H3) at the percentile: 1 = users get all of the forced H3 gain, 0 = none of it. Shown only where H3 − H2 in the same ' +
      'rounds is itself a verdict of "faster"; its interval (at `level`: 1 − ' + FDR_Q + ' × shown / tested, the false-coverage rate of the cells it is shown in) ' +
      'holds the ratios r for which 0 lies inside that interval of (H2 − auto) − r × (H2 − H3) over the resamples, and the share is not shown where H2 − H3 itself is not clear of 0 there; ' +
      'each end is then moved as far as it goes with any arm slower by the worst case of its loads that did not complete (counted as its slowest), ' +
      'and the share is not shown where that worst case has no bound',
    shares: 'navigations over H3 / visits that loaded, with a Wilson 95% interval; bytes over H3 / bytes, weighted by visit size, with a Wilson 95% interval ' +
      'at the effective number of visits (from the delta method\'s standard error of the ratio, at most the visits)'
  }
}
