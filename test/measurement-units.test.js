// The small pieces that turn raw measurements into explanations: protocol
// spellings, Alt-Svc, round trips and their floors, net log findings,
// outlier decisions and the location RTT. No browser needed.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import net from 'node:net'
import { describe, test } from 'node:test'
import { normalizeProtocol } from '../lib/measurement/protocol.js'
import { protocolReason } from '../lib/measurement/protocol-reason.js'
import { advertisesH3, parseAltSvc } from '../lib/measurement/alt-svc.js'
import { tcpPing } from '../agents/rtt.js'
import { rttAccounting } from '../lib/measurement/rtt.js'
import { summarizeNetlog } from '../lib/measurement/netlog.js'
import { outlierOf } from '../agents/netlog-capture.js'
import { locationRtt } from '../agents/job-runner.js'
import { MAX_KEPT_ALT_SVC, MAX_KEPT_ORIGINS, MAX_KEPT_REQUESTS, MAX_KEPT_URL, RESULTS_BODY_LIMIT, ROUND_RESULTS_BYTES, toSubmission, withinRoundLimit } from '../lib/measurement/result.js'
import { keepFilmstrips } from '../agents/filmstrip.js'
import { roundBudget } from '../agents/round-budget.js'
import { monotonicNow } from '../agents/clock.js'
import { badDetails } from '../lib/measurement/checks.js'
import { hostPort } from '../lib/measurement/modes.js'
import { modeFlags } from '../lib/measurement/browsers/chromium.js'
import { effectiveOptions } from '../lib/measurement/probes/index.js'
import { metricSamples, ROLLUP_COLUMNS } from '../lib/measurement/metrics.js'

test('every spelling of HTTP/3 and HTTP/2 normalises to h3 and h2', () => {
  for (const s of ['h3', 'H3', 'h3-29', 'h3-Q050', 'QUIC', 'quic', 'http/2+quic/46', 'HTTP/2+QUIC/43', 'HTTP/3', 'http/3.0']) assert.equal(normalizeProtocol(s), 'h3', s)
  for (const s of ['h2', 'H2', 'HTTP/2', 'http/2.0', ' h2 ']) assert.equal(normalizeProtocol(s), 'h2', s)
  assert.equal(normalizeProtocol('http/1.1'), 'http/1.1')
  assert.equal(normalizeProtocol(''), null)
})

test('Alt-Svc: h3 with a lifetime counts as an HTTP/3 advertisement; drafts, Google QUIC and ma=0 do not', () => {
  assert.deepEqual(parseAltSvc('h3=":443"; ma=86400, h3-29=":443"; ma=86400'), [
    { protocol: 'h3', authority: ':443', max_age_s: 86400 },
    { protocol: 'h3-29', authority: ':443', max_age_s: 86400 }
  ])
  assert.equal(advertisesH3('h3=":443"; ma=86400, h3-29=":443"; ma=86400'), true)
  assert.equal(advertisesH3('h3=":9443"'), true, 'another port')
  assert.equal(advertisesH3('h3-29=":8443"'), false)
  assert.equal(advertisesH3('quic=":443"; ma=2592000; v="46,43"'), false)
  assert.equal(advertisesH3('h3=":443"; ma=0'), false)
  assert.equal(advertisesH3('h3=":443"; ma=0, h3=":443"; ma=60'), true)
  assert.equal(advertisesH3('h3=":443"; ma="0"'), false, 'a quoted ma is read too')
  assert.equal(advertisesH3('h3=":443"; ma="3600"'), true)
  assert.equal(advertisesH3('h3=":443"; ma=-1'), false, 'an entry whose ma is no number is not one browsers take')
  assert.equal(advertisesH3('h2=":443"'), false)
  assert.equal(advertisesH3('clear'), false)
  assert.equal(advertisesH3(null), false)
  // An id that does not decode is skipped, the rest of the header kept.
  assert.deepEqual(parseAltSvc('h3%=":443", h3=":443"; ma=60'), [{ protocol: 'h3', authority: ':443', max_age_s: 60 }])
  assert.equal(advertisesH3('h3%zz=":443"'), false)
})

test('an H3 arm whose page ended on an origin it did not force says so, not that its forced connection went unused', () => {
  const doc = (/** @type {string} */ url) => [{ type: 'Document', url, status: 200, protocol: 'h2' }]
  const run = { mode: 'h3', observed_protocol: 'h2', forced_origins: ['shop.example:443'] }
  assert.equal(protocolReason({ ...run, requests_detail: doc('https://www.shop.example/') }).code, 'not_forced')
  assert.match(protocolReason({ ...run, requests_detail: doc('https://www.shop.example/') }).text, /^Not H3: the page ended on an origin the arm did not force/)
  assert.equal(protocolReason({ ...run, requests_detail: doc('https://shop.example/') }).code, 'fell_back')
  // Without the list (a WebPageTest upload), as before.
  assert.equal(protocolReason({ mode: 'h3', observed_protocol: 'h2', requests_detail: doc('https://www.shop.example/') }).code, 'fell_back')
  // An iframe's document is not the page's, even where the page's own answered an error.
  const framed = [{ type: 'Document', url: 'https://shop.example/', status: 503, protocol: 'h2' }, { type: 'Document', url: 'https://ads.example/frame', status: 200, protocol: 'h2', subframe: true }]
  assert.equal(protocolReason({ ...run, requests_detail: framed }).code, 'fell_back')
})

test('a heavy page\'s result keeps its first requests as evidence and counts them all', () => {
  const requests = Array.from({ length: MAX_KEPT_REQUESTS + 203 }, (_, i) => ({ url: `https://example.net/i/${i}.png`, protocol: 'h3', bytes: 100, start_ms: i, from_cache: false }))
  const sub = toSubmission({ mode: 'h3', status: 'ok', observed_protocol: 'h3', requests: requests.length, bytes: 100 * requests.length, requests_detail: requests }, { rtt: null })
  assert.equal(sub.requests, MAX_KEPT_REQUESTS + 203)
  assert.equal(sub.bytes, 100 * (MAX_KEPT_REQUESTS + 203))
  assert.deepEqual(sub.details.requests, requests.slice(0, MAX_KEPT_REQUESTS), 'the first that started')
  assert.equal(sub.details.requests_not_kept, 203)
  // One that keeps them all says nothing of it.
  assert.equal(toSubmission({ mode: 'h3', requests_detail: requests.slice(0, 5) }, { rtt: null }).details.requests_not_kept, undefined)
  // A round of heavy pages stays far below what the API takes (BATCH_BODY_LIMIT, 32 MB): 7 results of 1,000 kept requests.
  assert.ok(7 * JSON.stringify(sub).length < 8 * 1024 * 1024, `${JSON.stringify(sub).length} bytes a result`)
})

test('a round of pages with long URLs, many origins or many results is cut to what the API takes, saying what it cut', () => {
  const page = (/** @type {number} */ n, /** @type {number} */ urlLength, extra = {}) => toSubmission({
    mode: 'h2', status: 'ok', observed_protocol: 'h2', requests: n, bytes: n,
    requests_detail: Array.from({ length: n }, (_, i) => ({ url: `https://example.net/${i}?${'u'.repeat(urlLength)}`, protocol: 'h2', bytes: 1, start_ms: i, from_cache: false })),
    ...extra
  }, { rtt: null })
  const weight = (/** @type {unknown} */ v) => Buffer.byteLength(JSON.stringify(v))
  // A light round is sent as it is.
  const light = [page(20, 50), page(20, 50)]
  assert.deepEqual(withinRoundLimit(light), light)

  // 1,000 requests with 20,000-character URLs: each URL keeps its start and says its length.
  const long = withinRoundLimit([page(1000, 20_000)])
  const [first] = long[0].details.requests
  assert.equal(first.url.length, MAX_KEPT_URL)
  assert.ok(first.url_length > 20_000 && `https://example.net/0?${'u'.repeat(20_000)}`.startsWith(first.url))
  assert.equal(long[0].details.requests.length, 1000, 'every request kept: cut URLs fit')
  assert.equal(long[0].details.requests_not_kept, undefined)
  // A cut between the halves of a character outside the BMP leaves no half (the API refuses one).
  const astral = `https://example.net/?${'u'.repeat(MAX_KEPT_URL - 22)}😀${'u'.repeat(10)}`
  const [{ details: { requests: [split] } }] = withinRoundLimit([{ mode: 'h2', details: { requests: [{ url: astral }] } }])
  assert.equal(split.url.at(-1), '\uFFFD')
  assert.doesNotMatch(split.url, /[\uD800-\uDBFF](?![\uDC00-\uDFFF])/)

  // 500 origins, each with an Alt-Svc of 5,000 characters: the first 200, each cut.
  const origins = Array.from({ length: 500 }, (_, i) => ({ origin: `https://o${i}.example.net`, alt_svc: `h3=":443"; ${'x'.repeat(5000)}`, h3_advertised: true, requests: { h3: 0, h2: 1, other: 0 } }))
  const [wide] = withinRoundLimit([page(1, 10, { origins })])
  assert.equal(wide.details.origins.length, MAX_KEPT_ORIGINS)
  assert.equal(wide.details.origins_not_kept, 500 - MAX_KEPT_ORIGINS)
  assert.equal(wide.details.origins[0].origin, 'https://o0.example.net', 'the first seen')
  assert.ok(wide.details.origins.every((/** @type {any} */ o) => o.alt_svc.length === MAX_KEPT_ALT_SVC))

  // A journey's round, 124 results of 1,000 requests each, over a limit:
  // every result keeps the same first requests, as many as fit, and counts
  // the rest; totals are untouched. (At the API's limit the same holds for
  // URLs of MAX_KEPT_URL: hundreds of MB a round as measured.)
  const heavy = Array.from({ length: 124 }, () => page(1000, 200))
  const limit = 4 * 1024 * 1024
  const fitted = withinRoundLimit(heavy, limit)
  const size = weight(fitted)
  assert.ok(size <= limit && size > limit * 0.95, `${size} bytes: below the limit, and not far below it`)
  const kept = fitted[0].details.requests.length
  assert.ok(kept > 10 && kept < 1000, `${kept} requests kept a result`)
  for (const r of fitted) {
    assert.equal(r.details.requests.length, kept)
    assert.equal(r.details.requests.length + r.details.requests_not_kept, 1000)
    assert.equal(r.requests, 1000)
    assert.equal(r.details.requests[0].start_ms, 0, 'the first that started')
  }
  // One request more a result would not fit.
  const oneMore = heavy.map((r) => ({ ...r, details: { ...r.details, requests: r.details.requests.slice(0, kept + 1) } }))
  assert.ok(weight(oneMore) > limit)
  // The default leaves room under what the API takes for what a submission adds.
  assert.ok(ROUND_RESULTS_BYTES + 1024 * 1024 < RESULTS_BODY_LIMIT)
  // A probe's warm-up keeps its requests as a page does: its URLs cut, its list in the count.
  const warm = page(1, 10)
  warm.details.warmup = { url: 'https://example.net/', requests: 1000, requests_detail: page(1000, 20_000).details.requests }
  const [warmed] = withinRoundLimit([warm])
  assert.ok(warmed.details.warmup.requests_detail.every((/** @type {any} */ q) => q.url.length === MAX_KEPT_URL && q.url_length > 20_000))
  const [tight] = withinRoundLimit([warmed], weight([warmed]) / 2)
  assert.ok(tight.details.warmup.requests_detail.length < 1000)
  assert.equal(tight.details.warmup.requests_detail.length + tight.details.warmup.requests_not_kept, 1000)
  assert.ok(weight([tight]) <= weight([warmed]) / 2)
  // A warm-up of more requests than a result keeps: its first 1,000, and how many more.
  const many = page(1, 10)
  many.details.warmup = { url: 'https://example.net/', requests: 1200, requests_detail: Array.from({ length: 1200 }, (_, i) => ({ url: `https://example.net/${i}`, start_ms: i })) }
  const [capped] = withinRoundLimit([many])
  assert.deepEqual([capped.details.warmup.requests_detail.length, capped.details.warmup.requests_not_kept], [MAX_KEPT_REQUESTS, 200])
  // A round over the limit even with no request keeps none (below what the API takes, it may still fit).
  const [bare] = withinRoundLimit([page(50, 10, { notes: Array.from({ length: 50 }, (_, i) => ({ code: 'n', message: `${i}`.repeat(900) })) })], 1000)
  assert.deepEqual([bare.details.requests.length, bare.details.requests_not_kept, bare.requests], [0, 50, 50])
  // A URL JSON writes longer than it is (quotes, backslashes, control and non-ASCII characters) is counted as written.
  const odd = [page(1, 10), page(1, 10)]
  odd[0].details.requests = Array.from({ length: 40 }, (_, i) => ({ url: `https://example.net/${i}?q="\\\u0001é😀${'"'.repeat(200)}`, start_ms: i }))
  const oddLimit = weight(odd) - 1
  const oddFit = withinRoundLimit(odd, oddLimit)
  assert.ok(weight(oddFit) <= oddLimit && oddFit[0].details.requests.length === 39, `${weight(oddFit)} bytes, ${oddFit[0].details.requests.length} kept`)
  assert.equal(oddFit[1].details.requests.length, 1, 'a list under the cut is left whole')
  // A journey's step that reached a 100,000-character address (a search
  // page, say), in the whole journey's steps and in a named step's
  // navigations: 30 such steps made 6 MB of addresses a result.
  const far = `https://example.net/search?q=${'s'.repeat(100_000)}`
  const journey = page(1, 10, { journey: { steps: [{ index: 0, action: 'navigate', url: far, ok: true }, { index: 1, action: 'click', url: 'https://example.net/', ok: true }], failed_step: null, not_run: 0 } })
  const named = page(1, 10, { probe: 'journey:search', step: { name: 'search', steps: [0, 0], navigations: [far, 'https://example.net/'] } })
  const [whole, step] = withinRoundLimit([journey, named])
  assert.deepEqual(whole.details.journey.steps.map((/** @type {any} */ s) => [s.url.length, s.url_length]), [[MAX_KEPT_URL, far.length], ['https://example.net/'.length, undefined]])
  assert.ok(far.startsWith(whole.details.journey.steps[0].url))
  assert.deepEqual(step.details.step.navigations.map((/** @type {string} */ u) => u.length), [MAX_KEPT_URL, 'https://example.net/'.length])
  assert.deepEqual([whole.details.journey.failed_step, step.details.step.name], [null, 'search'], 'the rest as measured')
  // A result cut already (a page of more than 1,000 requests) adds what this cut leaves out.
  const [more] = withinRoundLimit([page(1200, 10)], weight([page(1200, 10)]) / 4)
  assert.equal(more.details.requests.length + more.details.requests_not_kept, 1200)
})

describe('connect and TTFB in round trips', () => {
  test('a QUIC handshake of 3 RTT gets a note against its floor of 1', () => {
    const r = rttAccounting({ protocol: 'h3', connect_ms: 180, ttfb_ms: 300 }, 60)
    assert.equal(r.connect_rtt, 3)
    assert.equal(r.ttfb_rtt, 5)
    assert.deepEqual(r.notes.map((n) => n.message), [
      'QUIC handshake took 3 RTT (floor 1)',
      'TTFB took 5 RTT (floor 2 for H3 on a new connection): 3 RTT over, 2 of them in the handshake'
    ])
    assert.deepEqual({ code: r.notes[0].code, rtt: r.notes[0].rtt, floor: r.notes[0].floor, extra_ms: r.notes[0].extra_ms }, { code: 'slow_handshake', rtt: 3, floor: 1, extra_ms: 120 })
  })

  test('TCP+TLS has a floor of 2 RTT to connect and 3 to the first byte', () => {
    assert.deepEqual(rttAccounting({ protocol: 'h2', connect_ms: 240, ttfb_ms: 300 }, 60).notes.map((n) => n.message), [
      'TCP+TLS connect took 4 RTT (floor 2)',
      'TTFB took 5 RTT (floor 3 for H2 on a new connection): 2 RTT over, 2 of them in the handshake'
    ])
    assert.deepEqual(rttAccounting({ protocol: 'h2', connect_ms: 125, ttfb_ms: 190 }, 60).notes, [], 'within half an RTT of the floors')
  })

  test('a reused connection has no handshake to judge; an unknown RTT gives no units', () => {
    const reused = rttAccounting({ protocol: 'h3', connect_ms: 0, ttfb_ms: 70 }, 60)
    assert.equal(reused.connect_rtt, 0)
    assert.deepEqual(reused.notes.map((n) => n.code), ['connection_reused'])
    assert.deepEqual(rttAccounting({ protocol: 'h3', connect_ms: 180, ttfb_ms: 300 }, null), { connect_rtt: null, ttfb_rtt: null, notes: [] })
  })

  test('the submission carries the units and the notes, net log findings included', () => {
    const s = toSubmission({ mode: 'h3', view: 'first', probe: 'page', status: 'ok', observed_protocol: 'h3', connect_ms: 240, ttfb_ms: 330, netlog: { kind: 'rerun', summary: { findings: [{ code: 'x', message: 'why' }] } } }, { rtt: 60 })
    assert.equal(s.connect_rtt, 4)
    assert.equal(s.ttfb_rtt, 5.5)
    assert.deepEqual(s.notes.map((n) => n.source), ['timing', 'timing', 'netlog (rerun)'])
    assert.equal(s.details.netlog.kind, 'rerun')
  })
})

describe('the RTT a round is judged against', () => {
  test('a lab profile gives it; lab origins are never pinged', async () => {
    const ping = async () => { throw new Error('no ping for lab origins') }
    assert.deepEqual(await locationRtt({ url: 'https://lab.h3lens.test:8443/', isLab: true, location: { kind: 'lab', profile: { rtt_ms: 60 } }, ping }), { rttMs: 60, source: 'profile' })
    assert.deepEqual(await locationRtt({ url: 'https://lab.h3lens.test:8443/', isLab: true, location: { kind: 'lab', profile: { rtt_ms: 0 } }, ping }), { rttMs: null, source: null })
  })

  test('a real location measures it with TCP connects, the median of three', async () => {
    const server = net.createServer((s) => s.destroy()).listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = /** @type {import('node:net').AddressInfo} */ (server.address())
    try {
      const ms = await tcpPing({ host: '127.0.0.1', port })
      assert.ok(ms !== null && ms > 0 && ms < 500, String(ms))
      const asked = []
      const r = await locationRtt({ url: `https://127.0.0.1:${port}/`, isLab: false, location: { kind: 'real', profile: {} }, ping: async (q) => { asked.push(q); return 12.5 } })
      assert.deepEqual(r, { rttMs: 12.5, source: 'tcp_ping' })
      assert.deepEqual(asked.map((q) => ({ host: q.host, port: q.port })), [{ host: '127.0.0.1', port }])
    } finally {
      server.close()
    }
    assert.equal(await tcpPing({ host: '127.0.0.1', port, count: 1, timeoutMs: 500 }), null, 'nothing listens any more')
  })
})

test('probe options: defaults, relative URLs, the lab upload sink', () => {
  assert.deepEqual(effectiveOptions('https://lab.h3lens.test:8443/page.html', { parallel_url: '/noop' }), {
    parallel_requests: 5,
    parallel_url: 'https://lab.h3lens.test:8443/noop',
    upload_bytes: 1048576,
    upload_url: 'https://lab.h3lens.test:8443/upload',
    allow_empty: false,
    force_quic: 'main',
    netlog: 'outliers',
    filmstrip: 'outliers'
  })
  assert.equal(effectiveOptions('https://example.com/').upload_url, null)
  assert.equal(effectiveOptions('https://example.com/').parallel_url, 'https://example.com/')
})

test('force list: the page origin plus the H3-capable ones, in one flag', () => {
  assert.deepEqual(modeFlags('h3', 'https://a.example/x', { forceOrigins: ['https://cdn.example', 'https://a.example'] }),
    ['--enable-quic', '--origin-to-force-quic-on=a.example:443,cdn.example:443'])
  assert.equal(hostPort('http://b.example/'), 'b.example:80')
})

test('per-request samples feed the request and upload metrics, which have rollup columns', () => {
  assert.deepEqual(metricSamples({ probe: 'parallel', details: { samples: [10, 12, -1, null] } }), [['request', [10, 12]]])
  assert.deepEqual(metricSamples({ probe: 'upload', ttfb_ms: 90, details: { samples: [800] } }), [['ttfb', [90]], ['upload', [800]]])
  assert.deepEqual(metricSamples({ probe: 'page', details: { samples: [1] } }), [])
  assert.ok(ROLLUP_COLUMNS.includes('request') && ROLLUP_COLUMNS.includes('upload'))
})

test('an outlier is a first-view ok run above the p99 of its probe and mode', () => {
  const t = { 'page/h3': 500, 'parallel/h2': 100, 'upload/h3': 900 }
  assert.match(outlierOf({ view: 'first', status: 'ok', probe: 'page', mode: 'h3', load_ms: 501 }, t) ?? '', /load_ms 501 above the p99 of recent runs \(500\)/)
  assert.equal(outlierOf({ view: 'first', status: 'ok', probe: 'page', mode: 'h3', load_ms: 499 }, t), null)
  assert.equal(outlierOf({ view: 'repeat', status: 'ok', probe: 'page', mode: 'h3', load_ms: 900 }, t), null)
  assert.equal(outlierOf({ view: 'first', status: 'error', probe: 'page', mode: 'h3', load_ms: 900 }, t), null)
  assert.equal(outlierOf({ view: 'first', status: 'ok', probe: 'page', mode: 'h2', load_ms: 900 }, t), null, 'no threshold yet')
  assert.match(outlierOf({ view: 'first', status: 'ok', probe: 'parallel', mode: 'h2', samples: [20, 140] }, t) ?? '', /slowest request/)
  assert.match(outlierOf({ view: 'first', status: 'ok', probe: 'upload', mode: 'h3', samples: [901] }, t) ?? '', /upload ms/)
})

describe('net log findings', () => {
  /** A QUIC session as Chromium logs it, from a compact list of [ms, event, params]. */
  const netlog = (rows) => {
    const types = {}
    const events = rows.map(([time, name, params = {}, phase = 0]) => {
      types[name] ??= Object.keys(types).length + 1
      return { time: String(1000 + time), type: types[name], source: { id: 7, type: 1 }, phase, params }
    })
    return { constants: { logEventTypes: types, logSourceType: { QUIC_SESSION: 1 }, clientInfo: { version: '156' } }, events }
  }
  const sent = (ms, pn, level, transmission = 'NOT_RETRANSMISSION') => [ms, 'QUIC_SESSION_PACKET_SENT', { packet_number: pn, encryption_level: `ENCRYPTION_${level}`, transmission_type: transmission, size: 1000 }]
  const crypto = (offset, length) => [0, 'QUIC_SESSION_CRYPTO_FRAME_SENT', { encryption_level: 'ENCRYPTION_INITIAL', offset, data_length: length }]
  const ack = (ms, largest) => [ms, 'QUIC_SESSION_ACK_FRAME_RECEIVED', { largest_observed: largest, missing_packets: [] }]
  const received = (ms) => [ms, 'QUIC_SESSION_PACKET_RECEIVED', { size: 37 }]

  test('the lab quirk: half a ClientHello acknowledged, the rest lost and resent after a probe timeout', () => {
    const log = netlog([
      [0, 'QUIC_SESSION', { host: 'lab.h3lens.test', port: 8443 }, 1],
      crypto(0, 1000), sent(0, 1, 'INITIAL'), crypto(1000, 950), sent(0, 2, 'INITIAL'),
      received(63), ack(63, 1),
      sent(170, 4, 'INITIAL', 'PTO_RETRANSMISSION'),
      received(235), [235, 'QUIC_SESSION_PACKET_LOST', { packet_number: 2 }], ack(235, 4),
      [235, 'QUIC_SESSION_CRYPTO_HANDSHAKE_COMPLETE'], [235, 'QUIC_SESSION_ZERO_RTT_STATE', { state: 'NotAttempted' }],
      sent(236, 5, 'HANDSHAKE'), received(296), ack(296, 5), [296, 'QUIC_SESSION_HANDSHAKE_DONE_FRAME_RECEIVED']
    ])
    const s = summarizeNetlog(log, { rttMs: 60 })
    const [q] = s.quic_sessions
    assert.equal(q.client_hello_bytes, 1950)
    assert.equal(q.first_flight_initial_packets, 2)
    assert.equal(q.first_flight_acked_packets, 1)
    assert.equal(q.first_flight_never_acked_packets, 1)
    assert.equal(q.initial_pto_retransmissions, 1)
    assert.equal(q.handshake_complete_ms, 235)
    assert.equal(q.zero_rtt, 'NotAttempted')
    assert.deepEqual(s.findings.map((f) => f.code), ['client_hello_split_partly_acked'])
    assert.match(s.findings[0].message, /2 Initial packets; the server acknowledged 1 at once, sent no ServerHello and never acknowledged the rest \(declared lost\).*172 ms \(2\.9 RTT\)/)
  })

  test('a handshake at its floor has nothing to explain', () => {
    const log = netlog([
      [0, 'QUIC_SESSION', { host: 'lab.h3lens.test', port: 8443 }, 1],
      crypto(0, 1000), sent(0, 1, 'INITIAL'), crypto(1000, 950), sent(0, 2, 'INITIAL'),
      received(61), ack(61, 2), [62, 'QUIC_SESSION_CRYPTO_HANDSHAKE_COMPLETE'],
      sent(62, 3, 'HANDSHAKE'), received(122), ack(122, 3), [122, 'QUIC_SESSION_HANDSHAKE_DONE_FRAME_RECEIVED']
    ])
    const s = summarizeNetlog(log, { rttMs: 60 })
    assert.deepEqual(s.findings, [])
    assert.equal(s.quic_sessions[0].finished_ack_ms, 60)
  })

  test('a server that sits on the client\'s Finished is named', () => {
    const log = netlog([
      [0, 'QUIC_SESSION', { host: 'lab.h3lens.test', port: 8443 }, 1],
      crypto(0, 1000), sent(0, 1, 'INITIAL'), received(61), ack(61, 1), [62, 'QUIC_SESSION_CRYPTO_HANDSHAKE_COMPLETE'],
      sent(62, 3, 'HANDSHAKE'), sent(200, 6, 'HANDSHAKE', 'PTO_RETRANSMISSION'), received(246), ack(246, 3)
    ])
    const [finding] = summarizeNetlog(log, { rttMs: 60 }).findings
    assert.equal(finding.code, 'server_slow_to_confirm')
    assert.match(finding.message, /184 ms after it was sent \(3\.1 RTT; 1 RTT expected\), after 1 probe retransmission/)
  })

  test('anything but a net log is refused', () => {
    assert.throws(() => summarizeNetlog(/** @type {any} */ ({ events: [] })), /not a Chromium net log/)
  })
})

describe('why a page came over its protocol', () => {
  const doc = (/** @type {Record<string, any>} */ extra) => ({ type: 'Document', url: 'https://shop.example/', status: 200, ...extra })
  const origins = [{ origin: 'https://shop.example', h3_advertised: true }]
  test('a repeat view on the connection its first view opened chose nothing: reused, not "not yet known"', () => {
    const repeat = protocolReason({ mode: 'auto', view: 'repeat', observed_protocol: 'h2', origins, requests_detail: [doc({ connection_reused: true, alternate_protocol_usage: 'unspecifiedReason' })] })
    assert.equal(repeat.code, 'reused')
    const overH3 = protocolReason({ mode: 'auto', view: 'repeat', observed_protocol: 'h3', origins, requests_detail: [doc({ connection_reused: true, alternate_protocol_usage: null })] })
    assert.equal(overH3.code, 'reused')
  })
  test('a plain http:// page says browsers speak H2 and H3 over https only, in every arm, not that QUIC was not used', () => {
    for (const mode of ['h3', 'h2', 'auto']) {
      const r = protocolReason({ mode, view: 'first', observed_protocol: 'http/1.1', origins: [], requests_detail: [doc({ url: 'http://shop.example/' })] })
      assert.deepEqual([r.code, r.text], ['plain_http', 'HTTP/1.1: the page is plain http://, and browsers speak H2 and H3 over https:// only'], mode)
    }
    // Redirected to https, the page's own document decides.
    const moved = protocolReason({ mode: 'h3', view: 'first', observed_protocol: 'h3', origins, requests_detail: [doc({ url: 'http://shop.example/', status: 301 }), doc({})] })
    assert.equal(moved.code, 'forced_h3')
  })
  test('a returning visit over H2 to an origin the first visit learnt H3 of says H3 was learnt and not used, in either browser', () => {
    for (const usage of ['mappingMissing', 'unspecifiedReason', null]) {
      const r = protocolReason({ mode: 'auto', view: 'returning', observed_protocol: 'h2', origins, learnt_alt_svc: ['https://shop.example'], protocol_usage_unreported: usage === null, requests_detail: [doc({ alternate_protocol_usage: usage })] })
      assert.deepEqual([r.code, r.text], ['learnt_unused', 'Not H3: the first visit learnt H3 from Alt-Svc, but this visit did not use it (QUIC failed, or was not tried)'], String(usage))
    }
    // What Chromium says of a race or a broken mark stays the reason.
    assert.equal(protocolReason({ mode: 'auto', view: 'returning', observed_protocol: 'h2', origins, learnt_alt_svc: ['https://shop.example'], requests_detail: [doc({ alternate_protocol_usage: 'mainJobWonRace' })] }).code, 'tcp_won')
    // A first visit knows nothing yet.
    assert.equal(protocolReason({ mode: 'auto', view: 'first', observed_protocol: 'h2', origins, requests_detail: [doc({ alternate_protocol_usage: 'unspecifiedReason' })] }).code, 'not_known')
  })
  test('an https page answered over HTTP/1.1 says so, not that H3 is not announced', () => {
    const r = protocolReason({ mode: 'auto', view: 'first', observed_protocol: 'http/1.1', origins: [], requests_detail: [doc({ alternate_protocol_usage: 'unspecifiedReason' })] })
    assert.deepEqual([r.code, r.text], ['h1', 'HTTP/1.1: the origin answered without H2 or H3'])
    // An origin that announces H3, its page over HTTP/1.1 for another reason: no reason says the page came over H2.
    for (const [view, usage, learnt] of [['first', 'unspecifiedReason', []], ['first', 'broken', []], ['first', 'mainJobWonRace', []], ['returning', 'mappingMissing', ['https://shop.example']]]) {
      const why = protocolReason({ mode: 'auto', view, observed_protocol: 'http/1.1', origins, learnt_alt_svc: learnt, requests_detail: [doc({ alternate_protocol_usage: usage })] })
      assert.doesNotMatch(why.text, /^H2/, `${view}, ${usage}: ${why.code}`)
    }
  })
  test('a first visit\'s document on a connection a redirect opened keeps its own reason', () => {
    const first = protocolReason({ mode: 'auto', view: 'first', observed_protocol: 'h2', origins, requests_detail: [doc({ connection_reused: true, alternate_protocol_usage: 'mappingMissing' })] })
    assert.equal(first.code, 'not_known')
  })
})

test('a filmstrip\'s error is kept within what the API takes: a failed capture load of a 2,048-character URL is not a refused round', async () => {
  const url = `https://example.com/${'a'.repeat(2027)}`
  const results = [{ mode: 'h2', filmstrip: { kind: 'capture', frames: [], progress: [], error: `the capture load failed: net::ERR_CONNECTION_RESET at ${url} (${url})` } }]
  await keepFilmstrips(results, { jobId: 1, upload: null, log: /** @type {any} */ ({ warn () {} }) })
  const kept = /** @type {any} */ (results[0]).filmstrip
  assert.equal(kept.uploaded, false)
  assert.ok(kept.error.startsWith('the capture load failed: net::ERR_CONNECTION_RESET'))
  assert.equal(badDetails({ filmstrip: kept }), null, 'the API takes it')
})

test('a step of the wall clock neither spends nor lends a round\'s time budget: its deadlines are on a monotonic clock', async () => {
  const budget = roundBudget({ timeoutMs: 30_000, modes: ['h2', 'h3'], probes: ['page'] })
  const wall = Date.now
  try {
    // The clock set an hour ahead while a load runs (NTP, a resumed virtual machine).
    await budget.arm('h2').spend(async (deadline) => {
      Date.now = () => wall() + 3_600_000
      await new Promise((resolve) => setTimeout(resolve, 20))
      assert.ok(deadline - monotonicNow() > 29_000, `${deadline - monotonicNow()} ms to the load's deadline`)
    })
    const h2 = budget.arm('h2').left()
    assert.ok(h2 > 29_000 && h2 < 30_000, `the h2 arm has ${h2} ms left, not an hour less`)
    // And an hour back while the next arm's load runs: its time is spent as it passes, not lent.
    await budget.arm('h3').spend(async () => {
      Date.now = () => wall() - 3_600_000
      await new Promise((resolve) => setTimeout(resolve, 20))
    })
    const h3 = budget.arm('h3').left()
    assert.ok(h3 > 29_000 && h3 < 30_000, `the h3 arm has ${h3} ms left, not an hour more`)
  } finally {
    Date.now = wall
  }
})
