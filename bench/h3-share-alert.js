#!/usr/bin/env node
// How often an h3_share_drop rule fires when nothing changed, and how soon
// it fires when H3 is lost. One (monitor, location) is simulated round by
// round: each round's returning visit comes over H3 with the scenario's
// probability at that time. The rule is evaluated once a minute, as the
// scheduler does, with the product's own code: the window aligned to 5
// minutes (lib/analysis/alert-conditions.js alignedWindow), the baseline
// (the week before, or the one it fired on while firing), the decision
// (lib/analysis/alert-h3-share.js) and the state machine
// (lib/analysis/alerts.js nextState). Not a test: it prints.
//
//   node bench/h3-share-alert.js [--keys 20] [--days 30]
//
// keys × days of evaluation per stable scenario (after a week that fills
// the baseline); each drop scenario is run `keys` times.
import { createRandom } from '../lib/analysis/stats/index.js'
import { alignedWindow } from '../lib/analysis/alert-conditions.js'
import { nextState } from '../lib/analysis/alerts.js'
import { baselineWindow, shareDecision, DROP_ALPHA, FLOOR_CONFIDENCE, BASELINE_S } from '../lib/analysis/alert-h3-share.js'
import { benchArgs } from './lib/args.js'

const { values } = benchArgs(import.meta.url, { options: { keys: { type: 'string', default: '20' }, days: { type: 'string', default: '30' } } })
const KEYS = Number(values.keys)
const DAYS = Number(values.days)
const MIN = 60e3
const DAY = 1440 * MIN
const T0 = Date.UTC(2026, 0, 1)

/**
 * @typedef {{ threshold_pct: number | null, min_drop_points: number | null }} ShareRule
 * @typedef {{ name: string, intervalS: number, windowS: number, rule: ShareRule, evaluations?: number, alpha?: number, confidence?: number,
 *   share: (t: number, random: () => number) => number, changeAt?: number }} Scenario
 *   share: the probability that a round at time t (ms after the evaluations start) comes over H3
 */

/**
 * One key over `days` of evaluations.
 * @param {Scenario} s
 * @param {number} days
 * @param {string} seed
 */
function simulate (s, days, seed) {
  const random = createRandom(seed)
  const start = T0 + BASELINE_S * 1000 + s.windowS * 1000
  const end = start + days * DAY
  const step = s.intervalS * 1000
  // Rounds from T0, 5 s after their due time; prefix sums of visits over H3.
  const n = Math.ceil((end - T0) / step)
  const h3 = new Int32Array(n + 1)
  for (let i = 0; i < n; i++) h3[i + 1] = h3[i] + (random() < s.share(T0 + i * step - start, random) ? 1 : 0)
  const index = (/** @type {number} */ t) => Math.min(n, Math.max(0, Math.ceil((t - T0 - 5e3) / step)))
  const counts = (/** @type {number} */ a, /** @type {number} */ b) => { const i = index(a); const j = Math.max(i, index(b)); return { loaded: j - i, h3: h3[j] - h3[i] } }
  /** @type {Map<string, ReturnType<typeof shareDecision>>} */
  const memo = new Map()
  let state = { state: 'ok', breaches: 0, clears: 0 }
  /** @type {Record<string, any> | undefined} */
  let firing
  let fired = 0
  let early = 0
  let breaching = 0
  let evaluations = 0
  /** @type {number | null} */
  let firstFiring = null
  for (let now = start; now < end; now += MIN) {
    const { from, to } = alignedWindow(now, s.windowS)
    const current = counts(+from, Math.min(+to, now))
    const b = baselineWindow(from, firing)
    const baseline = counts(+b.from, +b.to)
    const key = `${current.loaded}|${current.h3}|${baseline.loaded}|${baseline.h3}`
    let d = memo.get(key)
    if (!d) memo.set(key, d = shareDecision(s.rule, current, baseline, { alpha: s.alpha ?? DROP_ALPHA, confidence: s.confidence ?? FLOOR_CONFIDENCE }))
    evaluations++
    if (d.breach === null) continue
    if (d.breach) breaching++
    const next = nextState(state, d.breach, s.evaluations ?? 1)
    if (next.state === 'firing' && state.state !== 'firing') {
      fired++
      if (s.changeAt !== undefined && now - start < s.changeAt) early++
      firing = { baseline_from: b.from.toISOString(), baseline_to: b.to.toISOString() }
      if (firstFiring === null && s.changeAt !== undefined && now - start >= s.changeAt) firstFiring = (now - start - s.changeAt) / MIN
    }
    if (next.state !== 'firing') firing = undefined
    state = next
  }
  return { fired, early, breaching, evaluations, firstFiring }
}

const stable = (/** @type {number} */ p) => () => p
const drop = (/** @type {number} */ before, /** @type {number} */ after, /** @type {number} */ at) => (/** @type {number} */ t) => (t < at ? before : after)
// Path variation: each hour's share drawn anew, uniform in [lo, hi].
const wandering = (/** @type {number} */ lo, /** @type {number} */ hi) => {
  /** @type {Map<number, number>} */
  const hours = new Map()
  return (/** @type {number} */ t, /** @type {() => number} */ random) => {
    const h = Math.floor(t / 3600e3)
    if (!hours.has(h)) hours.set(h, lo + (hi - lo) * random())
    return /** @type {number} */ (hours.get(h))
  }
}

const HOUR_S = 3600
const dropRule = { threshold_pct: null, min_drop_points: 20 }
const floor = (/** @type {number} */ t) => ({ threshold_pct: t, min_drop_points: null })

/** @type {Scenario[]} */
const STABLE = [
  { name: 'drop ≥ 20 points, stable 95%, a round every 5 min', intervalS: 300, windowS: HOUR_S, rule: dropRule, share: stable(0.95) },
  { name: 'drop ≥ 20 points, stable 95%, a round every 5 min, 3 evaluations', intervalS: 300, windowS: HOUR_S, rule: dropRule, evaluations: 3, share: stable(0.95) },
  { name: 'drop ≥ 20 points, stable 95%, a round a minute', intervalS: 60, windowS: HOUR_S, rule: dropRule, share: stable(0.95) },
  { name: 'drop ≥ 20 points, stable 60%, a round every 5 min', intervalS: 300, windowS: HOUR_S, rule: dropRule, share: stable(0.6) },
  { name: 'drop ≥ 20 points, each hour 80–99%, a round every 5 min', intervalS: 300, windowS: HOUR_S, rule: dropRule, share: wandering(0.8, 0.99) },
  { name: 'drop ≥ 5 points, stable 95%, a round a minute', intervalS: 60, windowS: HOUR_S, rule: { threshold_pct: null, min_drop_points: 5 }, share: stable(0.95) },
  { name: 'drop ≥ 20 points at p ≤ 0.05 (no allowance for repeated evaluation), stable 95%, every 5 min', intervalS: 300, windowS: HOUR_S, rule: dropRule, alpha: 0.05, share: stable(0.95) },
  { name: 'below 50%, stable 95%, a round every 5 min', intervalS: 300, windowS: HOUR_S, rule: floor(50), share: stable(0.95) },
  { name: 'below 80%, stable 95%, a round every 5 min', intervalS: 300, windowS: HOUR_S, rule: floor(80), share: stable(0.95) },
  { name: 'below 90%, stable 95%, a round every 5 min', intervalS: 300, windowS: HOUR_S, rule: floor(90), share: stable(0.95) },
  { name: 'below 90% by the Wilson 95% interval (the dashboard\'s), stable 95%, every 5 min', intervalS: 300, windowS: HOUR_S, rule: floor(90), confidence: 0.95, share: stable(0.95) },
  { name: 'below 90%, stable 95%, a round a minute', intervalS: 60, windowS: HOUR_S, rule: floor(90), share: stable(0.95) }
]

// The change comes 2 days into the run; each run lasts 3 days.
const AT = 2 * DAY
/** @type {Scenario[]} */
const DROPS = [
  { name: '95% → 0% (UDP blocked), drop ≥ 20, every 5 min', intervalS: 300, windowS: HOUR_S, rule: dropRule, share: drop(0.95, 0, AT), changeAt: AT },
  { name: '95% → 0% (UDP blocked), below 50%, every 5 min', intervalS: 300, windowS: HOUR_S, rule: floor(50), share: drop(0.95, 0, AT), changeAt: AT },
  { name: '95% → 0% (UDP blocked), below 50% by the Wilson 95% interval, every 5 min', intervalS: 300, windowS: HOUR_S, rule: floor(50), confidence: 0.95, share: drop(0.95, 0, AT), changeAt: AT },
  { name: '95% → 50% (half the paths broken), drop ≥ 20, every 5 min', intervalS: 300, windowS: HOUR_S, rule: dropRule, share: drop(0.95, 0.5, AT), changeAt: AT },
  { name: '95% → 70%, drop ≥ 20, every 5 min', intervalS: 300, windowS: HOUR_S, rule: dropRule, share: drop(0.95, 0.7, AT), changeAt: AT },
  { name: '95% → 70%, drop ≥ 20, a round a minute', intervalS: 60, windowS: HOUR_S, rule: dropRule, share: drop(0.95, 0.7, AT), changeAt: AT },
  { name: '95% → 0%, drop ≥ 20, every 5 min, 3 evaluations', intervalS: 300, windowS: HOUR_S, rule: dropRule, evaluations: 3, share: drop(0.95, 0, AT), changeAt: AT }
]

console.log(`h3_share_drop: a 1-hour window evaluated once a minute, baseline the ${BASELINE_S / 86400} days before, drop test at p ≤ ${DROP_ALPHA}, ` +
  `floor by the Wilson ${FLOOR_CONFIDENCE * 100}% interval, unless said`)
console.log(`\nStable share: ${KEYS} keys × ${DAYS} days each (${KEYS * DAYS} key-days)\n`)
console.log('| scenario | firings | per key and 30 days | evaluations breaching |')
console.log('|---|---:|---:|---:|')
for (const s of STABLE) {
  let fired = 0
  let breaching = 0
  let evaluations = 0
  for (let k = 0; k < KEYS; k++) {
    const r = simulate(s, DAYS, `${s.name}|${k}`)
    fired += r.fired
    breaching += r.breaching
    evaluations += r.evaluations
  }
  console.log(`| ${s.name} | ${fired} | ${(fired / (KEYS * DAYS) * 30).toFixed(2)} | ${(breaching / evaluations * 100).toFixed(3)}% |`)
}

console.log(`\nH3 lost: ${KEYS} runs each, the change 2 days in\n`)
console.log('| scenario | fired after the change | minutes to fire: median (min–max) | firings before the change |')
console.log('|---|---:|---:|---:|')
for (const s of DROPS) {
  const minutes = []
  let early = 0
  for (let k = 0; k < KEYS; k++) {
    const r = simulate(s, 3, `${s.name}|${k}`)
    if (r.firstFiring !== null) minutes.push(r.firstFiring)
    early += r.early
  }
  minutes.sort((a, b) => a - b)
  const median = minutes.length ? minutes[Math.floor(minutes.length / 2)] : null
  console.log(`| ${s.name} | ${minutes.length} of ${KEYS} | ${median === null ? '—' : `${median} (${minutes[0]}–${minutes.at(-1)})`} | ${early} |`)
}
