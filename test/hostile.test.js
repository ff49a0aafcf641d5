// Malformed and hostile requests over a real socket: each gets a 4xx that
// says what is wrong, nothing reaches the database that should not, and the
// server keeps serving afterwards.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { createTestDatabase } from './helpers/db.js'
import { freePort } from '../dev/free-port.js'
import { startApi } from '../api/server.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { createApiKey } from '../lib/store/api-keys.js'
import { createAgentToken } from '../lib/store/agents.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createMonitor } from '../lib/store/monitors.js'
import { scheduleDueJobs } from '../lib/store/jobs.js'
import { PUBLIC_ZONE, startDnsServer } from '../dev/dns-server.js'

let database, api, key, readKey, dns

before(async () => {
  database = await createTestDatabase()
  dns = await startDnsServer(PUBLIC_ZONE) // no outside DNS here: example.com resolves through it
  const config = loadConfig({ PORT: String(await freePort()), LOG_LEVEL: 'silent', H3LENS_AUTH_FAILURES_PER_MIN: '0', H3LENS_DNS_SERVERS: dns.server })
  api = await startApi({ db: database.pool, config, log: createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' }) })
  key = (await createApiKey(database.pool, { name: 'hostile-test', role: 'write' })).secret
  readKey = (await createApiKey(database.pool, { name: 'hostile-read', role: 'read' })).secret
})

after(async () => {
  await api?.close()
  await database?.drop()
  await dns?.close()
})

/**
 * A raw HTTP request: the path is sent exactly as given (no normalisation),
 * and the body as given.
 * @param {{ method?: string, path: string, headers?: Record<string, string>, body?: string | Buffer }} opts
 * @returns {Promise<{ status: number, headers: http.IncomingHttpHeaders, text: string, json: () => any }>}
 */
function raw ({ method = 'GET', path, headers = {}, body }) {
  const u = new URL(api.url)
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path, headers: { authorization: `Bearer ${key}`, ...headers } }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (d) => { text += d })
      res.on('end', () => resolve({ status: /** @type {number} */ (res.statusCode), headers: res.headers, text, json: () => JSON.parse(text) }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

const json = (method, path, payload, headers = {}) =>
  raw({ method, path, body: typeof payload === 'string' ? payload : JSON.stringify(payload), headers: { 'content-type': 'application/json', ...headers } })

async function assertAlive () {
  const health = await raw({ path: '/healthz' })
  assert.equal(health.status, 200, 'the server still answers')
}

test('malformed JSON, wrong types and unknown fields are 400s that say what is wrong', async () => {
  /** @type {[string, RegExp, string | RegExp | undefined][]} */
  const cases = [
    ['{"url": "https://example.com/",', /JSON/i, 'body'],
    ['{"url": "https://example.com/", "interval_s": "120"}', /interval_s must be integer/, 'interval_s'],
    ['{"url": "https://example.com/", "paused": "true"}', /paused must be boolean/, 'paused'],
    ['{"url": "https://example.com/", "locations": "local"}', /locations must be array/, 'locations'],
    ['{"url": "https://example.com/", "interval_s": null}', /interval_s must be integer/, 'interval_s'],
    ['{"url": ["https://example.com/"]}', /url must be string/, 'url'],
    ['{"url": "https://example.com/", "__proto__": {"admin": true}}', /./, 'body'],
    ['[]', /must be object/, 'body'],
    ['"just a string"', /must be object/, 'body'],
    ['{"url": "https://example.com/", "label": "a\\u0000b"}', /label contains a NUL character/, 'label'],
    ['{"url": "https://example.com/", "label": "\\ud800"}', /unpaired surrogate/, 'label'],
    [`{"url": "https://example.com/", "label": ${'['.repeat(5000)}${']'.repeat(5000)}}`, /nested more than 64 levels deep/, /^label(\.0)+$/]
  ]
  for (const [body, message, field] of cases) {
    const res = await json('POST', '/api/v1/monitors', body)
    assert.equal(res.status, 400, `${body.slice(0, 80)} → ${res.status} ${res.text.slice(0, 200)}`)
    assert.match(res.json().message, message, body.slice(0, 80))
    if (field instanceof RegExp) assert.match(res.json().field, field)
    else assert.equal(res.json().field, field, body.slice(0, 80))
  }
  // A body that is one string PostgreSQL could not store is named as the body,
  // before the route's own schema reads it (Schemathesis found it on an agent route).
  const bare = await json('POST', '/api/v1/monitors', '"a\\u0000b"')
  assert.equal(bare.status, 400, bare.text)
  assert.deepEqual([bare.json().field, bare.json().message], ['body', 'body contains a NUL character or an unpaired surrogate, which cannot be stored'])
  const wrongType = await raw({ method: 'POST', path: '/api/v1/monitors', body: 'url=https://example.com/', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  assert.equal(wrongType.status, 415)
  // JSON sent as text/plain is refused for its type too, not read as a string.
  const plain = await raw({ method: 'POST', path: '/api/v1/monitors', body: '{"url": "https://example.com/"}', headers: { 'content-type': 'text/plain' } })
  assert.equal(plain.status, 415, plain.text)
  assert.match(plain.json().message, /text\/plain/)
  const { rows } = await database.pool.query('SELECT count(*)::int AS n FROM monitors')
  assert.equal(rows[0].n, 0, 'nothing was stored')
  await assertAlive()
})

test('query strings: wrong types and unknown parameters are refused on every route', async () => {
  const m = await createMonitor(database.pool, { url: 'https://example.com/', locations: ['local'] }, { allowPrivateTargets: true })
  for (const [path, message] of /** @type {[string, RegExp][]} */ ([
    [`/api/v1/monitors/${m.id}/results?limit=abc`, /limit must be a whole number written in decimal digits/],
    [`/api/v1/monitors/${m.id}/results?limit=5000`, /limit must be <= 1000/],
    [`/api/v1/monitors/${m.id}/results?colour=red`, /unknown field "colour"/],
    [`/api/v1/monitors/${m.id}/results?from=yesterday`, /querystring from must be an RFC 3339 date-time/],
    ['/api/v1/monitors?page=2', /unknown field "page"/],
    ['/api/v1/locations?x=1', /unknown field "x"/],
    [`/api/v1/monitors/${m.id}/results?location=%00`, /NUL character/],
    ['/api/v1/monitors/1.5', /id must be a whole number written in decimal digits/],
    ['/api/v1/monitors/99999999999', /must be <= 2147483647/],
    ['/api/v1/monitors/-1', /must be >= 1/]
  ])) {
    const res = await raw({ path })
    assert.equal(res.status, 400, `${path} → ${res.status} ${res.text}`)
    assert.match(res.json().message, message, path)
  }
  await assertAlive()
})

test('SQL-looking input is data, never SQL', async () => {
  const label = "x'); DROP TABLE monitors; --"
  const created = await json('POST', '/api/v1/monitors', { url: "https://example.com/?q=1' OR '1'='1", label, locations: ['local'] })
  assert.equal(created.status, 201, created.text)
  assert.equal(created.json().label, label)
  const filtered = await raw({ path: `/api/v1/monitors/${created.json().id}/results?location=${encodeURIComponent("local' OR 1=1 --")}` })
  assert.equal(filtered.status, 200)
  assert.deepEqual(filtered.json().items, [])
  const cursor = await raw({ path: `/api/v1/monitors/${created.json().id}/results?cursor=${encodeURIComponent("'; SELECT pg_sleep(10); --")}` })
  assert.equal(cursor.status, 400)
  assert.match(cursor.json().message, /cursor is not valid/)
  const { rows } = await database.pool.query('SELECT label FROM monitors WHERE id = $1', [created.json().id])
  assert.equal(rows[0].label, label)
  await assertAlive()
})

test('path traversal in static paths finds nothing outside the dashboard', async () => {
  for (const path of [
    '/..%2f..%2fetc/passwd', '/%2e%2e/package.json', '/%2e%2e%2fpackage.json', '/..%5c..%5cpackage.json',
    '/../package.json', '/css/../../package.json', '/css/..%2f..%2fpackage.json', '/%252e%252e/package.json',
    '/....//....//package.json', '/vendor/%2e%2e/%2e%2e/lib/runtime/config.js', '/%c0%ae%c0%ae/package.json', '/.git/config', '/%00'
  ]) {
    const res = await raw({ path })
    assert.ok(res.status >= 400 && res.status < 500, `${path} → ${res.status}`)
    assert.ok(!/"name": "h3lens"|root:x:0|export function loadConfig|\[core\]/.test(res.text), `${path} leaked a file`)
  }
  await assertAlive()
})

test('a 100 MB body is refused after the first MiB, streamed or announced, and the server stays up', async () => {
  const u = new URL(api.url)
  const chunk = Buffer.alloc(64 * 1024, 'a')
  /** Stream up to 100 MB; stop as soon as the server answers or hangs up. */
  const stream = (headers) => new Promise((resolve, reject) => {
    let sent = 0
    let answered = false
    const req = http.request({ host: u.hostname, port: u.port, method: 'POST', path: '/api/v1/monitors', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers } }, (res) => {
      answered = true
      let text = ''
      res.on('data', (d) => { text += d })
      res.on('end', () => { req.destroy(); resolve({ status: res.statusCode, sent, text }) })
    })
    req.on('error', (err) => (answered ? undefined : resolve({ status: 0, sent, err })))
    const pump = () => {
      while (!answered && sent < 100 * 1024 * 1024) {
        sent += chunk.length
        if (!req.write(chunk)) return req.once('drain', pump)
      }
      if (!answered) req.end()
    }
    req.on('socket', () => pump())
    setTimeout(() => reject(new Error(`no answer after ${sent} bytes`)), 30000).unref()
  })
  // A body over the route's limit, sent whole: the 413 names the body and the limit.
  const whole = await json('POST', '/api/v1/monitors', { url: 'https://example.org/', label: 'x'.repeat(2 * 1024 * 1024) })
  assert.equal(whole.status, 413, whole.text)
  assert.equal(whole.json().field, 'body')
  assert.match(whole.json().message, /^the body is larger than this route takes \(\d+ bytes\)$/)
  const announced = await stream({ 'content-length': String(100 * 1024 * 1024) })
  assert.equal(announced.status, 413, JSON.stringify(announced))
  assert.ok(announced.sent < 50 * 1024 * 1024, `stopped early (${announced.sent} bytes sent)`)
  const chunked = await stream({ 'transfer-encoding': 'chunked' })
  // Either the 413 arrives, or the server hangs up once the limit is passed.
  assert.ok(chunked.status === 413 || chunked.status === 0, JSON.stringify(chunked))
  assert.ok(chunked.sent < 50 * 1024 * 1024, `stopped early (${chunked.sent} bytes sent)`)
  await assertAlive()
  const ok = await json('POST', '/api/v1/monitors', { url: 'https://example.org/after-the-flood', locations: ['local'] })
  assert.equal(ok.status, 201)
})

test('agents: wrong, revoked and other-location tokens get clear 4xx answers', async () => {
  await upsertLocation(database.pool, { id: 'eu-west', name: 'EU', region: 'Europe', kind: 'real' })
  await upsertLocation(database.pool, { id: 'us-east', name: 'US', region: 'North America', kind: 'real' })
  await database.pool.query("UPDATE jobs SET state = 'cancelled'")
  await database.pool.query('UPDATE monitors SET paused = true')
  await createMonitor(database.pool, { url: 'https://example.com/eu', locations: ['eu-west', 'us-east'], interval_s: 60 }, { allowPrivateTargets: true })
  await scheduleDueJobs(database.pool, { maxAttempts: 3 })
  const eu = (await createAgentToken(database.pool, { location: 'eu-west' })).token
  const us = (await createAgentToken(database.pool, { location: 'us-east' })).token
  const agent = (method, path, token, payload) => json(method, `/api/v1/agent${path}`, payload ?? {}, { authorization: `Bearer ${token}` })

  const claimed = await agent('POST', '/claim', eu, { limit: 10 })
  assert.equal(claimed.status, 200)
  const jobs = claimed.json().jobs
  assert.equal(jobs.length, 1)
  assert.ok(jobs.every((j) => j.location_id === 'eu-west'), 'an agent claims its own location only')

  const result = { mode: 'h2', status: 'ok', protocol_ok: true, observed_protocol: 'h2', ttfb_ms: 10, load_ms: 20 }
  const stolen = await agent('POST', `/jobs/${jobs[0].id}/results`, us, { results: [result] })
  assert.equal(stolen.status, 409)
  assert.equal(stolen.json().code, 'wrong_location')
  assert.match(stolen.json().message, /belongs to location eu-west, not us-east/)
  for (const action of ['heartbeat', 'release', 'fail']) {
    const other = await agent('POST', `/jobs/${jobs[0].id}/${action}`, us, action === 'fail' ? { error: 'x' } : {})
    assert.equal(other.status, 409, action)
    assert.equal(other.json().code, 'wrong_location', action)
    assert.match(other.json().message, /belongs to location eu-west, not us-east/)
  }
  // Nor does its check of the results tell what the other location's monitor expects of its arms
  // (an A/A monitor's: both over h2), before the 409.
  await database.pool.query("UPDATE monitors SET aa_protocol = 'h2' WHERE url = 'https://example.com/eu'")
  const probing = await agent('POST', `/jobs/${jobs[0].id}/results`, us, { results: [{ ...result, mode: 'h3', observed_protocol: 'h3' }] })
  assert.equal(probing.status, 409, probing.text)
  assert.equal(probing.json().code, 'wrong_location')
  assert.doesNotMatch(probing.text, /A\/A|aa_protocol/)
  const batch = await agent('POST', '/results', us, { rounds: [{ job_id: jobs[0].id, results: [{ ...result, mode: 'h3', observed_protocol: 'h3' }] }] })
  assert.doesNotMatch(batch.text, /A\/A|aa_protocol/, batch.text)
  await database.pool.query("UPDATE monitors SET aa_protocol = NULL WHERE url = 'https://example.com/eu'")
  const { rows: [still] } = await database.pool.query('SELECT state FROM jobs WHERE id = $1', [jobs[0].id])
  assert.equal(still.state, 'leased', 'the other location\'s agent changed nothing')

  for (const [token, message] of [['h3a_expired-or-made-up', /not valid/], [key, /not valid/], ['', /need "Authorization: Bearer <agent token>"/]]) {
    const res = await raw({ method: 'POST', path: '/api/v1/agent/claim', body: '{}', headers: { 'content-type': 'application/json', authorization: token ? `Bearer ${token}` : '' } })
    assert.equal(res.status, 401)
    assert.match(res.json().message, message)
  }
  await database.pool.query('UPDATE agents SET revoked_at = now() WHERE location_id = $1', ['us-east'])
  const revoked = await agent('POST', '/claim', us)
  assert.equal(revoked.status, 401)
  assert.match(revoked.json().message, /unknown or revoked/)
  const { rows } = await database.pool.query('SELECT count(*)::int AS n FROM results')
  assert.equal(rows[0].n, 0)
  await assertAlive()
})

test('agents: a result its round did not ask for refuses the round, whole; what the claim asked is stored even after the monitor changed', async () => {
  await upsertLocation(database.pool, { id: 'ap-south', name: 'AP', region: 'Asia', kind: 'real' })
  await database.pool.query("UPDATE jobs SET state = 'cancelled' WHERE state IN ('queued', 'leased')")
  const { token } = await createAgentToken(database.pool, { location: 'ap-south' })
  const agent = (path, payload) => json('POST', `/api/v1/agent${path}`, payload, { authorization: `Bearer ${token}` })
  const page = await createMonitor(database.pool, { url: 'https://example.com/asked', locations: ['ap-south'], interval_s: 60, modes: ['h2', 'h3'] }, { allowPrivateTargets: true })
  const journey = await createMonitor(database.pool, {
    url: 'https://example.com/shop', locations: ['ap-south'], interval_s: 60, modes: ['h2', 'h3'],
    journey: { steps: [{ action: 'navigate', url: '/', name: 'home' }, { action: 'click', selector: '#buy', name: 'buy' }] }
  }, { allowPrivateTargets: true })
  await scheduleDueJobs(database.pool, { maxAttempts: 3 })
  const claimed = (await agent('/claim', { limit: 10 })).json().jobs
  const pageJob = claimed.find((j) => j.monitor_id === page.id)
  const journeyJob = claimed.find((j) => j.monitor_id === journey.id)
  assert.ok(pageJob && journeyJob, 'both rounds claimed')
  assert.deepEqual([pageJob.modes, pageJob.probes, pageJob.repeat_view], [['h2', 'h3'], ['page'], false])

  const arm = (/** @type {string} */ mode, extra = {}) => ({ mode, status: 'ok', protocol_ok: true, observed_protocol: mode === 'auto' ? 'h3' : mode, ttfb_ms: 10, load_ms: 20, ...extra })
  const stored = async () => (await database.pool.query('SELECT count(*)::int AS n FROM results WHERE job_id = ANY($1::bigint[])', [[pageJob.id, journeyJob.id]])).rows[0].n
  for (const [what, results, field, message] of /** @type {[string, object[], string, RegExp][]} */ ([
    ['an arm the monitor does not run', [arm('h2'), arm('h3'), arm('auto')], 'results.2.mode', /this round's arms are h2, h3, not auto/],
    ['a repeat view it did not ask for', [arm('h2'), arm('h3'), arm('h2', { view: 'repeat' })], 'results.2.view', /this round asked for no repeat view/],
    ['a view its arm does not have', [arm('h2', { view: 'returning' }), arm('h3')], 'results.0.view', /the h2 arm has no returning view \(its views: first, repeat\)/],
    ['a probe it does not run', [arm('h2'), arm('h3'), arm('h2', { probe: 'parallel' })], 'results.2.probe', /this round runs the probe page, not parallel/]
  ])) {
    const res = await agent(`/jobs/${pageJob.id}/results`, { results })
    assert.equal(res.status, 422, `${what}: ${res.text}`)
    assert.equal(res.json().code, 'not_asked', what)
    assert.equal(res.json().field, field, what)
    assert.match(res.json().message, message, what)
    assert.match(res.json().message, /a round's results are those its claim asked for/, what)
  }
  // The batched route (the agents' spool) refuses that round alone, with the same words.
  const batch = await agent('/results', {
    rounds: [
      { job_id: journeyJob.id, results: ['h2', 'h3'].map((mode) => arm(mode, { probe: 'journey:checkout' })) },
      { job_id: pageJob.id, results: [arm('h2'), arm('h3'), arm('auto')] }
    ]
  })
  assert.equal(batch.status, 200, batch.text)
  const [journeyAck, pageAck] = batch.json().rounds
  assert.equal(journeyAck.error?.statusCode, 422, JSON.stringify(journeyAck))
  assert.equal(journeyAck.error.code, 'not_asked')
  assert.match(journeyAck.error.message, /^results\.0\.probe: this round's journey has no step named "checkout"/)
  assert.equal(pageAck.error?.code, 'not_asked', JSON.stringify(pageAck))
  assert.match(pageAck.error.message, /^results\.2\.mode: this round's arms are h2, h3, not auto/)
  assert.equal(await stored(), 0, 'nothing of a refused round is stored')

  // The claim is what counts: a monitor that drops H3 while its round is
  // measured still gets that round's H3 result, which its agent was asked for.
  await database.pool.query("UPDATE monitors SET modes = '{h2}' WHERE id = $1", [page.id])
  const ok = await agent(`/jobs/${pageJob.id}/results`, { results: [arm('h2'), arm('h3')] })
  assert.equal(ok.status, 200, ok.text)
  assert.equal(ok.json().stored, 2)
  const steps = await agent('/results', {
    rounds: [{ job_id: journeyJob.id, results: ['h2', 'h3'].flatMap((mode) => ['journey', 'journey:home', 'journey:buy'].map((probe) => arm(mode, { probe }))) }]
  })
  assert.equal(steps.json().rounds[0].stored, 6, steps.text)
  assert.equal(await stored(), 8)
  await assertAlive()
})

test('monitors may not target private addresses, at real and lab locations alike', async () => {
  for (const locations of [['eu-west'], ['local']]) {
    for (const url of ['http://127.0.0.1:8080/', 'http://169.254.169.254/latest/meta-data/', 'http://10.0.0.1/', 'http://[::1]/',
      'http://localhost/', 'http://2130706433/', 'http://[fd12::1]/', 'http://192.168.1.1/', 'http://[::ffff:10.0.0.1]/']) {
      const res = await json('POST', '/api/v1/monitors', { url, locations })
      assert.equal(res.status, 400, `${url} → ${res.status}`)
      assert.equal(res.json().field, 'url')
      assert.match(res.json().message, /monitors may not target .*H3LENS_ALLOW_PRIVATE_TARGETS/)
    }
  }
  const lab = await json('POST', '/api/v1/monitors', { url: 'https://lab.h3lens.test:8443/', locations: ['local'] })
  assert.equal(lab.status, 201, 'lab locations measure the lab origin')
  const moved = await json('PATCH', `/api/v1/monitors/${lab.json().id}`, { locations: ['local', 'eu-west'] })
  assert.equal(moved.status, 400, 'adding a real location to the lab origin is refused')
  const pub = await json('POST', '/api/v1/monitors', { url: 'http://93.184.215.14/', locations: ['eu-west'] })
  assert.equal(pub.status, 201, pub.text)
})

test('a read key cannot write, even with a hostile body', async () => {
  const res = await json('POST', '/api/v1/monitors', { url: 'https://example.com/' }, { authorization: `Bearer ${readKey}` })
  assert.equal(res.status, 403)
  await assertAlive()
})
