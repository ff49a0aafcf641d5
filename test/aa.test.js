// A/A calibration in the agent, with real Chromium and the lab Caddy: both
// arms of an A/A monitor's round load over its one protocol, each in its own
// fresh context, and are submitted under their arm's mode (h2 = arm A,
// h3 = arm B) with the protocol they ran with.
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import pino from 'pino'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { createJobRunner } from '../agents/job-runner.js'
import { startOrigin } from '../lab/origin.js'
import { freePort } from '../dev/free-port.js'

const log = pino({ level: 'silent' })

describe('A/A rounds against the lab origin', () => {
  let dataDir
  let origin
  let pool
  let runJob

  before(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-aa-test-'))
    origin = await startOrigin({ dataDir, port: await freePort() })
    pool = createBrowserPool({ dataDir })
    runJob = createJobRunner({ pool, lab: { spki: origin.spki, address: '127.0.0.1' }, timeoutMs: 15_000, log, netlogDir: path.join(dataDir, 'netlogs') })
  })

  after(async () => {
    await pool?.close()
    await origin?.stop()
    await rm(dataDir, { recursive: true, force: true })
  })

  const page = () => `${origin.baseUrl}/page-15k.html`

  test('an h2 A/A monitor\'s two arms both load over h2 and count as protocol_ok', async () => {
    const results = await runJob({ id: 1, url: page(), modes: ['h2', 'h3'], probes: ['page', 'parallel'], aa_protocol: 'h2' })
    assert.deepEqual(results.map((r) => `${r.probe}/${r.mode}`).sort(), ['page/h2', 'page/h3', 'parallel/h2', 'parallel/h3'])
    for (const r of results) {
      const what = `${r.probe}/${r.mode}`
      assert.equal(r.status, 'ok', `${what}: ${r.error}`)
      assert.equal(r.observed_protocol, 'h2', what)
      assert.equal(r.protocol_ok, true, what)
      assert.equal(r.details.arm_protocol, 'h2', what)
      assert.ok(r.flags.includes('--disable-quic'), `${what} ran with QUIC off: ${r.flags}`)
      assert.ok(!r.flags.some((f) => f.startsWith('--origin-to-force-quic-on')), what)
      assert.ok(r.details.requests.every((q) => !q.protocol || q.protocol === 'h2'), `${what}: every request over h2`)
    }
    // Fresh contexts: arm B does not reuse arm A's connection.
    const pages = results.filter((r) => r.probe === 'page')
    for (const r of pages) assert.equal(r.details.requests.find((q) => q.type === 'Document')?.connection_reused, false, `${r.mode} opened its own connection`)
  })

  test('an h3 A/A monitor\'s two arms both load over h3; an ordinary round still compares h2 with h3', async () => {
    const aa = await runJob({ id: 2, url: page(), modes: ['h2', 'h3'], probes: ['page'], aa_protocol: 'h3' })
    assert.deepEqual(aa.map((r) => r.mode).sort(), ['h2', 'h3'])
    for (const r of aa) {
      assert.equal(r.status, 'ok', `${r.mode}: ${r.error}`)
      assert.equal(r.observed_protocol, 'h3', r.mode)
      assert.equal(r.protocol_ok, true)
      assert.equal(r.details.arm_protocol, 'h3')
      assert.ok(r.flags.some((f) => f.startsWith('--origin-to-force-quic-on=')), String(r.flags))
    }
    const plain = await runJob({ id: 3, url: page(), modes: ['h2', 'h3'], probes: ['page'] })
    assert.deepEqual(Object.fromEntries(plain.map((r) => [r.mode, r.observed_protocol])), { h2: 'h2', h3: 'h3' })
    for (const r of plain) assert.equal(r.details.arm_protocol, undefined)
  })

  test('the arms run in random order', async () => {
    const orders = new Set()
    for (const draw of [0, 0.99]) {
      const runner = createJobRunner({ pool, lab: { spki: origin.spki, address: '127.0.0.1' }, timeoutMs: 15_000, log, random: () => draw })
      const results = await runner({ id: 4, url: page(), modes: ['h2', 'h3'], probes: ['page'], aa_protocol: 'h2' })
      orders.add(results.map((r) => r.mode).join(','))
    }
    assert.deepEqual([...orders].sort(), ['h2,h3', 'h3,h2'])
  })
})
