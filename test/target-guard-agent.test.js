// The private-target guard at run time, with a real agent, real Chromium and
// the real API: a monitor saved while its name resolved to a public address
// is measured after the name has been pointed at this machine's loopback
// (DNS rebinding). Every run of every probe, both arms and the repeat view
// is stored as an error that names the guard, and the internal service the
// name now points at never sees a connection. Names resolve through a DNS
// server the test controls (this machine has no outside DNS), which both
// the API and the agent use (H3LENS_DNS_SERVERS).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { once } from 'node:events'
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
import { freePort } from './helpers/process.js'
import { startDnsServer } from './helpers/dns-server.js'

const GUARD = 'blocked by the private-target guard: host rebind.test resolves to 127.0.0.1 (loopback)'
let database, dns, dataDir, internal, internalPort
const connections = []
const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })

before(async () => {
  database = await createTestDatabase()
  dns = await startDnsServer({ 'rebind.test': ['93.184.215.14'] })
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-guard-agent-'))
  // What an attacker would want the agent to read: a service on the agent's loopback.
  internal = http.createServer((req, res) => res.end('internal secret: do not store'))
  internal.on('connection', (socket) => connections.push(socket.remoteAddress))
  internal.listen(0, '127.0.0.1')
  await once(internal, 'listening')
  internalPort = /** @type {import('node:net').AddressInfo} */ (internal.address()).port
})

after(async () => {
  internal?.close()
  await dns?.close()
  await database?.drop()
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
})

test('a name that resolves to loopback only after the monitor was saved is blocked on every request of the run, and nothing reaches the internal service', async () => {
  const config = loadConfig({
    PORT: String(await freePort()), H3LENS_DATA_DIR: dataDir, LOG_LEVEL: 'silent', H3LENS_DNS_SERVERS: dns.server, H3LENS_PAGE_TIMEOUT_MS: '10000'
  })
  const api = await startApi({ db: database.pool, config, log })
  const stops = [() => api.close()]
  try {
    const key = (await createApiKey(database.pool, { name: 'guard', role: 'write' })).secret
    await upsertLocation(database.pool, { id: 'eu-west', name: 'Europe', region: 'Europe', kind: 'real' })
    const base = `http://rebind.test:${internalPort}`
    const res = await fetch(`${api.url}/api/v1/monitors`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        url: `${base}/admin`, locations: ['eu-west'], interval_s: 3600, modes: ['h2', 'h3'], probes: ['page', 'parallel', 'upload'], repeat_view: true,
        options: { parallel_url: `${base}/noop`, upload_url: `${base}/upload`, upload_bytes: 1024 }
      })
    })
    assert.equal(res.status, 201, await res.clone().text())
    const monitor = await res.json()

    // Saved while public; now the name points at the agent's own loopback.
    dns.set('rebind.test', ['127.0.0.1'])
    await scheduleDueJobs(database.pool, { maxAttempts: 1 })
    const { token } = await createAgentToken(database.pool, { location: 'eu-west' })
    const agent = await startAgent({ config: { ...config, apiUrl: api.url }, log, token, location: 'eu-west' })
    stops.unshift(() => agent.stop())

    let rows = []
    for (const until = Date.now() + 90_000; Date.now() < until;) {
      ({ rows } = await database.pool.query(
        `SELECT r.probe, r.mode, r.view, r.status, r.error, r.bytes, r.notes, r.details, j.state FROM results r JOIN jobs j ON j.id = r.job_id
          WHERE r.monitor_id = $1 ORDER BY r.probe, r.mode, r.view`, [monitor.id]))
      if (rows.length && rows[0].state === 'done') break
      await sleep(500)
    }
    assert.deepEqual(rows.map((r) => `${r.probe}/${r.mode}/${r.view}`), [
      'page/h2/first', 'page/h2/repeat', 'page/h3/first', 'page/h3/repeat', 'parallel/h2/first', 'parallel/h3/first', 'upload/h2/first', 'upload/h3/first'
    ], 'every run of the round was stored')
    for (const r of rows) {
      assert.equal(r.status, 'error', `${r.probe}/${r.mode}/${r.view}`)
      if (r.view === 'repeat') assert.equal(r.error, `not run: the first view failed (${GUARD})`)
      else assert.equal(r.error, GUARD, `${r.probe}/${r.mode}: ${r.error}`)
      assert.equal(r.bytes, 0)
      assert.doesNotMatch(JSON.stringify(r), /internal secret/)
    }
    assert.deepEqual(connections, [], 'no connection reached the internal service: not the page, the probes nor the RTT ping')
  } finally {
    for (const stop of stops) await stop()
  }
})
