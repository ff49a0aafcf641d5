// The measurement depth against the lab origin, with real Chromium and real
// Caddy: the parallel and upload probes, the repeat view, per-request truth,
// Alt-Svc discovery, net logs, and a probe that fails in one mode only.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import http2 from 'node:http2'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import pino from 'pino'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { labBrowserFlags } from '../lib/measurement/browsers/chromium.js'
import { measurePageViews } from '../agents/measure.js'
import { measureParallel } from '../agents/probes/parallel.js'
import { measureUpload } from '../agents/probes/upload.js'
import { namedEvents, parseNetlog, summarizeNetlog } from '../lib/measurement/netlog.js'
import { createJobRunner } from '../agents/job-runner.js'
import { startOrigin } from '../lab/origin.js'
import { labUp, netnsSupport } from '../lab/netns.js'
import { freePort } from '../dev/free-port.js'

const log = pino({ level: 'silent' })

describe('probes against the lab origin on loopback', () => {
  let dataDir
  let origin
  let other
  let pool
  let lab

  before(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-probes-test-'))
    origin = await startOrigin({ dataDir, port: await freePort() })
    other = await startOrigin({ dataDir, port: await freePort() })
    pool = createBrowserPool({ dataDir })
    lab = labBrowserFlags({ spki: origin.spki, hostname: origin.hostname, address: '127.0.0.1' })
  })

  after(async () => {
    await pool?.close()
    await origin?.stop()
    await other?.stop()
    await rm(dataDir, { recursive: true, force: true })
  })

  const page = () => `${origin.baseUrl}/page-15k.html`

  test('the parallel probe times N requests per mode, over the forced protocol', async () => {
    for (const mode of /** @type {const} */ (['h3', 'h2'])) {
      const [r] = await measureParallel({ pool, url: page(), targetUrl: `${origin.baseUrl}/noop`, count: 7, mode, extraFlags: lab, log })
      assert.equal(r.status, 'ok', r.error)
      assert.equal(r.probe, 'parallel')
      assert.equal(r.samples.length, 7)
      assert.ok(r.samples.every((ms) => ms > 0 && ms < 10_000), String(r.samples))
      assert.equal(r.observed_protocol, mode)
      const fetched = r.requests_detail.filter((q) => q.url === `${origin.baseUrl}/noop`)
      assert.equal(fetched.length, 7)
      for (const q of fetched) {
        assert.equal(q.protocol, mode)
        assert.equal(q.status, 204)
        // On the connection the warm-up opened: one connection for all.
        const said = `${mode}: request on connection ${q.connection_id} (reused: ${q.connection_reused}), the warm-up's ${r.warmup.requests_detail[0].connection_id}`
        assert.equal(q.connection_id, r.warmup.requests_detail[0].connection_id, said)
        assert.equal(q.connection_reused, true, said)
      }
      assert.equal(r.warmup.status, 'ok')
      assert.ok(r.ttfb_ms > 0 && r.connect_ms > 0, 'the warm-up navigation timings are the result\'s connection story')
    }
  })

  test('forcing QUIC on a second origin takes one comma-separated flag', async () => {
    const target = `${other.baseUrl}/noop`
    const forced = await measureParallel({ pool, url: page(), targetUrl: target, count: 2, mode: 'h3', extraFlags: lab, log, forceOrigins: [other.baseUrl] })
    assert.ok(forced[0].flags.includes(`--origin-to-force-quic-on=${origin.hostname}:${origin.port},${other.hostname}:${other.port}`))
    assert.equal(forced[0].status, 'ok', forced[0].error)
    assert.deepEqual(forced[0].requests_detail.filter((q) => q.url === target).map((q) => q.protocol), ['h3', 'h3'])
    // Not forced, the other origin is reached over TCP first: Chromium knows
    // nothing of its Alt-Svc yet in a fresh context.
    const [plain] = await measureParallel({ pool, url: page(), targetUrl: target, count: 1, mode: 'h3', extraFlags: lab, log })
    assert.equal(plain.status, 'protocol_mismatch')
    assert.equal(plain.observed_protocol, 'h2')
  })

  test('the repeat view reuses the first view\'s connection', async () => {
    for (const mode of /** @type {const} */ (['h3', 'h2'])) {
      const [first, repeat] = await measurePageViews({ pool, url: page(), mode, extraFlags: lab, log, repeatView: true })
      assert.equal(first.view, 'first')
      assert.equal(first.status, 'ok', first.error)
      assert.equal(repeat.view, 'repeat')
      assert.equal(repeat.status, 'ok', repeat.error)
      assert.equal(repeat.observed_protocol, mode)
      const connections = (/** @type {any} */ view) => view.requests_detail.map((/** @type {any} */ q) => `${q.type} ${q.protocol} on ${q.connection_id}${q.connection_reused ? ' (reused)' : ''}${q.from_cache ? ' (cache)' : ''}`).join('; ')
      const said = `${mode}: the first view's ${connections(first)}; the repeat's ${connections(repeat)}`
      assert.equal(repeat.repeat.document_connection_reused, true, said)
      assert.equal(repeat.repeat.new_connections, 0, said)
      assert.equal(repeat.connect_ms, 0, 'no handshake on a reused connection')
      const doc = repeat.requests_detail.find((q) => q.type === 'Document')
      assert.equal(doc.connection_id, first.requests_detail.find((q) => q.type === 'Document').connection_id)
      // The hero image is cacheable: the warm cache answers it.
      assert.ok(repeat.repeat.from_cache >= 1, JSON.stringify(repeat.repeat))
    }
  })

  test('Alt-Svc discovery finds the lab origin advertising h3', async () => {
    const [r] = await measurePageViews({ pool, url: page(), mode: 'h2', extraFlags: lab, log })
    assert.equal(r.status, 'ok', r.error)
    const seen = r.origins.find((o) => o.origin === origin.baseUrl)
    assert.ok(seen, JSON.stringify(r.origins))
    assert.equal(seen.alt_svc, `h3=":${origin.port}"; ma=2592000`)
    assert.equal(seen.h3_advertised, true)
    assert.equal(seen.requests.h2, 2)
  })

  test('the upload probe posts the configured size and reports throughput', async () => {
    for (const mode of /** @type {const} */ (['h3', 'h2'])) {
      const [r] = await measureUpload({ pool, url: page(), uploadUrl: `${origin.baseUrl}/upload`, bytes: 256 * 1024, mode, extraFlags: lab, log })
      assert.equal(r.status, 'ok', `${mode}: ${r.error}`)
      assert.equal(r.observed_protocol, mode)
      assert.equal(r.samples.length, 1)
      assert.ok(r.upload_mbps > 0, String(r.upload_mbps))
      assert.equal(r.upload_mbps, Math.round(256 * 1024 * 8 / (r.samples[0] / 1000) / 1e6 * 100) / 100)
    }
  })

  test('a captured net log holds the QUIC session, and its summary explains the handshake', async () => {
    const netlogFile = path.join(dataDir, 'capture.netlog.json')
    const [r] = await measurePageViews({ pool, url: page(), mode: 'h3', extraFlags: lab, log, netlogFile })
    assert.equal(r.status, 'ok', r.error)
    assert.ok(r.flags.includes(`--log-net-log=${netlogFile}`))
    const netlog = parseNetlog(await readFile(netlogFile, 'utf8'))
    const names = new Set(namedEvents(netlog).map((e) => e.name))
    for (const name of ['QUIC_SESSION', 'QUIC_SESSION_PACKET_SENT', 'QUIC_SESSION_PACKET_RECEIVED', 'QUIC_SESSION_CRYPTO_HANDSHAKE_COMPLETE']) {
      assert.ok(names.has(name), `${name} in the net log`)
    }
    const summary = summarizeNetlog(netlog)
    const session = summary.quic_sessions.find((s) => s.host === origin.hostname && s.port === origin.port)
    assert.ok(session, JSON.stringify(summary.quic_sessions))
    assert.equal(session.version, 'RFCv1')
    assert.ok(session.handshake_complete_ms !== null && session.handshake_complete_ms >= 0)
    assert.ok(session.first_flight_initial_packets >= 1)
  })

  test('an outlier run is measured again at once with a net log, kept with the outlier', async () => {
    const uploads = []
    const runJob = createJobRunner({
      pool, lab: { spki: origin.spki, address: '127.0.0.1' }, timeoutMs: 10_000, log, netlogDir: path.join(dataDir, 'netlogs'),
      uploadNetlog: async (jobId, n) => { uploads.push({ jobId, ...n }); return { stored: true } }
    })
    // A p99 of 0.1 ms for h3 page loads: every h3 run is an outlier, no h2 run is.
    const results = await runJob({ id: 7, url: page(), modes: ['h3', 'h2'], probes: ['page'], netlog_thresholds: { 'page/h3': 0.1 } })
    const h3 = results.find((r) => r.mode === 'h3')
    const h2 = results.find((r) => r.mode === 'h2')
    assert.ok(h3 && h2)
    assert.equal(h3.status, 'ok', h3.error)
    assert.equal(h3.details.netlog.kind, 'rerun')
    assert.match(h3.details.netlog.reason, /load_ms .* above the p99 of recent runs \(0\.1\)/)
    assert.equal(h3.details.netlog.rerun.status, 'ok')
    assert.ok(h3.details.netlog.rerun.load_ms > 0)
    assert.equal(h3.details.netlog.uploaded, true)
    assert.ok(h3.details.netlog.summary.quic_sessions.length >= 1)
    assert.ok(!h3.flags.some((f) => f.startsWith('--log-net-log')), 'the outlier itself ran in the pooled browser')
    assert.equal(h2.details.netlog, undefined)
    assert.deepEqual(uploads.map((u) => [u.jobId, u.mode, u.view, u.probe, u.kind]), [[7, 'h3', 'first', 'page', 'rerun']])
    assert.equal(uploads[0].gzip[0], 0x1f)
  })

  test('a net log cut short by a killed browser still parses', () => {
    const text = '{"constants":{"logEventTypes":{"A":1},"logSourceType":{"S":0}},\n"events": [\n{"type":1,"time":"5","source":{"id":1,"type":0},"phase":0},\n{"type":1,"time":"6","sou'
    assert.equal(parseNetlog(text).events.length, 1)
  })

  test('a probe failing in one mode keeps the other mode\'s result', async () => {
    // HTTP/2 over TCP only, with the lab certificate: h3 mode cannot reach it.
    const server = http2.createSecureServer({
      cert: await readFile(path.join(dataDir, 'lab', 'lab-cert.pem')),
      key: await readFile(path.join(dataDir, 'lab', 'lab-key.pem')),
      allowHTTP1: true
    }, (req, res) => {
      if (req.url === '/noop') return res.writeHead(204).end()
      res.setHeader('content-type', 'text/html')
      res.end('<!doctype html><title>h2 only</title><h1>h2 only</h1>')
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = /** @type {import('node:net').AddressInfo} */ (server.address())
    try {
      const runJob = createJobRunner({ pool, lab: { spki: origin.spki, address: '127.0.0.1' }, timeoutMs: 5000, log })
      const url = `https://${origin.hostname}:${port}/`
      const results = await runJob({ id: 1, url, modes: ['h3', 'h2'], probes: ['page', 'parallel'], options: { parallel_url: `${url}noop` } })
      assert.deepEqual(results.map((r) => `${r.probe}/${r.mode}`).sort(), ['page/h2', 'page/h3', 'parallel/h2', 'parallel/h3'])
      for (const r of results) {
        if (r.mode === 'h3') {
          assert.equal(r.status, 'error')
          assert.match(r.error, /QUIC|ERR_/)
        } else {
          assert.equal(r.status, 'ok', `${r.probe}: ${r.error}`)
          assert.equal(r.observed_protocol, 'h2')
        }
      }
      const parallel = results.find((r) => r.probe === 'parallel' && r.mode === 'h2')
      assert.ok(parallel)
      assert.equal(parallel.details.samples.length, 5)
    } finally {
      server.close()
    }
  })
})

const support = await netnsSupport()

describe('through an emulated link', { skip: !support.ok && `needs network namespaces: ${support.reason}` }, () => {
  let dataDir
  let topology
  let origin
  let pool

  before(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-probes-ns-'))
    topology = await labUp({
      prefix: 'h3t6p',
      runDir: path.join(dataDir, 'run'),
      profiles: [{ name: 'up10', rtt_ms: 20, jitter_ms: 0, loss_pct: 0, loss_model: 'bernoulli', down_kbps: 50_000, up_kbps: 10_000, queue_packets: 100 }]
    })
    origin = await startOrigin({ dataDir, port: 8443, netns: topology.originNs })
    pool = createBrowserPool({ dataDir })
  })

  after(async () => {
    await pool?.close()
    await origin?.stop()
    await topology?.down()
    await rm(dataDir, { recursive: true, force: true })
  })

  test('upload throughput stays under the link\'s 10 Mbit/s up rate, and connect is counted in RTTs', async () => {
    const [loc] = topology.locations
    const extraFlags = labBrowserFlags({ spki: origin.spki, hostname: origin.hostname, address: loc.originAddress })
    const runJob = createJobRunner({ pool, lab: { spki: origin.spki, address: loc.originAddress, netns: loc.ns }, timeoutMs: 30_000, log })
    const results = await runJob(
      { id: 2, url: `${origin.baseUrl}/page-15k.html`, modes: ['h3', 'h2'], probes: ['upload'], options: { upload_bytes: 2 * 1024 * 1024 } },
      { location: { kind: 'lab', profile: { rtt_ms: 20 } } })
    assert.equal(results.length, 2)
    for (const r of results) {
      assert.equal(r.status, 'ok', `${r.mode}: ${r.error}`)
      // 2 MB at 10 Mbit/s of IP bytes is at least 1.7 s; headers and ACK
      // pacing only make it slower.
      assert.ok(r.upload_mbps > 2 && r.upload_mbps <= 10.5, `${r.mode}: ${r.upload_mbps} Mbit/s`)
      assert.equal(r.rtt_ms, 20)
      assert.ok(r.connect_rtt !== null && r.connect_rtt >= 0.9, `${r.mode}: connect ${r.connect_rtt} RTT`)
      assert.ok(r.ttfb_rtt !== null && r.ttfb_rtt >= r.connect_rtt, `${r.mode}: ttfb ${r.ttfb_rtt} RTT`)
    }
    assert.deepEqual(extraFlags.map((f) => f.split('=')[0]), ['--ignore-certificate-errors-spki-list', '--host-resolver-rules', '--webrtc-ip-handling-policy'], 'the lab browser\'s pin, resolver rules and WebRTC policy')
  })
})
