#!/usr/bin/env node
// Real-user ingest rate: beacons/s through POST /rum/v1/beacon over HTTP,
// each one checked (schema, site key, Origin, plausibility), looked up in
// the country database, and acknowledged only once the batch holding it is
// committed (api/beacon-queue.js: group commit, multi-row INSERTs as for
// agents' results). Load generator (a worker thread, ./lib/beacon-load.js),
// API and PostgreSQL share the machine.
// At the end every 204 is checked against the table: nothing acknowledged
// may be missing.
//
//   node bench/rum-ingest.js [--seconds 15] [--concurrency 256] [--sites 4]
import os from 'node:os'
import { once } from 'node:events'
import { performance } from 'node:perf_hooks'
import { Worker } from 'node:worker_threads'
import { loadConfig } from '../lib/runtime/config.js'
import { benchScratch } from './lib/scratch.js'
import { openDatabase } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { createSite } from '../lib/store/rum-sites.js'
import { startApi } from '../api/server.js'
import { processTable, treeCpuS } from './lib/proc-cpu.js'
import { benchArgs } from './lib/args.js'

const { values } = benchArgs(import.meta.url, { options: { seconds: { type: 'string', default: '15' }, concurrency: { type: 'string', default: '256' }, sites: { type: 'string', default: '4' } } })
const seconds = Math.min(120, Number(values.seconds))
const concurrency = Math.min(1024, Number(values.concurrency))
const siteCount = Math.min(50, Number(values.sites))
// Bounded in count as well as time.
const MAX_BEACONS = 2_000_000

const { dataDir, log, lifecycle } = benchScratch('bench-rum')
// The per-address limit is off: every beacon comes from 127.0.0.1 here.
const config = loadConfig({
  ...process.env, H3LENS_DATA_DIR: dataDir, PORT: '18283', H3LENS_EMBEDDED_PG_PORT: '54395', LOG_LEVEL: 'warn', H3LENS_RUM_ADDRESS_PER_MIN: '0', H3LENS_RUM_SITE_PER_MIN: '0'
})

try {
  const { pool } = await openDatabase({ config, log, lifecycle, poolMax: 10 })
  await migrate(pool)
  const api = await startApi({ db: pool, config, log })
  lifecycle.add('api', api.close)
  const sites = []
  for (let i = 0; i < siteCount; i++) sites.push(await createSite(pool, { name: `bench-${i}`, origins: [`https://site${i}.example`] }))

  const worker = new Worker(new URL('./lib/beacon-load.js', import.meta.url), {
    workerData: { url: api.url, sites: sites.map((s) => ({ key: s.key, origin: s.origins[0] })), seconds, concurrency, maxBeacons: Math.min(MAX_BEACONS, 12_000 * seconds) }
  })
  await once(worker, 'message')
  const cpu0 = process.cpuUsage()
  const tree0 = treeCpuS(process.pid, processTable())
  const elu0 = performance.eventLoopUtilization()
  worker.postMessage('go')
  const [{ elapsed, statuses, firstError, p50, p99 }] = await once(worker, 'message')
  const cpu = process.cpuUsage(cpu0)
  const treeS = treeCpuS(process.pid, processTable()) - tree0
  const apiBusy = performance.eventLoopUtilization(elu0).utilization
  await worker.terminate()
  const acked = statuses[204] ?? 0
  const { rows: [{ n: stored }] } = await pool.query('SELECT count(*)::int AS n FROM rum_beacons')
  console.log(`real-user ingest benchmark — ${os.cpus().length} cores, ${concurrency} concurrent requests, ${siteCount} sites, ${seconds} s`)
  console.log(`  POST /rum/v1/beacon   ${(acked / elapsed).toFixed(0)} beacons/s stored and acknowledged (p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms; answers ${JSON.stringify(statuses)})`)
  if (firstError) console.log(`  first error           ${firstError}`)
  console.log(`  stored                ${stored} rows for ${acked} acknowledged beacons${stored === acked ? ' — none lost' : ' — MISMATCH'}`)
  console.log(`  this process          ${((cpu.user + cpu.system) / 1e6 / elapsed).toFixed(2)} cores busy (the API's thread and the load generator's; PostgreSQL is another process); the API's event loop ${(apiBusy * 100).toFixed(0)}% busy`)
  // On a machine other work shares, the rate above is what this run got of
  // the cores; the CPU a beacon costs says what two whole cores would carry.
  const perBeaconMs = treeS * 1000 / Math.max(1, acked)
  console.log(`  CPU per beacon        ${perBeaconMs.toFixed(3)} ms (API, load generator and PostgreSQL, ${(treeS / elapsed).toFixed(2)} cores busy of ${os.cpus().length}; load average ${os.loadavg()[0].toFixed(1)})`)
  console.log(`  two whole cores       ${(2000 / perBeaconMs).toFixed(0)} beacons/s at that cost`)
  console.log(`  target                ≥ 5,000 beacons/s: measured ${((acked / elapsed) / 5000).toFixed(2)}×, at two whole cores ${((2000 / perBeaconMs) / 5000).toFixed(2)}×`)
  if (stored !== acked) process.exitCode = 1
} finally {
  await lifecycle.stopAll('done')
}
