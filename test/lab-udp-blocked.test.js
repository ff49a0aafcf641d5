// The lab's UDP-blocked location as the product ships it (DEFAULT_PROFILES'
// lab-udp-blocked beside lab-na, whose path it copies): Caddy in the origin
// namespace, real Chromium in each location's namespace, driven by the
// agent's own job runner. Behind a network that drops UDP, forced H3 fails
// by itself with a QUIC error long before the page timeout ("H3 fails"),
// and H2 loads; on the same path without the block, H3 loads over h3.
//
// How long Chromium 156 takes to give up: 4.1–4.8 s per forced-H3 load
// (wall_ms of 11 loads of the 15 KB page through lab-udp-blocked: median
// 4.21 s, 4,150–4,842 ms, on 2 busy cores), against a page timeout of 30 s.
// Its net log says why: the Initial (two packets) goes out, is repeated on
// probe timeouts 0.3, 0.9 and 2.1 s later, and at 4.0 s the connection
// closes itself, "No recent network activity after 4000502us. Timeout:4s"
// (QUIC_NETWORK_IDLE_TIMEOUT: the idle timeout before the handshake), which
// the page sees as net::ERR_QUIC_PROTOCOL_ERROR. This test prints the time
// as a diagnostic each run.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pino from 'pino'
import { netnsSupport, labUp } from '../lab/netns.js'
import { DEFAULT_PROFILES } from '../lab/profiles.js'
import { startOrigin } from '../lab/origin.js'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { createJobRunner } from '../agents/job-runner.js'
import { freePort } from '../dev/free-port.js'

const support = await netnsSupport()
const skip = support.ok ? false : `needs root and /dev/net/tun: ${support.reason}`
// The agent's default page timeout (H3LENS_PAGE_TIMEOUT_MS).
const PAGE_TIMEOUT_MS = 30_000
const PROFILES = DEFAULT_PROFILES.filter((p) => p.name === 'lab-na' || p.name === 'lab-udp-blocked')

describe('a lab location whose network blocks UDP', { skip }, () => {
  const log = pino({ level: 'silent' })
  /** @type {string} */
  let dataDir
  /** @type {Awaited<ReturnType<typeof labUp>>} */
  let lab
  /** @type {Awaited<ReturnType<typeof startOrigin>>} */
  let origin
  /** @type {ReturnType<typeof createBrowserPool>} */
  let pool

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-udp-blocked-'))
    lab = await labUp({ profiles: PROFILES, prefix: 'h3lub', runDir: path.join(dataDir, 'run'), log })
    origin = await startOrigin({ dataDir, port: await freePort(), netns: lab.originNs, log })
    pool = createBrowserPool({ dataDir, log })
  })

  after(async () => {
    await pool?.close()
    await origin?.stop()
    await lab?.down()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  /**
   * One round of the 15 KB page in both arms from a location, as its agent
   * runs it, with the location's linkem counters before and after.
   * @param {string} name
   */
  async function round (name) {
    const loc = /** @type {import('../lab/netns.js').LabLocation} */ (lab.locations.find((l) => l.name === name))
    const runJob = createJobRunner({ pool, lab: { spki: origin.spki, address: loc.originAddress, netns: loc.ns }, timeoutMs: PAGE_TIMEOUT_MS, log })
    const before = /** @type {import('../lab/linkem.js').LinkemStats} */ (await loc.readStats?.())
    const results = await runJob({ id: 1, url: `${origin.baseUrl}/page-15k.html`, modes: ['h3', 'h2'], options: { netlog: 'off' } }, { location: { kind: 'lab', profile: loc.profile } })
    const stats = /** @type {import('../lab/linkem.js').LinkemStats} */ (await loc.readStats?.())
    const byMode = Object.fromEntries(results.map((r) => [r.mode, r]))
    return { h3: byMode.h3, h2: byMode.h2, udpDropped: stats.up.drop_udp - before.up.drop_udp + stats.down.drop_udp - before.down.drop_udp }
  }

  test('forced H3 fails by itself with a QUIC error, long before the page timeout, and H2 loads', async (t) => {
    const { h3, h2, udpDropped } = await round('lab-udp-blocked')
    t.diagnostic(`forced H3 gave up after ${h3.details.wall_ms} ms: ${h3.error}; ${udpDropped} UDP packets dropped`)
    // 'error', not 'timeout': Chromium ended the load itself.
    assert.equal(h3.status, 'error', h3.error)
    assert.match(h3.error, /net::ERR_QUIC_[A-Z_]+/)
    assert.equal(h3.observed_protocol, null)
    assert.equal(h3.protocol_ok, false)
    // The origin announces h3 (Alt-Svc), so this is H3 failing on the path,
    // not an origin without HTTP/3.
    assert.equal(h3.details.failure_kind, undefined)
    assert.equal(h2.status, 'ok', h2.error)
    assert.equal(h2.observed_protocol, 'h2')
    assert.ok(udpDropped > 0, 'the QUIC packets died at the block')
  })

  test('on the same path without the block, forced H3 loads over h3', async () => {
    const { h3, h2, udpDropped } = await round('lab-na')
    assert.equal(h3.status, 'ok', h3.error)
    assert.equal(h3.observed_protocol, 'h3')
    assert.equal(h2.status, 'ok', h2.error)
    assert.equal(h2.observed_protocol, 'h2')
    assert.equal(udpDropped, 0)
  })
})
