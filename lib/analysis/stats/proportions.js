// Failure and fallback rates as data (docs/STATISTICS.md): each arm's rate with its
// interval, and a paired test of whether one arm fails more often than the
// other in the same rounds.

import { normalQuantile } from './paired.js'

/**
 * Wilson score interval of a proportion k/n: unlike k/n ± z·se it stays
 * inside [0, 1] and does not collapse to a point at 0 of 40.
 * @param {number} k
 * @param {number} n
 * @param {number} [confidence]
 * @returns {{ rate: number | null, lo: number | null, hi: number | null }}
 */
export function wilsonInterval (k, n, confidence = 0.95) {
  if (!(n > 0)) return { rate: null, lo: null, hi: null }
  const z = normalQuantile(1 - (1 - confidence) / 2)
  const p = k / n
  const z2 = z * z
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n)
  const half = z * Math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
  // At k = 0 (k = n) the lower (upper) end is 0 (1) exactly; in floating
  // point centre − half came out at 4e-19 for 0 of 500, an interval that
  // did not contain the share it was computed from.
  return { rate: p, lo: k === 0 ? 0 : Math.max(0, centre - half), hi: k === n ? 1 : Math.min(1, centre + half) }
}

/**
 * McNemar's test on the discordant rounds, exact: under "neither arm fails
 * more", each of the b + c rounds where exactly one arm failed is equally
 * likely to be either, so min(b, c) is Binomial(b + c, ½).
 * @param {number} b rounds where only the first arm failed
 * @param {number} c rounds where only the second arm failed
 * @returns {number} two-sided p-value
 */
export function mcnemarExactP (b, c) {
  const n = b + c
  if (n === 0) return 1
  const k = Math.min(b, c)
  // Sum P(X ≤ k) in log space: n can be tens of thousands.
  let logC = 0 // log C(n, 0)
  let tail = 0
  const logHalfN = n * Math.log(0.5)
  for (let i = 0; i <= k; i++) {
    if (i > 0) logC += Math.log((n - i + 1) / i)
    tail += Math.exp(logC + logHalfN)
  }
  return Math.min(1, 2 * tail)
}

/**
 * A share of sums, ΣY / ΣX (the share of a visit's bytes that came over H3
 * across visits), with its interval. Visits of different sizes weigh by
 * their size, as the share of all bytes does.
 *
 * The spread is the delta method's for a ratio estimator,
 * se² ≈ Σ(y − R·x)² / (n − 1) · n / (ΣX)² (ratioStandardError). The
 * interval is not R ± z·se, though: that interval, like the Wald interval
 * of a proportion, collapses where few visits come over the other
 * protocol: it covered the true share in 63% of samples of 30 visits of
 * which 97% came over H3, 87% at 100 visits, 52% of 10 visits at 5% H3
 * (visits over H3 with 80–100% of their bytes over it, the others 0–10%;
 * test/stats-auto.test.js draws that model). It is the Wilson interval at
 * the effective number of visits, n_eff = R(1 − R) / se², at most n (Korn
 * and Graubard's effective sample size, Survey Methodology 24, 1998): the
 * share is known no better than if each visit's bytes had come all over
 * one protocol. In that model it covers 94–100% of samples at every share
 * from 0 to 1 and 10 to 500 visits; the price is a wider interval where
 * every visit splits its bytes alike (5% of every visit's bytes from a
 * third party over H3: ± 9% at 30 visits where the delta method's ± 1%
 * covered). No interval below two visits.
 * @param {{ n: number, sx: number, sy: number, sxx: number, syy: number, sxy: number }} sums
 * @param {number} [confidence]
 * @returns {{ rate: number | null, lo: number | null, hi: number | null }}
 */
export function ratioInterval (sums, confidence = 0.95) {
  const { n, sx, sy } = sums
  if (!(n > 0) || !(sx > 0)) return { rate: null, lo: null, hi: null }
  const r = sy / sx
  if (n < 2) return { rate: r, lo: null, hi: null }
  const se = /** @type {number} */ (ratioStandardError(sums))
  const effective = se > 0 ? Math.min(n, r * (1 - r) / (se * se)) : n
  const w = wilsonInterval(r * effective, effective, confidence)
  return { rate: r, lo: w.lo, hi: w.hi }
}

/**
 * The delta method's standard error of ΣY / ΣX from the sums of n pairs:
 * √(Σ(y − R·x)² / (n − 1) · n) / ΣX, where Σ(y − R·x)² = Σy² − 2R·Σxy + R²·Σx².
 * @param {{ n: number, sx: number, sy: number, sxx: number, syy: number, sxy: number }} sums
 * @returns {number | null} null below two pairs or without a positive ΣX
 */
export function ratioStandardError ({ n, sx, sy, sxx, syy, sxy }) {
  if (!(n >= 2) || !(sx > 0)) return null
  const r = sy / sx
  const residual = Math.max(0, syy - 2 * r * sxy + r * r * sxx)
  return Math.sqrt(residual / (n - 1) * n) / sx
}

/**
 * One-sided Fisher exact test that the first of two shares is lower than
 * the second: k1 of n1 against k2 of n2. Under "the same share in both",
 * and given the k1 + k2 successes of both, the first sample's successes are
 * hypergeometric; p = P(X ≤ k1). Exact at any size and conservative, which
 * a normal approximation is not in the far tail the alert rules test at
 * (p ≈ 1e-5, lib/analysis/alert-h3-share.js).
 * @param {number} k1
 * @param {number} n1
 * @param {number} k2
 * @param {number} n2
 * @returns {number} p-value in [0, 1]
 */
export function fisherLowerP (k1, n1, k2, n2) {
  const N = n1 + n2
  const K = k1 + k2
  if (!(n1 > 0 && n2 > 0)) return 1
  const lo = Math.max(0, n1 - (N - K))
  // log C(K, x) + log C(N − K, n1 − x) − log C(N, n1)
  const logTotal = logChoose(N, n1)
  const terms = []
  for (let x = lo; x <= k1; x++) terms.push(logChoose(K, x) + logChoose(N - K, n1 - x) - logTotal)
  const top = Math.max(...terms)
  const p = Math.exp(top) * terms.reduce((s, t) => s + Math.exp(t - top), 0)
  return Math.min(1, p)
}

/** @param {number} n @param {number} k */
function logChoose (n, k) {
  return logGamma(n + 1) - logGamma(k + 1) - logGamma(n - k + 1)
}

// Lanczos approximation (g = 7, 9 coefficients): ~15 significant digits.
const LANCZOS = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
  -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7]

/**
 * log Γ(x) for x > 0.
 * @param {number} x
 * @returns {number}
 */
export function logGamma (x) {
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x)
  const z = x - 1
  let a = LANCZOS[0]
  const t = z + 7.5
  for (let i = 1; i < 9; i++) a += LANCZOS[i] / (z + i)
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a)
}
