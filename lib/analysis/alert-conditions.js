// What each kind of alert rule observes at one evaluation: per (monitor,
// location) whether the condition holds (true), does not (false), or cannot
// be told (null: too few rounds), with the evidence behind it. Regression
// and failure rules read the same regionalComparison as the dashboard's
// table, with the same percentiles and window alignment, so an alert claims
// exactly what the table would claim. Share rules read the auto arm's
// returning visits (./alert-h3-share.js).
import { correctionFamily, regionalComparison } from './comparison.js'
import { DEFAULT_METRIC, probeOfMetric } from '../measurement/metrics.js'
import { TIERS } from './rollups.js'
import { dueAndLastResult } from '../store/results.js'
import { firingEvidence } from '../store/alert-states.js'
import { observeShares } from './alert-h3-share.js'

const FIVE_MINUTES = TIERS['5m']
const DAY_S = 86400

/**
 * The level a regression or failure rule's test must reach to breach: the
 * dashboard's 0.05 for a window of a day or more, and 0.05 × window / day
 * for a shorter one. A rule is evaluated every minute over a window that
 * slides: a day holds day / window windows that share no round, and the
 * overlapping ones in between tell little more, so the chances a day of a
 * chance breach stay about those of one day-long window. With identical
 * arms, a 1-hour h3_failure rule on a monitor run every minute fired 8
 * times in 30 location-days at the dashboard's 0.05, once at this level
 * (bench/alert-looks.js).
 * @param {number} windowS the rule's window
 */
export function alertLevel (windowS) {
  return 0.05 * Math.min(1, windowS / DAY_S)
}

/**
 * @typedef {{ location_id: string, breach: boolean | null, evidence: Record<string, any> }} Observation
 * @typedef {{ id: number, kind: string, monitor_id: number | null, locations: string[] | null, metric?: string, probe?: string | null, percentile: number | null,
 *   min_effect_pct: number | null, min_effect_ms: number | null, threshold_pct: number | null, window_s: number }} Rule
 */

/**
 * The window the comparison route would use for "the last window_s seconds".
 * @param {Date | number} now
 * @param {number} windowS
 */
export function alignedWindow (now, windowS) {
  return {
    from: new Date(Math.floor((+now - windowS * 1000) / FIVE_MINUTES) * FIVE_MINUTES),
    to: new Date(Math.ceil(+now / FIVE_MINUTES) * FIVE_MINUTES)
  }
}

/**
 * The dashboard's monitor page showing the comparison an alert rests on.
 * @param {number} monitorId
 * @param {{ from: string, to: string, metric: string, percentile?: number | null, probe?: string }} q from and to as ISO timestamps
 */
export function evidencePath (monitorId, { from, to, metric, percentile, probe }) {
  const q = new URLSearchParams({ window: 'custom', from, to, metric, analysis: 'matched' })
  if (probe) q.set('probe', probe)
  if (percentile) q.set('percentile', String(percentile))
  return `#/monitors/${monitorId}?${q}`
}

/**
 * A cache of comparisons for one evaluation: rules that share a monitor,
 * metric and window share the computation.
 * @param {import('pg').Pool} db
 * @param {{ now: Date, timeoutMs: number }} o
 */
export function comparisonCache (db, { now, timeoutMs }) {
  /** @type {Map<string, ReturnType<typeof regionalComparison>>} */
  const cache = new Map()
  /**
   * @param {import('./comparison.js').ComparedMonitor} monitor
   * @param {string} metric
   * @param {number} windowS
   * @param {number | null} percentile
   * @param {string | null} [probe] the rule's probe (a journey step); null: the metric's own
   */
  return (monitor, metric, windowS, percentile, probe = null) => {
    const percentiles = correctionFamily(percentile ? [percentile] : [])
    probe ??= probeOfMetric(metric) ?? 'page'
    const key = `${monitor.id}|${metric}|${probe}|${windowS}|${percentiles}`
    if (!cache.has(key)) {
      const { from, to } = alignedWindow(now, windowS)
      cache.set(key, regionalComparison(db, {
        monitor, metric, percentiles, probe, view: 'first', from, to, analysis: 'matched', timeoutMs
      }))
    }
    return /** @type {ReturnType<typeof regionalComparison>} */ (cache.get(key))
  }
}

/**
 * @param {import('pg').Pool} db
 * @param {Rule | Record<string, any>} rule
 * @param {import('./comparison.js').ComparedMonitor & Record<string, any>} monitor a monitor row
 * @param {string[]} locations the monitor's locations this rule watches
 * @param {{ now: Date, compare: ReturnType<typeof comparisonCache> }} ctx
 * @returns {Promise<Observation[]>}
 */
export async function observe (db, rule, monitor, locations, { now, compare }) {
  if (rule.kind === 'location_silent') return silentLocations(db, rule, monitor, locations, now)
  if (rule.kind === 'h3_share_drop') {
    const { from, to } = alignedWindow(now, rule.window_s)
    const link = evidencePath(monitor.id, { from: from.toISOString(), to: to.toISOString(), metric: DEFAULT_METRIC })
    const firing = await firingEvidence(db, { ruleId: rule.id, monitorId: monitor.id })
    return observeShares(db, rule, monitor, locations, { from, to, link, firing })
  }
  const metric = rule.kind === 'h3_regression' ? rule.metric ?? DEFAULT_METRIC : DEFAULT_METRIC
  const probe = rule.kind === 'h3_regression' ? rule.probe ?? null : null
  const cmp = await compare(monitor, metric, rule.window_s, rule.kind === 'h3_regression' ? rule.percentile : null, probe)
  const base = { metric, ...(probe ? { probe } : {}), from: cmp.from, to: cmp.to, analysis: 'matched' }
  const out = []
  for (const id of locations) {
    const e = cmp.locations.find((/** @type {import('./comparison.js').Entry} */ l) => l.location_id === id)
    if (!e) {
      out.push({ location_id: id, breach: null, evidence: { ...base, reason: 'no rounds in the window' } })
      continue
    }
    const rounds = e.rounds.total
    const link = evidencePath(monitor.id, { ...base, percentile: rule.kind === 'h3_regression' ? rule.percentile : null })
    if (rule.kind === 'h3_regression') out.push({ location_id: id, ...regression(rule, e, { ...base, rounds, link }) })
    else if (rule.kind === 'h3_failure') out.push({ location_id: id, ...h3Failure(rule, e, { ...base, rounds, link }) })
    else out.push({ location_id: id, ...errorRate(rule, e, { ...base, rounds, link }) })
  }
  return out
}

/**
 * @typedef {{ metric: string, probe?: string, from: string, to: string, analysis: string, rounds: number, link: string }} EvidenceBase
 */

/**
 * @param {Rule | Record<string, any>} rule
 * @param {import('./comparison.js').Entry} e
 * @param {EvidenceBase} base
 */
function regression (rule, e, base) {
  const cell = e.rows.find((/** @type {import('./comparison.js').Row} */ r) => r.percentile === rule.percentile)
  const evidence = {
    ...base,
    percentile: rule.percentile,
    verdict: cell?.verdict ?? 'insufficient_data',
    h2_ms: cell?.h2_ms ?? null,
    h3_ms: cell?.h3_ms ?? null,
    delta_ms: cell?.delta_ms ?? null,
    delta_pct: cell?.delta_pct ?? null,
    ci_low_ms: cell?.ci_low_ms ?? null,
    ci_high_ms: cell?.ci_high_ms ?? null,
    p_adjusted: cell?.p_adjusted ?? null,
    rounds_used: cell?.rounds ?? 0
  }
  if (!cell || cell.verdict === 'insufficient_data') return { breach: null, evidence }
  const level = alertLevel(rule.window_s)
  Object.assign(evidence, { level })
  const breach = cell.verdict === 'h3_slower' && cell.p_adjusted <= level &&
    (rule.min_effect_pct == null || cell.delta_pct >= rule.min_effect_pct) &&
    (rule.min_effect_ms == null || cell.delta_ms >= rule.min_effect_ms)
  return { breach, evidence }
}

/**
 * @param {Rule | Record<string, any>} rule
 * @param {import('./comparison.js').Entry} e
 * @param {EvidenceBase} base
 */
function h3Failure (rule, e, base) {
  const h3 = e.arms.h3
  const lost = h3.failed + h3.unsupported + h3.fallback
  const rate = h3.attempted ? lost / h3.attempted : null
  const evidence = {
    ...base,
    h3_attempted: h3.attempted,
    h3_failure_rate: h3.failure_rate,
    h3_fallback_rate: h3.fallback_rate,
    h3_lost_pct: rate === null ? null : rate * 100,
    h2_failure_rate: e.arms.h2.failure_rate,
    failure_verdict: e.failure.verdict,
    failure_p_adjusted: e.failure.p_adjusted ?? null,
    level: alertLevel(rule.window_s)
  }
  if (rate === null) return { breach: null, evidence }
  return { breach: rate * 100 > rule.threshold_pct && e.failure.verdict === 'h3_fails_more' && e.failure.p_adjusted <= evidence.level, evidence }
}

/**
 * @param {Rule | Record<string, any>} rule
 * @param {import('./comparison.js').Entry} e
 * @param {EvidenceBase} base
 */
function errorRate (rule, e, base) {
  const { h2, h3 } = e.arms
  const evidence = { ...base, h2_attempted: h2.attempted, h3_attempted: h3.attempted, h2_failure_rate: h2.failure_rate, h3_failure_rate: h3.failure_rate }
  if (!h2.attempted && !h3.attempted) return { breach: null, evidence }
  const worst = Math.max(h2.attempted ? h2.failure_rate.rate : 0, h3.attempted ? h3.failure_rate.rate : 0)
  return { breach: worst * 100 > rule.threshold_pct, evidence: { ...evidence, worst_pct: worst * 100 } }
}

/**
 * A location is silent when rounds were due there between 2M and M ago
 * (M = window_s) and not one of them has a result: they have waited at
 * least M and nothing came back. A paused monitor has no due rounds.
 * @param {import('pg').Pool} db
 * @param {Rule | Record<string, any>} rule
 * @param {Record<string, any>} monitor
 * @param {string[]} locations
 * @param {Date} now
 */
async function silentLocations (db, rule, monitor, locations, now) {
  if (monitor.paused) return []
  const rows = await dueAndLastResult(db, { monitorId: monitor.id, now, windowS: rule.window_s, locations })
  return rows.map((r) => ({
    location_id: r.location_id,
    breach: r.due > 0 && r.answered === 0,
    evidence: { window_s: rule.window_s, due_rounds: r.due, answered_rounds: r.answered, last_result_at: r.last_result, link: `#/monitors/${monitor.id}` }
  }))
}
