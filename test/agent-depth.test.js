// The agent path end to end, in one process: API on a socket, a real agent
// (claim → measure in Chromium inside an emulated location → net log upload
// → spool → submit), Caddy in the origin namespace. One round of a monitor
// with every probe, the repeat view and net logs on, read back through the
// API as a user would.
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, before, test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import { createTestDatabase } from './helpers/db.js'
import { freePort } from '../dev/free-port.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createAgentToken } from '../lib/store/agents.js'
import { createApiKey } from '../lib/store/api-keys.js'
import { createMonitor } from '../lib/store/monitors.js'
import { startApi } from '../api/server.js'
import { startAgent } from '../agents/main.js'
import { startOrigin } from '../lab/origin.js'
import { labUp, netnsSupport } from '../lab/netns.js'
import { VERSION } from '../lib/runtime/version.js'

const support = await netnsSupport()
const RTT_MS = 40

let database
let dataDir
let topology
let origin
let api
let agent
let key

before(async () => {
  if (!support.ok) return
  database = await createTestDatabase()
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-agent-depth-'))
  topology = await labUp({
    prefix: 'h3t6e',
    runDir: path.join(dataDir, 'run'),
    profiles: [{ name: 'e2e', rtt_ms: RTT_MS, jitter_ms: 0, loss_pct: 0, loss_model: 'bernoulli', down_kbps: 50_000, up_kbps: 20_000, queue_packets: 200 }]
  })
  origin = await startOrigin({ dataDir, port: 8443, netns: topology.originNs })
  const [loc] = topology.locations
  await upsertLocation(database.pool, { id: 'lab-e2e', name: 'E2E (emulated)', region: 'Test', kind: 'lab', profile: loc.profile })
  const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })
  const config = loadConfig({ LOG_LEVEL: 'silent', PORT: String(await freePort()), HOST: '127.0.0.1', H3LENS_DATA_DIR: dataDir })
  api = await startApi({ db: database.pool, config, log })
  key = (await createApiKey(database.pool, { name: 'test', role: 'read' })).secret
  const { token } = await createAgentToken(database.pool, { location: 'lab-e2e' })
  agent = await startAgent({
    config: { ...config, apiUrl: api.url }, log, token, location: 'lab-e2e',
    lab: { spki: origin.spki, hostname: origin.hostname, address: loc.originAddress, netns: loc.ns }
  })
})

after(async () => {
  await agent?.stop()
  await api?.close()
  await origin?.stop()
  await topology?.down()
  await database?.drop()
  if (dataDir) await rm(dataDir, { recursive: true, force: true })
})

const get = async (url) => {
  const res = await fetch(`${api.url}${url}`, { headers: { authorization: `Bearer ${key}` } })
  assert.equal(res.status, 200, `${url}: ${res.status}`)
  return res
}

test('one round with every probe and the repeat view yields per-request truth, RTT units, a capability matrix and net logs',
  { skip: !support.ok && `needs network namespaces: ${support.reason}` }, async () => {
    const monitor = await createMonitor(database.pool, {
      url: `${origin.baseUrl}/page-15k.html`,
      locations: ['lab-e2e'],
      // The forced arms, whose every probe this round checks (the auto arm: test/auto-arm.test.js).
      modes: ['h2', 'h3'],
      interval_s: 3600,
      probes: ['page', 'parallel', 'upload'],
      repeat_view: true,
      options: { parallel_url: '/noop', parallel_requests: 5, upload_bytes: 256 * 1024, netlog: 'always' }
    })
    const { rows: [job] } = await database.pool.query(
      "INSERT INTO jobs (monitor_id, location_id, due_at) VALUES ($1, 'lab-e2e', date_trunc('second', now())) RETURNING id", [monitor.id])
    const until = Date.now() + 180_000
    for (;;) {
      const { rows } = await database.pool.query('SELECT state, last_error FROM jobs WHERE id = $1', [job.id])
      if (rows[0].state === 'done') break
      assert.ok(rows[0].state !== 'failed', `round failed: ${rows[0].last_error}`)
      assert.ok(Date.now() < until, `round not done in time (state ${rows[0].state})`)
      await sleep(250)
    }

    const { items } = await (await get(`/api/v1/monitors/${monitor.id}/results?limit=20`)).json()
    assert.deepEqual(items.map((r) => `${r.probe}/${r.view}/${r.mode}`).sort(), [
      'page/first/h2', 'page/first/h3', 'page/repeat/h2', 'page/repeat/h3', 'parallel/first/h2', 'parallel/first/h3', 'upload/first/h2', 'upload/first/h3'
    ])
    for (const r of items) {
      const what = `${r.probe}/${r.view}/${r.mode}`
      assert.equal(r.status, 'ok', `${what}: ${r.error}`)
      assert.equal(r.observed_protocol, r.mode, what)
      assert.match(r.browser_version, /Chrome\/\d+/, what)
      assert.equal(r.agent_version, VERSION, what)
      assert.ok(r.flags.includes(r.mode === 'h3' ? '--origin-to-force-quic-on=lab.h3lens.test:8443' : '--disable-quic'), what)
      assert.ok(r.flags.some((f) => f.startsWith('--log-net-log=')), `${what}: captured`)
      assert.equal(r.rtt_ms, RTT_MS, what)
      assert.ok(Array.isArray(r.notes), what)
      const detail = await (await get(`/api/v1/results/${r.id}`)).json()
      const requests = detail.details.requests
      assert.ok(requests.length > 0, what)
      for (const q of requests.filter((x) => !x.from_cache)) {
        assert.equal(q.protocol, r.mode, `${what} ${q.url}`)
        assert.equal(typeof q.connection_id, 'number', `${what} ${q.url}`)
        assert.equal(typeof q.connection_reused, 'boolean', `${what} ${q.url}`)
        assert.ok(q.timing && 'wait_ms' in q.timing, `${what} ${q.url}: timing phases`)
      }
      if (r.view === 'first') {
        // A cold connection: connect and TTFB in round trips, never under the floor.
        assert.ok(r.connect_rtt >= (r.mode === 'h3' ? 0.9 : 1.9), `${what}: connect ${r.connect_rtt} RTT`)
        assert.ok(r.ttfb_rtt > r.connect_rtt, `${what}: ttfb ${r.ttfb_rtt} RTT`)
        assert.equal(detail.details.netlog.uploaded, true, `${what}: ${detail.details.netlog.error}`)
      } else {
        assert.equal(detail.details.repeat.document_connection_reused, true, what)
        assert.ok(r.notes.some((n) => n.code === 'connection_reused'), what)
      }
      if (r.probe === 'parallel') assert.equal(detail.details.samples.length, 5, what)
      if (r.probe === 'upload') assert.ok(r.upload_mbps > 0 && r.upload_mbps <= 20.5, `${what}: ${r.upload_mbps} Mbit/s`)
    }
    const firstH3 = items.find((r) => r.probe === 'page' && r.view === 'first' && r.mode === 'h3')
    assert.equal(firstH3.h3_request_share, 1)
    assert.equal(firstH3.h3_byte_share, 1)

    const matrix = await (await get(`/api/v1/monitors/${monitor.id}/capabilities`)).json()
    const lab = matrix.origins.find((o) => o.origin === origin.baseUrl)
    assert.ok(lab, JSON.stringify(matrix))
    assert.equal(lab.h3_advertised, true)
    assert.equal(lab.served_h3, true)
    assert.match(lab.locations[0].alt_svc, /h3=":8443"/)

    const netlog = JSON.parse(gunzipSync(Buffer.from(await (await get(`/api/v1/results/${firstH3.id}/netlog`)).arrayBuffer())).toString())
    const quicSession = netlog.constants.logEventTypes.QUIC_SESSION
    assert.ok(netlog.events.some((e) => e.type === quicSession), 'the net log has the QUIC session')
  })
