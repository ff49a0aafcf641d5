#!/usr/bin/env node
// How fast does POST /api/v1/monitors/{id}/results/import store a full
// request (100,000 lines), and does it stay in bounded memory? Streams
// synthetic NDJSON (page probe, h2 and h3 per round, two locations) over
// HTTP to an API in this process, then imports the same body again (all
// skipped), then asks for the comparison before the rollups are folded.
// Prints seconds, rows/s and peak RSS.
//
//   node bench/import.js [--rows 100000]
//
// Uses DATABASE_URL, or an embedded PostgreSQL in a temporary directory.
import os from 'node:os'
import http from 'node:http'
import { Readable } from 'node:stream'
import { loadConfig } from '../lib/runtime/config.js'
import { benchScratch } from './lib/scratch.js'
import { openDatabase } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { createMonitor } from '../lib/store/monitors.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createApiKey } from '../lib/store/api-keys.js'
import { foldAllPending } from '../lib/analysis/rollups.js'
import { buildApp } from '../api/app.js'
import { freePort } from '../dev/free-port.js'
import { benchArgs } from './lib/args.js'

const { values } = benchArgs(import.meta.url, { options: { rows: { type: 'string', default: '100000' } } })
const rows = Number(values.rows)
// One grid for every request, so the re-import repeats the same rounds.
const NOW = Math.floor(Date.now() / 60e3) * 60e3

const { dataDir, log, lifecycle } = benchScratch('bench')
const config = loadConfig({ ...process.env, H3LENS_DATA_DIR: dataDir, H3LENS_EMBEDDED_PG_PORT: String(await freePort()), LOG_LEVEL: 'warn' })
try {
  const { pool } = await openDatabase({ config, log, lifecycle })
  await migrate(pool)
  await upsertLocation(pool, { id: 'lab-eu', name: 'EU', region: 'Europe', kind: 'lab' })
  const { secret } = await createApiKey(pool, { name: 'bench-import', role: 'write' })
  const monitor = await createMonitor(pool, { url: 'https://example.com/', interval_s: 60, locations: ['local', 'lab-eu'] }, { allowPrivateTargets: true })
  const app = await buildApp({ db: pool, config, log })
  await app.listen({ port: 0, host: '127.0.0.1' })
  lifecycle.add('api', () => app.close())
  const { port } = /** @type {import('node:net').AddressInfo} */ (app.server.address())

  let peakRss = process.memoryUsage().rss
  const sampler = setInterval(() => { peakRss = Math.max(peakRss, process.memoryUsage().rss) }, 20)
  console.log(`results import — ${os.cpus().length} cores, ${rows} lines per request, idle RSS ${(peakRss / 1e6).toFixed(0)} MB`)
  for (const label of ['first import', 're-import (all skipped)']) {
    peakRss = process.memoryUsage().rss
    const started = performance.now()
    const { status, body, bytes } = await post(port, secret, `/api/v1/monitors/${monitor.id}/results/import`, Readable.from(lines(rows)))
    const s = (performance.now() - started) / 1000
    if (status !== 200) throw new Error(`import answered ${status}: ${body}`)
    console.log(`  ${label.padEnd(24)} ${(bytes / 1e6).toFixed(1)} MB in ${s.toFixed(1)} s  ${Math.round(rows / s)} lines/s  ` +
      `peak RSS ${(peakRss / 1e6).toFixed(0)} MB  ${body}`)
  }
  clearInterval(sampler)
  for (const label of ['comparison, rollups pending', 'comparison, rollups folded']) {
    if (label.endsWith('folded')) while (await foldAllPending(pool, { budgetMs: 10_000 }));
    const started = performance.now()
    const res = await app.inject({ url: `/api/v1/monitors/${monitor.id}/comparison?from=${new Date(Date.now() - 100 * 86400e3).toISOString()}`, headers: { authorization: `Bearer ${secret}` } })
    console.log(`  ${label.padEnd(28)} ${res.statusCode} in ${Math.round(performance.now() - started)} ms`)
  }
} finally {
  await lifecycle.stopAll('done')
}

/** NDJSON of `n` page-probe results, a round (h2 + h3) a minute going back from now. */
function* lines (n) {
  const now = NOW
  let chunk = ''
  for (let i = 0; i < n; i++) {
    const r = i >> 1
    const location = r % 2 ? 'local' : 'lab-eu'
    const mode = i % 2 ? 'h3' : 'h2'
    const ttfb = 50 + (r * 7919 % 1000) / 10
    chunk += JSON.stringify({
      time: new Date(now - (r >> 1) * 60e3).toISOString(), location_id: location, mode, ttfb_ms: ttfb, load_ms: ttfb * 3, connect_ms: ttfb / 3,
      dns_ms: 0.5, tls_ms: ttfb / 4, fcp_ms: ttfb * 2, lcp_ms: ttfb * 2, dcl_ms: ttfb * 2.5, bytes: 15360, requests: 2,
      browser_version: 'Chromium 140', flags: mode === 'h3' ? ['--enable-quic'] : ['--disable-quic']
    }) + '\n'
    if (chunk.length > 64 * 1024) { yield chunk; chunk = '' }
  }
  if (chunk) yield chunk
}

/** @returns {Promise<{ status: number, body: string, bytes: number }>} */
function post (port, key, urlPath, body) {
  return new Promise((resolve, reject) => {
    let bytes = 0
    const req = http.request({ port, method: 'POST', path: urlPath, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-ndjson' } }, (res) => {
      let text = ''
      res.on('data', (c) => { text += c })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, bytes }))
    })
    req.on('error', reject)
    body.on('data', (c) => { bytes += c.length })
    body.pipe(req)
  })
}
