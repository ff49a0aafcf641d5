#!/usr/bin/env node
// Does the raw export (GET /api/v1/results) run in constant memory, whatever
// the range, even for a slow client? Exports 20k and 200k synthetic results
// as CSV and NDJSON, each in a fresh process that serves the API and reads
// its own export over HTTP at a throttled pace, and prints peak RSS. A ratio
// near 1 (200k vs 20k) means memory does not grow with the export; buffering
// the whole answer would make it ~10×.
//
//   node bench/export-memory.js [--rows 200000] [--baseline 20000]
//
// Uses DATABASE_URL, or an embedded PostgreSQL in a temporary directory.
import os from 'node:os'
import http from 'node:http'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { benchScratch } from './lib/scratch.js'
import { openDatabase, createPool } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { createMonitor } from '../lib/store/monitors.js'
import { createApiKey } from '../lib/store/api-keys.js'
import { buildApp } from '../api/app.js'
import { freePort } from '../dev/free-port.js'
import { benchArgs } from './lib/args.js'

const { values } = benchArgs(import.meta.url, {
  options: {
    rows: { type: 'string', default: '200000' },
    baseline: { type: 'string', default: '20000' },
    child: { type: 'boolean', default: false },
    monitor: { type: 'string' },
    format: { type: 'string', default: 'csv' }
  }
})

if (values.child) await child()
else await parent()

async function parent () {
  const { dataDir, log, lifecycle } = benchScratch('bench')
  // A free port for the embedded PostgreSQL, so the bench runs beside
  // anything else on this machine.
  const pgPort = String(await freePort())
  const config = loadConfig({ ...process.env, H3LENS_DATA_DIR: dataDir, H3LENS_EMBEDDED_PG_PORT: pgPort, LOG_LEVEL: 'warn' })
  try {
    const { pool, url } = await openDatabase({ config, log, lifecycle })
    await migrate(pool)
    const sizes = [Number(values.baseline), Number(values.rows)]
    const { secret } = await createApiKey(pool, { name: 'bench-export', role: 'read' })
    const monitors = []
    for (const n of sizes) monitors.push(await seed(pool, n))
    // A live table has statistics; right after a bulk load it has none, and
    // the planner then sorts every remaining row for each batch instead of
    // walking the (monitor_id, time) index (minutes instead of seconds).
    await pool.query('ANALYZE results')
    console.log(`raw export memory — ${os.cpus().length} cores, client reads 64 KB then waits 2 ms`)
    for (const format of ['csv', 'ndjson']) {
      const runs = sizes.map((n, i) => {
        const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', '--monitor', String(monitors[i].id), '--format', format],
          { env: { ...process.env, H3LENS_BENCH_DATABASE_URL: url, H3LENS_BENCH_API_KEY: secret }, encoding: 'utf8' })
        // The child's log lines (pino writes to stdout) are passed on; the
        // last line is its measurement.
        const lines = out.trim().split('\n')
        for (const line of lines.slice(0, -1)) console.error(line)
        return { n, ...JSON.parse(lines[lines.length - 1]) }
      })
      for (const r of runs) {
        console.log(`  ${format.padEnd(6)} ${String(r.n).padStart(7)} rows  ${(r.bytes / 1e6).toFixed(1).padStart(6)} MB in ${(r.ms / 1000).toFixed(1)} s` +
          `   peak RSS ${(r.peakRss / 1e6).toFixed(0)} MB (idle ${(r.idleRss / 1e6).toFixed(0)} MB)`)
      }
      console.log(`  ${format.padEnd(6)} peak RSS ratio ${runs[1].n}/${runs[0].n} rows: ${(runs[1].peakRss / runs[0].peakRss).toFixed(2)}×`)
    }
  } finally {
    await lifecycle.stopAll('done')
  }
}

/** A monitor with n results shaped like real ones (flags, versions, every timing). */
async function seed (pool, n) {
  const m = await createMonitor(pool, { url: 'https://example.com/', interval_s: 60, locations: ['local'] }, { allowPrivateTargets: true })
  await pool.query(
    `INSERT INTO results (time, measured_at, job_id, monitor_id, location_id, mode, status, observed_protocol, protocol_ok,
        ttfb_ms, load_ms, dns_ms, connect_ms, tls_ms, fcp_ms, lcp_ms, dcl_ms, bytes, requests, h3_request_share, h3_byte_share,
        rtt_ms, browser_version, agent_version, flags)
     SELECT t, t + interval '3 seconds', g / 2, $1, 'local', m, 'ok', m, true,
            random() * 200, random() * 2000, random() * 5, random() * 50, random() * 30, random() * 500, random() * 900,
            random() * 700, 15360 + g % 1000, 3, CASE m WHEN 'h3' THEN 1 ELSE 0 END, CASE m WHEN 'h3' THEN 1 ELSE 0 END,
            80, 'Chromium 130.0.6723.116', '0.1.0',
            CASE m WHEN 'h3' THEN ARRAY['--enable-quic', '--origin-to-force-quic-on=example.com:443'] ELSE ARRAY['--disable-quic'] END
       FROM generate_series(0, $2 - 1) g,
            LATERAL (SELECT now() - make_interval(secs => (g / 2) * 10) AS t, CASE g % 2 WHEN 0 THEN 'h2' ELSE 'h3' END AS m) x`,
    [m.id, n])
  return m
}

async function child () {
  const log = createLogger({ logLevel: 'warn' })
  // The parent sets it for every child it starts.
  const db = createPool(/** @type {string} */ (process.env.H3LENS_BENCH_DATABASE_URL))
  const app = await buildApp({ db, config: loadConfig({ LOG_LEVEL: 'warn' }), log })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = /** @type {import('node:net').AddressInfo} */ (app.server.address())
  await sleep(200)
  const idleRss = process.memoryUsage().rss
  let peakRss = idleRss
  const sampler = setInterval(() => { peakRss = Math.max(peakRss, process.memoryUsage().rss) }, 20)
  const started = performance.now()
  const bytes = await new Promise((resolve, reject) => {
    http.get({ port, headers: { authorization: `Bearer ${process.env.H3LENS_BENCH_API_KEY}` }, path: `/api/v1/results?monitor=${values.monitor}&format=${values.format}` }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`export answered ${res.statusCode}`))
      let total = 0
      let sinceWait = 0
      res.on('data', (chunk) => {
        total += chunk.length
        sinceWait += chunk.length
        // A slow client: every 64 KB it stops reading for 2 ms.
        if (sinceWait >= 64 * 1024) {
          sinceWait = 0
          res.pause()
          setTimeout(() => res.resume(), 2)
        }
      })
      res.on('end', () => resolve(total))
      res.on('error', reject)
    }).on('error', reject)
  })
  const ms = performance.now() - started
  clearInterval(sampler)
  peakRss = Math.max(peakRss, process.memoryUsage().rss)
  await app.close()
  await db.end()
  process.stdout.write('\n' + JSON.stringify({ bytes, ms, idleRss, peakRss }) + '\n')
}
