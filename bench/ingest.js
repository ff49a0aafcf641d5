#!/usr/bin/env node
// Ingest rate: results/s through the agents' HTTP results endpoint (many
// concurrent agents, each posting a round of 2 results), through the batched
// endpoint (POST /api/v1/agent/results, --batch rounds a request, one
// transaction each, as an agent's spool flush sends them), and through the
// direct batch path (lib/store/results.js insertResults, 1,000 rows a statement),
// with the scheduler's rollup folding running alongside so rollups stay
// current. Load generator, API, folding and PostgreSQL share the machine.
//
//   node bench/ingest.js [--seconds 20] [--agents 50] [--concurrency 32] [--batch 50] [--batch-concurrency 8]
import os from 'node:os'
import { Agent, request } from 'node:http'
import { loadConfig } from '../lib/runtime/config.js'
import { benchScratch } from './lib/scratch.js'
import { openDatabase } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { createMonitor } from '../lib/store/monitors.js'
import { createAgentToken } from '../lib/store/agents.js'
import { insertResults } from '../lib/store/results.js'
import { foldAllPending } from '../lib/analysis/rollups.js'
import { enqueueForRollup } from '../lib/store/rollups.js'
import { startApi } from '../api/server.js'
import { benchArgs, countOption } from './lib/args.js'

const { values } = benchArgs(import.meta.url, {
  options: {
    seconds: { type: 'string', default: '20' },
    agents: { type: 'string', default: '50' },
    concurrency: { type: 'string', default: '32' },
    batch: { type: 'string', default: '50' },
    'batch-concurrency': { type: 'string', default: '8' }
  }
})
const seconds = countOption(import.meta.url, values, 'seconds', { min: 1, max: 120 })
const agents = countOption(import.meta.url, values, 'agents', { min: 1, max: 500 })
const concurrency = countOption(import.meta.url, values, 'concurrency', { min: 1, max: 256 })
const batch = countOption(import.meta.url, values, 'batch', { min: 1, max: 200 })
const batchConcurrency = countOption(import.meta.url, values, 'batch-concurrency', { min: 1, max: 64 })

const { dataDir, log, lifecycle } = benchScratch('bench-ingest')
const config = loadConfig({ ...process.env, H3LENS_DATA_DIR: dataDir, PORT: '18282', H3LENS_EMBEDDED_PG_PORT: '54394', LOG_LEVEL: 'warn', H3LENS_PUBLIC_READ: 'true' })
const result = (mode, i) => {
  const ttfb = 80 + (i % 50)
  return { mode, status: 'ok', protocol_ok: true, observed_protocol: mode, ttfb_ms: ttfb, fcp_ms: ttfb + 40, lcp_ms: ttfb + 70, dcl_ms: ttfb + 60, load_ms: ttfb + 120, dns_ms: 0, connect_ms: 30, tls_ms: 20, bytes: 15360, requests: 2 }
}

try {
  const { pool } = await openDatabase({ config, log, lifecycle, poolMax: 20 })
  await migrate(pool)
  const api = await startApi({ db: pool, config, log })
  lifecycle.add('api', api.close)
  const monitor = await createMonitor(pool, { url: 'https://bench.example/ingest', locations: ['local'], interval_s: 60, paused: true }, { allowPrivateTargets: true })
  const tokens = []
  for (let i = 0; i < agents; i++) tokens.push(await createAgentToken(pool, { location: 'local' }))
  // Enough leased jobs for the whole run, spread over the agents, one a minute in the past.
  const jobsNeeded = 20000 * seconds
  const { rows: jobs } = await pool.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at, state, attempts, lease_owner, lease_expires_at)
     SELECT $1, 'local', now() - make_interval(secs => g * 7), 'leased', 1, ($2::bigint[])[1 + g % $3], now() + interval '1 hour'
       FROM generate_series(1, $4) g RETURNING id, lease_owner`,
    [monitor.id, tokens.map((t) => t.agent.id), agents, jobsNeeded])
  const tokenOf = new Map(tokens.map((t) => [t.agent.id, t.token]))

  let folding = true
  let folded = 0
  const folder = (async () => { while (folding) folded += await foldAllPending(pool, { budgetMs: 500 }) || await new Promise((resolve) => setTimeout(() => resolve(0), 50)) })()

  const keepAlive = new Agent({ keepAlive: true, maxSockets: concurrency })
  const latencies = []
  let errors = 0
  let firstError = ''
  let next = 0
  const post = (job, i) => new Promise((resolve) => {
    const body = JSON.stringify({ results: [result('h2', i), result('h3', i)] })
    const t0 = performance.now()
    const req = request(`${api.url}/api/v1/agent/jobs/${job.id}/results`, {
      method: 'POST', agent: keepAlive, headers: { authorization: `Bearer ${tokenOf.get(job.lease_owner)}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
    }, (res) => {
      let text = ''
      res.on('data', (d) => { text += d })
      res.on('end', () => {
        latencies.push(performance.now() - t0)
        if (res.statusCode !== 200) {
          if (!errors) firstError = `${res.statusCode} ${text.slice(0, 300)}`
          errors++
        }
        resolve(undefined)
      })
    })
    req.on('error', () => { errors++; resolve(undefined) })
    req.end(body)
  })
  const started = performance.now()
  const deadline = started + seconds * 1000
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < deadline && next < jobs.length) {
      const i = next++
      await post(jobs[i], i)
    }
  }))
  const httpSeconds = (performance.now() - started) / 1000
  const httpResults = latencies.length * 2
  const drainStart = performance.now()
  folding = false
  await folder
  while (await foldAllPending(pool, { budgetMs: 5000 }));
  const drainMs = performance.now() - drainStart

  // Batched HTTP path: `batch` rounds of one agent a request, `batchConcurrency` requests at once.
  const batchJobsNeeded = 10000 * seconds
  const { rows: leasedForBatch } = await pool.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at, state, attempts, lease_owner, lease_expires_at)
     SELECT $1, 'local', now() - make_interval(secs => 5000000 + g * 7), 'leased', 1, ($2::bigint[])[1 + (g / $5) % $3], now() + interval '1 hour'
       FROM generate_series(1, $4) g RETURNING id, lease_owner`,
    [monitor.id, tokens.map((t) => t.agent.id), agents, batchJobsNeeded, batch])
  // Consecutive jobs of one agent make a request.
  const requests = []
  for (const job of leasedForBatch) {
    const last = requests.at(-1)
    if (last && last.owner === job.lease_owner && last.jobs.length < batch) last.jobs.push(job)
    else requests.push({ owner: job.lease_owner, jobs: [job] })
  }
  const batchLatencies = []
  let batchErrors = 0
  let batchStored = 0
  let firstBatchError = ''
  const postBatch = (req, i) => new Promise((resolve) => {
    const body = JSON.stringify({ rounds: req.jobs.map((job, k) => ({ job_id: job.id, results: [result('h2', i + k), result('h3', i + k)] })) })
    const t0 = performance.now()
    const r = request(`${api.url}/api/v1/agent/results`, {
      method: 'POST', agent: keepAlive, headers: { authorization: `Bearer ${tokenOf.get(req.owner)}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
    }, (res) => {
      let text = ''
      res.on('data', (d) => { text += d })
      res.on('end', () => {
        batchLatencies.push(performance.now() - t0)
        if (res.statusCode !== 200) {
          if (!batchErrors) firstBatchError = `${res.statusCode} ${text.slice(0, 300)}`
          batchErrors++
        } else {
          for (const a of JSON.parse(text).rounds) {
            if (a.error) { if (!batchErrors++) firstBatchError = JSON.stringify(a.error) } else batchStored += a.stored
          }
        }
        resolve(undefined)
      })
    })
    r.on('error', () => { batchErrors++; resolve(undefined) })
    r.end(body)
  })
  const singleFolded = folded
  folding = true
  folded = 0
  const batchFolder = (async () => { while (folding) folded += await foldAllPending(pool, { budgetMs: 500 }) || await new Promise((resolve) => setTimeout(() => resolve(0), 50)) })()
  let nextBatch = 0
  const batchHttpStart = performance.now()
  const batchDeadline = batchHttpStart + seconds * 1000
  await Promise.all(Array.from({ length: batchConcurrency }, async () => {
    while (performance.now() < batchDeadline && nextBatch < requests.length) {
      const i = nextBatch++
      await postBatch(requests[i], i * batch)
    }
  }))
  const batchHttpSeconds = (performance.now() - batchHttpStart) / 1000
  const batchDrainStart = performance.now()
  folding = false
  await batchFolder
  while (await foldAllPending(pool, { budgetMs: 5000 }));
  const batchDrainMs = performance.now() - batchDrainStart
  const batchFolded = folded

  // Direct batch path: 1,000 results a statement, rollup queue included.
  const { rows: batchJobs } = await pool.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at, state) SELECT $1, 'local', now() - make_interval(secs => 1000000 + g), 'done'
       FROM generate_series(1, 50000) g RETURNING id, monitor_id, location_id, due_at`, [monitor.id])
  const batchStart = performance.now()
  let batchResults = 0
  for (let i = 0; i < batchJobs.length && performance.now() - batchStart < seconds * 1000; i += 500) {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      const rows = []
      for (const job of batchJobs.slice(i, i + 500)) {
        const inserted = await insertResults(client, { job, agentId: tokens[0].agent.id, results: [result('h2', i), result('h3', i)] })
        rows.push(...inserted)
      }
      await enqueueForRollup(client, rows.map((r) => r.id))
      await client.query('COMMIT')
      batchResults += rows.length
    } finally {
      client.release()
    }
  }
  const batchSeconds = (performance.now() - batchStart) / 1000
  latencies.sort((a, b) => a - b)
  const p = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))].toFixed(1)
  console.log(`ingest benchmark — ${os.cpus().length} cores, ${agents} agents, ${concurrency} concurrent requests, ${seconds} s`)
  console.log(`  HTTP results endpoint   ${(httpResults / httpSeconds).toFixed(0)} results/s  (${(latencies.length / httpSeconds).toFixed(0)} requests/s, 2 results each; p50 ${p(0.5)} ms, p99 ${p(0.99)} ms, ${errors} errors)`)
  if (firstError) console.log(`  first error             ${firstError}`)
  console.log(`  rollups                 ${singleFolded} folded during the run; backlog drained ${drainMs.toFixed(0)} ms after it`)
  batchLatencies.sort((a, b) => a - b)
  const bp = (q) => batchLatencies[Math.min(batchLatencies.length - 1, Math.floor(q * batchLatencies.length))].toFixed(1)
  console.log(`  HTTP batched endpoint   ${(batchStored / batchHttpSeconds).toFixed(0)} results/s  (${(batchLatencies.length / batchHttpSeconds).toFixed(1)} requests/s, ${batch} rounds × 2 results each, ${batchConcurrency} at once; p50 ${bp(0.5)} ms, p99 ${bp(0.99)} ms, ${batchErrors} errors)`)
  if (firstBatchError) console.log(`  first batch error       ${firstBatchError}`)
  console.log(`  rollups                 ${batchFolded} folded during the batched run; backlog drained ${batchDrainMs.toFixed(0)} ms after it`)
  console.log(`  direct path             ${(batchResults / batchSeconds).toFixed(0)} results/s  (transactions of 500 rounds, rollup queue included)`)
  const best = Math.max(httpResults / httpSeconds, batchStored / batchHttpSeconds)
  console.log(`  target                  ≥ 5,000 results/s over HTTP with rollups current; single-round ${((httpResults / httpSeconds) / 5000).toFixed(2)}×, batched ${((batchStored / batchHttpSeconds) / 5000).toFixed(2)}×, best ${(best / 5000).toFixed(2)}×`)
} finally {
  await lifecycle.stopAll('done')
}
