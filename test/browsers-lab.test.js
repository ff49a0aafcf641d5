// Chromium and Firefox side by side, end to end: a lab region (linkem
// between network namespaces, Caddy in the origin's), the real API, a real
// agent that has both browsers and says so when it claims, the scheduler's
// rounds. A monitor that runs in both browsers gets a round per browser;
// each round runs in its browser, and its results land in that browser's
// comparison only.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { netnsSupport, labUp } from '../lab/netns.js'
import { startOrigin } from '../lab/origin.js'
import { startApi } from '../api/server.js'
import { startAgent } from '../agents/main.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createMonitor } from '../lib/store/monitors.js'
import { createAgentToken } from '../lib/store/agents.js'
import { scheduleDueJobs } from '../lib/store/jobs.js'
import { createTestDatabase } from './helpers/db.js'
import { freePort } from '../dev/free-port.js'

const support = await netnsSupport()
const FIREFOX = process.env.H3LENS_FIREFOX ?? '/usr/bin/firefox-esr'
const skip = (!support.ok && `needs root and /dev/net/tun: ${support.reason}`) || (!fs.existsSync(FIREFOX) && `needs Firefox at ${FIREFOX} (Debian package firefox-esr)`)
const LOCATION = 't-br'

test('a monitor in both browsers gets a round per browser, and each browser\'s runs land in its own comparison', { skip }, async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-browsers-lab-'))
  const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })
  const db = await createTestDatabase()
  /** @type {(() => Promise<unknown>)[]} */
  const stops = []
  try {
    /** @type {import('../lab/profiles.js').Profile} */
    const profile = { name: LOCATION, region: 'Test', rtt_ms: 30, jitter_ms: 0, loss_pct: 0, loss_model: /** @type {const} */ ('bernoulli'), down_kbps: 100000, up_kbps: 100000, queue_packets: 1000 }
    const lab = await labUp({ profiles: [profile], prefix: 'h3tb', runDir: path.join(dataDir, 'run'), log })
    stops.push(() => lab.down())
    const origin = await startOrigin({ dataDir, port: await freePort(), netns: lab.originNs, log })
    stops.push(() => origin.stop())
    const loc = lab.locations[0]
    await upsertLocation(db.pool, { id: LOCATION, name: 'Test region', region: 'Test', kind: 'lab', profile })

    const config = loadConfig({ PORT: String(await freePort()), H3LENS_DATA_DIR: dataDir, LOG_LEVEL: 'silent', H3LENS_PUBLIC_READ: 'true', H3LENS_FIREFOX: FIREFOX })
    const api = await startApi({ db: db.pool, config, log })
    stops.push(() => api.close())
    const { token } = await createAgentToken(db.pool, { location: LOCATION })
    const agent = await startAgent({
      config: { ...config, apiUrl: api.url }, log, token, location: LOCATION,
      lab: { spki: origin.spki, caPath: origin.caPath, address: loc.originAddress, port: origin.port, netns: loc.ns }
    })
    stops.push(() => agent.stop())

    // The agent says it has Firefox when it claims; its location then has it.
    const until = Date.now() + 30_000
    let browsers = []
    while (Date.now() < until) {
      browsers = (await db.pool.query('SELECT browsers FROM locations WHERE id = $1', [LOCATION])).rows[0].browsers
      if (browsers.includes('firefox')) break
      await sleep(200)
    }
    assert.deepEqual(browsers, ['chromium', 'firefox'])

    // One round per browser, as the scheduler makes it.
    const monitor = await createMonitor(db.pool, { url: `${origin.baseUrl}/page-15k.html`, locations: [LOCATION], modes: ['h2', 'h3'], browsers: ['chromium', 'firefox'], interval_s: 3600 })
    await scheduleDueJobs(db.pool, { maxAttempts: 1 })
    const jobs = (await db.pool.query('SELECT id, browser FROM jobs WHERE monitor_id = $1 ORDER BY browser', [monitor.id])).rows
    assert.deepEqual(jobs.map((j) => j.browser), ['chromium', 'firefox'])

    const done = Date.now() + 150_000
    let rows = []
    while (Date.now() < done) {
      rows = (await db.pool.query(`SELECT r.browser, j.browser AS job_browser, r.mode, r.status, r.observed_protocol, r.browser_version, r.flags, r.error
        FROM results r JOIN jobs j ON j.id = r.job_id WHERE r.monitor_id = $1 ORDER BY r.browser, r.mode`, [monitor.id])).rows
      if (rows.length >= 4) break
      await sleep(250)
    }
    assert.equal(rows.length, 4, JSON.stringify(rows.map((r) => [r.browser, r.mode, r.status, r.error])))
    for (const r of rows) {
      assert.equal(r.browser, r.job_browser, 'a result is its round\'s browser\'s')
      assert.equal(r.status, 'ok', `${r.browser} ${r.mode}: ${r.error}`)
      assert.equal(r.observed_protocol, r.mode, `${r.browser} ${r.mode}`)
      // The run was made in that browser: its version and its switches say so.
      if (r.browser === 'firefox') {
        assert.match(r.browser_version, /^firefox\//)
        assert.ok(r.flags.some((/** @type {string} */ f) => f.startsWith('network.http.http3.enable=')), r.flags.join(' '))
      } else {
        assert.ok(r.flags.includes('--headless=new'), r.flags.join(' '))
      }
    }

    // Each browser's comparison counts its own round, with both arms ok.
    const from = encodeURIComponent(new Date(Date.now() - 3600e3).toISOString())
    for (const browser of ['chromium', 'firefox']) {
      const res = await fetch(`${api.url}/api/v1/monitors/${monitor.id}/comparison?metric=ttfb_ms&browser=${browser}&from=${from}`, { headers: { 'cache-control': 'no-cache' } })
      assert.equal(res.status, 200)
      const body = await res.json()
      const at = body.locations.find((/** @type {any} */ l) => l.location_id === LOCATION)
      assert.equal(at.rounds.total, 1, `${browser}: one round`)
      assert.equal(at.rounds.matched, 1, `${browser}: both arms loaded over their protocol`)
      assert.equal(at.arms.h3.ok, 1)
    }
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {})
    await db.drop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
})
