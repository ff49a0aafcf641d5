#!/usr/bin/env node
// The scheduler at scale: 10,000 monitors × 5 locations at a 5-minute
// interval, two scheduler replicas (`node bin/h3lens.js scheduler`, two
// processes, as in production) against one PostgreSQL:
//
//   node bench/scheduler.js [--minutes 6] [--monitors 10000] [--interval 300] [--pg-port 54394]
//
// Monitors are created in SQL with anchor_at spread evenly over one interval
// from a few seconds after the replicas start, so rounds come due
// continuously (10,000 / 300 s ≈ 33 monitors, 167 rounds a second) and none
// is due before the replicas run. Each bench location has an agent row whose
// last_seen_at the bench keeps fresh, and a loop in this process marks done
// every 200 ms each queued job an agent could claim (run_after ≤ now(), as
// claimJobs), standing in for the agents, so back-pressure never skips a
// round. Prints the dispatch lateness: when a round became claimable
// (greatest(created_at, run_after): a round created ahead of its due time is
// claimable at it, not before) − due_at, and when the stand-in agents first
// saw it; how far ahead rounds were created; duplicates; and CPU per round of
// the replicas and of PostgreSQL. Uses an embedded PostgreSQL in a temporary
// data dir on --pg-port.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { loadConfig } from '../lib/runtime/config.js'
import { benchScratch } from './lib/scratch.js'
import { openDatabase } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { scheduleDueJobs } from '../lib/store/jobs.js'
import { BENCH_LOCATIONS } from './lib/generate.js'
import { processTable, procCpuS } from './lib/proc-cpu.js'
import { benchArgs } from './lib/args.js'

const { values } = benchArgs(import.meta.url, {
  options: {
    minutes: { type: 'string', default: '6' },
    monitors: { type: 'string', default: '10000' },
    interval: { type: 'string', default: '300' },
    replicas: { type: 'string', default: '2' },
    'tick-ms': { type: 'string', default: '1000' },
    'pg-port': { type: 'string', default: '54394' }
  }
})
const minutes = Number(values.minutes)
const monitors = Number(values.monitors)
const intervalS = Number(values.interval)
const replicas = Number(values.replicas)
const tickMs = Number(values['tick-ms'])
if (!(minutes > 0 && minutes <= 60)) throw new Error('--minutes must be in (0, 60]')
if (!(monitors >= 1 && monitors <= 100000)) throw new Error('--monitors must be in [1, 100000]')
if (!(intervalS >= 10)) throw new Error('--interval must be ≥ 10 (seconds)')

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const { dataDir, log, lifecycle } = benchScratch('bench-scheduler')
const config = loadConfig({ ...process.env, H3LENS_DATA_DIR: dataDir, H3LENS_EMBEDDED_PG_PORT: values['pg-port'], LOG_LEVEL: 'warn' })
const say = (msg) => console.log(`# ${new Date().toISOString().slice(11, 19)} ${msg}`)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const pct = (xs, p) => xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p / 100 * xs.length))] : NaN

/** CPU seconds of the postmaster, its live children and the children it has reaped. */
function postgresCpuS (postmasterPid) {
  const backends = processTable().children.get(postmasterPid) ?? []
  return backends.reduce((total, pid) => total + procCpuS(pid), procCpuS(postmasterPid, { children: true }))
}

const children = []
try {
  const cpus = os.cpus()
  console.log(`machine: ${cpus.length} cores, ${cpus[0]?.model ?? 'unknown CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.platform()} ${os.release()}, node ${process.version}`)
  console.log(`command: node bench/scheduler.js --minutes ${minutes} --monitors ${monitors} --interval ${intervalS} --replicas ${replicas} --tick-ms ${tickMs} --pg-port ${values['pg-port']}`)

  const { pool, url } = await openDatabase({ config, log, lifecycle, poolMax: 4 })
  await migrate(pool)
  const postmasterPid = Number(fs.readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0])
  const { rows: [{ server_version: version }] } = await pool.query('SHOW server_version')
  say(`PostgreSQL ${version} (embedded, postmaster pid ${postmasterPid})`)

  for (const l of BENCH_LOCATIONS) {
    await pool.query(`INSERT INTO locations (id, name, region, kind) VALUES ($1, $1, $2, 'real') ON CONFLICT (id) DO NOTHING`, [l.id, l.region])
    await pool.query(`INSERT INTO agents (location_id, name, token_hash, last_seen_at) VALUES ($1, $1, md5($1), now())`, [l.id])
  }
  const keepAgentsAlive = setInterval(() => { pool.query('UPDATE agents SET last_seen_at = now()').catch(() => {}) }, 10_000)

  // The replicas start now; the first round falls due LEAD_S later.
  const LEAD_S = 15
  const { rows: [{ t0 }] } = await pool.query(`SELECT now() + make_interval(secs => ${LEAD_S}) AS t0`)
  await pool.query(
    `INSERT INTO monitors (url, label, interval_s, locations, paused, anchor_at)
     SELECT 'https://bench.example/' || g, 'bench ' || g, $2::int, $3, false, $4::timestamptz + make_interval(secs => (g - 1) * $2::int::float8 / $1)
       FROM generate_series(1, $1) g`,
    [monitors, intervalS, BENCH_LOCATIONS.map((l) => l.id), t0])
  await pool.query('ANALYZE monitors')
  say(`${monitors} monitors × ${BENCH_LOCATIONS.length} locations, every ${intervalS} s, anchors spread over [${t0.toISOString()}, +${intervalS} s)`)

  // Two replicas as production runs them. Each has its own application_name
  // so its PostgreSQL backends can be told apart; debug logs carry each
  // tick's "created" count, so rounds created by both replicas would show.
  const replicaStats = []
  for (let r = 0; r < replicas; r++) {
    const child = spawn(process.execPath, [path.join(root, 'bin', 'h3lens.js'), 'scheduler'], {
      env: {
        ...process.env,
        DATABASE_URL: `${url}${url.includes('?') ? '&' : '?'}application_name=bench-scheduler-${r + 1}`,
        H3LENS_DATA_DIR: path.join(dataDir, `replica-${r + 1}`),
        H3LENS_SCHEDULER_TICK_MS: String(tickMs),
        LOG_LEVEL: 'debug'
      },
      stdio: ['ignore', 'ignore', 'pipe']
    })
    children.push(child)
    const stats = { created: 0, errors: 0 }
    replicaStats.push(stats)
    let buf = ''
    child.stderr.on('data', (chunk) => {
      buf += chunk
      let nl
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        let entry
        try { entry = JSON.parse(line) } catch { continue }
        if (entry.msg === 'scheduler rounds') {
          stats.created += entry.created
        } else if (entry.level >= 40) {
          stats.errors++
          say(`replica ${r + 1}: ${entry.msg} ${entry.err ?? ''}`)
        }
      }
    })
  }
  say(`${replicas} scheduler replicas started (pids ${children.map((c) => c.pid).join(', ')}), tick ${tickMs} ms`)

  // Stand-in agents: mark every claimable queued job done, 5 times a second,
  // and note when each round was first seen (an upper bound on when an agent
  // could have claimed it).
  let marking = true
  let marked = 0
  const marker = (async () => {
    while (marking) {
      const { rowCount } = await pool.query(
        `UPDATE jobs SET state = 'done', started_at = clock_timestamp(), finished_at = clock_timestamp(), updated_at = clock_timestamp()
          WHERE state = 'queued' AND run_after <= now()`)
      marked += rowCount ?? 0
      await sleep(200)
    }
  })()

  await sleep(LEAD_S * 1000)
  // The replicas' backends, by pid, so their CPU is counted from here on.
  const schedBackends = async () => (await pool.query(`SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'bench-scheduler-%'`)).rows.map((r) => r.pid)
  const backendStart = new Map((await schedBackends()).map((pid) => [pid, procCpuS(pid)]))
  const cpuStart = { replicas: children.map((c) => procCpuS(c.pid)), pg: postgresCpuS(postmasterPid), wall: performance.now(), load: os.loadavg()[0] }
  const endAt = Date.now() + minutes * 60_000
  while (Date.now() < endAt) {
    await sleep(Math.min(30_000, endAt - Date.now()))
    const { rows: [{ n }] } = await pool.query('SELECT count(*)::int AS n FROM jobs')
    say(`${n} jobs so far, ${marked} marked done`)
  }
  const replicaCpu = children.map((c, i) => procCpuS(c.pid) - cpuStart.replicas[i])
  // A backend that closed during the run is missing here: a lower bound.
  const schedBackendCpu = (await schedBackends()).reduce((s, pid) => s + procCpuS(pid) - (backendStart.get(pid) ?? 0), 0)
  const loadEnd = os.loadavg()[0]
  const pgCpu = postgresCpuS(postmasterPid) - cpuStart.pg
  const wallS = (performance.now() - cpuStart.wall) / 1000

  for (const c of children) c.kill('SIGTERM')
  await Promise.all(children.map((c) => c.exitCode !== null ? null : new Promise((resolve) => c.once('exit', resolve))))
  marking = false
  await marker
  clearInterval(keepAgentsAlive)

  const { rows: [j] } = await pool.query(
    `SELECT count(*)::int AS jobs,
            count(*) FILTER (WHERE state = 'skipped')::int AS skipped,
            count(*) FILTER (WHERE state = 'failed')::int AS failed,
            count(DISTINCT monitor_id)::int AS monitors_seen,
            min(due_at) AS first_due, max(due_at) AS last_due
       FROM jobs`)
  const { rows: [{ dup_groups: dupGroups }] } = await pool.query(
    'SELECT count(*)::int AS dup_groups FROM (SELECT 1 FROM jobs GROUP BY monitor_id, location_id, due_at HAVING count(*) > 1) d')
  const { rows: late } = await pool.query(
    `SELECT extract(epoch FROM created_at - due_at) * 1000 AS created_ms,
            extract(epoch FROM greatest(created_at, run_after) - due_at) * 1000 AS claimable_ms,
            extract(epoch FROM started_at - due_at) * 1000 AS seen_ms
       FROM jobs WHERE due_at >= $1`, [t0])
  const createdMs = late.map((r) => Number(r.created_ms))
  const claimableMs = late.map((r) => Number(r.claimable_ms))
  const seenMs = late.filter((r) => r.seen_ms !== null).map((r) => Number(r.seen_ms))
  const createdByReplicas = replicaStats.reduce((s, r) => s + r.created, 0)
  // What one tick's scheduleDueJobs costs at this size, timed here with the
  // replicas stopped (after the figures above were read): one call a second,
  // each creating the rounds coming due by the next, as a tick does.
  const dueMs = []
  for (let i = 0; i < 5; i++) {
    await sleep(1000)
    const t = performance.now()
    await scheduleDueJobs(pool, { maxAttempts: 3, lookAheadMs: tickMs })
    dueMs.push(performance.now() - t)
  }

  const f = (x) => Number.isFinite(x) ? x.toFixed(0).padStart(6) : '   n/a'
  console.log(`\nscheduler benchmark — ${monitors} monitors × ${BENCH_LOCATIONS.length} locations every ${intervalS} s, ${replicas} replicas, ${minutes} min`)
  console.log('stand-in agents: this process marks every claimable queued job done every 200 ms (no browsers), so back-pressure never skips a round')
  console.log(`rounds created: ${j.jobs} jobs (one monitor at one location each) for ${j.monitors_seen} monitors, due ${j.first_due?.toISOString()} … ${j.last_due?.toISOString()}; skipped ${j.skipped}, failed ${j.failed}`)
  console.log('dispatch lateness            p50 ms  p99 ms  max ms')
  console.log(`claimable − due_at           ${f(pct(claimableMs, 50))}  ${f(pct(claimableMs, 99))}  ${f(Math.max(...claimableMs))}   (claimable: greatest(created_at, run_after))`)
  console.log(`first seen by agents − due   ${f(pct(seenMs, 50))}  ${f(pct(seenMs, 99))}  ${f(Math.max(...seenMs))}   (includes up to 200 ms of the stand-in's poll)`)
  console.log(`created_at − due_at          ${f(pct(createdMs, 50))}  ${f(pct(createdMs, 99))}  ${f(Math.max(...createdMs))}   (negative: created ahead; ${(createdMs.filter((x) => x <= 0).length / createdMs.length * 100).toFixed(1)}% were)`)
  console.log(`scheduleDueJobs, one call    ${f(pct(dueMs, 50))}          ${f(Math.max(...dueMs))}   (5 calls 1 s apart after the run, look-ahead ${tickMs} ms, ${monitors * BENCH_LOCATIONS.length} monitor-locations)`)
  console.log(`duplicates: ${dupGroups} (monitor, location, due_at) groups with more than one job; replicas reported ${replicaStats.map((r) => r.created).join(' + ')} = ${createdByReplicas} rounds created against ${j.jobs} rows, so ${createdByReplicas - j.jobs} rounds created twice`)
  const perRound = (s) => j.jobs ? (s * 1e3 / j.jobs).toFixed(3) : 'n/a'
  const repSum = replicaCpu.reduce((a, b) => a + b, 0)
  console.log(`CPU over ${wallS.toFixed(0)} s: replicas ${replicaCpu.map((s) => s.toFixed(1)).join(' + ')} s = ${perRound(repSum)} ms per round; ` +
    `PostgreSQL ${pgCpu.toFixed(1)} s = ${perRound(pgCpu)} ms per round (all backends, incl. the stand-in agents and autovacuum; ` +
    `the replicas' own backends ${schedBackendCpu.toFixed(1)} s = ${perRound(schedBackendCpu)} ms per round)`)
  console.log(`machine load: ${((repSum + pgCpu) / wallS * 100).toFixed(0)}% of one core for replicas + PostgreSQL; replica warnings ${replicaStats.reduce((s, r) => s + r.errors, 0)}; ` +
    `1-min load average ${cpuStart.load.toFixed(2)} at the start, ${loadEnd.toFixed(2)} at the end (other work shares the machine)`)
  const p99 = pct(claimableMs, 99)
  console.log(`goal: p99 lateness < 1000 ms — ${p99 < 1000 ? 'met' : 'missed'} (${f(p99).trim()} ms)`)
} finally {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM')
  await lifecycle.stopAll('done')
}
