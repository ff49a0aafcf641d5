// The paired location test (docs/STATISTICS.md): Wilcoxon signed-rank on per-round
// differences d = H3 − H2, with the Hodges–Lehmann estimate of the shift and
// its distribution-free interval.
//
// Both arms of a round run moments apart on the same path, so the round's
// difference removes whatever the path did to both (a slow minute, a busy
// agent). An unpaired test (Mann–Whitney) keeps that noise in.

import { normalSurvival } from './normal.js'
import { sortedSample } from './quantile.js'

// Exact p-values below this many non-zero differences (no ties among their
// absolute values); the null distribution of W+ has n(n+1)/2 + 1 values.
const EXACT_MAX_N = 50

/**
 * @typedef {object} SignedRankResult
 * @property {number} n differences that are not zero (zeros are dropped: Wilcoxon's method)
 * @property {number} w_plus sum of the ranks of positive differences
 * @property {number} z normal score of w_plus (tie- and continuity-corrected); 0 when exact
 * @property {number} p two-sided p-value
 * @property {'exact' | 'asymptotic'} method
 */

/**
 * Two-sided Wilcoxon signed-rank test of "the differences are symmetric
 * about 0", the numbers of scipy.stats.wilcoxon(d, zero_method='wilcox',
 * correction=True) with its exact method for small untied samples.
 * @param {ArrayLike<number>} differences
 * @returns {SignedRankResult}
 */
export function wilcoxonSignedRank (differences) {
  const nonZero = Array.from(differences).filter((d) => d !== 0)
  const n = nonZero.length
  if (n === 0) return { n: 0, w_plus: 0, z: 0, p: 1, method: 'exact' }
  const byAbs = nonZero.map((d) => ({ d, a: Math.abs(d) })).sort((x, y) => x.a - y.a)
  let wPlus = 0
  let tieTerm = 0
  for (let i = 0; i < n;) {
    let j = i
    while (j < n && byAbs[j].a === byAbs[i].a) j++
    const rank = (i + 1 + j) / 2
    const t = j - i
    tieTerm += t * t * t - t
    for (let k = i; k < j; k++) if (byAbs[k].d > 0) wPlus += rank
    i = j
  }
  const mean = n * (n + 1) / 4
  if (n <= EXACT_MAX_N && tieTerm === 0) {
    return { n, w_plus: wPlus, z: 0, p: exactSignedRankP(wPlus, n), method: 'exact' }
  }
  const variance = n * (n + 1) * (2 * n + 1) / 24 - tieTerm / 48
  if (variance <= 0) return { n, w_plus: wPlus, z: 0, p: 1, method: 'asymptotic' }
  const distance = Math.max(0, Math.abs(wPlus - mean) - 0.5)
  const z = Math.sign(wPlus - mean) * distance / Math.sqrt(variance)
  return { n, w_plus: wPlus, z, p: Math.min(1, 2 * normalSurvival(Math.abs(z))), method: 'asymptotic' }
}

/**
 * 2·P(W+ ≥ max(w, M − w)) under the null, M = n(n+1)/2.
 * @param {number} w
 * @param {number} n
 */
function exactSignedRankP (w, n) {
  const max = n * (n + 1) / 2
  const counts = new Float64Array(max + 1)
  counts[0] = 1
  for (let k = 1; k <= n; k++) for (let s = max; s >= k; s--) counts[s] += counts[s - k]
  const upper = Math.max(w, max - w)
  let tail = 0
  let total = 0
  for (let s = 0; s <= max; s++) {
    total += counts[s]
    if (s >= upper) tail += counts[s]
  }
  return Math.min(1, 2 * tail / total)
}

/**
 * Hodges–Lehmann estimate of the shift (the median of the n(n+1)/2 Walsh
 * averages (d_i + d_j)/2, i ≤ j) and its interval: the Walsh averages of
 * rank C and M − C + 1, with C from the signed-rank null distribution's
 * normal approximation. Walsh averages are never listed: the k-th smallest
 * is found by bisection on its value, counting the pairs below a value in
 * one two-pointer pass over the sorted differences, O(n log range) in all
 * (5,000 rounds: ~2 ms instead of sorting 12.5 million averages).
 * @param {ArrayLike<number>} differences
 * @param {number} [confidence]
 * @returns {{ estimate: number | null, lo: number | null, hi: number | null }}
 */
export function hodgesLehmann (differences, confidence = 0.95) {
  const d = sortedSample(Array.from(differences), 'differences')
  const n = d.length
  if (n === 0) return { estimate: null, lo: null, hi: null }
  const m = n * (n + 1) / 2
  const kth = (/** @type {number} */ k) => kthWalshAverage(d, k)
  const estimate = m % 2 === 1 ? kth((m + 1) / 2) : (kth(m / 2) + kth(m / 2 + 1)) / 2
  const z = normalQuantile(1 - (1 - confidence) / 2)
  const c = Math.floor(m / 2 - z * Math.sqrt(n * (n + 1) * (2 * n + 1) / 24))
  if (c < 1) return { estimate, lo: d[0], hi: d[n - 1] }
  return { estimate, lo: kth(c), hi: kth(m - c + 1) }
}

/**
 * The k-th smallest (1-based) of the Walsh averages of ascending `d`.
 * @param {Float64Array} d
 * @param {number} k
 */
function kthWalshAverage (d, k) {
  let lo = d[0]
  let hi = d[d.length - 1]
  // 200 halvings take any double range down to adjacent values.
  for (let it = 0; it < 200 && lo < hi; it++) {
    const mid = lo + (hi - lo) / 2
    if (mid === lo || mid === hi) break
    if (countWalshAtMost(d, mid) >= k) hi = mid
    else lo = mid
  }
  // hi is within one ulp of the answer; snap to the Walsh average it stands for.
  return largestWalshAtMost(d, hi)
}

/**
 * How many Walsh averages (i ≤ j) are ≤ t.
 * @param {Float64Array} d ascending
 * @param {number} t
 */
function countWalshAtMost (d, t) {
  const n = d.length
  let count = 0
  let j = n - 1
  for (let i = 0; i < n; i++) {
    while (j >= i && (d[i] + d[j]) / 2 > t) j--
    if (j < i) break
    count += j - i + 1
  }
  return count
}

/**
 * The largest Walsh average ≤ t.
 * @param {Float64Array} d ascending
 * @param {number} t
 */
function largestWalshAtMost (d, t) {
  const n = d.length
  let best = -Infinity
  let j = n - 1
  for (let i = 0; i < n; i++) {
    while (j >= i && (d[i] + d[j]) / 2 > t) j--
    if (j < i) break
    const v = (d[i] + d[j]) / 2
    if (v > best) best = v
  }
  return best
}

/**
 * Inverse standard normal CDF (Acklam's rational approximation, relative
 * error below 1.2e-9).
 * @param {number} p in (0, 1)
 * @returns {number}
 */
export function normalQuantile (p) {
  if (!(p > 0 && p < 1)) throw new RangeError(`p must be in (0, 1), got ${p}`)
  const a = [-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716, 2.506628277459239]
  const b = [-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572]
  const c = [-0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783]
  const e = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416]
  const low = 0.02425
  if (p < low) {
    const q = Math.sqrt(-2 * Math.log(p))
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((e[0] * q + e[1]) * q + e[2]) * q + e[3]) * q + 1)
  }
  if (p > 1 - low) return -normalQuantile(1 - p)
  const q = p - 0.5
  const r = q * q
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
}
