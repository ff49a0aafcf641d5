#!/usr/bin/env node
// Comparison and trends over a 30-day window against the exact SQL answer
// (percentile_cont over the raw rows), and the comparison's accuracy: its
// H2 and H3 percentiles against exact SQL over the same rounds (matched:
// both arms ok) and over every ok load. Generates the data first:
//
//   node bench/query.js [--monitors 23] [--days 30] [--runs 20]
//
// 23 monitors × 30 days × 1,440 rounds × 5 locations × 2 modes ≈ 10M results.
// Rollups are built for the monitor that is queried; the other monitors make
// the table (and its indexes) production-sized. Round summaries are written
// by the results' trigger as the data is generated (migration 013). Uses
// DATABASE_URL, or an embedded PostgreSQL in a temporary data dir on
// H3LENS_EMBEDDED_PG_PORT (54392).
import os from 'node:os'
import { loadConfig } from '../lib/runtime/config.js'
import { benchScratch } from './lib/scratch.js'
import { openDatabase } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { rebuildRollups } from '../lib/analysis/rollups.js'
import { buildApp } from '../api/app.js'
import { generateResults } from './lib/generate.js'
import { benchArgs } from './lib/args.js'

const { values } = benchArgs(import.meta.url, { options: { monitors: { type: 'string', default: '23' }, days: { type: 'string', default: '30' }, runs: { type: 'string', default: '20' } } })
const monitors = Number(values.monitors)
const days = Number(values.days)
const runs = Number(values.runs)

const { dataDir, log, lifecycle } = benchScratch('bench-query')
const config = loadConfig({ ...process.env, H3LENS_DATA_DIR: dataDir, H3LENS_EMBEDDED_PG_PORT: process.env.H3LENS_EMBEDDED_PG_PORT ?? '54392', LOG_LEVEL: 'warn', H3LENS_PUBLIC_READ: 'true' })
const say = (msg) => console.log(`# ${msg}`)

const ratio = (a, b) => (a / b).toFixed(a / b < 10 ? 1 : 0)
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p / 100 * xs.length))]
async function time (fn) {
  const t0 = performance.now()
  await fn()
  return performance.now() - t0
}

try {
  const { pool } = await openDatabase({ config, log, lifecycle, poolMax: 4 })
  await migrate(pool)
  let t0 = performance.now()
  const ids = await generateResults(pool, { monitors, days, log: say })
  const { rows: [{ n }] } = await pool.query('SELECT count(*)::int AS n FROM results')
  say(`${n} results generated in ${((performance.now() - t0) / 1000).toFixed(0)} s`)
  await pool.query('ANALYZE results')
  // As autovacuum would have by now: the summaries' visibility map and statistics.
  await pool.query('VACUUM ANALYZE round_summaries')
  const target = ids[0]
  t0 = performance.now()
  const folded = await rebuildRollups(pool, { monitorId: target })
  say(`rollups of monitor ${target} built from ${folded} results in ${((performance.now() - t0) / 1000).toFixed(0)} s`)

  const app = await buildApp({ db: pool, config, log })
  await app.ready()
  const to = new Date()
  const from = new Date(+to - days * 86400e3)
  const window = `from=${from.toISOString()}&to=${to.toISOString()}`
  const inject = async (url, headers = {}) => {
    const res = await app.inject({ url, headers })
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body.slice(0, 200)}`)
  }
  const comparisonUrl = `/api/v1/monitors/${target}/comparison?${window}&metric=ttfb`
  const { rows: [{ s }] } = await pool.query('SELECT count(*)::int AS s FROM round_summaries WHERE monitor_id = $1', [target])
  say(`${s} round summaries of monitor ${target}`)
  const trendsUrl = `/api/v1/monitors/${target}/trends?${window}&metric=ttfb&bucket=1h&percentiles=50,95`
  await inject(comparisonUrl) // warm caches once; the answer is now kept
  // Served: the answer kept by the API (lib/analysis/comparison-cache.js, at
  // most H3LENS_COMPARISON_MAX_AGE_S old), as a dashboard gets it.
  // Computed: Cache-Control: no-cache, every run computes it from the round
  // summaries.
  const comparison = []
  const computed = []
  const trend = []
  for (let i = 0; i < runs; i++) comparison.push(await time(() => inject(comparisonUrl)))
  for (let i = 0; i < runs; i++) computed.push(await time(() => inject(comparisonUrl, { 'cache-control': 'no-cache' })))
  for (let i = 0; i < runs; i++) trend.push(await time(() => inject(trendsUrl)))

  const exactSql = `SELECT location_id, mode, percentile_cont(ARRAY[0.25, 0.5, 0.75, 0.9, 0.95, 0.99]) WITHIN GROUP (ORDER BY ttfb_ms)
      FROM results WHERE monitor_id = $1 AND time >= $2 AND time < $3 AND status = 'ok' AND protocol_ok GROUP BY location_id, mode`
  const exactTrendSql = `SELECT date_trunc('hour', time), location_id, mode, percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY ttfb_ms)
      FROM results WHERE monitor_id = $1 AND time >= $2 AND time < $3 AND status = 'ok' AND protocol_ok GROUP BY 1, 2, 3`
  const exact = []
  const exactTrend = []
  for (let i = 0; i < Math.min(runs, 5); i++) exact.push(await time(() => pool.query(exactSql, [target, from, to])))
  for (let i = 0; i < Math.min(runs, 5); i++) exactTrend.push(await time(() => pool.query(exactTrendSql, [target, from, to])))

  // Accuracy: the comparison's H2 and H3 of every location and percentile
  // against percentile_cont over all matched rounds of the window (the same
  // rounds the comparison subsamples) and over every ok load of each arm
  // (the exact SQL timed above).
  const body = (await app.inject({ url: comparisonUrl })).json()
  const qs = body.percentiles.map((p) => p / 100)
  const { rows: matchedExact } = await pool.query(
    `SELECT r.location_id, m.mode, percentile_cont($4::float8[]) WITHIN GROUP (ORDER BY m.v) AS v
       FROM results r JOIN results o ON o.job_id = r.job_id AND o.time = r.time AND o.mode = 'h3' AND o.probe = r.probe AND o.view = r.view
       CROSS JOIN LATERAL (VALUES ('h2', r.ttfb_ms), ('h3', o.ttfb_ms)) m(mode, v)
      WHERE r.monitor_id = $1 AND r.time >= $2 AND r.time < $3 AND r.mode = 'h2' AND r.probe = 'page' AND r.view = 'first'
        AND r.status = 'ok' AND r.protocol_ok AND r.ttfb_ms IS NOT NULL AND o.status = 'ok' AND o.protocol_ok AND o.ttfb_ms IS NOT NULL
      GROUP BY 1, 2`, [target, from, to, qs])
  const { rows: okExact } = await pool.query(
    `SELECT location_id, mode, percentile_cont($4::float8[]) WITHIN GROUP (ORDER BY ttfb_ms) AS v
       FROM results WHERE monitor_id = $1 AND time >= $2 AND time < $3 AND status = 'ok' AND protocol_ok GROUP BY 1, 2`, [target, from, to, qs])
  const largestError = (exactRows) => {
    const exactOf = new Map(exactRows.map((r) => [`${r.location_id}|${r.mode}`, r.v]))
    let worst = { pct: 0, at: '' }
    for (const e of body.locations.filter((l) => l.location_id)) {
      for (const [k, row] of e.rows.entries()) {
        for (const mode of ['h2', 'h3']) {
          const exactValue = exactOf.get(`${e.location_id}|${mode}`)?.[k]
          const got = row[`${mode}_ms`]
          if (exactValue == null || got == null) continue
          const error = Math.abs(got - exactValue) / exactValue * 100
          if (error > worst.pct) worst = { pct: error, at: `${e.location_id} ${mode} p${row.percentile}: ${got.toFixed(1)} ms vs ${exactValue.toFixed(1)} ms` }
        }
      }
    }
    return worst
  }
  const rounds = body.locations.filter((l) => l.location_id).map((l) => `${l.rounds.used} (${l.rounds.resampled} resampled)`).join(', ')
  const errMatched = largestError(matchedExact)
  const errOk = largestError(okExact)
  await app.close()

  const f = (x) => x.toFixed(1).padStart(8)
  console.log(`\nquery benchmark — ${n} results, ${monitors} monitors, ${days}-day window, ${os.cpus().length} cores`)
  console.log('endpoint              p50 ms   p95 ms   exact SQL p50 ms   speed-up')
  console.log(`comparison, served  ${f(pct(comparison, 50))} ${f(pct(comparison, 95))}   ${f(pct(exact, 50))}          ${ratio(pct(exact, 50), pct(comparison, 50))}×`)
  console.log(`comparison, computed${f(pct(computed, 50))} ${f(pct(computed, 95))}   ${f(pct(exact, 50))}          ${ratio(pct(exact, 50), pct(computed, 50))}×`)
  console.log(`trends (1h)         ${f(pct(trend, 50))} ${f(pct(trend, 95))}   ${f(pct(exactTrend, 50))}          ${ratio(pct(exactTrend, 50), pct(trend, 50))}×`)
  console.log(`rounds per location, all of them used for the percentiles, at most 2,000 resampled for intervals and tests: ${rounds}`)
  console.log(`largest percentile error of the comparison (p${body.percentiles.join(', p')}; H2 and H3; every location):`)
  console.log(`  against exact SQL over the same (matched) rounds: ${errMatched.pct.toFixed(2)}% (${errMatched.at})`)
  console.log(`  against exact SQL over every ok load of each arm: ${errOk.pct.toFixed(2)}% (${errOk.at})`)
  console.log('served: the answer the API keeps for up to H3LENS_COMPARISON_MAX_AGE_S (60 s); computed: Cache-Control: no-cache')
  console.log('targets: comparison ≥ 100× faster than exact SQL; largest percentile error ≤ 1%')
} finally {
  await lifecycle.stopAll('done')
}
