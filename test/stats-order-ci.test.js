// The order-statistic interval for large samples: right sign when the groups
// differ, ~95% coverage when they do not.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { newSketch, addToSketch, orderStatisticDeltaCI, createRandom, randomNormal } from '../lib/stats/index.js'

function lognormalSketch (random, n, median, sigma = 0.5) {
  const s = newSketch()
  for (let i = 0; i < n; i++) addToSketch(s, median * Math.exp(sigma * randomNormal(random)))
  return s
}

test('clearly different groups give an interval that excludes 0 with the right sign', () => {
  const random = createRandom(1)
  const h2 = lognormalSketch(random, 3000, 200)
  const h3 = lognormalSketch(random, 3000, 170)
  for (const q of [0.25, 0.5, 0.75, 0.9, 0.95, 0.99]) {
    const ci = orderStatisticDeltaCI({ h2, h3, n_h2: 3000, n_h3: 3000, q })
    assert.ok(ci.hi < 0, `q${q}: [${ci.lo}, ${ci.hi}]`)
    assert.ok(ci.lo < ci.delta && ci.delta < ci.hi)
  }
})

test('identical distributions: the 95% interval covers 0 about 95% of the time', () => {
  const random = createRandom(7)
  const trials = 200
  for (const q of [0.5, 0.95]) {
    let covered = 0
    for (let i = 0; i < trials; i++) {
      const h2 = lognormalSketch(random, 1500, 150)
      const h3 = lognormalSketch(random, 1500, 150)
      const ci = orderStatisticDeltaCI({ h2, h3, n_h2: 1500, n_h3: 1500, q })
      if (ci.lo <= 0 && ci.hi >= 0) covered++
    }
    // Binomial(200, 0.95) has sd ≈ 3.1%; 0.89–0.995 allows ~2 sd either way
    // plus the sketch's 1% quantisation.
    assert.ok(covered / trials >= 0.89 && covered / trials <= 0.995, `q${q}: coverage ${covered / trials}`)
  }
})

test('quantiles read from encoded bins equal those of the decoded sketch', async () => {
  const { encodeSketch, decodeSketch, encodedQuantiles, sketchQuantile } = await import('../lib/stats/index.js')
  const random = createRandom(3)
  const qs = [0, 0.01, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1]
  for (const n of [1, 2, 7, 100, 5000]) {
    const s = lognormalSketch(random, n, 120, 0.8)
    if (n === 7) addToSketch(s, 0)
    const bytes = encodeSketch(s)
    const decoded = decodeSketch(bytes)
    assert.deepEqual(encodedQuantiles(bytes, qs), qs.map((q) => sketchQuantile(decoded, q)), `n=${n}`)
  }
  assert.deepEqual(encodedQuantiles(encodeSketch(newSketch()), [0.5]), [null])
})
