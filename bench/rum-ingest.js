#!/usr/bin/env node
// Real-user ingest rate: beacons/s through POST /rum/v1/beacon over HTTP,
// each one checked (schema, site key, Origin, plausibility), looked up in
// the country database, and acknowledged only once the batch holding it is
// committed (api/beacon-queue.js: group commit, multi-row INSERTs as for
// agents' results). Load generator, API and PostgreSQL share the machine.
// At the end every 204 is checked against the table: nothing acknowledged
// may be missing.
//
//   node bench/rum-ingest.js [--seconds 15] [--concurrency 256] [--sites 4]
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { Agent, request } from 'node:http'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { createLifecycle } from '../lib/runtime/lifecycle.js'
import { openDatabase } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { createSite } from '../lib/store/rum-sites.js'
import { startApi } from '../api/server.js'
import { processTable, treeCpuS } from './lib/proc-cpu.js'

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '15' }, concurrency: { type: 'string', default: '256' }, sites: { type: 'string', default: '4' } } })
const seconds = Math.min(120, Number(values.seconds))
const concurrency = Math.min(1024, Number(values.concurrency))
const siteCount = Math.min(50, Number(values.sites))
// Bounded in count as well as time.
const MAX_BEACONS = 2_000_000

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-bench-rum-'))
// The per-address limit is off: every beacon comes from 127.0.0.1 here.
const config = loadConfig({
  ...process.env, H3LENS_DATA_DIR: dataDir, PORT: '18283', H3LENS_EMBEDDED_PG_PORT: '54395', LOG_LEVEL: 'warn', H3LENS_RUM_ADDRESS_PER_MIN: '0', H3LENS_RUM_SITE_PER_MIN: '0'
})
const log = createLogger({ logLevel: 'warn' })
const lifecycle = createLifecycle(log)
const UAS = [
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:140.0) Gecko/20100101 Firefox/140.0',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.4 Safari/605.1.15'
]

/** A beacon as the snippet sends it (about 600 bytes). */
function beacon (key, i) {
  const h3 = i % 3 !== 0
  const reused = i % 4 === 0
  const ttfb = 60 + (i % 90)
  return JSON.stringify({
    key, v: 1, id: randomBytes(16).toString('hex'), t0: Date.now() - 3000, sample: 1, nav: 'navigate', protocol: h3 ? 'h3' : 'h2',
    dns_ms: reused ? 0 : 4.2, connect_ms: reused ? 0 : 22.5, tls_ms: reused ? 0 : 11.3, waiting_ms: 30.1, ttfb_ms: ttfb, fcp_ms: ttfb + 80, lcp_ms: ttfb + 160,
    inp_ms: 48, cls: 0.02, transfer_bytes: 14800, doc_cached: false, resources: 12, cached_resources: i % 5 === 0 ? 4 : 0,
    lcp_element: 'img', lcp_resource_ms: 40.2, lcp_render_delay_ms: 12.5, inp_target: 'button', inp_input_delay_ms: 2, inp_processing_ms: 30, inp_presentation_ms: 16, cls_target: 'div'
  })
}

try {
  const { pool } = await openDatabase({ config, log, lifecycle, poolMax: 10 })
  await migrate(pool)
  const api = await startApi({ db: pool, config, log })
  lifecycle.add('api', api.close)
  const sites = []
  for (let i = 0; i < siteCount; i++) sites.push(await createSite(pool, { name: `bench-${i}`, origins: [`https://site${i}.example`] }))

  const keepAlive = new Agent({ keepAlive: true, maxSockets: concurrency })
  const latencies = []
  /** @type {Record<number, number>} */
  const statuses = {}
  let firstError = ''
  let sent = 0
  // Bodies are made before the clock starts: what is measured is the
  // server's work (and the client's sending), not making test data.
  const bodies = Array.from({ length: Math.min(MAX_BEACONS, 12_000 * seconds) }, (_, i) => beacon(sites[i % sites.length].key, i))
  const post = (i) => new Promise((resolve) => {
    const site = sites[i % sites.length]
    const body = bodies[i]
    const t0 = performance.now()
    const req = request(`${api.url}/rum/v1/beacon`, {
      method: 'POST',
      agent: keepAlive,
      headers: { 'content-type': 'text/plain;charset=UTF-8', 'content-length': Buffer.byteLength(body), origin: site.origins[0], 'user-agent': UAS[i % UAS.length] }
    }, (res) => {
      let text = ''
      res.on('data', (d) => { text += d })
      res.on('end', () => {
        latencies.push(performance.now() - t0)
        const code = res.statusCode ?? 0
        statuses[code] = (statuses[code] ?? 0) + 1
        if (code !== 204 && !firstError) firstError = `${res.statusCode} ${text.slice(0, 300)}`
        resolve(undefined)
      })
    })
    req.on('error', (err) => { statuses[0] = (statuses[0] ?? 0) + 1; firstError ||= err.message; resolve(undefined) })
    req.end(body)
  })
  const cpu0 = process.cpuUsage()
  const tree0 = treeCpuS(process.pid, processTable())
  const started = performance.now()
  const deadline = started + seconds * 1000
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < deadline && sent < bodies.length) await post(sent++)
  }))
  const elapsed = (performance.now() - started) / 1000
  const cpu = process.cpuUsage(cpu0)
  const treeS = treeCpuS(process.pid, processTable()) - tree0
  const acked = statuses[204] ?? 0
  const { rows: [{ n: stored }] } = await pool.query('SELECT count(*)::int AS n FROM rum_beacons')
  latencies.sort((a, b) => a - b)
  const p = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))].toFixed(1)
  console.log(`real-user ingest benchmark — ${os.cpus().length} cores, ${concurrency} concurrent requests, ${siteCount} sites, ${seconds} s`)
  console.log(`  POST /rum/v1/beacon   ${(acked / elapsed).toFixed(0)} beacons/s stored and acknowledged (p50 ${p(0.5)} ms, p99 ${p(0.99)} ms; answers ${JSON.stringify(statuses)})`)
  if (firstError) console.log(`  first error           ${firstError}`)
  console.log(`  stored                ${stored} rows for ${acked} acknowledged beacons${stored === acked ? ' — none lost' : ' — MISMATCH'}`)
  console.log(`  this process          ${((cpu.user + cpu.system) / 1e6 / elapsed).toFixed(2)} cores busy (API and load generator; PostgreSQL is another process)`)
  // On a machine other work shares, the rate above is what this run got of
  // the cores; the CPU a beacon costs says what two whole cores would carry.
  const perBeaconMs = treeS * 1000 / Math.max(1, acked)
  console.log(`  CPU per beacon        ${perBeaconMs.toFixed(3)} ms (API, load generator and PostgreSQL, ${(treeS / elapsed).toFixed(2)} cores busy of ${os.cpus().length}; load average ${os.loadavg()[0].toFixed(1)})`)
  console.log(`  two whole cores       ${(2000 / perBeaconMs).toFixed(0)} beacons/s at that cost`)
  console.log(`  target                ≥ 5,000 beacons/s: measured ${((acked / elapsed) / 5000).toFixed(2)}×, at two whole cores ${((2000 / perBeaconMs) / 5000).toFixed(2)}×`)
  if (stored !== acked) process.exitCode = 1
} finally {
  await lifecycle.stopAll('done')
  fs.rmSync(dataDir, { recursive: true, force: true })
}
