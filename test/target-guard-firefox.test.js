// The private-target guard in Firefox runs (docs/BROWSERS.md): as in
// test/target-guard-agent.test.js for Chromium, a monitor saved while its
// name resolved to a public address is measured after the name was pointed
// at this machine's loopback (DNS rebinding). With a real agent, real
// Firefox ESR and the real API, every Firefox run is stored as an error
// that names the guard, and the internal service never sees a connection.
// run-tests: side — its runs are refused by the guard, its services and DNS server are on free ports, and it times no page load
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { startApi } from '../api/server.js'
import { startAgent } from '../agents/main.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { createApiKey } from '../lib/store/api-keys.js'
import { createAgentToken } from '../lib/store/agents.js'
import { upsertLocation } from '../lib/store/locations.js'
import { scheduleDueJobs } from '../lib/store/jobs.js'
import { createTestDatabase } from './helpers/db.js'
import { startInternalService } from './helpers/receiver.js'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { createFirefoxPool } from '../agents/browsers/firefox.js'
import { createJobRunner } from '../agents/job-runner.js'
import { startOrigin } from '../lab/origin.js'
import { freePort } from '../dev/free-port.js'
import { startDnsServer } from '../dev/dns-server.js'

const FIREFOX = process.env.H3LENS_FIREFOX ?? '/usr/bin/firefox-esr'
const LOCATION = 'eu-west'
const skip = !fs.existsSync(FIREFOX) && `needs Firefox at ${FIREFOX} (Debian package firefox-esr)`
let database, dns, dataDir, internal
const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })

before(async () => {
  if (skip) return
  database = await createTestDatabase()
  dns = await startDnsServer({ 'rebind.test': ['93.184.215.14'] })
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-guard-firefox-'))
  internal = await startInternalService()
})

after(async () => {
  internal?.close()
  await dns?.close()
  await database?.drop()
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
})

test('in Firefox, a name rebound to loopback after the monitor was saved is blocked, and nothing reaches the internal service', { skip }, async () => {
  const config = loadConfig({
    PORT: String(await freePort()), H3LENS_DATA_DIR: dataDir, LOG_LEVEL: 'silent', H3LENS_DNS_SERVERS: dns.server, H3LENS_PAGE_TIMEOUT_MS: '10000', H3LENS_FIREFOX: FIREFOX
  })
  const api = await startApi({ db: database.pool, config, log })
  const stops = [() => api.close()]
  try {
    const key = (await createApiKey(database.pool, { name: 'guard', role: 'write' })).secret
    await upsertLocation(database.pool, { id: 'eu-west', name: 'Europe', region: 'Europe', kind: 'real' })
    const res = await fetch(`${api.url}/api/v1/monitors`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://rebind.test:${internal.port}/admin`, locations: ['eu-west'], interval_s: 3600, modes: ['h2', 'h3'], browsers: ['firefox'], paused: true })
    })
    assert.equal(res.status, 201, await res.clone().text())
    const monitor = await res.json()

    const { token } = await createAgentToken(database.pool, { location: 'eu-west' })
    const agent = await startAgent({ config: { ...config, apiUrl: api.url }, log, token, location: 'eu-west' })
    stops.unshift(() => agent.stop())
    // The agent says it has Firefox when it claims; then the location gets Firefox rounds.
    for (const until = Date.now() + 30_000; Date.now() < until;) {
      const { rows: [l] } = await database.pool.query('SELECT browsers FROM locations WHERE id = $1', [LOCATION])
      if (l.browsers.includes('firefox')) break
      await sleep(100)
    }
    // Saved while public; now the name points at the agent's own loopback.
    dns.set('rebind.test', ['127.0.0.1'])
    await database.pool.query('UPDATE monitors SET paused = false WHERE id = $1', [monitor.id])
    await scheduleDueJobs(database.pool, { maxAttempts: 1 })

    let rows = []
    for (const until = Date.now() + 120_000; Date.now() < until;) {
      ({ rows } = await database.pool.query(
        `SELECT r.browser, r.mode, r.status, r.error, r.bytes, r.flags, j.state FROM results r JOIN jobs j ON j.id = r.job_id
          WHERE r.monitor_id = $1 ORDER BY r.mode`, [monitor.id]))
      if (rows.length && rows[0].state === 'done') break
      await sleep(200)
    }
    assert.deepEqual(rows.map((r) => `${r.browser}/${r.mode}`), ['firefox/h2', 'firefox/h3'], 'both arms of the Firefox round were stored')
    for (const r of rows) {
      assert.equal(r.status, 'error', `${r.mode}: ${r.error}`)
      assert.match(r.error, /private-target guard/, r.mode)
      assert.ok(r.flags.some((/** @type {string} */ f) => /^firefox: private-target guard/.test(f)), `the run records that it was guarded: ${r.flags}`)
      assert.doesNotMatch(JSON.stringify(r), /internal secret/)
    }
    assert.deepEqual(internal.connections, [], 'no connection reached the internal service')
  } finally {
    for (const stop of stops) await stop()
  }
})

test('a Firefox lab run in local mode reaches the lab origin only: a probe aimed at loopback or at another name reaches nothing', { skip }, async () => {
  // Firefox resolves every name to the lab's address, here this machine's
  // loopback. Journeys are Chromium's; a Firefox round's own requests beyond
  // the page are its probes', whose URLs may be on another origin.
  const origin = await startOrigin({ dataDir: path.join(dataDir, 'lab-escape'), port: await freePort(), log })
  const chromium = createBrowserPool({ dataDir, log })
  const firefoxPool = createFirefoxPool({ dataDir, log, executablePath: FIREFOX })
  try {
    const run = createJobRunner({ pool: chromium, firefoxPool, lab: { spki: origin.spki, caPath: origin.caPath, address: '127.0.0.1', port: origin.port, netns: null }, timeoutMs: 15_000, log })
    const targets = [`https://elsewhere.example:${internal.port}/`, `http://127.0.0.1:${internal.port}/`]
    const rounds = await Promise.all(targets.map((target, i) => run({
      id: i + 1, url: `${origin.baseUrl}/page-15k.html`, modes: ['h2'], probes: ['parallel'], browser: 'firefox', options: { parallel_url: target, allow_cross_origin: true }
    }, { location: { kind: 'lab' } })))
    for (const [i, results] of rounds.entries()) {
      const parallel = results.find((r) => r.probe === 'parallel')
      assert.equal(parallel?.status, 'error', `${targets[i]}: ${JSON.stringify(parallel?.details?.samples ?? parallel)}`)
    }
    assert.deepEqual(internal.connections, [], 'the service on the lab host\'s loopback was never reached')
  } finally {
    await firefoxPool.close()
    await chromium.close()
    await origin.stop()
  }
})
