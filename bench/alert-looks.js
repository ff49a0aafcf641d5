#!/usr/bin/env node
// How often the h3_failure and h3_regression rules fire by chance when
// their window is short and they are evaluated every minute, and how they
// fire when H3 is worse. One monitor at three locations, measured every
// `--interval` seconds; each simulated minute that minute's rounds are
// stored in a scratch PostgreSQL and both rules are evaluated as the
// scheduler does: lib/analysis/alert-conditions.js observe() over the
// dashboard's comparison (regionalComparison, the window aligned to 5
// minutes), then the state machine (lib/analysis/alerts.js nextState,
// three evaluations in a row). Both rules have a 1-hour window: failure
// above 5%, regression at p50 by 2% or more.
//
// Each observation is also read at the dashboard's level, 0.05, from its
// own evidence (the failure verdict, the cell's verdict): the peer, in the
// same run, of the rule's level (alertLevel: 0.05 × window / day).
//
// Scenarios: "same" (both arms fail 15% of loads, their times from one
// law) and "h3 worse" (H3 fails 15% and H2 2%, and H3's times are 20%
// longer). Not a test: it prints.
//
//   node bench/alert-looks.js [--days 3] [--interval 60] [--seed 1]
import { startScratchDatabase } from '../dev/scratch-db.js'
import { createRandom, randomNormal } from '../lib/analysis/stats/index.js'
import { alertLevel, comparisonCache, observe } from '../lib/analysis/alert-conditions.js'
import { nextState } from '../lib/analysis/alerts.js'
import { createMonitor } from '../lib/store/monitors.js'
import { upsertLocation } from '../lib/store/locations.js'
import { insertRoundResults } from '../lib/store/results.js'
import { benchArgs, countOption } from './lib/args.js'

const { values } = benchArgs(import.meta.url, { options: { days: { type: 'string', default: '3' }, interval: { type: 'string', default: '60' }, seed: { type: 'string', default: '1' } } })
const DAYS = countOption(import.meta.url, values, 'days', { min: 1, max: 60 })
const INTERVAL_S = countOption(import.meta.url, values, 'interval', { min: 60, max: 3600 })
const SEED = countOption(import.meta.url, values, 'seed', { min: 0 })
const LOCATIONS = ['bench-a', 'bench-b', 'bench-c']
const WINDOW_S = 3600
const RULES = [
  { id: 1, kind: 'h3_failure', threshold_pct: 5, window_s: WINDOW_S, evaluations: 3, percentile: null, min_effect_pct: null, min_effect_ms: null, locations: null, monitor_id: null },
  { id: 2, kind: 'h3_regression', percentile: 50, min_effect_pct: 2, min_effect_ms: null, threshold_pct: null, window_s: WINDOW_S, evaluations: 3, locations: null, monitor_id: null }
]
const SCENARIOS = [
  { name: 'same', h2Fails: 0.15, h3Fails: 0.15, h3Slower: 1 },
  { name: 'h3 worse', h2Fails: 0.02, h3Fails: 0.15, h3Slower: 1.2 }
]

/** @param {number} share @param {number} n */
const pct = (share, n) => `${(100 * share / Math.max(1, n)).toFixed(2)}%`

const db = await startScratchDatabase()
try {
  for (const [i, id] of LOCATIONS.entries()) await upsertLocation(db.pool, { id, name: id, region: `Region ${i}`, kind: 'lab' })
  console.log(`${DAYS} days of one monitor every ${INTERVAL_S} s at ${LOCATIONS.length} locations; rules with a ${WINDOW_S / 3600} h window, evaluated every minute at level ${alertLevel(WINDOW_S).toFixed(5)} (the dashboard's: 0.05)`)
  console.log('| scenario | rule | evaluations with a verdict | in breach: rule\'s level / 0.05 | firings per location-month: rule\'s level / 0.05 | first firing after (min): rule\'s level / 0.05 |')
  console.log('|---|---|---|---|---|---|')
  let jobId = 1
  for (const [k, scenario] of SCENARIOS.entries()) {
    const random = createRandom(`alert-looks-${SEED}-${k}`)
    const lognormal = (/** @type {number} */ sigma) => Math.exp(sigma * randomNormal(random))
    const monitor = await createMonitor(db.pool, { url: `https://bench-${k}.example/`, interval_s: INTERVAL_S, locations: LOCATIONS, modes: ['h2', 'h3'], paused: true }, { allowPrivateTargets: true })
    const start = Date.UTC(2026, 0, 1) + k * 100 * 86400e3
    /** Per rule and level: evaluations, breaches, firings, the first firing's minute; each location's state. */
    const tally = RULES.map(() => [0, 1].map(() => ({ evaluations: 0, breaches: 0, firings: 0, first: /** @type {number | null} */ (null), states: new Map(LOCATIONS.map((l) => [l, { state: 'ok', breaches: 0, clears: 0 }])) })))
    for (let minute = 0; minute < DAYS * 1440; minute++) {
      const now = start + minute * 60e3
      if ((minute * 60) % INTERVAL_S === 0) {
        const rounds = LOCATIONS.map((location, li) => {
          const base = [80, 160, 320][li] * lognormal(0.3)
          const arm = (/** @type {string} */ mode, /** @type {number} */ fails, /** @type {number} */ slower) => random() < fails
            ? { mode, status: 'error', error: 'bench: a failed load', observed_protocol: null, protocol_ok: false }
            : { mode, status: 'ok', observed_protocol: mode, protocol_ok: true, ttfb_ms: Math.round(base * slower * lognormal(0.2) * 10) / 10 }
          return { job: { id: jobId++, monitor_id: monitor.id, location_id: location, due_at: new Date(now - 50e3) }, results: [arm('h2', scenario.h2Fails, 1), arm('h3', scenario.h3Fails, scenario.h3Slower)] }
        })
        await insertRoundResults(db.pool, { rounds, agentId: null })
      }
      if (minute < WINDOW_S / 60) continue
      const compare = comparisonCache(db.pool, { now: new Date(now), timeoutMs: 60_000 })
      for (const [r, rule] of RULES.entries()) {
        for (const o of await observe(db.pool, rule, monitor, LOCATIONS, { now: new Date(now), compare })) {
          if (o.breach === null) continue
          const e = o.evidence
          const atDashboard = rule.kind === 'h3_failure'
            ? e.h3_lost_pct > /** @type {number} */ (rule.threshold_pct) && e.failure_verdict === 'h3_fails_more'
            : e.verdict === 'h3_slower' && e.delta_pct >= /** @type {number} */ (rule.min_effect_pct)
          for (const [level, breach] of [o.breach, atDashboard].entries()) {
            const t = tally[r][level]
            t.evaluations++
            if (breach) t.breaches++
            const cur = /** @type {{ state: string, breaches: number, clears: number }} */ (t.states.get(o.location_id))
            const next = nextState(cur, breach, rule.evaluations)
            if (next.state === 'firing' && cur.state !== 'firing') {
              t.firings++
              t.first ??= minute
            }
            t.states.set(o.location_id, { ...next, state: next.state === 'resolved' ? 'ok' : next.state })
          }
        }
      }
    }
    const locationMonths = LOCATIONS.length * DAYS / 30
    for (const [r, rule] of RULES.entries()) {
      const [own, dashboard] = tally[r]
      console.log(`| ${scenario.name} | ${rule.kind} | ${own.evaluations} | ${pct(own.breaches, own.evaluations)} / ${pct(dashboard.breaches, dashboard.evaluations)} | ` +
        `${(own.firings / locationMonths).toFixed(2)} / ${(dashboard.firings / locationMonths).toFixed(2)} | ${own.first ?? 'never'} / ${dashboard.first ?? 'never'} |`)
    }
  }
} finally {
  await db.stop()
}
