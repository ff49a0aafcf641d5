#!/usr/bin/env node
// Screenshots of a monitor with a WebPageTest location, for the docs: the
// demo data of scripts/screenshots.js for the lab locations, plus a location
// of kind wpt whose rounds are measured by the fake wptagent
// (dev/fake-wptagent.js), replaying a real agent's recorded requests and result zips
// (test/fixtures/wpt/) over HTTP against the running API. In the replayed
// rounds the H3 arm uploads the recorded H3 run (every seventh round the
// recorded failed handshake instead), the H2 arm the same run as an H2 load
// records it (protocol "HTTP/2"; every eleventh round the recorded plain-HTTP
// run, which the protocol check calls a fallback).
// Writes docs/screenshots/wpt-monitor.png and wpt-locations.png.
//
//   node scripts/wpt-screenshot.js [--out docs/screenshots]
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { seedDemo } from '../dev/demo-data.js'
import { startDashboard } from '../dev/dashboard.js'
import { startScratchDatabase } from '../dev/scratch-db.js'
import { launchBrowser, collectPageErrors, useApiKey, waitUntilSettled } from '../dev/browser.js'
import { replayAgent, recordedRequests, recordedFile } from '../dev/fake-wptagent.js'
import { rewriteResultZip } from '../dev/wpt-zip.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createWptKey } from '../lib/store/wpt-keys.js'
import { rebuildRollups } from '../lib/analysis/rollups.js'

const { values } = parseArgs({ options: { out: { type: 'string', default: 'docs/screenshots' }, rounds: { type: 'string', default: '48' } } })
const out = path.resolve(values.out)
fs.mkdirSync(out, { recursive: true })

const db = await startScratchDatabase()
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-wpt-screenshot-'))
let server = null
let chromium = null
let failed = false
try {
  console.log('seeding the demo…')
  const seeded = await seedDemo(db.pool, { hours: 24, stepMinutes: 5 })
  const monitor = seeded.monitors[1]
  await upsertLocation(db.pool, { id: 'wpt-fra', name: 'WebPageTest Frankfurt', region: 'Europe', kind: 'wpt' })
  const { key } = await createWptKey(db.pool, { location: 'wpt-fra' })
  await db.pool.query("UPDATE monitors SET locations = locations || '{wpt-fra}' WHERE id = $1", [monitor.id])
  await db.pool.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at)
     SELECT $1, 'wpt-fra', date_trunc('minute', now()) - make_interval(mins => 5 * g) FROM generate_series(1, $2) g`,
    [monitor.id, Number(values.rounds)])
  // The monitor is a lab page: the API sends it to a WPT location with the
  // lab's resolver rule and pin, read from its data dir as `h3lens start`
  // leaves them (an unshaped lab; the replay loads nothing).
  fs.mkdirSync(path.join(dataDir, 'lab'), { recursive: true })
  fs.writeFileSync(path.join(dataDir, 'lab', 'state.json'), JSON.stringify({ hostname: 'lab.h3lens.test', port: 8443, spki: 'replayed-recording', locations: { local: { address: '127.0.0.1', netns: null } } }))
  server = await startDashboard(db.pool, { H3LENS_DATA_DIR: dataDir })

  console.log(`replaying the recorded wptagent for ${values.rounds} rounds…`)
  const zips = {
    h3: recordedFile('131447_SPIKE_H3_0002_all_x_result.zip'),
    h3Failed: recordedFile('131342_SPIKE_H3_0001_all_x_result.zip'),
    h1: recordedFile('131150_SPIKE_H1_0001_all_x_result.zip')
  }
  let n = 0
  const { jobs } = await replayAgent({
    server: server.url,
    records: recordedRequests('server-requests-run3.jsonl'),
    location: 'wpt-fra',
    key,
    pc: 'wpt-fra-1',
    maxJobs: 2 * Number(values.rounds),
    result: async (job) => {
      const round = Math.floor(n++ / 2)
      const testId = job['Test ID']
      if (job.addCmdLine.includes('--enable-quic')) {
        return round % 7 === 3
          ? { zip: await rewriteResultZip(zips.h3Failed, { testId }), error: 'net::ERR_QUIC_HANDSHAKE_FAILED' }
          : { zip: await rewriteResultZip(zips.h3, { testId }) }
      }
      if (round % 11 === 5) return { zip: await rewriteResultZip(zips.h1, { testId }) }
      return { zip: await rewriteResultZip(zips.h3, { testId, edit: (d) => { for (const r of d.requests) r.protocol = 'HTTP/2' } }) }
    }
  })
  console.log(`${jobs.length} WPT tests run`)
  await rebuildRollups(db.pool)

  chromium = await launchBrowser()
  for (const [name, hash] of [['wpt-monitor', `#/monitors/${monitor.id}?window=24h&metric=ttfb`], ['wpt-locations', '#/locations']]) {
    const page = await chromium.browser.newPage()
    const errors = collectPageErrors(page)
    await useApiKey(page, seeded.apiKey)
    await page.goto(`${server.url}/${hash}`, { waitUntil: 'networkidle0' })
    await waitUntilSettled(page)
    if (name === 'wpt-monitor') await page.waitForSelector('#cdf canvas')
    await page.evaluate('document.activeElement?.blur()')
    const file = path.join(out, `${name}.png`)
    await page.screenshot({ path: file, fullPage: true })
    console.log(`wrote ${path.relative(process.cwd(), file)}`)
    if (errors.length) {
      failed = true
      console.error(`${name}: ${errors.join('\n  ')}`)
    }
    await page.close()
  }
} finally {
  await chromium?.close()
  await server?.close()
  await db.stop()
  fs.rmSync(dataDir, { recursive: true, force: true })
}
process.exitCode = failed ? 1 : 0
