import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import https from 'node:https'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { baseFlags, labBrowserFlags, modeFlags } from '../lib/measurement/browsers/chromium.js'
import { loadAndRead, measure, measurePage, runRound } from '../agents/measure.js'
import { InfrastructureError } from '../agents/faults.js'
import { navigationError } from '../agents/page-metrics.js'
import { normalizeProtocol, protocolMatchesMode } from '../lib/measurement/protocol.js'
import { startOrigin } from '../lab/origin.js'
import { freePort } from '../dev/free-port.js'
import { processesMentioning } from './helpers/process.js'

const execFileAsync = promisify(execFile)

describe('normalizeProtocol', () => {
  test('folds every spelling of each protocol into one', () => {
    for (const s of ['h3', 'h3-29', 'h3-Q050', 'QUIC', 'quic', 'http/2+quic/46']) assert.equal(normalizeProtocol(s), 'h3', s)
    for (const s of ['h2', 'HTTP/2', 'http/2.0']) assert.equal(normalizeProtocol(s), 'h2', s)
    for (const s of ['http/1.1', 'HTTP/1.1']) assert.equal(normalizeProtocol(s), 'http/1.1', s)
    assert.equal(normalizeProtocol('http/1.0'), 'http/1.0')
    for (const s of ['', null, undefined]) assert.equal(normalizeProtocol(s), null)
    assert.equal(normalizeProtocol('SPDY/3'), 'spdy/3')
  })

  test('a run counts for its mode only over that protocol', () => {
    assert.ok(protocolMatchesMode('h3-29', 'h3'))
    assert.ok(protocolMatchesMode('HTTP/2', 'h2'))
    assert.ok(!protocolMatchesMode('h2', 'h3'))
    assert.ok(!protocolMatchesMode('http/1.1', 'h2'))
    assert.ok(!protocolMatchesMode(null, 'h2'))
  })
})

describe('navigationError', () => {
  test('keeps Chromium\'s words, and gives Firefox\'s error name without its driver\'s stack', () => {
    assert.equal(navigationError(new Error('net::ERR_CONNECTION_REFUSED at https://example.test/'), 'https://example.test/'), 'net::ERR_CONNECTION_REFUSED at https://example.test/')
    // As Firefox 153 gave it over WebDriver BiDi for a refused connection.
    const firefox = 'Protocol error (browsingContext.navigate): unknown error Error: NS_ERROR_CONNECTION_REFUSED #onNavigationCommitted@chrome://remote/content/shared/Navigate.sys.mjs:387:28\n' +
      'emit@resource://gre/modules/EventEmitter.sys.mjs:156:19\n#forwardEvent@chrome://remote/content/shared/listeners/NavigationListener.sys.mjs:91:10\n' +
      'receiveMessage@chrome://remote/content/shared/js-process-actors/WebDriverDocumentInsertedParent.sys.mjs:25:16\n at https://127.0.0.1:20634/'
    assert.equal(navigationError(new Error(firefox), 'https://127.0.0.1:20634/'), 'NS_ERROR_CONNECTION_REFUSED at https://127.0.0.1:20634/')
    const crashed = 'Protocol error (browsingContext.navigate): unknown error Error: Address rejected #onNavigationCommitted@chrome://remote/content/shared/Navigate.sys.mjs:387:28\n' +
      'emit@resource://gre/modules/EventEmitter.sys.mjs:156:19\n at https://lab.h3lens.test:28231/slow'
    assert.equal(navigationError(new Error(crashed), 'https://lab.h3lens.test:28231/slow'), 'Address rejected at https://lab.h3lens.test:28231/slow', 'its content process killed')
    const aborted = 'Protocol error (browsingContext.navigate): unknown error Error: NS_BINDING_ABORTED NavigationError@chrome://remote/content/shared/RemoteError.sys.mjs:28:5\n at https://x.test/'
    assert.equal(navigationError(new Error(aborted), 'https://x.test/'), 'NS_BINDING_ABORTED at https://x.test/')
    // Anything else stays as it came.
    assert.equal(navigationError(new Error('Protocol error (browsingContext.navigate): no such frame'), 'https://example.test/'), 'Protocol error (browsingContext.navigate): no such frame')
    assert.equal(navigationError(new Error('Protocol error (browsingContext.navigate): Target closed at https://x.test/'), 'https://x.test/'), 'Protocol error (browsingContext.navigate): Target closed at https://x.test/')
  })
})

describe('modeFlags', () => {
  test('forces QUIC on the page origin, or turns it off', () => {
    assert.deepEqual(modeFlags('h3', 'https://example.test/a'), ['--enable-quic', '--origin-to-force-quic-on=example.test:443'])
    assert.deepEqual(modeFlags('h3', 'https://lab.h3lens.test:8443/x'), ['--enable-quic', '--origin-to-force-quic-on=lab.h3lens.test:8443'])
    assert.deepEqual(modeFlags('h2', 'https://example.test/'), ['--disable-quic'])
    assert.throws(() => modeFlags(/** @type {any} */ ('h1'), 'https://example.test/'), TypeError)
  })
})

describe('measurePage against the lab origin', () => {
  let dataDir
  let origin
  let pool
  let lab
  const browserPids = new Set()

  before(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-measure-test-'))
    origin = await startOrigin({ dataDir, port: await freePort() })
    // H3LENS_CHROMIUM runs these against another build (the agent's setting of the same name).
    const created = createBrowserPool({ dataDir, executablePath: process.env.H3LENS_CHROMIUM ?? '/usr/bin/chromium' })
    // Remember every browser the tests use, to check none outlives the pool.
    pool = {
      ...created,
      acquire: async (spec) => {
        const browser = await created.acquire(spec)
        browserPids.add(browser.process()?.pid)
        return browser
      }
    }
    lab = labBrowserFlags({ spki: origin.spki, hostname: origin.hostname, address: '127.0.0.1' })
  })

  after(async () => {
    await pool?.close()
    await origin?.stop()
    await rm(dataDir, { recursive: true, force: true })
  })

  const url = (name) => origin.baseUrl + origin.pages[name].path

  test('h3 mode loads the page over HTTP/3 and times it', async () => {
    const r = await measurePage({ pool, url: url('page-15k'), mode: 'h3', extraFlags: lab })
    assert.equal(r.status, 'ok', r.error)
    assert.equal(r.error, null)
    assert.equal(r.observed_protocol, 'h3')
    assert.equal(r.protocol_ok, true)
    assert.ok(r.ttfb_ms > 0 && r.ttfb_ms <= r.load_ms, `ttfb ${r.ttfb_ms} load ${r.load_ms}`)
    assert.ok(r.dcl_ms <= r.load_ms)
    assert.ok(r.connect_ms !== null && r.connect_ms >= 0)
    assert.ok(r.fcp_ms > 0 && r.lcp_ms >= r.fcp_ms, `fcp ${r.fcp_ms} lcp ${r.lcp_ms}`)
    assert.ok(r.bytes >= origin.pages['page-15k'].bytes, `bytes ${r.bytes}`)
    assert.equal(r.requests, 2)
    assert.equal(r.h3_request_share, 1)
    assert.equal(r.h3_byte_share, 1)
    assert.match(r.browser_version, /Chrome\/\d+/)
    assert.deepEqual(r.flags, [...baseFlags(), ...modeFlags('h3', url('page-15k')), ...lab])
    assert.ok(r.wall_ms >= r.load_ms)
    assert.deepEqual(Object.keys(r.requests_detail[0]).sort(), ['alternate_protocol_usage', 'bytes', 'connection_id',
      'connection_reused', 'end_ms', 'failed', 'from_cache', 'method', 'protocol', 'remote_address', 'start_ms', 'status', 'timing', 'type', 'url'])
    assert.deepEqual(Object.keys(r.requests_detail[0].timing).sort(), ['connect_ms', 'dns_ms', 'receive_ms', 'send_ms', 'ssl_ms', 'wait_ms'])
    assert.ok(r.requests_detail[0].timing.connect_ms > 0, 'the document opened the connection')
  })

  test('a proxy in the agent\'s environment goes unused: each arm loads straight from the origin, over its own protocol', async () => {
    // A proxy would carry every request (QUIC cannot go through an HTTP
    // proxy), and one on a public address reaches past the private-target
    // guard's resolver: the browser never looks up the names it sends it.
    let connections = 0
    const proxy = net.createServer((socket) => { connections++; socket.destroy() })
    proxy.listen(0, '127.0.0.1')
    await once(proxy, 'listening')
    const names = ['http_proxy', 'https_proxy', 'all_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY']
    const saved = Object.fromEntries(names.map((n) => [n, process.env[n]]))
    for (const n of names) process.env[n] = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (proxy.address()).port}`
    const own = createBrowserPool({ dataDir, executablePath: process.env.H3LENS_CHROMIUM ?? '/usr/bin/chromium' })
    try {
      for (const mode of /** @type {const} */ (['h2', 'h3'])) {
        const r = await measurePage({ pool: own, url: url('page-15k'), mode, extraFlags: lab })
        assert.equal(r.status, 'ok', `${mode}: ${r.error}`)
        assert.equal(r.observed_protocol, mode)
      }
      assert.equal(connections, 0, 'the proxy was asked')
    } finally {
      for (const n of names) if (saved[n] === undefined) delete process.env[n]; else process.env[n] = saved[n]
      await own.close()
      proxy.close()
    }
  })

  test('back-to-back runs on contexts prepared between them are each cold: a new connection with its own handshake, nothing from a cache', async () => {
    for (const mode of /** @type {const} */ (['h2', 'h3'])) {
      const runs = []
      for (let i = 0; i < 4; i++) {
        runs.push(await measurePage({ pool, url: url('page-15k'), mode, extraFlags: lab }))
        await pool.settle() // what the agent does while it submits a round
      }
      assert.deepEqual(runs.slice(1).map((r) => r.context.prepared), [true, true, true], `${mode}: runs after the first take the prepared context`)
      const ids = new Set()
      for (const [i, r] of runs.entries()) {
        assert.equal(r.status, 'ok', r.error)
        assert.equal(r.observed_protocol, mode)
        const doc = r.requests_detail.find((q) => q.type === 'Document')
        assert.equal(doc.connection_reused, false, `${mode} run ${i}: the document came over a new connection`)
        assert.ok(doc.timing.connect_ms > 0 && r.connect_ms > 0, `${mode} run ${i}: the connection was set up in the run (connect ${doc.timing.connect_ms} ms)`)
        if (mode === 'h2') assert.ok(doc.timing.ssl_ms > 0 && r.tls_ms > 0, `${mode} run ${i}: a TLS handshake of its own (${doc.timing.ssl_ms} ms)`)
        assert.deepEqual(r.requests_detail.filter((q) => q.from_cache).map((q) => q.url), [], `${mode} run ${i}: nothing from a cache`)
        ids.add(doc.connection_id)
      }
      assert.equal(ids.size, runs.length, `${mode}: every run has a connection of its own (${[...ids]})`)
    }
  })

  test('h2 mode loads the same page over HTTP/2', async () => {
    const r = await measurePage({ pool, url: url('page-15k'), mode: 'h2', extraFlags: lab })
    assert.equal(r.status, 'ok', r.error)
    assert.equal(r.observed_protocol, 'h2')
    assert.equal(r.protocol_ok, true)
    assert.ok(r.ttfb_ms > 0 && r.ttfb_ms <= r.load_ms)
    assert.ok(r.tls_ms !== null && r.tls_ms >= 0)
    assert.equal(r.h3_request_share, 0)
    assert.ok(r.flags.includes('--disable-quic'))
  })

  test('the many-resources page records every request with its protocol', async () => {
    const r = await measurePage({ pool, url: url('page-many'), mode: 'h3', extraFlags: lab })
    assert.equal(r.status, 'ok', r.error)
    assert.ok(r.requests >= 61, `requests ${r.requests}`)
    assert.equal(r.requests_detail.length, r.requests)
    for (const req of r.requests_detail) {
      assert.equal(req.protocol, 'h3', req.url)
      assert.equal(req.status, 200, req.url)
      assert.ok(req.bytes > 0 && req.start_ms >= 0 && req.end_ms >= req.start_ms, req.url)
      assert.equal(req.from_cache, false)
    }
    // One QUIC connection carries them all: a fresh context, then reuse.
    assert.equal(new Set(r.requests_detail.map((req) => req.connection_id)).size, 1)
    assert.equal(r.requests_detail[0].connection_reused, false)
    assert.ok(r.requests_detail.slice(1).every((req) => req.connection_reused))
    assert.equal(r.bytes, r.requests_detail.reduce((sum, req) => sum + req.bytes, 0))
  })

  test('runRound runs every mode once, in the order the shuffle gives', async () => {
    const results = await runRound({ pool, url: url('page-15k'), modes: ['h3', 'h2'], extraFlags: lab, random: () => 0 })
    assert.deepEqual(results.map((r) => r.mode), ['h2', 'h3'])
    for (const r of results) assert.equal(r.status, 'ok', r.error)
    const shuffled = await runRound({ pool, url: url('page-15k'), modes: ['h3', 'h2'], extraFlags: lab, random: () => 0.99 })
    assert.deepEqual(shuffled.map((r) => r.mode), ['h3', 'h2'])
  })

  test('a refused connection is an error result, not an exception', async () => {
    const port = await freePort()
    const r = await measurePage({ pool, url: `https://${origin.hostname}:${port}/`, mode: 'h2', extraFlags: lab })
    assert.equal(r.status, 'error')
    assert.match(r.error, /ERR_CONNECTION_REFUSED/)
    assert.equal(r.protocol_ok, false)
    assert.equal(r.ttfb_ms, null)
    assert.equal(typeof r.wall_ms, 'number')
  })

  test('a server that never answers gives a timeout result', async () => {
    const sockets = new Set()
    const silent = net.createServer((socket) => sockets.add(socket)).listen(0, '127.0.0.1')
    await once(silent, 'listening')
    const { port } = /** @type {import('node:net').AddressInfo} */ (silent.address())
    try {
      const r = await measurePage({ pool, url: `https://${origin.hostname}:${port}/`, mode: 'h2', extraFlags: lab, timeoutMs: 1500 })
      assert.equal(r.status, 'timeout')
      assert.match(r.error, /1500 ms/)
      assert.ok(r.wall_ms >= 1500)
    } finally {
      for (const socket of sockets) socket.destroy()
      silent.close()
    }
  })

  test('an HTTP error status is an error result that names the status', async () => {
    const r = await measurePage({ pool, url: `${origin.baseUrl}/missing.html`, mode: 'h3', extraFlags: lab })
    assert.equal(r.status, 'error')
    // HTTP/3 has no reason phrase: the status and the URL, nothing between.
    assert.equal(r.error, `HTTP 404: ${origin.baseUrl}/missing.html`)
    assert.equal(r.observed_protocol, 'h3')
  })

  test('a page served over another protocol than the mode is a protocol mismatch', async () => {
    // HTTP/1.1 only, with the lab certificate, at the lab hostname.
    const server = https.createServer({
      cert: await readFile(path.join(dataDir, 'lab', 'lab-cert.pem')),
      key: await readFile(path.join(dataDir, 'lab', 'lab-key.pem'))
    }, (req, res) => res.end('<!doctype html><h1>HTTP/1.1 only</h1>'))
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = /** @type {import('node:net').AddressInfo} */ (server.address())
    try {
      const r = await measurePage({ pool, url: `https://${origin.hostname}:${port}/`, mode: 'h2', extraFlags: lab })
      assert.equal(r.status, 'protocol_mismatch')
      assert.equal(r.observed_protocol, 'http/1.1')
      assert.equal(r.protocol_ok, false)
      assert.ok(r.ttfb_ms > 0)
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })

  test('the upload sink takes a 1 MB POST over HTTP/3', async () => {
    const browser = await pool.acquire({ flags: [...baseFlags(), ...modeFlags('h3', origin.baseUrl), ...lab] })
    const context = await browser.createBrowserContext()
    try {
      const page = await context.newPage()
      await page.goto(url('page-15k'))
      const upload = await page.evaluate(async () => {
        const res = await fetch('/upload', { method: 'POST', body: new Uint8Array(1024 * 1024) })
        await res.arrayBuffer()
        await new Promise((resolve) => setTimeout(resolve, 100)) // resource timing entries land asynchronously
        const [entry] = /** @type {PerformanceResourceTiming[]} */ (performance.getEntriesByName(res.url))
        return { status: res.status, bytes: res.headers.get('x-upload-bytes'), protocol: entry?.nextHopProtocol }
      })
      assert.deepEqual(upload, { status: 204, bytes: String(1024 * 1024), protocol: 'h3' })
    } finally {
      await context.close()
    }
  })

  test('a crashed browser is replaced on the next acquire', async () => {
    const flags = [...baseFlags(), ...modeFlags('h2', origin.baseUrl), ...lab]
    const first = await pool.acquire({ flags })
    const gone = once(first, 'disconnected')
    first.process().kill('SIGKILL')
    await gone
    const second = await pool.acquire({ flags })
    assert.notEqual(second, first)
    assert.ok(second.connected)
    const r = await measurePage({ pool, url: url('page-15k'), mode: 'h2', extraFlags: lab })
    assert.equal(r.status, 'ok', r.error)
  })

  test('a browser killed in the middle of a load fails the round as an infrastructure fault, never as a result of either arm', async () => {
    const flags = [...baseFlags(), ...modeFlags('h2', origin.baseUrl), ...lab]
    const browser = await pool.acquire({ flags })
    // The page answers after 8 s; the browser dies 2 s after the run's page
    // is opened, into its load (opening a context and a page can take a
    // second on a busy machine, and a browser killed before the load began
    // says another thing).
    /** @type {NodeJS.Timeout | undefined} */
    let killer
    browser.once('targetcreated', () => { killer = setTimeout(() => browser.process().kill('SIGKILL'), 2000) })
    try {
      await assert.rejects(runRound({ pool, url: `${origin.baseUrl}/slow?ms=8000`, modes: ['h2', 'h3'], extraFlags: lab, random: () => 0.99 }), (err) => {
        assert.ok(err instanceof InfrastructureError, String(err))
        // What the run was doing when its browser went is the browser's
        // last word (mid-load: "Navigating frame was detached"); how it
        // ended is known once its exit is seen, within a second of its
        // pipe closing on a busy machine, or not yet.
        assert.match(err.message, /^h2 arm: browser disconnected \(pid \d+( killed by SIGKILL|, its DevTools pipe closed)\) during the run: \S/)
        return true
      })
    } finally {
      clearTimeout(killer)
    }
    const again = await measurePage({ pool, url: url('page-15k'), mode: 'h2', extraFlags: lab })
    assert.equal(again.status, 'ok', 'the next run has a new browser')
  })

  test('a browser that stops answering in the middle of a load (its process stopped) fails the round as an infrastructure fault, and is replaced', async () => {
    const flags = [...baseFlags(), ...modeFlags('h2', origin.baseUrl), ...lab]
    const browser = await pool.acquire({ flags })
    const proc = browser.process()
    // The page answers after 3 s; the browser is frozen 1 s into its load, and the load runs out at 4 s.
    const freezer = setTimeout(() => proc.kill('SIGSTOP'), 1000)
    try {
      await assert.rejects(measurePage({ pool, url: `${origin.baseUrl}/slow?ms=3000`, mode: 'h2', extraFlags: lab, timeoutMs: 4000 }), (err) => {
        assert.ok(err instanceof InfrastructureError, String(err))
        // Frozen during the load, or (on a busy machine) before it began, while its pool closed it.
        assert.match(err.message, /^the browser stopped answering \(pid \d+: no answer to (DevTools|closing) in 5 s; killed, the next run starts another\) during the run: /)
        return true
      })
    } finally {
      clearTimeout(freezer)
    }
    assert.equal(proc.signalCode, 'SIGKILL', 'the frozen browser is gone')
    const again = await measurePage({ pool, url: url('page-15k'), mode: 'h2', extraFlags: lab })
    assert.equal(again.status, 'ok', 'the next run has a new browser')
  })

  test('a page whose renderer crashes while the browser lives is the page\'s error (renderer_crashed), at once, not at the timeout', async () => {
    const pageUrl = url('page-1m')
    const [r] = await measure({ pool, url: pageUrl, mode: 'h2', extraFlags: lab }, async ({ page, network, result }) => {
      // What an out-of-memory page does to its renderer, asked of Chromium directly.
      const cdp = await page.createCDPSession()
      page.once('domcontentloaded', () => { cdp.send('Page.crash').catch(() => {}) })
      await loadAndRead(page, pageUrl, 'h2', 20_000, result, network)
    })
    assert.equal(r.status, 'error', 'it failed when the renderer crashed, not at the timeout')
    assert.equal(r.failure_kind, 'renderer_crashed')
    assert.match(r.error, /^the page's renderer process crashed \(Page crashed!\): https:\/\/lab\.h3lens\.test:\d+\/page-1m\.html$/)
    const again = await measurePage({ pool, url: url('page-15k'), mode: 'h2', extraFlags: lab })
    assert.equal(again.status, 'ok', 'the browser lives on')
  })

  test('in a lab network namespace, the origin and the browser both run inside it', { skip: process.getuid?.() !== 0 && 'needs root for ip netns' }, async () => {
    const netns = 'h3lens-t-measure'
    await execFileAsync('ip', ['netns', 'add', netns])
    let nsOrigin
    try {
      await execFileAsync('ip', ['-n', netns, 'link', 'set', 'lo', 'up'])
      nsOrigin = await startOrigin({ dataDir, port: await freePort(), netns })
      assert.equal(nsOrigin.address, null)
      const nsFlags = labBrowserFlags({ spki: nsOrigin.spki, hostname: nsOrigin.hostname, address: '127.0.0.1' })
      const nsUrl = nsOrigin.baseUrl + nsOrigin.pages['page-15k'].path
      for (const mode of /** @type {const} */ (['h3', 'h2'])) {
        const r = await measurePage({ pool, url: nsUrl, mode, extraFlags: nsFlags, netns })
        assert.equal(r.status, 'ok', r.error)
        assert.equal(r.observed_protocol, mode)
      }
      // The namespace's loopback is its own: from here nothing answers there.
      const outside = await measurePage({ pool, url: nsUrl, mode: 'h2', extraFlags: nsFlags })
      assert.equal(outside.status, 'error')
    } finally {
      await nsOrigin?.stop()
      await execFileAsync('ip', ['netns', 'del', netns])
    }
  })

  test('closing the pool leaves no Chromium behind', async () => {
    await pool.close()
    assert.ok(browserPids.size >= 2)
    assert.deepEqual(await processesMentioning(path.join(dataDir, 'chromium')), [])
    for (const pid of browserPids) {
      assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, `browser ${pid} still running`)
    }
    assert.deepEqual(await readdir(path.join(dataDir, 'chromium')), [])
    await assert.rejects(pool.acquire({ flags: baseFlags() }), /closed/)
  })
})
