import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  VERDICTS,
  addToSketch,
  bootstrapDeltaCI,
  bootstrapDeltaCIs,
  cliffsDelta,
  compareSamples,
  createRandom,
  exactQuantile,
  mannWhitneyU,
  newSketch,
  randomNormal,
  sketchQuantile
} from '../lib/analysis/stats/index.js'

function lognormalSample (n, { median, sigma, seed }) {
  const random = createRandom(seed)
  return Array.from({ length: n }, () => median * Math.exp(sigma * randomNormal(random)))
}

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

test('bootstrap CI excludes 0 with the right sign when HTTP/3 is clearly faster', () => {
  const h2 = lognormalSample(2000, { median: 200, sigma: 0.4, seed: 21 })
  const h3 = lognormalSample(2000, { median: 150, sigma: 0.4, seed: 22 })
  const { lo, hi } = bootstrapDeltaCI({ h2, h3, q: 0.5, seed: 1 })
  assert.ok(lo < hi)
  assert.ok(hi < 0, `CI [${lo}, ${hi}] should lie below 0`)
  // The true median delta is −50 ms.
  assert.ok(lo < -50 + 15 && hi > -50 - 15, `CI [${lo}, ${hi}] should be near −50`)

  const reversed = bootstrapDeltaCI({ h2: h3, h3: h2, q: 0.5, seed: 1 })
  assert.ok(reversed.lo > 0)
})

test('bootstrap CI covers 0 for two samples of the same distribution', () => {
  const h2 = lognormalSample(1000, { median: 300, sigma: 0.6, seed: 31 })
  const h3 = lognormalSample(1000, { median: 300, sigma: 0.6, seed: 32 })
  for (const q of [0.25, 0.5, 0.9, 0.95]) {
    const { lo, hi } = bootstrapDeltaCI({ h2, h3, q, seed: 'same' })
    assert.ok(lo < 0 && hi > 0, `q=${q}: CI [${lo}, ${hi}] should cover 0`)
  }
})

test('bootstrap reads resample quantiles off draw counts exactly as sorting the resample would', () => {
  // One iteration with a known seed: the draws are n_h2 indices into sorted
  // h2, then n_h3 into sorted h3, index = floor(u · n). Rebuild that resample
  // the slow way and compare every quantile, including ties and the ends.
  for (let seed = 0; seed < 50; seed++) {
    const data = createRandom(1000 + seed)
    const h2 = Array.from({ length: 1 + Math.floor(data() * 40) }, () => Math.round(data() * 20))
    const h3 = Array.from({ length: 1 + Math.floor(data() * 40) }, () => data() * 20)
    const qs = [0.99, 0, 0.5, 1, 0.25, 0.9, 1 / 3]

    const random = createRandom(seed)
    const resample = (values) => {
      const sorted = Float64Array.from(values).sort()
      return Float64Array.from(values, () => sorted[Math.floor(random() * values.length)]).sort()
    }
    const h2Star = resample(h2)
    const h3Star = resample(h3)

    const intervals = bootstrapDeltaCIs({ h2, h3, qs, iterations: 1, seed })
    qs.forEach((q, i) => {
      const expected = Number(exactQuantile(h3Star, q)) - Number(exactQuantile(h2Star, q))
      near(intervals[i].lo, expected, 1e-9, `seed ${seed} q ${q}`)
      assert.equal(intervals[i].hi, intervals[i].lo)
    })
  }
})

test('bootstrap is reproducible from its seed, and all percentiles share the resamples', () => {
  const h2 = lognormalSample(500, { median: 100, sigma: 0.5, seed: 41 })
  const h3 = lognormalSample(500, { median: 95, sigma: 0.5, seed: 42 })
  const first = bootstrapDeltaCI({ h2, h3, q: 0.9, seed: 7 })
  assert.deepEqual(bootstrapDeltaCI({ h2, h3, q: 0.9, seed: 7 }), first)
  assert.notDeepEqual(bootstrapDeltaCI({ h2, h3, q: 0.9, seed: 8 }), first)

  const all = bootstrapDeltaCIs({ h2, h3, qs: [0.99, 0.9, 0.25], seed: 7 })
  assert.deepEqual(all.map((ci) => ci.q), [0.99, 0.9, 0.25], 'results follow the order asked for')
  assert.deepEqual({ lo: all[1].lo, hi: all[1].hi }, first)
})

test('compareSamples reports insufficient data without numbers', () => {
  const result = compareSamples({ h2: [100, 110, 120], h3: lognormalSample(50, { median: 100, sigma: 0.3, seed: 1 }) })
  assert.equal(result.insufficient_data, true)
  assert.equal(result.n_h2, 3)
  assert.equal(result.n_h3, 50)
  assert.match(result.reason ?? '', /h2 has 3 .* at least 10/)
  assert.equal(result.mann_whitney_p, null)
  assert.equal(result.cliffs_delta, null)
  assert.deepEqual(result.rows.map((r) => r.percentile), [25, 50, 75, 90, 95, 99])
  for (const row of result.rows) {
    assert.equal(row.verdict, VERDICTS.INSUFFICIENT_DATA)
    for (const key of ['h2_ms', 'h3_ms', 'delta_ms', 'delta_pct', 'ci_low_ms', 'ci_high_ms']) {
      assert.equal(row[key], null, key)
    }
  }
})

test('compareSamples delta and delta_pct on a hand-computed case', () => {
  // h2 = 200, 210, … 290; h3 = 0.9 × h2 = 180, 189, … 261.
  // p50: position 4.5 → h2 = 245, h3 = 220.5, delta = −24.5 ms, −10%.
  // p90: position 8.1 → h2 = 280 + 0.1·10 = 281, h3 = 252 + 0.1·9 = 252.9,
  //      delta = −28.1 ms, −10%.
  const h2 = Array.from({ length: 10 }, (_, i) => 200 + 10 * i)
  const h3 = h2.map((v) => 0.9 * v)
  const result = compareSamples({ h2, h3, percentiles: [50, 90], seed: 1 })
  assert.equal(result.insufficient_data, false)
  const [p50, p90] = result.rows
  near(p50.h2_ms, 245, 1e-9)
  near(p50.h3_ms, 220.5, 1e-9)
  near(p50.delta_ms, -24.5, 1e-9)
  near(p50.delta_pct, -10, 1e-9)
  near(p90.h2_ms, 281, 1e-9)
  near(p90.h3_ms, 252.9, 1e-9)
  near(p90.delta_ms, -28.1, 1e-9)
  near(p90.delta_pct, -10, 1e-9)
  for (const row of result.rows) assert.ok(row.ci_low_ms !== null && row.ci_high_ms !== null && row.ci_low_ms <= row.ci_high_ms)
  assert.ok(result.cliffs_delta !== null && result.cliffs_delta < 0, 'h3 values tend to be smaller')
})

test('compareSamples verdicts follow the confidence interval', () => {
  const slow = lognormalSample(800, { median: 240, sigma: 0.3, seed: 51 })
  const fast = lognormalSample(800, { median: 180, sigma: 0.3, seed: 52 })

  const faster = compareSamples({ h2: slow, h3: fast, seed: 1 })
  for (const row of faster.rows) {
    assert.equal(row.verdict, VERDICTS.H3_FASTER, `p${row.percentile}`)
    assert.ok(row.ci_high_ms !== null && row.delta_ms !== null && row.ci_high_ms < 0 && row.delta_ms < 0)
  }
  assert.ok(faster.mann_whitney_p !== null && faster.mann_whitney_p < 1e-6)
  assert.ok(faster.cliffs_delta !== null && faster.cliffs_delta < -0.3)

  const slower = compareSamples({ h2: fast, h3: slow, seed: 1 })
  assert.ok(slower.rows.every((row) => row.verdict === VERDICTS.H3_SLOWER))
  assert.ok(slower.cliffs_delta !== null && slower.cliffs_delta > 0.3)

  const same = compareSamples({ h2: slow, h3: slow, seed: 1 })
  for (const row of same.rows) {
    assert.equal(row.verdict, VERDICTS.NO_SIGNIFICANT_DIFFERENCE, `p${row.percentile}`)
    assert.equal(row.delta_ms, 0)
    assert.ok(row.ci_low_ms !== null && row.ci_high_ms !== null && row.ci_low_ms < 0 && row.ci_high_ms > 0)
  }
  assert.equal(same.cliffs_delta, 0)
  assert.equal(same.mann_whitney_p, 1)
})

test('compareSamples takes point estimates from sketches but intervals from samples', () => {
  const h2 = lognormalSample(400, { median: 200, sigma: 0.5, seed: 61 })
  const h3 = lognormalSample(400, { median: 190, sigma: 0.5, seed: 62 })
  const h2Sketch = newSketch()
  for (const v of h2) addToSketch(h2Sketch, v)

  const plain = compareSamples({ h2, h3, seed: 3 })
  const fromSketch = compareSamples({
    h2,
    h3,
    seed: 3,
    pointEstimates: { h2: h2Sketch, h3: (q) => (q === 0.99 ? null : 123) }
  })
  fromSketch.rows.forEach((row, i) => {
    assert.equal(row.h2_ms, sketchQuantile(h2Sketch, row.percentile / 100))
    assert.equal(row.h3_ms, row.percentile === 99 ? plain.rows[i].h3_ms : 123, 'null falls back to the samples')
    assert.equal(row.ci_low_ms, plain.rows[i].ci_low_ms)
    assert.equal(row.ci_high_ms, plain.rows[i].ci_high_ms)
    assert.equal(row.verdict, plain.rows[i].verdict)
  })
})

test('compareSamples caps large groups deterministically and reports the true counts', () => {
  const h2 = lognormalSample(12_000, { median: 200, sigma: 0.5, seed: 71 })
  const h3 = lognormalSample(3_000, { median: 200, sigma: 0.5, seed: 72 })
  const first = compareSamples({ h2, h3, sampleCap: 2000, seed: 9 })
  assert.equal(first.n_h2, 12_000)
  assert.equal(first.n_h3, 3_000)
  assert.deepEqual(compareSamples({ h2, h3, sampleCap: 2000, seed: 9 }), first)
  // Point estimates still use every sample.
  const sorted = Float64Array.from(h2).sort()
  assert.equal(first.rows[1].h2_ms, exactQuantile(sorted, 0.5))
})
