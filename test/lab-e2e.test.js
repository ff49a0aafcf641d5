// An emulated region end to end: a 150 ms RTT link built by linkem between
// network namespaces, Caddy in the origin namespace, Chromium in the
// location's namespace, driven by a real agent through the real API.
// H2 on a fresh connection needs TCP + TLS 1.3 = 2 RTT to connect and one
// more for the request, so its TTFB is 3 × 150 ms plus what the server and
// the machine's CPUs add. The link can make neither shorter, and one round
// trip more or less than that shows: connect must be at least 2 RTT less 5%
// and under 2.5 RTT, TTFB at least 3 RTT less 5% and under 3.5 RTT. The
// server's and the CPUs' part does not grow with the RTT: on a loaded
// 2-core machine it reached 46 ms (a CI run, when this link was 60 ms and
// half a round trip 30 ms), well inside half of 150 ms.
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
import { createTestDatabase } from './helpers/db.js'
import { freePort } from '../dev/free-port.js'

const support = await netnsSupport()
const ROUNDS = 7
const RTT = 150

test('through a 150 ms RTT region, H2 TTFB is 3 RTT and the agent records the location', { skip: support.ok ? false : `needs root and /dev/net/tun: ${support.reason}` }, async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-lab-e2e-'))
  const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })
  const db = await createTestDatabase()
  const stops = []
  try {
    /** @type {import('../lab/profiles.js').Profile} */
    const profile = { name: 't-e2e', region: 'Test', rtt_ms: RTT, jitter_ms: 0, loss_pct: 0, loss_model: /** @type {const} */ ('bernoulli'), down_kbps: 100000, up_kbps: 100000, queue_packets: 1000 }
    const lab = await labUp({ profiles: [profile], prefix: 'h3te', runDir: path.join(dataDir, 'run'), log })
    stops.push(() => lab.down())
    const origin = await startOrigin({ dataDir, port: await freePort(), netns: lab.originNs, log })
    stops.push(() => origin.stop())
    const loc = lab.locations[0]
    await upsertLocation(db.pool, { id: 't-e2e', name: 'Test region', region: 'Test', kind: 'lab', profile })

    const config = loadConfig({ PORT: String(await freePort()), H3LENS_DATA_DIR: dataDir, LOG_LEVEL: 'silent', H3LENS_PUBLIC_READ: 'true' })
    const api = await startApi({ db: db.pool, config, log })
    stops.push(() => api.close())

    const monitor = await createMonitor(db.pool, { url: `${origin.baseUrl}/page-15k.html`, locations: ['t-e2e'], modes: ['h2'], interval_s: 10, paused: true })
    await db.pool.query(`INSERT INTO jobs (monitor_id, location_id, due_at)
      SELECT $1, 't-e2e', now() - make_interval(secs => g) FROM generate_series(1, $2) g`, [monitor.id, ROUNDS])
    await db.pool.query('UPDATE monitors SET paused = false WHERE id = $1', [monitor.id])
    const { token } = await createAgentToken(db.pool, { location: 't-e2e' })
    const agent = await startAgent({ config: { ...config, apiUrl: api.url }, log, token, location: 't-e2e', lab: { spki: origin.spki, address: loc.originAddress, netns: loc.ns } })
    stops.push(() => agent.stop())

    const until = Date.now() + 120000
    let rows = []
    while (Date.now() < until) {
      rows = (await db.pool.query('SELECT location_id, status, observed_protocol, ttfb_ms, connect_ms, rtt_ms, error FROM results WHERE monitor_id = $1', [monitor.id])).rows
      if (rows.length >= ROUNDS) break
      await sleep(100)
    }
    t.diagnostic(`H2 TTFB/connect ms: ${rows.map((r) => `${r.ttfb_ms}/${r.connect_ms}`).join(', ')}`)
    assert.equal(rows.length, ROUNDS, 'every round measured')
    for (const r of rows) {
      assert.equal(r.location_id, 't-e2e')
      assert.equal(r.status, 'ok', r.error)
      assert.equal(r.observed_protocol, 'h2')
      assert.equal(r.rtt_ms, RTT)
    }
    const median = (/** @type {'ttfb_ms' | 'connect_ms'} */ key) => rows.map((r) => r[key]).sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]
    const connect = median('connect_ms')
    assert.ok(connect >= 0.95 * 2 * RTT && connect < 2.5 * RTT, `median H2 connect ${connect} ms, expected 2 RTT (${2 * RTT} ms) and less than half a round trip more`)
    const ttfb = median('ttfb_ms')
    assert.ok(ttfb >= 0.95 * 3 * RTT && ttfb < 3.5 * RTT, `median H2 TTFB ${ttfb} ms, expected 3 RTT (${3 * RTT} ms) and less than half a round trip more`)
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {})
    await db.drop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
})
