// Percentile deltas by a round-level bootstrap (docs/STATISTICS.md).
//
// The unit is the round: one round at one location runs both arms moments
// apart, and a probe may give several samples per arm (the parallel probe's
// N requests). Resampling rounds — not samples, and not each arm on its own —
// keeps both things that make samples dependent: the arms of a round share a
// path, and a round's samples share a connection. Resampling samples as if
// they were independent made 23–28% of a table's cells claim a difference
// between identical arms of the parallel probe.
//
// Cost: a resample is a count per round (how often it was drawn); every
// sample of a round carries its round's count as a weight, so a walk along
// each arm's sorted samples reads off all percentiles of the resample, with
// no sort per iteration. The walk starts at the low end for percentiles up
// to the median and at the high end for those above it, so p99 costs a
// walk past 1% of the samples, not 99%. 2,000 rounds × 1 sample, 1,000
// iterations, 6 percentiles: bench/bootstrap.js prints the time.

import { SeededRandom } from './random.js'
import { normalSurvival } from './normal.js'
import { exactQuantile } from './quantile.js'

/**
 * @typedef {object} Round
 * @property {number[]} h2 the H2 arm's samples (one for a page load)
 * @property {number[]} h3 the H3 arm's samples
 */

/**
 * @typedef {object} RoundBootstrap
 * @property {number} rounds
 * @property {number[]} h2 point estimate per percentile (percentile_cont of all samples)
 * @property {number[]} h3
 * @property {Float64Array[]} deltas per percentile, `iterations` resampled h3 − h2
 */

/**
 * @param {{ rounds: Round[], qs: number[], iterations?: number, seed?: number | string }} o
 *   qs in [0, 1], ascending
 * @returns {RoundBootstrap}
 */
export function roundBootstrap ({ rounds, qs, iterations = 1000, seed }) {
  for (let k = 1; k < qs.length; k++) if (!(qs[k] >= qs[k - 1])) throw new RangeError('qs must be ascending')
  const n = rounds.length
  if (n === 0) throw new RangeError('roundBootstrap needs at least one round')
  const h2 = flatten(/** @type {Record<string, number[]>[]} */ (/** @type {unknown} */ (rounds)), 'h2')
  const h3 = flatten(/** @type {Record<string, number[]>[]} */ (/** @type {unknown} */ (rounds)), 'h3')
  const ones = new Uint32Array(n).fill(1)
  const point = { h2: Array.from(weightedQuantiles(h2, ones, qs, new Float64Array(qs.length))), h3: Array.from(weightedQuantiles(h3, ones, qs, new Float64Array(qs.length))) }

  const random = new SeededRandom(seed)
  const counts = new Uint32Array(n)
  const deltas = qs.map(() => new Float64Array(iterations))
  const a = new Float64Array(qs.length)
  const b = new Float64Array(qs.length)
  for (let it = 0; it < iterations; it++) {
    counts.fill(0)
    random.tallyDraws(counts)
    weightedQuantiles(h2, counts, qs, a)
    weightedQuantiles(h3, counts, qs, b)
    for (let k = 0; k < qs.length; k++) deltas[k][it] = b[k] - a[k]
  }
  return { rounds: n, h2: point.h2, h3: point.h3, deltas }
}

/**
 * Each arm's percentiles in each of `iterations` resamples of whole rounds:
 * roundBootstrap for any number of arms (the auto arm beside both forced
 * ones), for statistics of several arms at once, such as the share of the
 * H3 gain the auto arm receives. Every arm of a resample sees the same
 * rounds.
 * @param {{ rounds: Record<string, number[]>[], arms: string[], qs: number[], iterations?: number, seed?: number | string }} o
 *   qs in [0, 1], ascending; every round has samples of every arm
 * @returns {{ rounds: number, point: Record<string, number[]>, draws: Record<string, Float64Array[]> }}
 *   draws[arm][k][i]: the arm's percentile qs[k] in resample i
 */
export function armsBootstrap ({ rounds, arms, qs, iterations = 1000, seed }) {
  for (let k = 1; k < qs.length; k++) if (!(qs[k] >= qs[k - 1])) throw new RangeError('qs must be ascending')
  const n = rounds.length
  if (n === 0) throw new RangeError('armsBootstrap needs at least one round')
  const flat = Object.fromEntries(arms.map((arm) => [arm, flatten(rounds, arm)]))
  const ones = new Uint32Array(n).fill(1)
  const point = Object.fromEntries(arms.map((arm) => [arm, Array.from(weightedQuantiles(flat[arm], ones, qs, new Float64Array(qs.length)))]))
  const draws = Object.fromEntries(arms.map((arm) => [arm, qs.map(() => new Float64Array(iterations))]))
  const random = new SeededRandom(seed)
  const counts = new Uint32Array(n)
  const v = new Float64Array(qs.length)
  for (let it = 0; it < iterations; it++) {
    counts.fill(0)
    random.tallyDraws(counts)
    for (const arm of arms) {
      weightedQuantiles(flat[arm], counts, qs, v)
      for (let k = 0; k < qs.length; k++) draws[arm][k][it] = v[k]
    }
  }
  return { rounds: n, point, draws }
}

/**
 * One arm's samples, ascending, each with its round's index; `perRound`,
 * the samples every round has when all have as many (a page load's one),
 * else 0 and `sizes` holds each round's count.
 * @param {Record<string, number[]>[]} rounds
 * @param {string} arm
 * @returns {Arm}
 */
function flatten (rounds, arm) {
  /** @type {[number, number][]} value, round index */
  const pairs = []
  const sizes = new Uint32Array(rounds.length)
  rounds.forEach((r, i) => {
    for (const v of r[arm]) {
      if (!Number.isFinite(v)) throw new RangeError(`a ${arm} sample of round ${i} is ${v}; samples must be finite numbers`)
      pairs.push([v, i])
    }
    if (!r[arm].length) throw new RangeError(`round ${i} has no ${arm} sample`)
    sizes[i] = r[arm].length
  })
  pairs.sort((x, y) => x[0] - y[0])
  const perRound = sizes.every((s) => s === sizes[0]) ? sizes[0] : 0
  return { values: Float64Array.from(pairs, (p) => p[0]), roundOf: Uint32Array.from(pairs, (p) => p[1]), sizes, perRound }
}

/**
 * @typedef {{ values: Float64Array, roundOf: Uint32Array, sizes: Uint32Array, perRound: number }} Arm
 */

/**
 * percentile_cont of the sample in which each value appears as often as its
 * round's weight, at each q (ascending), written into `out`. Percentiles up
 * to the median are read walking up from the lowest sample, the others
 * walking down from the highest; either walk finds the same sample at a
 * rank, so the result does not depend on the direction.
 * @param {Arm} arm
 * @param {Uint32Array} weights per round, adding up to the number of rounds
 * @param {number[]} qs
 * @param {Float64Array} out
 * @returns {Float64Array}
 */
function weightedQuantiles ({ values, roundOf, sizes, perRound }, weights, qs, out) {
  // The rounds drawn are as many as there are rounds (a resample, or each
  // once), so the expanded sample's size needs no count when every round
  // has as many samples.
  let total = weights.length * perRound
  if (!perRound) for (let r = 0; r < weights.length; r++) total += weights[r] * sizes[r]
  let split = 0
  while (split < qs.length && qs[split] <= 0.5) split++
  // Up from the lowest sample. index: the sample being read; before:
  // expanded values below it.
  let index = 0
  let before = 0
  for (let k = 0; k < split; k++) {
    const position = qs[k] * (total - 1)
    const rank = Math.floor(position)
    const fraction = position - rank
    while (before + weights[roundOf[index]] <= rank) before += weights[roundOf[index++]]
    out[k] = readAt(values, roundOf, weights, index, fraction > 0 && before + weights[roundOf[index]] <= rank + 1, fraction)
  }
  // Down from the highest. above: expanded values above the sample being read.
  index = values.length - 1
  let above = 0
  for (let k = qs.length - 1; k >= split; k--) {
    const position = qs[k] * (total - 1)
    const rank = Math.floor(position)
    const fraction = position - rank
    while (total - above - weights[roundOf[index]] > rank) above += weights[roundOf[index--]]
    out[k] = readAt(values, roundOf, weights, index, fraction > 0 && total - above <= rank + 1, fraction)
  }
  return out
}

/**
 * The value at a rank, `fraction` of the way to the next one: the sample at
 * `index`, or when the next rank lies past it (`crosses`), the next sample
 * with a weight.
 * @param {Float64Array} values
 * @param {Uint32Array} roundOf
 * @param {Uint32Array} weights
 * @param {number} index
 * @param {boolean} crosses
 * @param {number} fraction
 */
function readAt (values, roundOf, weights, index, crosses, fraction) {
  const low = values[index]
  if (!crosses) return low
  let next = index + 1
  while (weights[roundOf[next]] === 0) next++
  return low + (values[next] - low) * fraction
}

/**
 * Summary of a bootstrap distribution of one delta: its percentile interval
 * and a two-sided p-value for "the delta is 0". The p-value is the larger of
 * two: the normal one from the bootstrap's standard error (z = estimate /
 * se), which resolves small values finely, and the share of resamples on the
 * far side of 0, which follows the bootstrap's own tails where they are
 * heavier than a normal's. The normal one alone let tables of identical arms
 * claim a difference in 8–12% of runs (bench/calibration.js) although each
 * cell kept 5%: too many small p-values. Taking the larger keeps the tail
 * honest. Where no resample reaches 0 the share only says the p-value is
 * below 2 / (iterations + 1), 0.002: the normal one answers there, or a
 * correction over many columns and tables (a journey's steps, many
 * locations) could never reach its threshold however large the difference.
 * Where every resample gives the same Δ (a spread of 0: tied timings, or
 * one arm's percentile at the page timeout in every resample and the
 * other's on one value), there is no normal one, and the share's bound
 * stands: 2 / (iterations + 1), never 0.
 * @param {Float64Array} draws
 * @param {number} estimate
 * @param {number} [confidence]
 */
export function bootstrapSummary (draws, estimate, confidence = 0.95) {
  const sorted = Float64Array.from(draws).sort()
  const n = sorted.length
  const at = (/** @type {number} */ q) => /** @type {number} */ (exactQuantile(sorted, q))
  let mean = 0
  for (const v of sorted) mean += v
  mean /= n
  let ss = 0
  let below = 0
  let above = 0
  for (const v of sorted) {
    ss += (v - mean) ** 2
    if (v <= 0) below++
    if (v >= 0) above++
  }
  const se = n > 1 ? Math.sqrt(ss / (n - 1)) : 0
  const tail = (1 - confidence) / 2
  let p = 1
  if (estimate !== 0) {
    const normal = se > 0 ? 2 * normalSurvival(Math.abs(estimate) / se) : 0
    const beyond = estimate < 0 ? above : below
    p = Math.min(1, beyond === 0 && se > 0 ? normal : Math.max(normal, 2 * (beyond + 1) / (n + 1)))
  }
  return { lo: at(tail), hi: at(1 - tail), se, p }
}

/**
 * The interval of a ratio a / g read from its resamples by inverting a
 * test, as Fieller's is: r is in it when 0 lies between the `tail` and
 * 1 − `tail` quantiles of a − r·g over the resamples. Unlike the
 * percentiles of the ratio itself, it does not take its ends from the
 * resamples where g comes near 0 (where a / g runs off to any size, or
 * changes sign). It has bounds only where g's own quantiles at that level
 * exclude 0: else null.
 * @param {Float64Array} a the numerator in each resample
 * @param {Float64Array} g the denominator in each resample
 * @param {number} estimate the ratio itself, a starting point inside the interval
 * @param {number} tail
 * @returns {{ lo: number, hi: number } | null}
 */
export function resampledRatioInterval (a, g, estimate, tail) {
  const n = a.length
  const sortedG = Float64Array.from(g).sort()
  const lowG = /** @type {number} */ (exactQuantile(sortedG, tail))
  const highG = /** @type {number} */ (exactQuantile(sortedG, 1 - tail))
  if (!(lowG > 0 || highG < 0)) return null
  const sign = lowG > 0 ? 1 : -1
  const d = new Float64Array(n)
  // The q quantile of a − r·g; with g of one sign it falls as r rises (g > 0).
  const at = (/** @type {number} */ r, /** @type {number} */ q) => {
    for (let i = 0; i < n; i++) d[i] = sign * (a[i] - r * g[i])
    return /** @type {number} */ (exactQuantile(d.sort(), q))
  }
  // The r where the q quantile crosses 0, bracketed outward from the estimate.
  const root = (/** @type {number} */ q) => {
    let below = estimate
    let above = estimate
    let step = Math.max(1, Math.abs(estimate))
    while (at(below, q) <= 0 && step < 1e9) { below -= step; step *= 2 }
    step = Math.max(1, Math.abs(estimate))
    while (at(above, q) > 0 && step < 1e9) { above += step; step *= 2 }
    if (!(at(below, q) > 0) || at(above, q) > 0) return null
    for (let i = 0; i < 100 && above - below > 1e-9 * Math.max(1, Math.abs(above)); i++) {
      const mid = (below + above) / 2
      if (at(mid, q) > 0) below = mid
      else above = mid
    }
    // Where the quantile is 0 (within the bisection's precision): exactly
    // the ratio when every resample gives the same one.
    return above
  }
  const lo = root(tail)
  const hi = root(1 - tail)
  return lo === null || hi === null ? null : { lo: Math.min(lo, hi), hi: Math.max(lo, hi) }
}
