// The auto arm ("as users get it") end to end: a real agent runs rounds of
// h2, h3 and auto in Chromium inside an emulated location, Caddy serves the
// page in the origin namespace, and the answer is read through the API as
// a user would: which protocol each visit got and why, the H3 share per
// visit, and the location's story in words.
//   - a normal path: the first visit comes over H2 (the origin is not yet
//     known to speak H3), the returning visit over H3 (learnt from Alt-Svc);
//   - a path that blocks UDP: forced H3 fails fast, the auto arm falls back
//     to H2, and the words say QUIC is blocked on this path;
//   - an origin without H3 (the lab's h2-only port): no visit over H3, "the
//     origin does not announce H3".
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createTestDatabase } from './helpers/db.js'
import { runRounds as runLabRounds } from './helpers/rounds.js'
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

const support = await netnsSupport()
const skip = !support.ok && `needs network namespaces: ${support.reason}`
// Rounds of the normal path: enough to tell "≥ 90% of returning visits over
// H3" from chance, few enough to keep the file near a minute.
const ROUNDS = 10

let database
let dataDir
let topology
let origin
let api
/** @type {any[]} */
let agents = []
let key

before(async () => {
  if (!support.ok) return
  database = await createTestDatabase()
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-auto-'))
  topology = await labUp({
    prefix: 'h3tau',
    runDir: path.join(dataDir, 'run'),
    profiles: [
      // 60 ms: a returning visit races QUIC (one round trip) against TCP
      // and TLS (two), so QUIC's lead is a round trip, far beyond what a
      // busy machine's scheduling takes from either (20 ms was not).
      { name: 'open', rtt_ms: 60, jitter_ms: 0, loss_pct: 0, loss_model: 'bernoulli', down_kbps: 50_000, up_kbps: 20_000, queue_packets: 200 },
      { name: 'blocked', rtt_ms: 20, jitter_ms: 0, loss_pct: 0, loss_model: 'bernoulli', down_kbps: 50_000, up_kbps: 20_000, queue_packets: 200, block_udp: true }
    ]
  })
  origin = await startOrigin({ dataDir, port: 8443, noH3Port: 8444, netns: topology.originNs })
  const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })
  const config = loadConfig({ LOG_LEVEL: 'silent', PORT: String(await freePort()), HOST: '127.0.0.1', H3LENS_DATA_DIR: dataDir })
  api = await startApi({ db: database.pool, config, log })
  key = (await createApiKey(database.pool, { name: 'test', role: 'read' })).secret
  for (const loc of topology.locations) {
    const id = `lab-${loc.name}`
    await upsertLocation(database.pool, { id, name: loc.name, region: 'Test', kind: 'lab', profile: loc.profile })
    // Two agents on the open path, which has two monitors' rounds to run.
    for (let i = 0; i < (loc.name === 'open' ? 2 : 1); i++) {
      const { token } = await createAgentToken(database.pool, { location: id })
      agents.push(await startAgent({
        config: { ...config, apiUrl: api.url }, log, token, location: id,
        lab: { spki: origin.spki, hostname: origin.hostname, address: loc.originAddress, netns: loc.ns }
      }))
    }
  }
})

after(async () => {
  for (const agent of agents) await agent.stop()
  await api?.close()
  await origin?.stop()
  await topology?.down()
  await database?.drop()
  if (dataDir) await rm(dataDir, { recursive: true, force: true })
})

/** @param {string} url */
async function get (url) {
  const res = await fetch(`${api.url}${url}`, { headers: { authorization: `Bearer ${key}` } })
  assert.equal(res.status, 200, `${url}: ${res.status} ${await res.clone().text()}`)
  return res.json()
}

/**
 * Queue `n` rounds of a monitor at a location and wait until its agents have
 * done them all (helpers/rounds.js).
 * @param {number} monitorId
 * @param {number} n
 * @param {string} [location]
 */
const runRounds = (monitorId, n, location = 'lab-open') => runLabRounds(database.pool, { monitorId, n, location })

// The monitors' rounds run at the same time: the open path's two monitors
// on its two agents, the UDP-blocked path's on its own.
describe('the normal path, the UDP-blocked path and an origin without H3, side by side', { concurrency: true }, () => {
  test('a normal path: the first visit is over H2 (not yet known), the returning visit over H3 (learnt from Alt-Svc)', { skip }, async () => {
    const monitor = await createMonitor(database.pool, { url: `${origin.baseUrl}/page-15k.html`, locations: ['lab-open'], interval_s: 3600 })
    assert.deepEqual(monitor.modes, ['h2', 'h3', 'auto'], 'new monitors get the auto arm')
    await runRounds(monitor.id, ROUNDS)

    const { items } = await get(`/api/v1/monitors/${monitor.id}/results?limit=100&mode=auto`)
    const first = items.filter((r) => r.view === 'first')
    const returning = items.filter((r) => r.view === 'returning')
    assert.equal(first.length, ROUNDS)
    assert.equal(returning.length, ROUNDS)
    for (const r of items) assert.equal(r.status, 'ok', `${r.view}: ${r.error}`)
    // Nothing forces a protocol in the auto arm, beyond the lab's unused-port entry.
    for (const r of items) assert.ok(!r.flags.some((f) => f === '--disable-quic' || /force-quic-on=lab\.h3lens\.test:8443/.test(f)), r.flags.join(' '))
    assert.ok(first.every((r) => r.observed_protocol === 'h2'), `first visits: ${first.map((r) => r.observed_protocol)}`)
    const overH3 = returning.filter((r) => r.observed_protocol === 'h3').length
    assert.ok(overH3 >= 0.9 * ROUNDS, `returning visits over H3: ${overH3} of ${ROUNDS}`)

    const detail = await get(`/api/v1/results/${first[0].id}`)
    assert.equal(detail.details.protocol_reason.code, 'not_known')
    assert.equal(detail.details.protocol_reason.text, 'Not H3: the origin was not yet known to speak H3')
    const back = await get(`/api/v1/results/${returning.find((r) => r.observed_protocol === 'h3').id}`)
    assert.equal(back.details.protocol_reason.text, 'H3: learnt from Alt-Svc')
    assert.match(back.details.protocol_reason.alternate_protocol_usage, /^alternativeJobWon/)
    const doc = back.details.requests.find((q) => q.type === 'Document')
    assert.equal(doc.protocol, 'h3')
    assert.equal(doc.connection_reused, false, 'a returning visit starts without live connections')
    // The forced arms of a round with the auto arm run in browsers just
    // started, as its visits do, not in the pool's warm ones (which say which
    // pooled context they took): the arms differ in their protocol only.
    const { items: forced } = await get(`/api/v1/monitors/${monitor.id}/results?limit=100&mode=h2`)
    assert.equal(forced.length, ROUNDS)
    for (const r of forced) assert.equal((await get(`/api/v1/results/${r.id}`)).details.context, undefined, 'no pooled context')

    const answer = await get(`/api/v1/monitors/${monitor.id}/auto?percentiles=50`)
    const [loc] = answer.locations
    assert.equal(loc.location_id, 'lab-open')
    assert.equal(loc.shares.first.navigation_share.rate, 0)
    assert.ok(loc.shares.returning.navigation_share.rate >= 0.9, JSON.stringify(loc.shares.returning))
    assert.ok(loc.shares.returning.navigation_share.lo > 0.5, 'the Wilson interval of 9+ of 10 lies above one half')
    assert.equal(loc.story.code, 'h3_returning')
    assert.match(loc.story.text, /^Users get H3 from their second visit on/)
    const row = loc.visits.returning.rows[0]
    assert.equal(row.rounds, loc.visits.returning.rounds.used)
    assert.ok(row.rounds >= 0.9 * ROUNDS, `matched rounds: ${row.rounds}`)
    assert.ok(row.auto_ms > 0 && row.h2_ms > 0 && row.h3_ms > 0)
    for (const c of ['auto_vs_h2', 'auto_vs_h3', 'h3_vs_h2']) assert.ok(row.contrasts[c].verdict, c)
  })

  test('a path that blocks UDP: forced H3 fails fast, the auto arm falls back to H2, and the words say QUIC is blocked', { skip }, async () => {
    const monitor = await createMonitor(database.pool, { url: `${origin.baseUrl}/page-15k.html`, locations: ['lab-blocked'], interval_s: 3600 })
    // Four rounds: forced H3 failing in 4 of 4 is a majority at 95% (3 of 3 is not).
    await runRounds(monitor.id, 4, 'lab-blocked')
    const { items } = await get(`/api/v1/monitors/${monitor.id}/results?limit=100`)
    const forced = items.filter((r) => r.mode === 'h3')
    assert.equal(forced.length, 4)
    for (const r of forced) assert.equal(r.status, 'error', 'forced H3 fails: no QUIC gets through')
    const auto = items.filter((r) => r.mode === 'auto')
    // Chromium does not wait for QUIC to give up (as forced H3 does, seconds
    // later): TCP carries the page as fast as in the forced H2 arm, loaded
    // beside it on the same machine, give or take what a busy machine adds.
    const h2Load = Math.max(...items.filter((r) => r.mode === 'h2' && r.status === 'ok').map((r) => r.load_ms))
    for (const r of auto) {
      assert.equal(r.status, 'ok', `${r.view}: ${r.error}`)
      assert.equal(r.observed_protocol, 'h2', `${r.view}: users get H2`)
      assert.ok(r.load_ms < h2Load + 2000, `${r.view}: load ${r.load_ms} ms, forced H2 at most ${h2Load} ms`)
    }
    const reasons = await Promise.all(auto.filter((r) => r.view === 'returning').map(async (r) => (await get(`/api/v1/results/${r.id}`)).details.protocol_reason))
    for (const reason of reasons) assert.ok(['tcp_won', 'broken'].includes(reason.code), `returning visit: ${JSON.stringify(reason)}`)

    const answer = await get(`/api/v1/monitors/${monitor.id}/auto?percentiles=50`)
    const [loc] = answer.locations
    assert.equal(loc.shares.returning.navigation_share.rate, 0)
    assert.equal(loc.visits.first.failures.h3.failed, 4)
    assert.equal(loc.story.code, 'quic_blocked')
    assert.match(loc.story.text, /^QUIC blocked on this path: users get H2/)
  })

  test('an origin without H3: no visit over H3, and the words say the origin does not announce it', { skip }, async () => {
    const monitor = await createMonitor(database.pool, { url: `${origin.noH3BaseUrl}/page-15k.html`, locations: ['lab-open'], interval_s: 3600 })
    await runRounds(monitor.id, 3)
    const answer = await get(`/api/v1/monitors/${monitor.id}/auto?percentiles=50`)
    const [loc] = answer.locations
    assert.equal(loc.shares.first.visits, 3)
    assert.equal(loc.shares.returning.visits, 3)
    assert.equal(loc.shares.returning.navigation_share.rate, 0)
    assert.equal(loc.shares.returning.reasons.not_announced, 3)
    assert.equal(loc.story.code, 'not_announced')
    assert.equal(loc.story.text, 'The origin does not announce H3: users get H2 (6 of 6 visits that loaded)')
    // The forced H3 arm meets an origin that refuses QUIC: "H3 not supported", not a matched round.
    assert.equal(loc.visits.returning.rounds.matched, 0)
    assert.equal(loc.visits.returning.reason, 'forced H3 did not load in any round (3 of 3), so no round has all three arms loaded; more rounds add none while that lasts')
  })
})
