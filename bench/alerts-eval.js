#!/usr/bin/env node
// What one evaluation of the alert rules costs the scheduler: the three
// default rules over the dashboard's demo monitors (dev/demo-data.js),
// one round a minute per location, so each monitor's last hour holds 60
// rounds per location. Regression and failure rules share one comparison
// per monitor and window; the figure per monitor is what grows with a
// deployment.
//
// With --share-days N, each demo page monitor also gets the auto arm's
// returning visits, one a minute at every location over the last N days,
// and an h3_share_drop rule over every monitor is timed on top: its
// baseline (the week before the window) is what it reads most.
//
//   node bench/alerts-eval.js [--hours 2] [--runs 5] [--share-days 7]
import { seedDemo } from '../dev/demo-data.js'
import { startScratchDatabase } from '../dev/scratch-db.js'
import { evaluateAlerts } from '../lib/analysis/alerts.js'
import { createRule } from '../lib/store/alert-rules.js'
import { insertRoundResults } from '../lib/store/results.js'
import { benchArgs } from './lib/args.js'

const { values } = benchArgs(import.meta.url, { options: { hours: { type: 'string', default: '2' }, runs: { type: 'string', default: '5' }, 'share-days': { type: 'string', default: '0' } } })
const shareDays = Number(values['share-days'])
const db = await startScratchDatabase()
try {
  const seeded = await seedDemo(db.pool, { hours: Number(values.hours), stepMinutes: 1 })
  const { rows: [{ n }] } = await db.pool.query('SELECT count(*)::int AS n FROM monitors WHERE deleted_at IS NULL')
  console.log(`monitors: ${n} (${seeded.locations.length} locations, ${seeded.results} results over ${values.hours} h)`)
  let clock = Date.now()
  /** The median of `runs` evaluations, a minute of the clock apart. */
  const evaluations = async () => {
    const times = []
    for (let i = 0; i < Number(values.runs); i++) {
      clock += 60e3
      const t0 = performance.now()
      const r = await evaluateAlerts(db.pool, { now: new Date(clock), intervalS: 60 })
      times.push(performance.now() - t0)
      if (!r.evaluated) throw new Error('the evaluation did not run')
    }
    times.sort((a, b) => a - b)
    return { median: times[Math.floor(times.length / 2)], min: times[0], max: times[times.length - 1] }
  }
  const visits = shareDays > 0 ? await seedReturningVisits(seeded, shareDays) : 0
  // As autovacuum leaves a table that grows by a round a minute: without
  // it, the first reads of freshly inserted rows visit the heap.
  await db.pool.query('VACUUM ANALYZE results')
  const base = await evaluations()
  console.log(`evaluation of the default rules: median ${base.median.toFixed(0)} ms, min ${base.min.toFixed(0)} ms, max ${base.max.toFixed(0)} ms`)
  console.log(`per monitor: ${(base.median / n).toFixed(1)} ms (the scheduler evaluates once a minute)`)
  if (shareDays > 0) {
    await createRule(db.pool, { kind: 'h3_share_drop', threshold_pct: 50, min_drop_points: 20, window_s: 3600, evaluations: 1 })
    const share = await evaluations()
    const keys = seeded.monitors.length * seeded.locations.length
    console.log(`with an h3_share_drop rule over every monitor (${visits} returning visits, one a minute over ${shareDays} days at ${keys} monitor-locations): ` +
      `median ${share.median.toFixed(0)} ms, min ${share.min.toFixed(0)} ms, max ${share.max.toFixed(0)} ms`)
    console.log(`the share rule: ${((share.median - base.median) / keys).toFixed(1)} ms per monitor and location`)
  }
} finally {
  await db.stop()
}

/**
 * The auto arm's returning visits of each demo page monitor at each of its
 * locations, one a minute over `days` (96% over H3), as rounds of their own.
 * @param {Awaited<ReturnType<typeof seedDemo>>} seeded
 * @param {number} days
 */
async function seedReturningVisits (seeded, days) {
  const minutes = days * 1440
  const now = Math.floor(Date.now() / 60e3) * 60e3
  let jobId = 1e12
  let total = 0
  for (const monitor of seeded.monitors) {
    for (const location of seeded.locations) {
      for (let start = 0; start < minutes; start += 1000) {
        const rounds = []
        for (let k = start; k < Math.min(minutes, start + 1000); k++) {
          const due = new Date(now - (k + 1) * 60e3 + 17e3)
          rounds.push({
            job: { id: jobId++, monitor_id: monitor.id, location_id: location, due_at: due },
            results: [{ mode: 'auto', view: 'returning', status: 'ok', observed_protocol: k % 25 ? 'h3' : 'h2', protocol_ok: true, ttfb_ms: 50 }]
          })
        }
        total += (await insertRoundResults(db.pool, { rounds, agentId: null })).length
      }
    }
  }
  return total
}
