#!/usr/bin/env node
// How many agents one API serves: N simulated agents, each claiming once a
// second and submitting an h2 and an h3 result for every job it gets, for a
// fixed time. Prints throughput, p50/p99/max latency of claims and
// submissions, and errors, then checks that every acknowledged result was
// stored exactly once.
//
//   node bench/load.js [--agents 200] [--seconds 60] [--warmup 10] [--locations 4] [--no-scheduler]
//   node bench/load.js --url http://127.0.0.1:8080 --database-url postgres://…   (an API already running)
//
// By default it starts everything itself, as a deployment would run it: a
// throw-away embedded PostgreSQL in a temp dir, `h3lens api` and
// `h3lens scheduler` as child processes (the scheduler folds the results
// into rollups, which is part of the load). Agents are simulated: no
// browser, so what is measured is the API and the database. The database
// URL is needed with --url as well: the bench registers its agents and
// queues the jobs there. Traffic goes to loopback only, and stops after
// --warmup + --seconds. Besides latency it prints the CPU time the API,
// PostgreSQL, the scheduler and the load generator used per request, which
// other work on the machine does not distort.
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { createLogger } from '../lib/runtime/log.js'
import { createPool, startEmbeddedPostgres } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createMonitor } from '../lib/store/monitors.js'
import { createAgentToken } from '../lib/store/agents.js'
import { freePort } from '../dev/free-port.js'
import { benchArgs, countOption } from './lib/args.js'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const { values } = benchArgs(import.meta.url, {
  options: {
    agents: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '60' },
    warmup: { type: 'string', default: '10' },
    locations: { type: 'string', default: '4' },
    url: { type: 'string' },
    'database-url': { type: 'string' },
    'no-scheduler': { type: 'boolean', default: false }
  }
})
const agents = countOption(import.meta.url, values, 'agents', { min: 1, max: 2000 })
const seconds = countOption(import.meta.url, values, 'seconds', { min: 5, max: 600 })
// Reported apart: a cold API, pool and plan cache meeting every agent at
// once is a start-up (or restart) event, not the steady state.
const warmup = countOption(import.meta.url, values, 'warmup', { min: 0, max: 120 })
// No more locations than agents.
const locationCount = Math.min(agents, countOption(import.meta.url, values, 'locations', { min: 1, max: 2000 }))
if (values.url) {
  const host = new URL(values.url).hostname
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(host)) throw new Error(`--url must be a loopback address, not ${host}`)
  if (!values['database-url']) throw new Error('--url needs --database-url: the bench registers its agents and queues jobs there')
}

const log = createLogger({ logLevel: 'warn', name: 'bench-load' })
const stops = []
const children = []
/** @type {Promise<void> | null} */
let stopping = null
// Ctrl-C stops what the bench started, as its end does, rather than leaving
// its PostgreSQL and API running.
for (const sig of /** @type {const} */ (['SIGINT', 'SIGTERM'])) process.once(sig, () => { stopAll().finally(() => process.exit(130)) })

/**
 * CPU seconds a process and its children (dead or alive) have used, from
 * /proc: contention from other work on the machine stretches latency, not
 * this, so it says what the load costs wherever it runs.
 * @param {number} pid
 */
function cpuSeconds (pid) {
  const ticks = (p, withDead) => {
    try {
      const f = fs.readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ')
      return Number(f[11]) + Number(f[12]) + (withDead ? Number(f[13]) + Number(f[14]) : 0)
    } catch { return 0 }
  }
  let total = ticks(pid, true)
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (fs.readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ')[1] === String(pid)) total += ticks(entry, false)
    } catch {}
  }
  return total / 100 // USER_HZ is 100 on Linux
}

/** `h3lens <command>` as a child process, stopped at the end. */
function h3lens (command, env) {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/h3lens.js'), command], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] })
  children.push(child)
  return child
}

const percentile = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1)] : NaN)

async function main () {
  let databaseUrl = values['database-url']
  let apiUrl = values.url
  /** @type {Record<string, number>} name → pid, for the CPU figures */
  const measured = {}
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-load-'))
  stops.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }))
  if (!databaseUrl) {
    const pg = await startEmbeddedPostgres({ dataDir, port: await freePort(), log })
    stops.push(pg.stop)
    databaseUrl = pg.url
    measured.postgres = Number(fs.readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0])
  }
  const db = createPool(databaseUrl, { max: 4 })
  stops.push(() => db.end())
  await migrate(db)

  // Real locations, their agents, and more queued rounds than the agents
  // can claim in the time: every claim finds work. Rounds are 1 ms apart,
  // so none is old enough for the scheduler to fail as "not claimed".
  const jobsNeeded = Math.ceil(agents * (warmup + seconds) * 1.2) + agents
  const tokens = []
  const monitorIds = []
  for (let l = 0; l < locationCount; l++) {
    const id = `load-${l + 1}`
    await upsertLocation(db, { id, name: `Load ${l + 1}`, region: 'Bench', kind: 'real' })
    const monitor = await createMonitor(db, { url: `https://example.com/load-${l + 1}`, interval_s: 3600, locations: [id] }, { allowPrivateTargets: true })
    monitorIds.push(monitor.id)
    await db.query(
      `INSERT INTO jobs (monitor_id, location_id, due_at)
       SELECT $1, $2, now() - g * interval '1 millisecond' FROM generate_series(1, $3) g`,
      [monitor.id, id, Math.ceil(jobsNeeded / locationCount)])
  }
  for (let a = 0; a < agents; a++) tokens.push((await createAgentToken(db, { location: `load-${(a % locationCount) + 1}` })).token)
  // A deployment's tables are analysed by autovacuum as they grow; thousands
  // of rows inserted a moment ago are not, and the planner, believing the
  // queue empty, would pick a plan that sorts it on every claim.
  await db.query('ANALYZE jobs, monitors, agents')

  if (!apiUrl) {
    const port = await freePort()
    const env = { DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', H3LENS_DATA_DIR: dataDir }
    // Spawned children that failed to start have no pid; those are not measured.
    const api = h3lens('api', env).pid
    if (api !== undefined) measured.api = api
    const scheduler = values['no-scheduler'] ? undefined : h3lens('scheduler', env).pid
    if (scheduler !== undefined) measured.scheduler = scheduler
    apiUrl = `http://127.0.0.1:${port}`
    for (let i = 0; ; i++) {
      if (await fetch(`${apiUrl}/healthz`).then((r) => r.ok, () => false)) break
      if (i > 300) throw new Error('the API did not start within 30 s')
      await sleep(100)
    }
  }

  /** @type {{ kind: 'claim' | 'submit', at: number, ms: number }[]} at: ms since the start of the run */
  const samples = []
  const errors = new Map()
  let rounds = 0
  let results = 0
  const noteError = (what) => errors.set(what, (errors.get(what) ?? 0) + 1)

  // node:http with keep-alive rather than fetch: the generator shares the
  // machine with what it measures, and fetch costs about twice the CPU per
  // request (0.95 against ~0.45 ms here).
  const target = new URL(apiUrl)
  const keepAlive = new http.Agent({ keepAlive: true, maxSockets: agents + 10 })
  /** @returns {Promise<{ status: number, data: any }>} */
  const post = (urlPath, token, body) => new Promise((resolve, reject) => {
    const payload = JSON.stringify(body)
    const req = http.request({
      host: target.hostname,
      port: target.port,
      path: `/api/v1/agent${urlPath}`,
      method: 'POST',
      agent: keepAlive,
      timeout: 10000,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
    }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => {
        try { resolve({ status: res.statusCode ?? 0, data: JSON.parse(Buffer.concat(chunks).toString()) }) } catch (err) { reject(err) }
      })
      res.on('error', reject)
    })
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end(payload)
  })
  stops.push(async () => keepAlive.destroy())

  async function call (kind, token, urlPath, body) {
    const started = performance.now()
    try {
      const { status, data } = await post(urlPath, token, body)
      samples.push({ kind, at: started - start, ms: performance.now() - started })
      if (status >= 400) {
        noteError(`${kind} ${status}`)
        return null
      }
      return data
    } catch (/** @type {any} */ err) {
      noteError(`${kind} ${err.message}`)
      return null
    }
  }

  const result = (mode) => ({
    mode, status: 'ok', protocol_ok: true, observed_protocol: mode, ttfb_ms: 40 + Math.random() * 20, dcl_ms: 90, load_ms: 120,
    dns_ms: 1, connect_ms: 20, tls_ms: 12, fcp_ms: 95, lcp_ms: 110, bytes: 15000, requests: 4, h3_request_share: mode === 'h3' ? 1 : 0,
    measured_at: new Date().toISOString(), browser_version: 'bench', details: { requests: [] }
  })

  /** One agent: a claim every second on its own phase, a submission per job. */
  async function agent (token, until) {
    const phase = Math.random() * 1000
    for (let tick = 0; ; tick++) {
      const at = start + phase + tick * 1000
      if (at >= until) return
      await sleep(Math.max(0, at - performance.now()))
      const claimed = await call('claim', token, '/claim', { limit: 1, version: 'bench' })
      const job = claimed?.jobs?.[0]
      if (!job) continue
      const ack = await call('submit', token, `/jobs/${job.id}/results`, { agent_version: 'bench', results: [result('h2'), result('h3')] })
      if (ack) {
        rounds++
        results += ack.stored
      }
    }
  }

  console.log(`load: ${agents} agents in ${locationCount} locations, 1 claim/s each, ${warmup} s warm-up + ${seconds} s measured, ` +
    `against ${apiUrl} (${os.cpus().length} cores, load average ${os.loadavg()[0].toFixed(1)} before)`)
  const start = performance.now()
  const running = Promise.all(tokens.map((token) => agent(token, start + (warmup + seconds) * 1000)))
  // CPU is counted over the measured part only.
  await sleep(warmup * 1000)
  const cpuBefore = Object.fromEntries(Object.entries(measured).map(([k, pid]) => [k, cpuSeconds(pid)]))
  const selfBefore = process.cpuUsage()
  const measuredFrom = performance.now()
  await running
  const elapsed = (performance.now() - measuredFrom) / 1000
  const self = process.cpuUsage(selfBefore)
  const cpu = { ...Object.fromEntries(Object.entries(measured).map(([k, pid]) => [k, cpuSeconds(pid) - cpuBefore[k]])), 'load generator': (self.user + self.system) / 1e6 }

  const { rows: [stored] } = await db.query(
    'SELECT count(*)::int AS n, count(DISTINCT (job_id, mode))::int AS distinct_n FROM results WHERE monitor_id = ANY($1)', [monitorIds])
  const inWarmup = samples.filter((x) => x.at < warmup * 1000)
  const inRun = samples.filter((x) => x.at >= warmup * 1000)
  const line = (name, xs, secs = elapsed) => {
    const s = xs.map((x) => x.ms).sort((a, b) => a - b)
    return `  ${name.padEnd(10)} ${String(s.length).padStart(7)} requests  ${(s.length / secs).toFixed(1).padStart(7)}/s   p50 ${percentile(s, 50).toFixed(1).padStart(6)} ms   ` +
      `p99 ${percentile(s, 99).toFixed(1).padStart(6)} ms   max ${(s.at(-1) ?? NaN).toFixed(1).padStart(7)} ms`
  }
  console.log(line('warm-up', inWarmup, warmup))
  console.log(line('claim', inRun.filter((x) => x.kind === 'claim')))
  console.log(line('submit', inRun.filter((x) => x.kind === 'submit')))
  console.log(line('all', inRun))
  console.log(`  rounds     ${rounds} submitted in all, ${results} results acknowledged as stored`)
  console.log(`  stored     ${stored.n} results, ${stored.distinct_n} distinct (job, mode): ${stored.n === results && stored.n === stored.distinct_n ? 'each exactly once' : 'MISMATCH'}`)
  console.log(`  errors     ${errors.size ? [...errors].map(([k, n]) => `${k}: ${n}`).join(', ') : 0}`)
  // A stall (every request of a second slow) reads differently from a slope.
  const bySecond = new Map()
  for (const x of inRun) {
    const sec = Math.floor(x.at / 1000)
    if (!bySecond.has(sec)) bySecond.set(sec, [])
    bySecond.get(sec).push(x.ms)
  }
  const worst = [...bySecond].map(([sec, xs]) => [sec, xs.sort((a, b) => a - b)]).filter(([, xs]) => percentile(xs, 99) > 100)
  console.log(`  seconds    ${worst.length} of ${bySecond.size} with p99 over 100 ms${worst.length ? `: ${worst.slice(0, 12).map(([sec, xs]) => `${sec}s ${percentile(xs, 99).toFixed(0)} ms`).join(', ')}` : ''}`)
  const requests = inRun.length || 1
  console.log(`  cpu        ${Object.entries(cpu).map(([k, v]) => `${k} ${v.toFixed(1)} s (${(v / requests * 1000).toFixed(2)} ms/request)`).join(', ')}`)
  console.log(`             ${(Object.values(cpu).reduce((a, b) => a + b, 0) / elapsed).toFixed(2)} of ${os.cpus().length} cores busy with this load; load average ${os.loadavg()[0].toFixed(1)} after`)
  return errors.size || stored.n !== results ? 1 : 0
}

let code = 1
try {
  code = await main()
} catch (/** @type {any} */ err) {
  console.error(`load: ${err.stack ?? err}`)
} finally {
  await stopAll()
}
process.exit(code)

/** The children, then what was started, in reverse; once, whoever asks first. */
function stopAll () {
  stopping ??= (async () => {
    for (const child of children.reverse()) {
      if (child.exitCode !== null) continue
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
    for (const stop of stops.reverse()) await stop().catch(() => {})
  })()
  return stopping
}
