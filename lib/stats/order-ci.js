// A confidence interval for the difference of two quantiles that needs no
// resampling, for large samples read from sketches.
//
// For a quantile q of n samples, the rank of the true quantile is
// approximately Normal(nq, nq(1−q)) (the binomial order-statistic argument
// behind the classic distribution-free quantile interval). The values at
// ranks nq ± z·√(nq(1−q)) bound a (1−α) interval for the quantile; half its
// width divided by z estimates the quantile's standard error. The two
// groups are independent, so the delta's interval is
//   (h3 − h2) ± z·√(se_h2² + se_h3²).
// It uses every sample in the window (read off the merged sketches, ≤1%
// relative error) at O(1) cost, where a bootstrap costs O(n × iterations).
// The normal approximation needs nq(1−q) to be comfortably above ~10; the
// comparison uses it only when both groups have at least ORDER_CI_MIN_N
// samples (p99 at n = 1,000: nq(1−q) ≈ 9.9) and bootstraps below that.
import { sketchQuantile } from './sketch.js'

export const ORDER_CI_MIN_N = 1000

/** Two-sided standard normal quantile for the usual confidence levels. */
function zFor (confidence) {
  const table = { 0.9: 1.6449, 0.95: 1.96, 0.99: 2.5758 }
  const z = table[confidence]
  if (!z) throw new RangeError(`confidence must be one of ${Object.keys(table).join(', ')}`)
  return z
}

/**
 * @param {(q: number) => number | null} quantile the group's quantile function
 * @param {number} n samples in the group
 * @param {number} q in (0, 1)
 * @param {number} z
 */
function quantileStandardError (quantile, n, q, z) {
  const half = z * Math.sqrt(n * q * (1 - q))
  const lo = quantile(Math.max(0, (n * q - half) / n))
  const hi = quantile(Math.min(1, (n * q + half) / n))
  return (hi - lo) / (2 * z)
}

/**
 * @param {{ h2: import('./sketch.js').Sketch, h3: import('./sketch.js').Sketch, n_h2: number, n_h3: number, q: number, confidence?: number }} opts
 * @returns {{ delta: number, lo: number, hi: number }}
 */
export function orderStatisticDeltaCI ({ h2, h3, n_h2: n2, n_h3: n3, q, confidence = 0.95 }) {
  const z = zFor(confidence)
  const q2 = (x) => sketchQuantile(h2, x)
  const q3 = (x) => sketchQuantile(h3, x)
  const delta = q3(q) - q2(q)
  const se = Math.sqrt(quantileStandardError(q2, n2, q, z) ** 2 + quantileStandardError(q3, n3, q, z) ** 2)
  return { delta, lo: delta - z * se, hi: delta + z * se }
}
