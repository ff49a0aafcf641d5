// The public beacon endpoint against hostile input, through the real API
// and PostgreSQL: what is stored (and what of the request is not), replays,
// wrong origins, big, malformed and forged bodies, floods; every refusal a
// 4xx that is counted, none of them stores anything.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { createHash, randomBytes } from 'node:crypto'
import { gunzipSync } from 'node:zlib'
import { createRequire } from 'node:module'
import { createTestApp } from './helpers/app.js'
import { createSite, revokeSite } from '../lib/store/rum-sites.js'
import { MAX_MS, PROTOCOL_PATTERN, TAG_PATTERN } from '../lib/measurement/rum/beacon.js'

const parsePrometheus = createRequire(import.meta.url)('parse-prometheus-text-format')

const ORIGIN = 'https://shop.example'
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36'
// An address the packaged database places in Great Britain.
const GB_ADDRESS = '81.2.69.142'

let t, site
before(async () => {
  t = await createTestApp({ H3LENS_RUM_ADDRESS_PER_MIN: '0', H3LENS_RUM_SITE_PER_MIN: '0' })
  site = await createSite(t.db, { name: 'shop', origins: [ORIGIN] })
})
after(async () => { await t.close() })

const beacon = (extra = {}) => ({
  key: site.key, v: 1, id: randomBytes(16).toString('hex'), t0: Date.now() - 5000, sample: 1, nav: 'navigate', protocol: 'h3',
  dns_ms: 3.1, connect_ms: 20.4, tls_ms: 10.2, waiting_ms: 30, ttfb_ms: 60.5, fcp_ms: 120, lcp_ms: 240, cls: 0.01, transfer_bytes: 15000,
  doc_cached: false, resources: 4, cached_resources: 0, lcp_element: 'img', ...extra
})
/** @param {any} body @param {{ origin?: string | null, address?: string, type?: string, ua?: string, app?: any }} [o] */
const send = (body, { origin = ORIGIN, address = GB_ADDRESS, type = 'text/plain;charset=UTF-8', ua = CHROME, app = t.app } = {}) => app.inject({
  method: 'POST',
  url: '/rum/v1/beacon',
  remoteAddress: address,
  headers: { authorization: undefined, 'content-type': type, origin: origin ?? undefined, 'user-agent': ua },
  payload: typeof body === 'string' ? body : JSON.stringify(body)
})
const stored = async () => (await t.db.query('SELECT count(*)::int AS n FROM rum_beacons')).rows[0].n
const outcomes = async () => {
  const text = (await t.app.inject({ url: '/metrics' })).body
  const family = parsePrometheus(text).find((f) => f.name === 'h3lens_rum_beacons_total')
  return Object.fromEntries((family?.metrics ?? []).map((m) => [m.labels.outcome, Number(m.value)]))
}

test('the snippet is served small, cacheable, loadable cross-origin and pinned by its integrity', async () => {
  const info = (await t.app.inject({ url: '/api/v1/rum/snippet' })).json()
  assert.ok(info.gzip_bytes <= 4096, `${info.gzip_bytes} bytes gzipped`)
  const res = await t.app.inject({ url: `/rum/v1/h3lens.js?v=${info.version}`, headers: { authorization: undefined, 'accept-encoding': 'gzip' } })
  assert.equal(res.statusCode, 200)
  assert.match(res.headers['content-type'], /^application\/javascript/)
  assert.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable')
  assert.equal(res.headers['access-control-allow-origin'], '*')
  assert.equal(res.headers['cross-origin-resource-policy'], 'cross-origin')
  assert.equal(res.headers['set-cookie'], undefined)
  const body = gunzipSync(res.rawPayload)
  assert.equal(res.rawPayload.length, info.gzip_bytes)
  assert.equal(`sha384-${createHash('sha384').update(body).digest('base64')}`, info.integrity)
  assert.match(body.toString(), /sendBeacon/)
  // The snippet keeps to the server's bounds (a value past them is left out
  // of the beacon, which is then stored): they are the schema's own.
  assert.ok(body.toString().endsWith(`(webVitals,document.currentScript,${JSON.stringify({ maxMs: MAX_MS, tag: TAG_PATTERN, protocol: PROTOCOL_PATTERN })})})();\n`), body.toString().slice(-200))
  assert.doesNotMatch(body.toString(), /document\.cookie|localStorage|sessionStorage|XMLHttpRequest|fetch\(/, 'no cookies, no storage, no other request')
  const stale = await t.app.inject({ url: '/rum/v1/h3lens.js?v=0123456789ab', headers: { authorization: undefined } })
  assert.equal(stale.headers['cache-control'], 'public, max-age=300', 'an old version is not cached for long')
  for (const doc of ['docs/RUM.md']) {
    const text = fs.readFileSync(new URL(`../${doc}`, import.meta.url), 'utf8')
    assert.ok(text.includes(`integrity="${info.integrity}"`) && text.includes(`h3lens.js?v=${info.version}"`), `${doc} shows the snippet's current integrity and version (node bench/rum-snippet.js prints them)`)
  }
  const created = (await t.app.inject({ url: `/api/v1/rum/sites/${site.id}` })).json()
  assert.ok(created.install.tag.includes(`integrity="${info.integrity}"`) && created.install.tag.includes(`data-key="${site.key}"`))
})

test('a beacon is stored with its country and browser family, and nothing else of the request', async () => {
  const before = await outcomes()
  const b = beacon()
  const res = await send(b)
  assert.equal(res.statusCode, 204, res.body)
  const { rows: [row] } = await t.db.query('SELECT * FROM rum_beacons WHERE view_id = $1', [b.id])
  assert.equal(row.country, 'GB')
  assert.deepEqual([row.browser, row.browser_major, row.protocol, row.connection, row.visit, row.nav], ['chrome', 156, 'h3', 'new', 'first', 'navigate'])
  assert.equal(+row.time, Math.round(b.t0))
  const text = JSON.stringify(Object.values(row))
  assert.ok(!text.includes(GB_ADDRESS) && !text.includes('Mozilla') && !text.includes('X11'), 'no address, no user-agent string')
  const loopback = beacon()
  assert.equal((await send(loopback, { address: '127.0.0.1' })).statusCode, 204)
  assert.equal((await t.db.query('SELECT country FROM rum_beacons WHERE view_id = $1', [loopback.id])).rows[0].country, null, 'loopback is unknown')
  assert.equal((await outcomes()).stored - (before.stored ?? 0), 2)
})

test('what real page views send is stored: a custom element with dots and underscores, Google QUIC\'s protocol name', async () => {
  const b = beacon({ lcp_element: 'shop-card_v2.item', inp_target: 'x-button', protocol: 'http/2+quic/46' })
  const res = await send(b)
  assert.equal(res.statusCode, 204, res.body)
  const { rows: [row] } = await t.db.query('SELECT lcp_element, inp_target, protocol FROM rum_beacons WHERE view_id = $1', [b.id])
  // Google QUIC is neither HTTP/3 nor HTTP/2: stored, as neither.
  assert.deepEqual(row, { lcp_element: 'shop-card_v2.item', inp_target: 'x-button', protocol: 'unknown' })
  // A view drawn at a sample rate of 0 is none the snippet sends.
  const zero = await send(beacon({ sample: 0 }))
  assert.equal(zero.statusCode, 400)
  assert.equal(zero.json().field, 'sample')
})

test('a replayed beacon is stored once and answered 409', async () => {
  const b = beacon()
  assert.equal((await send(b)).statusCode, 204)
  const again = await send(b, { address: '81.2.69.143' })
  assert.equal(again.statusCode, 409)
  assert.equal(again.json().code, 'duplicate')
  // Two copies at once go into one batch: one stored, one duplicate.
  const twin = beacon()
  const both = await Promise.all([send(twin), send(twin)])
  assert.deepEqual(both.map((r) => r.statusCode).sort(), [204, 409])
  assert.equal((await t.db.query('SELECT count(*)::int AS n FROM rum_beacons WHERE view_id = ANY ($1)', [[b.id, twin.id]])).rows[0].n, 2)
})

test('the same view id and start time from two sites are two page views: both stored, neither answered 409', async () => {
  const other = await createSite(t.db, { name: 'blog', origins: ['https://blog.example'] })
  const shared = { id: randomBytes(16).toString('hex'), t0: Date.now() - 4000 }
  // One after the other, then at once (one batch of the queue).
  assert.equal((await send(beacon(shared))).statusCode, 204)
  const second = await send({ ...beacon(shared), key: other.key }, { origin: 'https://blog.example' })
  assert.equal(second.statusCode, 204, second.body)
  const together = { id: randomBytes(16).toString('hex'), t0: Date.now() - 3000 }
  const both = await Promise.all([send(beacon(together)), send({ ...beacon(together), key: other.key }, { origin: 'https://blog.example' })])
  assert.deepEqual(both.map((r) => r.statusCode), [204, 204], both.map((r) => r.body).join(' '))
  const { rows } = await t.db.query('SELECT site_id::int, view_id FROM rum_beacons WHERE view_id = ANY ($1) ORDER BY view_id, site_id', [[shared.id, together.id]])
  assert.equal(rows.length, 4)
  assert.deepEqual(new Set(rows.map((r) => r.site_id)), new Set([Number(site.id), Number(other.id)]))
})

test('hostile beacons get a 4xx naming the reason, are counted, and store nothing', async () => {
  const revoked = await createSite(t.db, { name: 'old', origins: [ORIGIN] })
  await revokeSite(t.db, revoked.id)
  const count = await stored()
  const before = await outcomes()
  const cases = [
    ['wrong origin', send(beacon(), { origin: 'https://evil.example' }), 403, 'wrong_origin'],
    ['no origin', send(beacon(), { origin: null }), 403, 'wrong_origin'],
    ['origin null', send(beacon(), { origin: 'null' }), 403, 'wrong_origin'],
    ['unknown key', send(beacon({ key: `h3s_${'A'.repeat(32)}` })), 403, 'unknown_site'],
    ['revoked key', send(beacon({ key: revoked.key })), 403, 'unknown_site'],
    ['1 MB body', send(JSON.stringify(beacon({ lcp_element: 'x'.repeat(1024 * 1024) }))), 413, 'too_large'],
    ['not JSON', send('{"key": '), 400, 'bad_json'],
    ['another type', send(beacon(), { type: 'application/x-www-form-urlencoded' }), 415, 'unsupported_type'],
    ['a list', send('[]'), 400, 'invalid'],
    ['null', send('null'), 400, 'invalid'],
    ['forged country', send(beacon({ country: 'US' })), 400, 'invalid'],
    ['forged browser', send(beacon({ browser: 'chrome' })), 400, 'invalid'],
    ['prototype key', send(`{"__proto__": {"x": 1}, ${JSON.stringify(beacon()).slice(1)}`), 400, 'invalid'],
    ['negative TTFB', send(beacon({ ttfb_ms: -5 })), 400, 'invalid'],
    ['an hour of TTFB', send(beacon({ ttfb_ms: 3_600_000 })), 400, 'invalid'],
    ['script as a tag', send(beacon({ lcp_element: '<script>' })), 400, 'invalid'],
    ['a NUL character', send(beacon({ protocol: 'h3\u0000' })), 400, 'invalid'],
    ['no id', send({ ...beacon(), id: undefined }), 400, 'invalid'],
    ['TTFB shorter than its phases', send(beacon({ ttfb_ms: 20 })), 422, 'implausible'],
    ['TLS longer than connect', send(beacon({ tls_ms: 50 })), 422, 'implausible'],
    ['the first paint before the first byte', send(beacon({ fcp_ms: 30 })), 422, 'implausible'],
    ['the largest paint before the first byte', send(beacon({ lcp_ms: 0, fcp_ms: 600000, ttfb_ms: 600000, waiting_ms: 30 })), 422, 'implausible'],
    ['two days old', send(beacon({ t0: Date.now() - 48 * 3600e3 })), 422, 'implausible'],
    ['from the future', send(beacon({ t0: Date.now() + 3600e3 })), 422, 'implausible']
  ]
  const answers = await Promise.all(cases.map(([, res]) => res))
  const tally = {}
  cases.forEach(([what, , status, code], i) => {
    const res = answers[i]
    assert.equal(res.statusCode, status, `${what}: ${res.body}`)
    assert.equal(res.json().code, code, what)
    tally[code] = (tally[code] ?? 0) + 1
  })
  assert.equal(answers.find((r, i) => cases[i][0] === 'forged country').json().field, 'country')
  assert.equal(answers.find((r, i) => cases[i][0] === 'not JSON').json().field, 'body')
  for (const what of ['a list', 'null', 'another type']) assert.equal(answers.find((r, i) => cases[i][0] === what).json().field, 'body', what)
  assert.match(answers.find((r, i) => cases[i][0] === 'another type').json().message, /sent as text\/plain or application\/json, not "application\/x-www-form-urlencoded"/)
  assert.equal(answers.find((r, i) => cases[i][0] === 'TTFB shorter than its phases').json().field, 'ttfb_ms')
  assert.equal(answers.find((r, i) => cases[i][0] === 'the largest paint before the first byte').json().field, 'lcp_ms')
  assert.equal(await stored(), count, 'nothing refused was stored')
  const after = await outcomes()
  for (const [code, n] of Object.entries(tally)) assert.equal((after[code] ?? 0) - (before[code] ?? 0), n, `counted: ${code}`)
})

test('floods: past the rate per address, and per site, beacons get 429 and are not stored', async () => {
  const limited = await createTestApp({ H3LENS_RUM_ADDRESS_PER_MIN: '5', H3LENS_RUM_SITE_PER_MIN: '8' })
  try {
    const s = await createSite(limited.db, { name: 'flooded', origins: [ORIGIN] })
    const one = (address) => send(beacon({ key: s.key }), { address, app: limited.app })
    const fromOne = await Promise.all(Array.from({ length: 12 }, () => one('203.0.113.7')))
    assert.equal(fromOne.filter((r) => r.statusCode === 204).length, 5)
    assert.ok(fromOne.filter((r) => r.statusCode === 429).every((r) => r.json().code === 'rate_limited_address' && Number(r.headers['retry-after']) > 0))
    const fromMany = await Promise.all(Array.from({ length: 10 }, (_, i) => one(`198.51.100.${i + 1}`)))
    assert.equal(fromMany.filter((r) => r.statusCode === 204).length, 3, 'the site had 8 a minute, 5 of them used')
    assert.ok(fromMany.filter((r) => r.statusCode === 429).every((r) => r.json().code === 'rate_limited_site'))
    assert.equal((await limited.db.query('SELECT count(*)::int AS n FROM rum_beacons')).rows[0].n, 8)
    // IPv6: one subscriber's /64 is one address to the limit, however many of its addresses send.
    const other = await createSite(limited.db, { name: 'flooded over IPv6', origins: [ORIGIN] })
    const fromOneNetwork = await Promise.all(Array.from({ length: 8 }, (_, i) => send(beacon({ key: other.key }), { address: `2001:db8:1:2::${i + 1}`, app: limited.app })))
    assert.deepEqual(fromOneNetwork.map((r) => r.statusCode).sort(), [204, 204, 204, 204, 204, 429, 429, 429])
    assert.ok(fromOneNetwork.filter((r) => r.statusCode === 429).every((r) => r.json().code === 'rate_limited_address'))
  } finally {
    await limited.close()
  }
})

test('behind a proxy: with H3LENS_RUM_CLIENT_IP_HEADER the visitor\'s address comes from that header (its last entry), otherwise the header is ignored', async () => {
  const proxied = await createTestApp({ H3LENS_RUM_CLIENT_IP_HEADER: 'X-Forwarded-For', H3LENS_RUM_ADDRESS_PER_MIN: '0' })
  try {
    const s = await createSite(proxied.db, { name: 'behind a CDN', origins: [ORIGIN] })
    const viaProxy = (app, b) => app.inject({
      method: 'POST', url: '/rum/v1/beacon', remoteAddress: '127.0.0.1',
      headers: { authorization: undefined, 'content-type': 'text/plain', origin: ORIGIN, 'user-agent': CHROME, 'x-forwarded-for': `10.0.0.9, ${GB_ADDRESS}` },
      payload: JSON.stringify(b)
    })
    const b = beacon({ key: s.key })
    assert.equal((await viaProxy(proxied.app, b)).statusCode, 204)
    assert.equal((await proxied.db.query('SELECT country FROM rum_beacons WHERE view_id = $1', [b.id])).rows[0].country, 'GB')
    const direct = beacon()
    assert.equal((await viaProxy(t.app, direct)).statusCode, 204)
    assert.equal((await t.db.query('SELECT country FROM rum_beacons WHERE view_id = $1', [direct.id])).rows[0].country, null, 'the socket\'s address (loopback), not a header anyone can write')
  } finally {
    await proxied.close()
  }
})
