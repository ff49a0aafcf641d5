// The paired and failure statistics against reference values (scipy 1.x and
// statsmodels on the same inputs), and the round bootstrap's properties.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { minRoundsFor } from '../lib/measurement/metrics.js'
import {
  wilcoxonSignedRank, hodgesLehmann, wilsonInterval, mcnemarExactP, benjaminiHochberg, roundBootstrap, armsBootstrap, bootstrapSummary,
  normalQuantile, createRandom, SeededRandom, exactQuantile
} from '../lib/analysis/stats/index.js'

const close = (a, b, tol, msg) => assert.ok(Math.abs(a - b) <= tol, `${msg ?? ''} ${a} vs ${b}`)

test('Wilcoxon signed-rank matches scipy: exact for small untied samples, tie-corrected normal otherwise', () => {
  const d = [1.5, -0.5, 2.0, 3.1, -1.2, 0.7, 2.2, 1.1, -0.3, 4.0, 0.9, 1.8]
  const exact = wilcoxonSignedRank(d)
  assert.equal(exact.method, 'exact')
  close(exact.p, 0.01611328125, 1e-12)
  const tied = [1, 2, 2, 3, -1, 4, 4, 5, -2, 6, 0, 3, 3, 7, -1, 2, 8, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -3, -4, 2, 2]
  const approx = wilcoxonSignedRank(tied)
  assert.equal(approx.method, 'asymptotic')
  assert.equal(approx.n, 31, 'zeros are dropped')
  close(approx.p, 0.00010007877205814556, 1e-7)
  assert.equal(wilcoxonSignedRank([0, 0, 0]).p, 1)
})

test('Hodges–Lehmann is the median of Walsh averages, with an interval around it', () => {
  const d = [1.5, -0.5, 2.0, 3.1, -1.2, 0.7, 2.2, 1.1, -0.3, 4.0, 0.9, 1.8]
  const hl = hodgesLehmann(d)
  close(hl.estimate, 1.325, 1e-12)
  assert.ok(hl.lo !== null && hl.estimate !== null && hl.hi !== null && hl.lo < hl.estimate && hl.estimate < hl.hi)
  // A constant shift: every Walsh average is the shift.
  assert.deepEqual(hodgesLehmann(Array(40).fill(-20)), { estimate: -20, lo: -20, hi: -20 })
  // Brute force on random data.
  const random = createRandom(7)
  const x = Array.from({ length: 101 }, () => random() * 10 - 3)
  const walsh = []
  for (let i = 0; i < x.length; i++) for (let j = i; j < x.length; j++) walsh.push((x[i] + x[j]) / 2)
  walsh.sort((a, b) => a - b)
  close(hodgesLehmann(x).estimate, walsh[(walsh.length - 1) / 2], 1e-9)
})

test('Wilson interval, exact McNemar and Benjamini–Hochberg match statsmodels and scipy', () => {
  const w = wilsonInterval(3, 40)
  close(w.lo, 0.025836025774588184, 1e-9)
  close(w.hi, 0.1986423352431055, 1e-9)
  assert.equal(wilsonInterval(0, 0).rate, null)
  assert.ok(Number(wilsonInterval(0, 40).hi) > 0.05, 'no failures in 40 is not proof of a 0% rate')
  close(mcnemarExactP(2, 13), 0.00738525390625, 1e-12)
  assert.equal(mcnemarExactP(0, 0), 1)
  assert.equal(mcnemarExactP(5, 5), 1)
  assert.ok(mcnemarExactP(20000, 21000) < 1e-5, 'large counts stay finite')
  const adj = benjaminiHochberg([0.01, 0.04, 0.03, 0.2, null, 0.001])
  assert.deepEqual(adj.map((p) => p === null ? null : Math.round(p * 1e9) / 1e9), [0.025, 0.05, 0.05, 0.2, null, 0.005])
  close(normalQuantile(0.975), 1.959963984540054, 1e-8)
})

test('the round bootstrap resamples whole rounds: a round\'s samples move together', () => {
  // Ten rounds of five samples each: within a round the samples are equal.
  const rounds = Array.from({ length: 10 }, (_, i) => ({ h2: Array(5).fill(100 + i), h3: Array(5).fill(100 + i) }))
  const b = roundBootstrap({ rounds, qs: [0.5, 0.9], iterations: 200, seed: 1 })
  assert.deepEqual(b.h2, b.h3)
  // Paired: identical arms give a delta of exactly 0 in every resample.
  for (const draws of b.deltas) assert.ok(draws.every((d) => d === 0))
  // Same seed, same draws; another seed, other draws.
  const shifted = rounds.map((r, i) => ({ h2: r.h2, h3: r.h3.map((v) => v - 5 + (i % 3)) }))
  const again = roundBootstrap({ rounds: shifted, qs: [0.5], iterations: 200, seed: 'x' })
  assert.deepEqual(roundBootstrap({ rounds: shifted, qs: [0.5], iterations: 200, seed: 'x' }).deltas, again.deltas)
  const s = bootstrapSummary(again.deltas[0], again.h3[0] - again.h2[0])
  assert.ok(s.lo <= again.h3[0] - again.h2[0] && again.h3[0] - again.h2[0] <= s.hi && s.se > 0)
})

test('each resample\'s percentiles are percentile_cont of the rounds it drew, written out sample by sample', () => {
  // The bootstrap reads a resample's percentiles off each arm's sorted
  // samples weighted by how often their round was drawn, walking from either
  // end; here each resample is written out in full and sorted instead. Rounds
  // of one sample, of several, of varied counts; ties; percentiles at both
  // ends and on one side of the median only.
  const random = createRandom(11)
  const qsets = [[0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1], [0.5], [0.01, 0.1], [0.9, 0.999], [0.5, 0.5000001]]
  for (let c = 0; c < 60; c++) {
    const n = 1 + Math.floor(random() * 40)
    const size = () => c % 3 === 0 ? 1 : c % 3 === 1 ? 3 : 1 + Math.floor(random() * 4)
    const value = () => c % 5 === 0 ? Math.floor(random() * 3) : Math.round(random() * 5000) / 7
    const rounds = Array.from({ length: n }, () => ({ h2: Array.from({ length: size() }, value), h3: Array.from({ length: size() }, value) }))
    const qs = qsets[c % qsets.length]
    const iterations = 25
    const arms = armsBootstrap({ rounds, arms: ['h2', 'h3'], qs, iterations, seed: c })
    const deltas = roundBootstrap({ rounds, qs, iterations, seed: c }).deltas
    const draws = new SeededRandom(c)
    const counts = new Uint32Array(n)
    for (let i = 0; i < iterations; i++) {
      counts.fill(0)
      draws.tallyDraws(counts)
      const resample = (/** @type {'h2' | 'h3'} */ arm) => Float64Array.from(rounds.flatMap((r, j) => Array(counts[j]).fill(r[arm]).flat())).sort()
      const h2 = resample('h2')
      const h3 = resample('h3')
      qs.forEach((q, k) => {
        const where = `case ${c}, resample ${i}, q ${q}`
        assert.equal(arms.draws.h2[k][i], exactQuantile(h2, q), where)
        assert.equal(arms.draws.h3[k][i], exactQuantile(h3, q), where)
        assert.equal(deltas[k][i], arms.draws.h3[k][i] - arms.draws.h2[k][i], where)
      })
    }
    qs.forEach((q, k) => assert.equal(arms.point.h2[k], exactQuantile(Float64Array.from(rounds.flatMap((r) => r.h2)).sort(), q)))
  }
})

test('a bootstrap whose every resample gives the same Δ has a p-value of 2 / (iterations + 1), the resamples\' resolution, never 0', () => {
  const s = bootstrapSummary(new Float64Array(1000).fill(120), 120)
  assert.deepEqual([s.lo, s.hi, s.se], [120, 120, 0])
  assert.equal(s.p, 2 / 1001)
})

test('the rounds a percentile needs to be tested: 10 beyond it, exact for percentiles with a fraction (p99.9 needs 10,000, not 10,001)', () => {
  assert.deepEqual([50, 75, 90, 95, 99, 99.9, 99.99, 25, 1, 0.1].map(minRoundsFor), [20, 40, 100, 200, 1000, 10000, 100000, 40, 1000, 10000])
})
