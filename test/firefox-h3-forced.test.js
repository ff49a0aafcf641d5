// Firefox's H3 arm is forced as Chromium's is: on a path where QUIC is slow
// to come up and TCP is quick, it still loads over h3. The lab origin
// (Caddy) on loopback sits behind a relay (helpers/slow-quic.js) that holds
// every QUIC datagram from the browser 400 ms and passes TCP at once; the
// job runner runs the arm in real Firefox with the product's preferences.
// By default Firefox opens TCP beside a QUIC connection not up within
// 100 ms and takes whichever is ready first: the arm then loads over h2, a
// protocol mismatch, as it did in a CI run on a busy machine.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { after, before, test } from 'node:test'
import pino from 'pino'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { createFirefoxPool } from '../agents/browsers/firefox.js'
import { createJobRunner } from '../agents/job-runner.js'
import { startOrigin } from '../lab/origin.js'
import { freePort } from '../dev/free-port.js'
import { startSlowQuicRelay } from './helpers/slow-quic.js'

const FIREFOX = process.env.H3LENS_FIREFOX ?? '/usr/bin/firefox-esr'
const skip = existsSync(FIREFOX) ? false : `needs Firefox at ${FIREFOX} (Debian package firefox-esr)`
const DELAY_MS = 400

let dataDir, origin, relay, chromium, firefoxPool, run, port

before(async () => {
  if (skip) return
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-firefox-forced-'))
  origin = await startOrigin({ dataDir, port: await freePort() })
  port = await freePort()
  relay = await startSlowQuicRelay({ port, target: origin.port, delayMs: DELAY_MS })
  const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' })
  chromium = createBrowserPool({ dataDir, log })
  firefoxPool = createFirefoxPool({ dataDir, log, executablePath: FIREFOX })
  run = createJobRunner({
    pool: chromium, firefoxPool, timeoutMs: 30_000, log,
    lab: { spki: origin.spki, caPath: origin.caPath, hostname: origin.hostname, address: '127.0.0.1', port, netns: null }
  })
})

after(async () => {
  await firefoxPool?.close()
  await chromium?.close()
  await relay?.close()
  await origin?.stop()
  if (dataDir) await rm(dataDir, { recursive: true, force: true })
})

test('Firefox\'s H3 arm waits for a QUIC connection that is slow to come up: it loads over h3, not over the quicker TCP', { skip }, async () => {
  const [r] = await run({ id: 1, url: `https://${origin.hostname}:${port}/page-15k.html`, modes: ['h3'], browser: 'firefox' }, { location: { kind: 'lab' } })
  assert.equal(r.mode, 'h3')
  assert.equal(r.status, 'ok', r.error)
  assert.equal(r.observed_protocol, 'h3', 'the protocol the page was loaded over')
  assert.ok(relay.datagrams() > 0, 'QUIC went through the slow relay')
  // The QUIC handshake's first flight waited in the relay, as did the request.
  assert.ok(r.ttfb_ms >= 2 * DELAY_MS, `TTFB ${r.ttfb_ms} ms: the handshake and the request each held ${DELAY_MS} ms`)
  assert.ok(r.flags.includes('network.http.http3.backup_timer_delay=0'), r.flags.join(' '))
})
