import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  addToSketch,
  decodeSketch,
  encodeSketch,
  exactQuantile,
  mergeSketches,
  newSketch,
  sketchCount,
  sketchQuantile,
  sketchSummary
} from '../lib/analysis/stats/index.js'
import { createRandom, randomNormal } from '../lib/analysis/stats/random.js'

/** Heavy-tailed, like page-load times: lognormal around `median` ms. */
function lognormalSample (n, { median, sigma, seed }) {
  const random = createRandom(seed)
  return Array.from({ length: n }, () => median * Math.exp(sigma * randomNormal(random)))
}

function sketchOf (values) {
  const sketch = newSketch()
  for (const v of values) addToSketch(sketch, v)
  return sketch
}

const QUANTILES = Array.from({ length: 75 }, (_, i) => (25 + i) / 100) // 0.25 … 0.99

test('sketch quantiles are within 1% of the exact percentile_cont on 100k heavy-tailed values', () => {
  const values = lognormalSample(100_000, { median: 180, sigma: 0.8, seed: 1 })
  const sketch = sketchOf(values)
  const sorted = Float64Array.from(values).sort()

  for (const q of QUANTILES) {
    const exact = exactQuantile(sorted, q)
    const estimate = sketchQuantile(sketch, q)
    assert.ok(estimate !== null && exact !== null)
    const relativeError = Math.abs(estimate - exact) / exact
    assert.ok(relativeError <= 0.01, `q=${q}: sketch ${estimate} vs exact ${exact} (error ${relativeError})`)
  }
  assert.equal(sketchCount(sketch), 100_000)
  const summary = sketchSummary(sketch)
  assert.equal(summary.min, sorted[0])
  assert.equal(summary.max, sorted[sorted.length - 1])
  assert.ok(Math.abs(summary.sum - values.reduce((a, b) => a + b, 0)) < 1e-6 * summary.sum)
})

test('an empty sketch has no quantiles; min and max are exact at the ends', () => {
  const empty = newSketch()
  assert.equal(sketchQuantile(empty, 0.5), null)
  assert.deepEqual(sketchSummary(empty), { count: 0, sum: 0, min: null, max: null })

  const sketch = sketchOf([42.5, 42.5, 42.5])
  assert.equal(sketchQuantile(sketch, 0), 42.5)
  assert.equal(sketchQuantile(sketch, 0.5), 42.5)
  assert.equal(sketchQuantile(sketch, 1), 42.5)
  assert.throws(() => sketchQuantile(sketch, 1.5), RangeError)
})

test('zero durations are counted; negative and non-finite values are rejected', () => {
  const sketch = sketchOf([0, 0, 0, 10])
  assert.equal(sketchCount(sketch), 4)
  assert.equal(sketchQuantile(sketch, 0.5), 0)
  assert.equal(sketchSummary(sketch).min, 0)

  assert.throws(() => addToSketch(sketch, -1), /must not be negative/)
  assert.throws(() => addToSketch(sketch, NaN), /finite/)
  assert.throws(() => addToSketch(sketch, Infinity), /finite/)
  assert.equal(sketchCount(sketch), 4, 'rejected values are not counted')
})

test('encode/decode round-trips every quantile, the count, sum, min and max', () => {
  const values = [0, 0, ...lognormalSample(5000, { median: 0.6, sigma: 1.5, seed: 2 })]
  const sketch = sketchOf(values)
  const decoded = decodeSketch(encodeSketch(sketch))

  for (let i = 0; i <= 1000; i++) {
    assert.equal(sketchQuantile(decoded, i / 1000), sketchQuantile(sketch, i / 1000))
  }
  assert.deepEqual(sketchSummary(decoded), sketchSummary(sketch))
  assert.deepEqual(encodeSketch(decoded), encodeSketch(sketch))

  const empty = decodeSketch(encodeSketch(newSketch()))
  assert.equal(sketchCount(empty), 0)
  assert.equal(sketchQuantile(empty, 0.5), null)
})

test('a 1,000-sample TTFB sketch encodes to a few hundred bytes', () => {
  // Measured: 226 bytes (95 non-empty bins of 120 spanned) for this lognormal,
  // median 180 ms, sigma 0.35. The bound leaves room for wider distributions.
  const sketch = sketchOf(lognormalSample(1000, { median: 180, sigma: 0.35, seed: 7 }))
  const bytes = encodeSketch(sketch)
  assert.ok(Buffer.isBuffer(bytes))
  assert.ok(bytes.length < 400, `encoded size ${bytes.length} bytes`)
})

test('decodeSketch rejects unknown versions, truncated and padded input', () => {
  const bytes = encodeSketch(sketchOf([1, 2, 3]))
  assert.throws(() => decodeSketch(Buffer.concat([Buffer.from([2]), bytes.subarray(1)])), /unknown sketch encoding version 2/)
  assert.throws(() => decodeSketch(bytes.subarray(0, bytes.length - 1)), /truncated/)
  assert.throws(() => decodeSketch(Buffer.concat([bytes, Buffer.from([0])])), /trailing/)
})

test('merging sketches of 10 partitions gives the sketch of the union', () => {
  const values = lognormalSample(20_000, { median: 250, sigma: 1, seed: 3 })
  const partitions = Array.from({ length: 10 }, (_, k) => values.filter((_, i) => i % 10 === k))
  const parts = partitions.map(sketchOf)
  // Rollups arrive from the database as bytes: mix both kinds.
  const merged = mergeSketches(parts.map((s, i) => (i % 2 ? encodeSketch(s) : s)))
  const union = sketchOf(values)

  for (let i = 0; i <= 100; i++) {
    assert.equal(sketchQuantile(merged, i / 100), sketchQuantile(union, i / 100))
  }
  const m = sketchSummary(merged)
  const u = sketchSummary(union)
  assert.equal(m.count, u.count)
  assert.equal(m.min, u.min)
  assert.equal(m.max, u.max)
  assert.ok(Math.abs(m.sum - u.sum) < 1e-9 * u.sum, 'sum differs only by addition order')
  assert.equal(sketchCount(parts[0]), 2000, 'inputs are not modified')
})

test('merging keeps a top bin at exactly 1 ms through further merges', () => {
  // DDSketch's own merge leaves the range short when the source's highest
  // key is 0 (values in (0.98, 1] ms), and a later merge drops that bin.
  const low = sketchOf([0.3, 0.4])
  const nearOne = sketchOf([0.5, 1.0])
  const again = mergeSketches([sketchOf([100]), mergeSketches([low, nearOne])])
  const union = sketchOf([0.3, 0.4, 0.5, 1.0, 100])
  for (const q of [0, 0.25, 0.5, 0.75, 1]) {
    assert.equal(sketchQuantile(again, q), sketchQuantile(union, q))
  }
  assert.ok(Math.abs(Number(sketchQuantile(again, 0.75)) - 1) <= 0.01, 'the 1 ms value is still there')
})

test('merging nothing gives an empty sketch', () => {
  assert.equal(sketchCount(mergeSketches([])), 0)
})
