// What the agent records when the page is not what it seems, against the real
// lab origin (Caddy) and Chromium, submitted through the API into
// PostgreSQL: a document cut short after its headers, a URL that redirects to
// another origin, and an origin without HTTP/3.
import assert from 'node:assert/strict'
import dgram from 'node:dgram'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import pino from 'pino'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { hostPort } from '../lib/measurement/modes.js'
import { labBrowserFlags } from '../lib/measurement/browsers/chromium.js'
import { createJobRunner } from '../agents/job-runner.js'
import { isEmptyDocument, judgeFailure, judgeFirefoxH3, measurePage, PageLoadError, ProbeError } from '../agents/measure.js'
import { documentOutcome, unfinishedOf } from '../agents/network.js'
import { discoverChain } from '../agents/redirects.js'
import { startOrigin } from '../lab/origin.js'
import { scheduleDueJobs } from '../lib/store/jobs.js'
import { createMonitor } from '../lib/store/monitors.js'
import { createTestApp } from './helpers/app.js'
import { freePort } from '../dev/free-port.js'

describe('protocol truth in the lab', () => {
  let dataDir
  let origin
  let pool
  let runJob
  let t
  let token
  const launched = []

  before(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-truth-test-'))
    origin = await startOrigin({ dataDir, port: await freePort(), noH3Port: await freePort() })
    const created = createBrowserPool({ dataDir })
    pool = {
      ...created,
      acquire: async (spec) => {
        const browser = await created.acquire(spec)
        if (!launched.includes(browser)) launched.push(browser)
        return browser
      }
    }
    runJob = createJobRunner({ pool, lab: { spki: origin.spki, address: '127.0.0.1' }, timeoutMs: 30_000, log: pino({ level: 'silent' }) })
    t = await createTestApp()
    token = await t.agentToken('local')
  })

  after(async () => {
    await t?.close()
    await pool?.close()
    await origin?.stop()
    await rm(dataDir, { recursive: true, force: true })
  })

  /**
   * One round of a new monitor on `url`: claimed, measured and submitted as
   * an agent does, then read back from the results table, by mode.
   * @param {string} url
   */
  async function round (url, options = {}) {
    const agent = { authorization: `Bearer ${token}` }
    await t.db.query('UPDATE monitors SET paused = true')
    await createMonitor(t.db, { url, interval_s: 10, locations: ['local'], modes: ['h3', 'h2'], probes: ['page'], options })
    await scheduleDueJobs(t.db, { maxAttempts: 3 })
    const claimed = (await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: agent, payload: { limit: 1 } })).json()
    const [job] = claimed.jobs
    assert.equal(job.url, url)
    const results = await runJob(job, { location: claimed.location })
    const res = await t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${job.id}/results`, headers: agent, payload: { results } })
    assert.equal(res.statusCode, 200, res.body)
    const { rows } = await t.db.query(
      'SELECT mode, status, error, observed_protocol, protocol_ok, load_ms, bytes, notes, flags, details FROM results WHERE job_id = $1', [job.id])
    return Object.fromEntries(rows.map((r) => [r.mode, r]))
  }

  test('a document that ends before its Content-Length is an error in both modes, never ok, and stores the bytes that arrived', async () => {
    const { h3, h2 } = await round(origin.baseUrl + origin.endpoints.truncated.path)
    // How the cut shows depends on the server: Caddy 2.6 closed the stream
    // cleanly after 1 KB (the browser saw a finished load; only the byte
    // count tells), Caddy 2.11 resets it after the headers. Whatever the
    // browser saw, the run is an error, never ok, "incomplete document"
    // whenever a response had begun, and its bytes are the 1,024 that came.
    for (const [r, protocol, reset] of [[h2, 'h2', /net::ERR_HTTP2_PROTOCOL_ERROR/], [h3, 'h3', /net::ERR_QUIC_PROTOCOL_ERROR/]]) {
      assert.equal(r.status, 'error', `${protocol}: ${r.error}`)
      if (r.details.failure_kind === 'truncated') {
        assert.match(r.error, /^incomplete document: (received 1,024 of 100,000 declared bytes|network error after the headers \(net::ERR_\w+\) at 1,024 bytes of the body): https:\/\/lab\.h3lens\.test:\d+\/truncated$/)
        assert.equal(r.observed_protocol, protocol)
        const doc = r.details.requests.find((q) => q.type === 'Document')
        assert.ok(doc.bytes >= 1024 && doc.bytes < 1024 + 1024, `${protocol}: the document's bytes are what arrived, not 0: ${doc.bytes}`)
        assert.equal(Number(r.bytes), doc.bytes + r.details.requests.filter((q) => q !== doc).reduce((n, q) => n + q.bytes, 0))
      } else {
        assert.match(r.error, reset)
        assert.equal(r.details.failure_kind, undefined, 'the origin advertises h3: not "H3 not supported"')
      }
    }
  })

  test('an empty 200 document is an error with a note in both modes, unless the monitor allows empty pages', async () => {
    const url = origin.baseUrl + origin.endpoints.empty.path
    const note = (r) => r.notes.find((n) => n.code === 'empty_document')
    const refused = await round(url)
    for (const [protocol, r] of Object.entries(refused)) {
      assert.equal(r.status, 'error', `${protocol}: ${r.error}`)
      assert.equal(r.details.failure_kind, 'empty')
      assert.match(r.error, /^empty document: https:\/\/lab\.h3lens\.test:\d+\/empty answered HTTP 200 with no body \(set options\.allow_empty to count such loads\)$/)
      assert.equal(r.observed_protocol, protocol, 'it did load, over the forced protocol')
      assert.equal(note(r)?.message, 'the document answered HTTP 200 with an empty body')
    }
    const allowed = await round(url, { allow_empty: true })
    for (const [protocol, r] of Object.entries(allowed)) {
      assert.equal(r.status, 'ok', `${protocol}: ${r.error}`)
      assert.equal(r.details.failure_kind, undefined)
      assert.ok(r.load_ms > 0)
      assert.equal(note(r)?.message, 'the document answered HTTP 200 with an empty body (allowed by the monitor\'s options.allow_empty)')
    }
    // A page with a body has no such note.
    const { h2 } = await round(`${origin.baseUrl}/page-15k.html`)
    assert.equal(h2.status, 'ok')
    assert.equal(note(h2), undefined)
  })

  test('a URL that redirects to another origin is measured over HTTP/3 in h3 mode, with both origins forced', async () => {
    const url = origin.baseUrl + origin.endpoints.crossOriginRedirect.path
    const { h3, h2 } = await round(url)
    assert.equal(h3.status, 'ok', h3.error)
    assert.equal(h3.observed_protocol, 'h3')
    assert.deepEqual(h3.details.forced_origins, [hostPort(origin.baseUrl), hostPort(origin.altBaseUrl)])
    assert.ok(h3.flags.includes(`--origin-to-force-quic-on=${hostPort(origin.baseUrl)},${hostPort(origin.altBaseUrl)}`), h3.flags.join(' '))
    assert.equal(h3.flags.filter((f) => f.startsWith('--origin-to-force-quic-on')).length, 1)
    assert.ok(h3.details.requests.some((r) => r.url.startsWith(origin.altBaseUrl) && r.type === 'Document' && r.protocol === 'h3'))
    assert.equal(h2.status, 'ok', h2.error)
    assert.equal(h2.observed_protocol, 'h2')
    assert.deepEqual(h2.details.forced_origins, [])
  })

  test('without the redirect chain, the same page lands on HTTP/2 in h3 mode: what discovery prevents', async () => {
    const r = await measurePage({
      pool, url: origin.baseUrl + origin.endpoints.crossOriginRedirect.path, mode: 'h3',
      extraFlags: labBrowserFlags({ spki: origin.spki, hostname: origin.hostname, address: '127.0.0.1' })
    })
    assert.equal(r.status, 'protocol_mismatch')
    assert.equal(r.observed_protocol, 'h2')
  })

  test('discovery reads each hop\'s headers and Alt-Svc, and shares the h2 arm\'s browser', async () => {
    const extraFlags = labBrowserFlags({ spki: origin.spki, hostname: origin.hostname, address: '127.0.0.1' })
    const before = launched.length
    const chain = await discoverChain({ pool, url: origin.baseUrl + origin.endpoints.crossOriginRedirect.path, extraFlags })
    assert.equal(chain.error, null)
    assert.deepEqual(chain.hops.map((h) => h.status), [302, 200])
    assert.deepEqual(chain.origins, [origin.baseUrl, origin.altBaseUrl])
    assert.match(chain.altSvc.get(origin.altBaseUrl) ?? '', /h3=/)
    const plain = await discoverChain({ pool, url: origin.noH3BaseUrl + '/page-15k.html', extraFlags })
    assert.deepEqual([...plain.altSvc], [[origin.noH3BaseUrl, null]])
    assert.equal(launched.length, before, 'no browser of its own')
  })

  test('an origin without HTTP/3 is "H3 not supported" in h3 mode, at once, and ok in h2 mode', async () => {
    const { h3, h2 } = await round(origin.noH3BaseUrl + '/page-15k.html')
    assert.equal(h3.status, 'error')
    assert.equal(h3.details.failure_kind, 'h3_unsupported')
    assert.match(h3.error, /^H3 not supported: https:\/\/lab\.h3lens\.test:\d+ refused QUIC and advertises no Alt-Svc h3 \(net::ERR_QUIC_HANDSHAKE_FAILED\)$/)
    assert.equal(h2.status, 'ok', h2.error)
    assert.equal(h2.observed_protocol, 'h2')
    assert.equal(h2.details.failure_kind, undefined)
  })

  test('an origin whose UDP port drops every packet is "H3 not supported" too, well before the page timeout', async () => {
    // A firewall that drops QUIC: something holds the UDP port and never answers.
    const hole = dgram.createSocket('udp4')
    await new Promise((resolve) => hole.bind(Number(new URL(origin.noH3BaseUrl).port), '127.0.0.1', () => resolve(undefined)))
    try {
      const { h3 } = await round(origin.noH3BaseUrl + '/page-100k.html')
      assert.equal(h3.status, 'error', 'not timeout: Chromium gives up on the handshake by itself')
      assert.equal(h3.details.failure_kind, 'h3_unsupported')
      assert.match(h3.error, /^H3 not supported: .* \(net::ERR_QUIC_[A-Z_]+\)$/)
    } finally {
      hole.close()
    }
  })

  test('an origin that advertises only HTTP/3 no browser speaks today (a draft, an expired entry) and refuses QUIC is "H3 not supported"', async () => {
    const url = origin.noH3BaseUrl + '/page-15k.html'
    for (const altSvc of ['h3-29=":443"; ma=86400', 'h3=":443"; ma=0']) {
      const r = await measurePage({
        pool, url, mode: 'h3', altSvc: new Map([[origin.noH3BaseUrl, altSvc]]),
        extraFlags: labBrowserFlags({ spki: origin.spki, hostname: origin.hostname, address: '127.0.0.1' })
      })
      assert.equal(r.status, 'error', altSvc)
      assert.equal(r.failure_kind, 'h3_unsupported', `${altSvc}: ${r.error}`)
    }
  })

  test('an origin that advertises h3 and fails QUIC is an error, not "not supported"', async () => {
    // Forced QUIC towards the H1/H2-only port, while discovery saw h3 advertised.
    const url = origin.noH3BaseUrl + '/page-15k.html'
    const r = await measurePage({
      pool, url, mode: 'h3', altSvc: new Map([[origin.noH3BaseUrl, 'h3=":443"']]),
      extraFlags: labBrowserFlags({ spki: origin.spki, hostname: origin.hostname, address: '127.0.0.1' })
    })
    assert.equal(r.status, 'error')
    assert.equal(r.failure_kind, undefined)
    assert.match(r.error, /ERR_QUIC_HANDSHAKE_FAILED/)
  })
})

describe('judging a document and a failure (pure rules)', () => {
  const rec = (extra) => ({
    url: 'https://a.test/', method: 'GET', status: 200, responded: true, finished: true, failed: null, canceled: false,
    from_cache: false, declared_bytes: 100_000, content_encoding: null, received_bytes: 100_000, bytes: 100_400, ...extra
  })

  test('a body is short when fewer bytes came than declared; responses without a body of their own are whole', () => {
    assert.equal(documentOutcome(rec()).incomplete, null)
    assert.equal(documentOutcome(rec({ received_bytes: 1024 })).incomplete, 'received 1,024 of 100,000 declared bytes')
    // Compressed: the declared length counts encoded bytes, which arrive with the headers.
    assert.equal(documentOutcome(rec({ content_encoding: 'gzip', received_bytes: 400_000, bytes: 100_300 })).incomplete, null)
    assert.equal(documentOutcome(rec({ content_encoding: 'br', received_bytes: 9000, bytes: 2000 })).incomplete, 'received 2,000 of 100,000 declared bytes')
    for (const whole of [{ status: 304 }, { status: 204 }, { from_cache: true }, { method: 'HEAD' }, { declared_bytes: null }]) {
      assert.equal(documentOutcome(rec({ received_bytes: 0, bytes: 0, ...whole })).incomplete, null, JSON.stringify(whole))
    }
  })

  test('a network error after the headers is incomplete; an abort or an error status is not', () => {
    assert.match(documentOutcome(rec({ finished: false, failed: 'net::ERR_HTTP2_PROTOCOL_ERROR', received_bytes: 1024 })).incomplete ?? '',
      /^network error after the headers \(net::ERR_HTTP2_PROTOCOL_ERROR\) at 1,024 bytes of the body$/)
    assert.equal(documentOutcome(rec({ finished: false, failed: 'net::ERR_HTTP2_PROTOCOL_ERROR', received_bytes: 0 })).incomplete,
      'network error after the headers (net::ERR_HTTP2_PROTOCOL_ERROR) before the browser reported any of the body')
    assert.equal(documentOutcome(rec({ finished: false, failed: 'net::ERR_ABORTED', canceled: true })).incomplete, null)
    assert.equal(documentOutcome(rec({ finished: false, status: 404, failed: 'net::ERR_HTTP_RESPONSE_CODE_FAILURE' })).incomplete, null)
    assert.equal(documentOutcome(rec({ responded: false, finished: false, failed: 'net::ERR_QUIC_HANDSHAKE_FAILED' })).incomplete, null)
  })

  test('an empty document is a 2xx other than 204 and 205 with no body', () => {
    for (const status of [200, 201, 203, 206]) assert.equal(isEmptyDocument(status, 0), true, String(status))
    for (const [status, bytes] of [[200, 1], [204, 0], [205, 0], [301, 0], [404, 0], [null, 0], [200, null]]) assert.equal(isEmptyDocument(status, bytes), false, `${status} ${bytes}`)
  })

  test('"H3 not supported" needs h3 mode, a forced origin, a QUIC error before any response and a known Alt-Svc without h3', () => {
    const err = new PageLoadError('net::ERR_QUIC_HANDSHAKE_FAILED at https://a.test/', { url: 'https://a.test/' })
    const doc = { url: 'https://a.test/', responded: false, failed: 'net::ERR_QUIC_HANDSHAKE_FAILED', incomplete: null, arriving: false, arrived_bytes: 0, media_type: null, viewer: null }
    const ctx = { mode: 'h3', forced: ['a.test:443'], altSvc: new Map([['https://a.test', null]]) }
    assert.deepEqual(judgeFailure(err, doc, ctx), {
      status: 'error', error: 'H3 not supported: https://a.test refused QUIC and advertises no Alt-Svc h3 (net::ERR_QUIC_HANDSHAKE_FAILED)', failure_kind: 'h3_unsupported'
    })
    const plain = { status: 'error', error: err.message }
    assert.deepEqual(judgeFailure(err, doc, { ...ctx, altSvc: new Map([['https://a.test', 'h3=":443"; ma=86400']]) }), plain)
    assert.deepEqual(judgeFailure(err, doc, { ...ctx, altSvc: new Map() }), plain, 'Alt-Svc unknown')
    assert.deepEqual(judgeFailure(err, doc, { ...ctx, altSvc: null }), plain)
    assert.deepEqual(judgeFailure(err, doc, { ...ctx, forced: ['b.test:443'] }), plain)
    assert.deepEqual(judgeFailure(err, doc, { ...ctx, mode: 'h2' }), plain)
    assert.deepEqual(judgeFailure(err, { ...doc, failed: 'net::ERR_NAME_NOT_RESOLVED' }, ctx), plain)
    const timeout = new PageLoadError('load did not finish', { url: 'https://a.test/', status: 'timeout' })
    assert.deepEqual(judgeFailure(timeout, doc, ctx), { status: 'timeout', error: 'load did not finish' })
  })

  test('a timeout after the document came names the first three requests not finished and counts the rest, or says none was left; one before it does not', () => {
    const timeout = new PageLoadError('load did not finish within 3000 ms: https://a.test/', { url: 'https://a.test/', status: 'timeout' })
    const came = { url: 'https://a.test/', responded: true, failed: null, incomplete: null, arriving: false, arrived_bytes: 100, media_type: 'text/html', viewer: null }
    const long = `https://a.test/t?${'x'.repeat(400)}`
    const unfinished = [{ url: 'https://a.test/a.png', responded: false }, { url: 'https://b.test/b.js', responded: true }, { url: long, responded: false },
      { url: 'https://a.test/d.png', responded: false }, { url: 'https://a.test/e.png', responded: false }]
    const ctx = { mode: 'h2', forced: [] }
    assert.deepEqual(judgeFailure(timeout, came, { ...ctx, unfinished }), {
      status: 'timeout',
      error: 'load did not finish within 3000 ms: https://a.test/: 5 requests had not finished by then: https://a.test/a.png (no answer), ' +
        `https://b.test/b.js (answered, its body still arriving), ${long.slice(0, 300)}… (no answer) and 2 more`
    })
    assert.equal(judgeFailure(timeout, came, { ...ctx, unfinished: unfinished.slice(0, 1) }).error,
      'load did not finish within 3000 ms: https://a.test/: 1 request had not finished by then: https://a.test/a.png (no answer)')
    // The document itself not answered, or nothing left: the timeout as it is.
    assert.equal(judgeFailure(timeout, { ...came, responded: false, arrived_bytes: 0 }, { ...ctx, unfinished }).error, timeout.message)
    // A probe's own timeout after a warm-up that loaded is no load's.
    const probeTimeout = new ProbeError('5 parallel requests took longer than 3000 ms', { url: 'https://a.test/', probe: 'parallel', status: 'timeout' })
    assert.deepEqual(judgeFailure(probeTimeout, came, { ...ctx, unfinished }), { status: 'timeout', error: probeTimeout.message })
    // A page that did not answer the agent: its renderer, not the network, held the load.
    const busy = `${timeout.message}: the page did not answer the agent: its renderer was busy (a script that runs without end does this)`
    assert.equal(judgeFailure(timeout, { ...came, arriving: true }, { ...ctx, unfinished, busy: true }).error, busy)
    assert.equal(judgeFailure(timeout, { ...came, responded: false }, { ...ctx, busy: true }).error, busy)
    // Nothing left to load, yet no load event (Firefox's run of a page that calls window.stop()).
    assert.equal(judgeFailure(timeout, came, { ...ctx, unfinished: [] }).error,
      'load did not finish within 3000 ms: https://a.test/: every request had finished, but the page fired no load event by then: a script may still be running, or one stopped the load (window.stop())')
  })

  test('the requests a timeout names are of the page under way, those a load event waits for first, each in the order they started', () => {
    const rec = (/** @type {string} */ url, /** @type {string} */ type, /** @type {number} */ start, extra = {}) => ({ url, type, start, finished: false, failed: null, responded: false, ...extra })
    const doc = rec('https://a.test/', 'Document', 1, { responded: true })
    const earlier = rec('https://a.test/first-view.js', 'Script', 0)
    const view = [doc, rec('https://a.test/poll', 'XHR', 2), rec('https://a.test/b.png', 'Image', 3, { responded: true }), rec('https://a.test/a.css', 'Stylesheet', 2.5),
      rec('https://a.test/done.png', 'Image', 2, { finished: true }), rec('https://a.test/gone.png', 'Image', 2, { failed: 'net::ERR_ABORTED' })]
    assert.deepEqual(unfinishedOf([earlier, ...view], doc, view), [
      { url: 'https://a.test/a.css', responded: false }, { url: 'https://a.test/b.png', responded: true }, { url: 'https://a.test/poll', responded: false }
    ])
  })

  test('in Firefox, "H3 not supported" is a forced origin with a known Alt-Svc without h3 that fell back to TCP or timed out', () => {
    const ctx = { documentUrl: 'https://a.test/page', forced: ['a.test:443'], altSvc: new Map([['https://a.test', null]]) }
    const unsupported = (/** @type {string} */ how) => ({
      status: 'error', error: `H3 not supported: https://a.test answered no QUIC and advertises no Alt-Svc h3 (${how})`, failure_kind: 'h3_unsupported', protocol_ok: false
    })
    // Firefox waits out its QUIC idle timeout, then loads over TCP; or the page timeout comes first.
    assert.deepEqual(judgeFirefoxH3({ status: 'protocol_mismatch', observed_protocol: 'h2' }, ctx), unsupported('Firefox fell back to h2'))
    assert.deepEqual(judgeFirefoxH3({ status: 'timeout' }, ctx), unsupported('the load timed out'))
    assert.deepEqual(judgeFirefoxH3({ status: 'error', error: 'NS_ERROR_NET_TIMEOUT' }, ctx), unsupported('NS_ERROR_NET_TIMEOUT'))
    // Anything else keeps its own status.
    assert.equal(judgeFirefoxH3({ status: 'ok' }, ctx), null)
    assert.equal(judgeFirefoxH3({ status: 'timeout', failure_kind: 'h3_unsupported' }, ctx), null, 'already judged')
    assert.equal(judgeFirefoxH3({ status: 'timeout' }, { ...ctx, altSvc: new Map([['https://a.test', 'h3=":443"; ma=86400']]) }), null, 'the origin offers h3')
    assert.equal(judgeFirefoxH3({ status: 'timeout' }, { ...ctx, altSvc: new Map() }), null, 'Alt-Svc unknown')
    assert.equal(judgeFirefoxH3({ status: 'timeout' }, { ...ctx, altSvc: null }), null)
    assert.equal(judgeFirefoxH3({ status: 'timeout' }, { ...ctx, forced: ['b.test:443'] }), null, 'not a forced origin')
    assert.equal(judgeFirefoxH3({ status: 'timeout' }, { ...ctx, documentUrl: 'not a url' }), null)
  })
})
