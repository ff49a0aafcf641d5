import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  cliffsDelta,
  createRandom,
  exactQuantile,
  mannWhitneyU
} from '../lib/analysis/stats/index.js'

/** @param {number} actual @param {number} expected @param {number} tolerance */
/**
 * @param {number | null} actual
 * @param {number} expected
 * @param {number} tolerance
 */
function near (actual, expected, tolerance, message = '') {
  assert.ok(actual !== null && Math.abs(actual - expected) <= tolerance, `${message} ${actual} is not within ${tolerance} of ${expected}`)
}

test('exactQuantile interpolates like PostgreSQL percentile_cont', () => {
  // percentile_cont(q) WITHIN GROUP (ORDER BY v) over (1, 2, 3, 4, 10):
  // position q·(n − 1); q = 0.9 → 3.6 → 4 + 0.6·(10 − 4) = 7.6
  const sorted = [1, 2, 3, 4, 10]
  near(exactQuantile(sorted, 0.9), 7.6, 1e-12)
  assert.equal(exactQuantile(sorted, 0.5), 3)
  assert.equal(exactQuantile(sorted, 0), 1)
  assert.equal(exactQuantile(sorted, 1), 10)
  assert.equal(exactQuantile([1, 2, 3, 4], 0.25), 1.75) // position 0.75
  assert.equal(exactQuantile([7], 0.99), 7)
  assert.equal(exactQuantile([], 0.5), null)
  assert.throws(() => exactQuantile(sorted, -0.1), RangeError)
})

test('mannWhitneyU on the textbook example without ties', () => {
  // a = [19, 22, 16, 29, 24], b = [20, 11, 17, 12].
  // Pooled order: 11b 12b 16a 17b 19a 20b 22a 24a 29a → ranks of a: 3, 5, 7, 8, 9.
  // R_a = 32, U_a = R_a − n_a(n_a + 1)/2 = 32 − 15 = 17 (and U_b = 20 − 17 = 3).
  // Normal approximation: mean = n_a·n_b/2 = 10, σ² = n_a·n_b·(n + 1)/12 = 5·4·10/12,
  // σ = 4.082483; z = (17 − 10 − 0.5)/σ = 1.592168; p = 2·(1 − Φ(1.592168)) = 0.111347.
  // (Φ(1.59) = 0.944083, Φ(1.60) = 0.945201, interpolated 0.944326; an often
  // quoted p ≈ 0.2207 for this example does not follow from these numbers.)
  // Exact: U takes each value 0 … 20 in as many of the C(9, 4) = 126 orderings
  // as there are partitions of it into at most 4 parts of at most 5; for
  // U ≤ 3 that is 1 + 1 + 2 + 3 = 7, so p = 2·7/126 = 1/9.
  const a = [19, 22, 16, 29, 24]
  const b = [20, 11, 17, 12]

  const asymptotic = mannWhitneyU(a, b, { method: 'asymptotic' })
  assert.equal(asymptotic.u, 17)
  near(asymptotic.z, 1.592168, 1e-6)
  near(asymptotic.p, 0.111347, 1e-5)
  assert.equal(asymptotic.method, 'asymptotic')

  const exact = mannWhitneyU(a, b)
  assert.equal(exact.method, 'exact', 'small untied samples get the exact p-value')
  near(exact.p, 1 / 9, 1e-12)

  const swapped = mannWhitneyU(b, a, { method: 'asymptotic' })
  assert.equal(swapped.u, 3)
  near(swapped.z, -asymptotic.z, 1e-12)
  near(swapped.p, asymptotic.p, 1e-12)
})

test('mannWhitneyU with ties uses mid-ranks and the tie-corrected variance', () => {
  // a = [3, 5, 5, 8], b = [1, 5, 6].
  // Pooled order: 1b 3a 5a 5a 5b 6b 8a; the three 5s share ranks 3–5 → 4 each.
  // R_a = 2 + 4 + 4 + 7 = 17, U_a = 17 − 10 = 7
  // (pairs a > b: 3>1, 5>1, 5>1, 8>1, 8>5, 8>6 = 6, plus ½ of 2 tied pairs).
  // One tie group of t = 3: Σ(t³ − t) = 24, n = 7.
  // σ² = 4·3/12 · ((7 + 1) − 24/(7·6)) = 8 − 0.571429 = 7.428571, σ = 2.725541.
  // z = (|7 − 6| − 0.5)/σ = 0.183450; p = 2·(1 − Φ(0.183450)) = 2·(1 − 0.572778) = 0.854445.
  const result = mannWhitneyU([3, 5, 5, 8], [1, 5, 6])
  assert.equal(result.u, 7)
  assert.equal(result.method, 'asymptotic', 'ties rule out the exact table')
  near(result.z, 0.183450, 1e-6)
  near(result.p, 0.854445, 1e-5)
})

test('mannWhitneyU reports p = 1 when nothing separates the samples', () => {
  assert.deepEqual(mannWhitneyU([5, 5, 5], [5, 5]), { u: 3, z: 0, p: 1, method: 'asymptotic' })
  assert.throws(() => mannWhitneyU([], [1]), RangeError)
})

test('cliffsDelta: sign convention and hand-computed cases', () => {
  assert.equal(cliffsDelta([1, 2, 3], [4, 5, 6]), -1, 'every value of a below every value of b')
  assert.equal(cliffsDelta([4, 5, 6], [1, 2, 3]), 1)
  assert.equal(cliffsDelta([1, 2, 3], [1, 2, 3]), 0)
  // a = [3, 5, 5, 8], b = [1, 5, 6], 12 pairs:
  //   3 vs 1, 5, 6 → +1 −1 −1;  5 vs 1, 5, 6 → +1 0 −1 (twice);  8 vs 1, 5, 6 → +3
  //   sum = −1 + 0 + 0 + 3 = 2 → δ = 2/12 = 1/6
  near(cliffsDelta([3, 5, 5, 8], [1, 5, 6]), 1 / 6, 1e-12)
})

test('cliffsDelta from ranks matches the pairwise definition', () => {
  const random = createRandom(11)
  const a = Array.from({ length: 300 }, () => Math.round(random() * 50))
  const b = Array.from({ length: 200 }, () => Math.round(random() * 45))
  let score = 0
  for (const x of a) for (const y of b) score += Math.sign(x - y)
  near(cliffsDelta(a, b), score / (a.length * b.length), 1e-12)
})
