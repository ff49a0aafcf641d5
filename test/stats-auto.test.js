// The statistics the auto arm's analysis (lib/analysis/auto.js) adds, as
// pure functions against values worked out by hand: the bootstrap of any
// number of arms, the false-discovery corrections (the forced comparison's
// screened one and the auto view's selective one), the byte share's ratio
// interval and the Wilson interval's ends.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  armsBootstrap, roundBootstrap, benjaminiHochberg, screenedBenjaminiHochberg, selectiveBenjaminiHochberg, ratioInterval, ratioStandardError, wilsonInterval, createRandom, randomNormal,
  resampledRatioInterval
} from '../lib/analysis/stats/index.js'

const close = (/** @type {number | null} */ a, /** @type {number} */ b, /** @type {number} */ tol, msg = '') => assert.ok(a !== null && Math.abs(a - b) <= tol, `${msg} ${a} vs ${b}`)

test('armsBootstrap with two arms draws what roundBootstrap draws on the same seed', () => {
  const random = createRandom(11)
  // Rounds of one to three samples each, as the parallel probe gives.
  const rounds = Array.from({ length: 60 }, (_, i) => {
    const path = 50 + 40 * random()
    const samples = () => Array.from({ length: 1 + (i % 3) }, () => Math.round(path * (0.8 + 0.4 * random()) * 10) / 10)
    return { h2: samples(), h3: samples() }
  })
  const qs = [0.25, 0.5, 0.9]
  const two = roundBootstrap({ rounds, qs, iterations: 300, seed: 'same' })
  const arms = armsBootstrap({ rounds, arms: ['h2', 'h3'], qs, iterations: 300, seed: 'same' })
  assert.equal(arms.rounds, 60)
  assert.deepEqual(arms.point.h2, two.h2)
  assert.deepEqual(arms.point.h3, two.h3)
  for (let k = 0; k < qs.length; k++) {
    assert.deepEqual(Array.from(arms.draws.h3[k], (v, i) => v - arms.draws.h2[k][i]), Array.from(two.deltas[k]), `p${qs[k] * 100}`)
  }
  // A third arm takes nothing from the random stream: the forced arms'
  // resamples stay the same, and every arm of a resample sees the same rounds.
  const three = armsBootstrap({ rounds: rounds.map((r) => ({ ...r, auto: r.h2.map((v) => v - 5) })), arms: ['h2', 'h3', 'auto'], qs, iterations: 300, seed: 'same' })
  assert.deepEqual(three.draws.h2, arms.draws.h2)
  assert.deepEqual(three.draws.h3, arms.draws.h3)
  for (let k = 0; k < qs.length; k++) {
    three.draws.auto[k].forEach((v, i) => close(v, three.draws.h2[k][i] - 5, 1e-9, 'an arm 5 ms below h2 in every round is 5 ms below it in every resample'))
  }
  assert.throws(() => armsBootstrap({ rounds: [{ h2: [1], h3: [] }], arms: ['h2', 'h3'], qs }), /round 0 has no h3 sample/)
  assert.throws(() => armsBootstrap({ rounds: [], arms: ['h2'], qs }), /at least one round/)
})

// The correction as lib/analysis/comparison.js wrote it inline before it
// became screenedBenjaminiHochberg: the reference the function must
// reproduce.
function comparisonBefore (/** @type {number[][]} */ columns) {
  const families = columns.filter((f) => f.length)
  const out = columns.map((f) => f.map(() => NaN))
  columns.forEach((family, j) => {
    if (!family.length) return
    const within = benjaminiHochberg(family)
    const simes = Math.min(...within.map((p) => p ?? 1))
    family.forEach((_, i) => { out[j][i] = Math.min(1, Math.max(within[i] ?? 1, families.length * simes)) })
  })
  return out
}

test('screened Benjamini–Hochberg: a Simes screen per column, Bonferroni over the columns, then Benjamini–Hochberg within', () => {
  // By hand. Column 1: within-column BH of (0.001, 0.04) is (0.002, 0.04);
  // its Simes p 0.002 × 2 tested columns = 0.004. Column 2: BH (0.5, 0.5),
  // Simes 0.5 × 2 = 1. The empty column is not counted.
  const adjusted = screenedBenjaminiHochberg([[0.001, 0.04], [0.3, 0.5], []])
  assert.equal(adjusted.length, 3)
  close(adjusted[0][0], 0.004, 1e-12)
  close(adjusted[0][1], 0.04, 1e-12)
  assert.deepEqual(adjusted[1], [1, 1])
  assert.deepEqual(adjusted[2], [])

  // A column of identical arms stays quiet beside one with real
  // differences; one Benjamini–Hochberg over all eight cells would flag
  // every cell of the second column (0.04 × 8 / 8 ≤ 0.05).
  const real = [1e-6, 2e-6, 3e-6, 4e-6]
  const chance = [0.01, 0.02, 0.03, 0.04]
  assert.ok(benjaminiHochberg([...real, ...chance]).every((p) => Number(p) <= 0.05))
  const [a, b] = screenedBenjaminiHochberg([real, chance])
  assert.ok(a.every((p) => p <= 0.05))
  assert.ok(b.every((p) => p > 0.05), JSON.stringify(b))

  // The comparison's correction, unchanged: random tables of up to 30 columns.
  const random = createRandom(5)
  for (let t = 0; t < 200; t++) {
    const columns = Array.from({ length: 1 + Math.floor(random() * 30) }, () =>
      Array.from({ length: Math.floor(random() * 7) }, () => (random() < 0.2 ? random() * 1e-3 : random())))
    assert.deepEqual(screenedBenjaminiHochberg(columns), comparisonBefore(columns))
  }
})

test('selective Benjamini–Hochberg: columns selected by BH over their Simes p-values, BH within at q × selected / columns', () => {
  // By hand. Within-column BH: (0.002, 0.04), (0.5, 0.5), (0.01). Simes
  // p-values 0.002, 0.5, 0.01; BH over the three: 0.006, 0.5, 0.015, so two
  // columns are selected at 0.05. A cell's adjusted p-value: the larger of
  // its column's and its within-column one × 3 / 2.
  const adjusted = selectiveBenjaminiHochberg([[0.001, 0.04], [0.3, 0.5], [0.01], []], 0.05)
  assert.equal(adjusted.length, 4)
  close(adjusted[0][0], 0.006, 1e-12)
  close(adjusted[0][1], 0.06, 1e-12)
  close(adjusted[1][0], 0.75, 1e-12)
  close(adjusted[1][1], 0.75, 1e-12)
  close(adjusted[2][0], 0.015, 1e-12)
  assert.deepEqual(adjusted[3], [])
  // Nothing selected: every cell stays above q.
  assert.ok(selectiveBenjaminiHochberg([[0.2, 0.3], [0.04]], 0.05).flat().every((p) => p > 0.05))

  // Why the auto view uses it: 18 columns (three locations × two visits ×
  // three contrasts), six with every cell at the bootstrap's floor of
  // 2 / 1,001 and twelve with half their cells there. The screen's
  // Bonferroni over 18 columns passes only the first six; selection by BH
  // passes all eighteen.
  const floor = 2 / 1001
  const columns = [...Array(6).fill([floor, floor, floor, floor, floor, floor]), ...Array(12).fill([floor, floor, floor, 0.4, 0.6, 0.8])]
  const flagged = (/** @type {number[][]} */ a) => a.map((col) => col.filter((p) => p <= 0.05).length)
  assert.deepEqual(flagged(screenedBenjaminiHochberg(columns)), [...Array(6).fill(6), ...Array(12).fill(0)])
  assert.deepEqual(flagged(selectiveBenjaminiHochberg(columns, 0.05)), [...Array(6).fill(6), ...Array(12).fill(3)])

  // Identical arms everywhere (independent uniform p-values): a table of 18
  // columns of six cells claims anything in q of tables (here 5.3% of
  // 4,000, within the simulation's 0.35% standard error).
  const random = createRandom(18)
  let any = 0
  const tables = 4000
  for (let t = 0; t < tables; t++) {
    const table = Array.from({ length: 18 }, () => Array.from({ length: 6 }, () => random()))
    if (selectiveBenjaminiHochberg(table, 0.05).flat().some((p) => p <= 0.05)) any++
  }
  assert.ok(any / tables <= 0.055, `${any} of ${tables} tables`)
})

test('the byte share\'s interval: the delta method\'s spread, as a Wilson interval at the effective number of visits', () => {
  // Six visits: bytes x and bytes over H3 y. R = 1350 / 2100 = 9/14; the
  // residuals y − R·x square to 21,800; se = √(21800 / 5 · 6) / 2100
  // = 0.0770193. n_eff = R(1 − R) / se² = 38.7, at most 6: the Wilson
  // interval of 9/14 of 6, centre (R + z²/12) / (1 + z²/6), half-width
  // z·√(R(1 − R)/6 + z²/144) / (1 + z²/6), z = 1.959964.
  const x = [100, 200, 300, 400, 500, 600]
  const y = [50, 150, 120, 300, 250, 480]
  const sumsOf = (/** @type {number[]} */ xs, /** @type {number[]} */ ys) => {
    const sums = { n: xs.length, sx: 0, sy: 0, sxx: 0, syy: 0, sxy: 0 }
    xs.forEach((xi, i) => { sums.sx += xi; sums.sy += ys[i]; sums.sxx += xi * xi; sums.syy += ys[i] * ys[i]; sums.sxy += xi * ys[i] })
    return sums
  }
  close(ratioStandardError(sumsOf(x, y)), 0.07701930140630754, 1e-12)
  const r = ratioInterval(sumsOf(x, y))
  close(r.rate, 9 / 14, 1e-12)
  close(r.lo, 0.282584, 1e-6)
  close(r.hi, 0.891606, 1e-6)
  // Nine small visits and one of 2,000 bytes: the large one weighs, so
  // n_eff is below n. R = 2500 / 2900; Σ(y − R·x)² = 106,777.6;
  // se = √(106777.6 / 9 · 10) / 2900 = 0.118774; n_eff = 8.43, and the
  // interval is the Wilson interval of R at 8.43 visits.
  const big = sumsOf([100, 100, 100, 100, 100, 100, 100, 100, 100, 2000], [100, 0, 100, 0, 100, 0, 100, 0, 100, 2000])
  close(ratioStandardError(big), 0.118774, 1e-6)
  const b = ratioInterval(big)
  close(b.rate, 25 / 29, 1e-12)
  close(b.lo, 0.524940, 1e-6)
  close(b.hi, 0.972490, 1e-6)
  // No interval below two visits; nothing without bytes.
  assert.deepEqual(ratioInterval({ n: 1, sx: 500, sy: 250, sxx: 250000, syy: 62500, sxy: 125000 }), { rate: 0.5, lo: null, hi: null })
  assert.deepEqual(ratioInterval({ n: 0, sx: 0, sy: 0, sxx: 0, syy: 0, sxy: 0 }), { rate: null, lo: null, hi: null })
  // Every byte of three visits over H3: not a point, the Wilson interval of 3 of 3.
  const all = ratioInterval({ n: 3, sx: 600, sy: 600, sxx: 140000, syy: 140000, sxy: 140000 })
  assert.deepEqual(all, { rate: 1, lo: wilsonInterval(3, 3).lo, hi: 1 })
})

test('the byte share\'s interval covers the true share at every share, where R ± z·se did not', () => {
  // Visits over H3 (with probability p) fetch 80–100% of their bytes over
  // it, the others 0–10% and are half again as large. True share:
  // (0.9p + 0.075(1 − p)) / (p + 1.5(1 − p)).
  const random = createRandom(22)
  const z = 1.959963984540054
  for (const p of [0, 0.05, 0.5, 0.97]) {
    for (const n of [30, 200]) {
      const truth = (0.9 * p + 0.075 * (1 - p)) / (p + 1.5 * (1 - p))
      let covered = 0
      let delta = 0
      const samples = 500
      for (let s = 0; s < samples; s++) {
        const sums = { n, sx: 0, sy: 0, sxx: 0, syy: 0, sxy: 0 }
        for (let i = 0; i < n; i++) {
          const h3 = random() < p
          const x = 400e3 * (h3 ? 1 : 1.5) * Math.exp(0.5 * randomNormal(random))
          const y = x * (h3 ? 0.8 + 0.2 * random() : 0.1 * random())
          sums.sx += x; sums.sy += y; sums.sxx += x * x; sums.syy += y * y; sums.sxy += x * y
        }
        const r = ratioInterval(sums)
        if (Number(r.lo) <= truth && truth <= Number(r.hi)) covered++
        const se = Number(ratioStandardError(sums))
        if (Math.abs(sums.sy / sums.sx - truth) <= z * se) delta++
      }
      assert.ok(covered / samples >= 0.93, `share ${p}, ${n} visits: covered ${covered / samples}`)
      if (p === 0.97 && n === 30) assert.ok(delta / samples < 0.75, `R ± z·se covered ${delta / samples}`)
    }
  }
})

test('a Wilson interval of none or all is exact at its end', () => {
  for (const n of [10, 500, 1000]) {
    assert.equal(wilsonInterval(0, n).lo, 0)
    assert.equal(wilsonInterval(n, n).hi, 1)
  }
  // 24 of 30: centre (0.8 + z²/60) / (1 + z²/30), half-width
  // z·√(0.8·0.2/30 + z²/3600) / (1 + z²/30), z = 1.959964.
  const w = wilsonInterval(24, 30)
  close(w.lo, 0.626943, 1e-6)
  close(w.hi, 0.904949, 1e-6)
})

test('a ratio\'s interval from its resamples: Fieller\'s inversion, bounded only where the denominator is clear of 0', () => {
  // Without noise: the ratio itself, at both ends.
  const same = resampledRatioInterval(Float64Array.from([20, 20, 20]), Float64Array.from([30, 30, 30]), 2 / 3, 0.025)
  close(same?.lo ?? null, 2 / 3, 1e-9)
  close(same?.hi ?? null, 2 / 3, 1e-9)

  // A denominator with a symmetric spread of ±1 around 10 and a numerator
  // of exactly 5: r is in the interval when 0 lies between the quantiles
  // of 5 − r·g, i.e. 5 / r between those of g.
  const n = 1001
  const g = Float64Array.from({ length: n }, (_, i) => 9 + 2 * i / (n - 1))
  const a = new Float64Array(n).fill(5)
  const both = resampledRatioInterval(a, g, 0.5, 0.025)
  close(both?.lo ?? null, 5 / 10.95, 1e-6, 'lo: 5 over the 97.5th percentile of g')
  close(both?.hi ?? null, 5 / 9.05, 1e-6, 'hi: 5 over the 2.5th percentile of g')

  // A few resamples with a denominator near or below 0 (3 of 1001, under
  // the 2.5% tail): the percentiles of a / g ran to -1,000 and beyond; the
  // inversion does not take its ends from them.
  const near = Float64Array.from(g)
  near[0] = -0.5
  near[1] = 0.001
  near[2] = 0.01
  const ratios = Array.from(near, (x) => 5 / x).sort((x, y) => x - y)
  assert.ok(ratios[0] < -5 && ratios[n - 1] > 1000, 'the ratio itself runs off in those resamples')
  const robust = resampledRatioInterval(a, near, 0.5, 0.025)
  assert.ok(robust && robust.lo > 0.45 && robust.hi < 0.6, JSON.stringify(robust))

  // A denominator whose own interval reaches 0: no bound, so no interval.
  const straddles = Float64Array.from({ length: n }, (_, i) => -1 + 12 * i / (n - 1))
  assert.equal(resampledRatioInterval(a, straddles, 0.5, 0.025), null)
  // A wider level (a false-coverage rate over few cells shown) is a wider interval.
  const wider = resampledRatioInterval(a, g, 0.5, 0.005)
  assert.ok(wider && both && wider.lo < both.lo && wider.hi > both.hi, JSON.stringify({ wider, both }))
})
