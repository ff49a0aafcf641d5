#!/usr/bin/env node
// What the round bootstrap behind every comparison cell costs: 1,000
// resamples of whole rounds, six percentiles (the monitor table's), at
// table sizes from a few hours of rounds to the 2,000 above which the
// comparison resamples 2,000 of them (docs/STATISTICS.md). The peer in the
// same run is the plain method, each resample written out sample by sample
// and sorted; both give the same numbers (test/stats-paired.test.js), and
// the ratio is what reading percentiles off the weighted walk saves.
//
//   node bench/bootstrap.js [--runs 5]
import { roundBootstrap, SeededRandom, createRandom, randomNormal, exactQuantile } from '../lib/analysis/stats/index.js'
import { benchArgs } from './lib/args.js'

const { values } = benchArgs(import.meta.url, { options: { runs: { type: 'string', default: '5' } } })
const runs = Number(values.runs)
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a whole number ≥ 1, not "${values.runs}"`)
const QS = [0.25, 0.5, 0.75, 0.9, 0.95, 0.99]
const ITERATIONS = 1000
const random = createRandom('bench-bootstrap')
const load = () => Math.exp(5 + 0.4 * randomNormal(random))

console.log(`${ITERATIONS} resamples, percentiles ${QS.map((q) => q * 100).join(', ')}; the median of ${runs} runs each`)
console.log('rounds  samples per arm per round  walk (ms)  sort each resample (ms)  ratio')
for (const [n, perRound] of [[100, 1], [300, 1], [1000, 1], [2000, 1], [300, 6]]) {
  const rounds = Array.from({ length: n }, () => ({ h2: Array.from({ length: perRound }, load), h3: Array.from({ length: perRound }, load) }))
  const walk = medianTime(runs, (seed) => roundBootstrap({ rounds, qs: QS, iterations: ITERATIONS, seed }))
  const sorting = medianTime(runs, (seed) => sortEachResample(rounds, seed))
  console.log(`${String(n).padStart(6)}  ${String(perRound).padStart(25)}  ${walk.toFixed(1).padStart(9)}  ${sorting.toFixed(1).padStart(23)}  ${(sorting / walk).toFixed(1).padStart(4)}×`)
}

/**
 * The median time of `runs` calls, after one to warm up.
 * @param {number} count
 * @param {(seed: number) => unknown} fn
 */
function medianTime (count, fn) {
  fn(-1)
  const times = []
  for (let i = 0; i < count; i++) {
    const t0 = performance.now()
    fn(i)
    times.push(performance.now() - t0)
  }
  return times.sort((a, b) => a - b)[Math.floor(count / 2)]
}

/**
 * The same resamples as roundBootstrap (its seeded draws), each written out
 * and sorted: the peer.
 * @param {{ h2: number[], h3: number[] }[]} rounds
 * @param {number} seed
 */
function sortEachResample (rounds, seed) {
  const draws = new SeededRandom(seed)
  const counts = new Uint32Array(rounds.length)
  const deltas = QS.map(() => new Float64Array(ITERATIONS))
  for (let it = 0; it < ITERATIONS; it++) {
    counts.fill(0)
    draws.tallyDraws(counts)
    const arm = (/** @type {'h2' | 'h3'} */ name) => {
      const out = []
      rounds.forEach((r, j) => { for (let c = 0; c < counts[j]; c++) out.push(...r[name]) })
      return Float64Array.from(out).sort()
    }
    const h2 = arm('h2')
    const h3 = arm('h3')
    QS.forEach((q, k) => { deltas[k][it] = /** @type {number} */ (exactQuantile(h3, q)) - /** @type {number} */ (exactQuantile(h2, q)) })
  }
  return deltas
}
