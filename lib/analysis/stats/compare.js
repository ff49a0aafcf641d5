// The HTTP/3-versus-HTTP/2 table for one location and window: per percentile,
// both values, the delta, a 95% interval for the delta and a verdict; plus
// two whole-distribution numbers shown alongside it.

import { bootstrapDeltaCIs } from './bootstrap.js'
import { exactQuantile, sortedSample } from './quantile.js'
import { cliffsDelta, mannWhitneyU } from './rank.js'
import { sketchQuantile } from './sketch.js'

export const VERDICTS = Object.freeze({
  H3_FASTER: 'h3_faster',
  H3_SLOWER: 'h3_slower',
  NO_SIGNIFICANT_DIFFERENCE: 'no_significant_difference',
  INSUFFICIENT_DATA: 'insufficient_data'
})

export const DEFAULT_PERCENTILES = Object.freeze([25, 50, 75, 90, 95, 99])

/**
 * @typedef {import('./sketch.js').Sketch | ((q: number) => number | null)} PointEstimate
 *   a merged sketch, or a function of q in [0, 1] returning ms
 */

/**
 * @typedef {object} ComparisonRow
 * @property {number} percentile e.g. 95
 * @property {number | null} h2_ms
 * @property {number | null} h3_ms
 * @property {number | null} delta_ms h3 − h2; negative means HTTP/3 is faster
 * @property {number | null} delta_pct delta / h2 × 100; null when h2 is 0
 * @property {number | null} ci_low_ms
 * @property {number | null} ci_high_ms
 * @property {string} verdict one of VERDICTS
 */

/**
 * @typedef {object} Comparison
 * @property {number} n_h2 samples received, before any cap
 * @property {number} n_h3
 * @property {boolean} insufficient_data
 * @property {string} [reason] set when insufficient_data
 * @property {number | null} mann_whitney_p two-sided, whole distributions
 * @property {number | null} cliffs_delta of h3 against h2; negative means
 *   HTTP/3 values tend to be smaller (faster)
 * @property {ComparisonRow[]} rows
 */

/**
 * Verdict rule: a percentile's difference is significant when the bootstrap
 * interval for its delta (confidence 0.95 by default) excludes 0: wholly
 * below 0 is h3_faster, wholly above is h3_slower, anything touching 0 is
 * no_significant_difference. Each row stands alone, with no correction across
 * rows: at 0.95 each has a 5% false-alarm rate, so a six-row table shows a chance
 * "difference" in some row more often than one time in twenty.
 *
 * mann_whitney_p and cliffs_delta answer a different question, "is one
 * distribution shifted against the other as a whole", and are reported next
 * to the table; they never change a row's verdict.
 *
 * Point estimates: by default the percentile_cont quantile of all samples.
 * With `pointEstimates`, h2_ms and h3_ms come from those instead (typically
 * merged rollup sketches, within 1%), while intervals, verdicts and the rank
 * statistics still come from the raw samples; an estimate that is null
 * (empty sketch) falls back to the samples.
 *
 * Sample cap: a group larger than `sampleCap` is reduced to `sampleCap`
 * evenly spaced order statistics of its sorted values. Unlike a random
 * subsample this adds no sampling noise (each quantile moves by at most about
 * one step of n / sampleCap ranks) and needs no seed. The intervals and
 * p-value are then those of a sample of `sampleCap` values: somewhat wider
 * than the full data would give, never narrower. n_h2 and n_h3 report the
 * counts received, before the cap.
 *
 * @param {object} options
 * @param {Iterable<number>} options.h2 HTTP/2 values, ms
 * @param {Iterable<number>} options.h3 HTTP/3 values, ms
 * @param {readonly number[]} [options.percentiles] each in [0, 100]
 * @param {number} [options.minSamples] per protocol, default 10
 * @param {number} [options.sampleCap] per protocol, default 5,000
 * @param {number} [options.confidence] default 0.95
 * @param {number} [options.iterations] bootstrap resamples, default 1,000
 * @param {number | string} [options.seed] same seed and inputs → same result
 * @param {{ h2?: PointEstimate, h3?: PointEstimate }} [options.pointEstimates]
 * @returns {Comparison}
 */
export function compareSamples ({
  h2,
  h3,
  percentiles = DEFAULT_PERCENTILES,
  minSamples = 10,
  sampleCap = 5000,
  confidence = 0.95,
  iterations = 1000,
  seed,
  pointEstimates = {}
}) {
  for (const p of percentiles) {
    if (typeof p !== 'number' || !(p >= 0 && p <= 100)) {
      throw new RangeError(`percentiles must be numbers in [0, 100], got ${p}`)
    }
  }
  if (!Number.isInteger(minSamples) || minSamples < 2) {
    throw new RangeError(`minSamples must be an integer of at least 2, got ${minSamples}`)
  }
  if (!Number.isInteger(sampleCap) || sampleCap < minSamples) {
    throw new RangeError(`sampleCap must be an integer of at least minSamples (${minSamples}), got ${sampleCap}`)
  }

  const sortedH2 = sortedSample(h2, 'h2')
  const sortedH3 = sortedSample(h3, 'h3')
  const counts = { n_h2: sortedH2.length, n_h3: sortedH3.length }

  if (counts.n_h2 < minSamples || counts.n_h3 < minSamples) {
    return {
      ...counts,
      insufficient_data: true,
      reason: `h2 has ${counts.n_h2} and h3 has ${counts.n_h3} samples; each protocol needs at least ${minSamples}`,
      mann_whitney_p: null,
      cliffs_delta: null,
      rows: percentiles.map(emptyRow)
    }
  }

  const cappedH2 = evenlySpacedSubsample(sortedH2, sampleCap)
  const cappedH3 = evenlySpacedSubsample(sortedH3, sampleCap)
  const intervals = bootstrapDeltaCIs({
    h2: cappedH2,
    h3: cappedH3,
    qs: percentiles.map((p) => p / 100),
    iterations,
    confidence,
    seed
  })

  const rows = percentiles.map((percentile, i) => {
    const q = percentile / 100
    const h2Ms = pointEstimate(pointEstimates.h2, q, sortedH2)
    const h3Ms = pointEstimate(pointEstimates.h3, q, sortedH3)
    const delta = h3Ms - h2Ms
    const { lo, hi } = intervals[i]
    return {
      percentile,
      h2_ms: h2Ms,
      h3_ms: h3Ms,
      delta_ms: delta,
      delta_pct: h2Ms > 0 ? delta / h2Ms * 100 : null,
      ci_low_ms: lo,
      ci_high_ms: hi,
      verdict: verdictFromInterval(lo, hi)
    }
  })

  return {
    ...counts,
    insufficient_data: false,
    mann_whitney_p: mannWhitneyU(cappedH3, cappedH2).p,
    cliffs_delta: cliffsDelta(cappedH3, cappedH2),
    rows
  }
}

/**
 * @param {number} lo
 * @param {number} hi
 */
export function verdictFromInterval (lo, hi) {
  if (hi < 0) return VERDICTS.H3_FASTER
  if (lo > 0) return VERDICTS.H3_SLOWER
  return VERDICTS.NO_SIGNIFICANT_DIFFERENCE
}

/**
 * `cap` order statistics at evenly spaced ranks round(i·(n − 1)/(cap − 1)),
 * always including the minimum and the maximum.
 *
 * @param {Float64Array} sorted ascending
 * @param {number} cap at least 2
 */
export function evenlySpacedSubsample (sorted, cap) {
  const n = sorted.length
  if (n <= cap) return sorted
  const picked = new Float64Array(cap)
  for (let i = 0; i < cap; i++) picked[i] = sorted[Math.round(i * (n - 1) / (cap - 1))]
  return picked
}

/**
 * @param {PointEstimate | undefined} source
 * @param {number} q
 * @param {Float64Array} sorted fallback, never empty (the caller has at least minSamples)
 * @returns {number}
 */
function pointEstimate (source, q, sorted) {
  let value = null
  if (typeof source === 'function') value = source(q)
  else if (source) value = sketchQuantile(source, q)
  return Number.isFinite(value) ? /** @type {number} */ (value) : /** @type {number} */ (exactQuantile(sorted, q))
}

/** @param {number} percentile */
function emptyRow (percentile) {
  return {
    percentile,
    h2_ms: null,
    h3_ms: null,
    delta_ms: null,
    delta_pct: null,
    ci_low_ms: null,
    ci_high_ms: null,
    verdict: VERDICTS.INSUFFICIENT_DATA
  }
}
