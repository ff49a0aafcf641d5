#!/usr/bin/env node
// Real users with a confounder and no protocol effect: does the stratified
// comparison (lib/analysis/rum-strata.js) stay quiet where the naive split
// (every H3 page view against every H2 one) claims H3 is faster?
//
// Each simulated page view has a browser, a visit (first, or returning with
// something cached) and a connection (new or reused). Returning visitors are
// faster (a warm cache, more reused connections) and get H3 far more often
// (their browser learnt Alt-Svc); Safari gets H3 less often and is a little
// slower. The protocol itself changes nothing: TTFB and LCP are drawn from
// the stratum alone. A table is 4 regions × 2 metrics (TTFB, LCP) × 3
// percentiles (p50, p75, p95), corrected and judged exactly as the Real
// users page does (screened Benjamini–Hochberg, the synthetic verdicts'
// minimum effect). A second scenario gives H3 a true 10% TTFB and LCP gain
// in every stratum, to show the stratified comparison still finds it.
//
//   node bench/rum-confounding.js [--tables 40] [--views 2000] [--iterations 1000] [--seed 1]
import { createRandom, randomNormal, screenedBenjaminiHochberg } from '../lib/analysis/stats/index.js'
import { stratifiedContrast, pooledContrast } from '../lib/analysis/rum-strata.js'
import { cellVerdict, DEFAULT_MIN_EFFECT } from '../lib/analysis/comparison.js'
import { RUM_PERCENTILES } from '../lib/analysis/rum.js'
import { benchArgs } from './lib/args.js'

const { values } = benchArgs(import.meta.url, { options: { tables: { type: 'string', default: '40' }, views: { type: 'string', default: '2000' }, iterations: { type: 'string', default: '1000' }, seed: { type: 'string', default: '1' } } })
const TABLES = Math.min(500, Number(values.tables))
const VIEWS = Math.min(20000, Number(values.views))
const ITERATIONS = Math.min(2000, Number(values.iterations))
const REGIONS = 4
const percentiles = [...RUM_PERCENTILES]

// Browser: share of page views, its chance of H3 on a first and on a returning visit, its slowness.
const BROWSERS = [
  { id: 'chrome', share: 0.6, h3: { first: 0.25, cached: 0.85 }, factor: 1 },
  { id: 'safari', share: 0.25, h3: { first: 0.05, cached: 0.4 }, factor: 1.1 },
  { id: 'firefox', share: 0.15, h3: { first: 0.2, cached: 0.7 }, factor: 1.05 }
]
const RETURNING = 0.4
const REUSED = { first: 0.2, cached: 0.7 }
// Median TTFB (ms) by visit and connection; LCP adds a render part, shorter from a warm cache.
const TTFB = { first: { new: 320, reused: 170 }, cached: { new: 260, reused: 110 } }
const LCP_EXTRA = { first: 900, cached: 450 }

/**
 * @param {() => number} random
 * @param {number} rtt a region's path: every time in it scales with it
 * @param {number} h3Gain 0: no protocol effect; 0.1: H3 10% faster
 */
function region (random, rtt, h3Gain) {
  /** @type {Map<string, { id: string, h2: number[], h3: number[] }>[]} */
  const strata = [new Map(), new Map()]
  for (let i = 0; i < VIEWS; i++) {
    let u = random()
    const browser = BROWSERS.find((b) => (u -= b.share) < 0) ?? BROWSERS[0]
    const visit = random() < RETURNING ? 'cached' : 'first'
    const connection = random() < REUSED[visit] ? 'reused' : 'new'
    const protocol = random() < browser.h3[visit] ? 'h3' : 'h2'
    const gain = protocol === 'h3' ? 1 - h3Gain : 1
    const ttfb = TTFB[visit][connection] * rtt * browser.factor * Math.exp(0.35 * randomNormal(random)) * gain
    const lcp = ttfb + LCP_EXTRA[visit] * browser.factor * Math.exp(0.4 * randomNormal(random)) * gain
    const key = `${connection}|${visit}|${browser.id}`
    ;[ttfb, lcp].forEach((v, m) => {
      if (!strata[m].has(key)) strata[m].set(key, { id: key, h2: [], h3: [] })
      const s = /** @type {{ id: string, h2: number[], h3: number[] }} */ (strata[m].get(key))
      s[protocol].push(v)
    })
  }
  return strata.map((m) => [...m.values()])
}

/**
 * One table under both analyses: how many cells were tested and how many claimed a difference.
 * @param {number} t
 * @param {number} h3Gain
 */
function table (t, h3Gain) {
  const random = createRandom(`rum-confounding|${values.seed}|${h3Gain}|${t}`)
  /** @type {Record<string, import('../lib/analysis/rum-strata.js').ContrastRow[][]>} */
  const columns = { stratified: [], naive: [] }
  for (let r = 0; r < REGIONS; r++) {
    const metrics = region(random, 1 + r * 0.5, h3Gain)
    metrics.forEach((strata, m) => {
      const seed = `${t}|${r}|${m}`
      columns.stratified.push(stratifiedContrast({ strata, percentiles, iterations: ITERATIONS, seed }).rows)
      columns.naive.push(pooledContrast({ h2: strata.flatMap((s) => s.h2), h3: strata.flatMap((s) => s.h3), percentiles, iterations: ITERATIONS, seed }).rows)
    })
  }
  /** @type {Record<string, { tested: number, faster: number, slower: number }>} */
  const out = {}
  for (const [name, cols] of Object.entries(columns)) {
    const tested = cols.map((c) => c.filter((row) => row.p_value !== null))
    screenedBenjaminiHochberg(tested.map((c) => c.map((row) => /** @type {number} */ (row.p_value))))
      .forEach((adjusted, j) => tested[j].forEach((row, i) => { row.p_adjusted = adjusted[i] }))
    const verdicts = tested.flat().map((row) => cellVerdict(row, DEFAULT_MIN_EFFECT))
    out[name] = { tested: verdicts.length, faster: verdicts.filter((v) => v === 'h3_faster').length, slower: verdicts.filter((v) => v === 'h3_slower').length }
  }
  return out
}

const started = performance.now()
console.log(`real users with a confounder — ${TABLES} tables per scenario, ${REGIONS} regions × 2 metrics × ${percentiles.length} percentiles, ${VIEWS} page views per region, ${ITERATIONS} bootstrap resamples`)
console.log('| scenario | analysis | cells tested | cells claiming a difference | share | tables with any claim |')
console.log('|---|---|---|---|---|---|')
for (const [label, gain] of /** @type {const} */ ([['no protocol effect (confounded)', 0], ['H3 10% faster in every stratum', 0.1]])) {
  const totals = { stratified: { tested: 0, claimed: 0, tables: 0, faster: 0 }, naive: { tested: 0, claimed: 0, tables: 0, faster: 0 } }
  for (let t = 0; t < TABLES; t++) {
    const r = table(t, gain)
    for (const name of /** @type {const} */ (['stratified', 'naive'])) {
      const claimed = r[name].faster + r[name].slower
      totals[name].tested += r[name].tested
      totals[name].claimed += claimed
      totals[name].faster += r[name].faster
      if (claimed) totals[name].tables++
    }
  }
  for (const name of /** @type {const} */ (['stratified', 'naive'])) {
    const x = totals[name]
    console.log(`| ${label} | ${name} | ${x.tested} | ${x.claimed} (${x.faster} "H3 faster") | ${(x.claimed / Math.max(1, x.tested) * 100).toFixed(1)}% | ${x.tables} of ${TABLES} |`)
  }
}
console.log(`\n${((performance.now() - started) / 1000).toFixed(0)} s`)
