#!/usr/bin/env node
// What one evaluation of the alert rules costs the scheduler: the three
// default rules over the dashboard's demo monitors (test/helpers/ui.js),
// one round a minute per location, so each monitor's last hour holds 60
// rounds per location. Regression and failure rules share one comparison
// per monitor and window; the figure per monitor is what grows with a
// deployment.
//
//   node bench/alerts-eval.js [--hours 2] [--runs 5]
import { parseArgs } from 'node:util'
import { seedDemo, startScratchDatabase } from '../test/helpers/ui.js'
import { evaluateAlerts } from '../lib/analysis/alerts.js'

const { values } = parseArgs({ options: { hours: { type: 'string', default: '2' }, runs: { type: 'string', default: '5' } } })
const db = await startScratchDatabase()
try {
  const seeded = await seedDemo(db.pool, { hours: Number(values.hours), stepMinutes: 1 })
  const { rows: [{ n }] } = await db.pool.query('SELECT count(*)::int AS n FROM monitors WHERE deleted_at IS NULL')
  const times = []
  for (let i = 0; i < Number(values.runs); i++) {
    const t0 = performance.now()
    const r = await evaluateAlerts(db.pool, { now: new Date(Date.now() + i * 60e3), intervalS: 60 })
    times.push(performance.now() - t0)
    if (!r.evaluated) throw new Error('the evaluation did not run')
  }
  times.sort((a, b) => a - b)
  const median = times[Math.floor(times.length / 2)]
  console.log(`monitors: ${n} (${seeded.locations.length} locations, ${seeded.results} results over ${values.hours} h)`)
  console.log(`evaluation of the default rules: median ${median.toFixed(0)} ms, min ${times[0].toFixed(0)} ms, max ${times[times.length - 1].toFixed(0)} ms`)
  console.log(`per monitor: ${(median / n).toFixed(1)} ms (the scheduler evaluates once a minute)`)
} finally {
  await db.stop()
}
