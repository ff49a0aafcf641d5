// The statistics of real users (pure functions; ./rum.js reads the data).
// Real users are observed, never assigned: a page view over H3 differs from
// one over H2 in more than its protocol (returning visitors with a warm
// cache and a reused connection get H3 more often, browsers differ in both).
// So H3 is compared with H2 only within strata of page views alike in those
// (country, connection new or reused, first visit or cached, browser family), and
// the strata's differences are averaged with equal weight: the design of
// "All locations" (./comparison.js), where a location's share of rounds
// must not tilt the answer. Every interval is a bootstrap that resamples
// page views within each stratum and protocol. What it estimates is an
// association, not the effect of switching a page view's protocol:
// docs/STATISTICS.md and bench/rum-confounding.js.
import { armsBootstrap, bootstrapSummary } from './stats/index.js'
import { minRoundsFor } from '../measurement/metrics.js'

// Values per stratum and protocol the bootstrap resamples; above it an
// evenly spaced subsample (the answer says how many were used).
export const VALUES_CAP = 2000

/**
 * @typedef {{ id: string, h2: number[], h3: number[] }} Stratum
 * @typedef {{ percentile: number, h2_ms: number | null, h3_ms: number | null, delta_ms: number | null, delta_pct: number | null,
 *   ci_low_ms: number | null, ci_high_ms: number | null, p_value: number | null, p_adjusted: number | null, page_views: { h2: number, h3: number },
 *   min_page_views: number, strata: string[], verdict: string, reason: string | null }} ContrastRow
 */

/**
 * Evenly spaced `cap` of `values` (all of them below it).
 * @param {number[]} values
 * @param {number} cap
 */
export function evenly (values, cap = VALUES_CAP) {
  if (values.length <= cap) return values
  const out = []
  for (let k = 0; k < values.length; k++) if (Math.floor(k * cap / values.length) !== Math.floor((k + 1) * cap / values.length)) out.push(values[k])
  return out
}

/**
 * Percentiles of one protocol's values with a bootstrap interval each.
 * @param {number[]} values
 * @param {{ percentiles: number[], iterations: number, seed: string }} o
 * @returns {{ percentile: number, value: number | null, ci_low: number | null, ci_high: number | null, n: number }[]}
 */
export function percentileIntervals (values, { percentiles, iterations, seed }) {
  if (!values.length) return percentiles.map((p) => ({ percentile: p, value: null, ci_low: null, ci_high: null, n: 0 }))
  const used = evenly(values)
  const b = armsBootstrap({ rounds: used.map((v) => ({ x: [v] })), arms: ['x'], qs: percentiles.map((p) => p / 100), iterations, seed })
  return percentiles.map((p, k) => {
    const enough = values.length >= minRoundsFor(p) && iterations > 0
    const s = enough ? bootstrapSummary(b.draws.x[k], b.point.x[k]) : null
    return { percentile: p, value: b.point.x[k], ci_low: s ? s.lo : null, ci_high: s ? s.hi : null, n: values.length }
  })
}

/**
 * Each protocol's percentiles in `iterations` resamples of its own values.
 * @param {number[]} values
 * @param {number[]} qs
 * @param {number} iterations
 * @param {string} seed
 */
function armDraws (values, qs, iterations, seed) {
  const b = armsBootstrap({ rounds: evenly(values).map((v) => ({ x: [v] })), arms: ['x'], qs, iterations, seed })
  return { point: b.point.x, draws: b.draws.x }
}

/**
 * H3 against H2 within strata, combined with equal weight. A stratum takes
 * part in a percentile when both its protocols have the page views that
 * percentile needs (as many as a location's rounds need in the synthetic
 * table: p50 20, p75 40, p95 200).
 * @param {{ strata: Stratum[], percentiles: number[], iterations: number, seed: string }} o
 * @returns {{ rows: ContrastRow[], draws: (Float64Array | null)[] }}
 */
export function stratifiedContrast ({ strata, percentiles, iterations, seed }) {
  const qs = percentiles.map((p) => p / 100)
  const boots = strata.filter((s) => s.h2.length && s.h3.length).map((s) => ({
    s,
    h2: armDraws(s.h2, qs, iterations, `${seed}|${s.id}|h2`),
    h3: armDraws(s.h3, qs, iterations, `${seed}|${s.id}|h3`)
  }))
  const draws = /** @type {(Float64Array | null)[]} */ ([])
  const rows = percentiles.map((p, k) => {
    const parts = boots.filter((b) => Math.min(b.s.h2.length, b.s.h3.length) >= minRoundsFor(p))
    // The views the estimate rests on: each stratum's, at most VALUES_CAP a protocol (evenly).
    const used = (/** @type {number[]} */ values) => Math.min(values.length, VALUES_CAP)
    const views = { h2: parts.reduce((n, b) => n + used(b.s.h2), 0), h3: parts.reduce((n, b) => n + used(b.s.h3), 0) }
    if (!parts.length || !iterations) {
      draws.push(null)
      return emptyContrast(p, views, `no stratum has the ${minRoundsFor(p)} page views over H2 and over H3 that p${p} needs`)
    }
    const mean = (/** @type {(b: typeof parts[number]) => number} */ f) => parts.reduce((sum, b) => sum + f(b), 0) / parts.length
    const d = new Float64Array(iterations)
    for (const b of parts) for (let i = 0; i < iterations; i++) d[i] += (b.h3.draws[k][i] - b.h2.draws[k][i]) / parts.length
    draws.push(d)
    return testedContrast(p, mean((b) => b.h2.point[k]), mean((b) => b.h3.point[k]), d, views, parts.map((b) => b.s.id))
  })
  return { rows, draws }
}

/**
 * The naive split: every page view over H3 against every one over H2,
 * whatever else differs. For comparison only (bench/rum-confounding.js
 * shows what it claims when the protocol does nothing).
 * @param {{ h2: number[], h3: number[], percentiles: number[], iterations: number, seed: string }} o
 * @returns {{ rows: ContrastRow[], draws: (Float64Array | null)[] }}
 */
export function pooledContrast ({ h2, h3, percentiles, iterations, seed }) {
  return stratifiedContrast({ strata: [{ id: 'all', h2, h3 }], percentiles, iterations, seed })
}

/**
 * Several columns' contrasts averaged with equal weight, percentile by
 * percentile, over the columns that tested it ("All regions").
 * @param {{ rows: ContrastRow[], draws: (Float64Array | null)[] }[]} columns
 * @param {number[]} percentiles
 */
export function combinedContrast (columns, percentiles) {
  const rows = percentiles.map((p, k) => {
    const parts = columns.filter((c) => c.draws[k])
    const views = { h2: parts.reduce((n, c) => n + c.rows[k].page_views.h2, 0), h3: parts.reduce((n, c) => n + c.rows[k].page_views.h3, 0) }
    if (!parts.length) return emptyContrast(p, views, `no region has the ${minRoundsFor(p)} page views per protocol that p${p} needs`)
    const first = /** @type {Float64Array} */ (parts[0].draws[k])
    const d = new Float64Array(first.length)
    for (const c of parts) (/** @type {Float64Array} */ (c.draws[k])).forEach((v, i) => { d[i] += v / parts.length })
    const mean = (/** @type {(r: ContrastRow) => number} */ f) => parts.reduce((s, c) => s + f(c.rows[k]), 0) / parts.length
    return testedContrast(p, mean((r) => /** @type {number} */ (r.h2_ms)), mean((r) => /** @type {number} */ (r.h3_ms)), d, views, parts.flatMap((c) => c.rows[k].strata))
  })
  return { rows, draws: [] }
}

/**
 * @param {number} p
 * @param {number} h2
 * @param {number} h3
 * @param {Float64Array} draws
 * @param {{ h2: number, h3: number }} views
 * @param {string[]} strata
 * @returns {ContrastRow}
 */
function testedContrast (p, h2, h3, draws, views, strata) {
  const delta = h3 - h2
  const s = bootstrapSummary(draws, delta)
  return {
    percentile: p,
    h2_ms: h2,
    h3_ms: h3,
    delta_ms: delta,
    delta_pct: h2 ? delta / h2 * 100 : null,
    ci_low_ms: s.lo,
    ci_high_ms: s.hi,
    p_value: s.p,
    p_adjusted: null,
    page_views: views,
    min_page_views: minRoundsFor(p),
    strata,
    verdict: 'no_clear_difference',
    reason: null
  }
}

/**
 * @param {number} p
 * @param {{ h2: number, h3: number }} views
 * @param {string} reason
 * @returns {ContrastRow}
 */
function emptyContrast (p, views, reason) {
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
    page_views: views,
    min_page_views: minRoundsFor(p),
    strata: [],
    verdict: 'insufficient_data',
    reason
  }
}
