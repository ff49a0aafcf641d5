// The API's contract for input, over a real socket and PostgreSQL, on every
// route the app has (enumerated from the app, not listed by hand): bodies are
// UTF-8 or refused, integer parameters are written in decimal digits, and a
// 400 always names the field at fault.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { createTestApp } from './helpers/app.js'
import { createMonitor } from '../lib/store/monitors.js'

let t, agentToken, base
before(async () => {
  t = await createTestApp({ H3LENS_AUTH_FAILURES_PER_MIN: '0' })
  agentToken = await t.agentToken('local')
  await t.app.listen({ host: '127.0.0.1', port: 0 })
  base = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (t.app.server.address()).port}`
})
after(async () => { await t.close() })

/**
 * A request with the body sent byte for byte.
 * @param {{ method?: string, path: string, body?: Buffer, headers?: Record<string, string> }} opts
 * @returns {Promise<{ status: number, text: string, json: () => any }>}
 */
function send ({ method = 'GET', path, body, headers = {} }) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method, headers: { authorization: `Bearer ${t.writeKey}`, ...headers } }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        resolve({ status: /** @type {number} */ (res.statusCode), text, json: () => JSON.parse(text) })
      })
    })
    req.on('error', reject)
    req.end(body)
  })
}

const routes = () => t.app.authRoutes.filter((r) => r.method !== 'HEAD')
const keyFor = (r) => `Bearer ${r.auth === 'agent' ? agentToken : t.writeKey}`
const pathOf = (pattern, id = '1') => pattern.replace(/:\w+/g, id)

test('a JSON body that is not UTF-8 is a 400 naming the byte, on every route that takes a body; nothing is stored', async () => {
  // {"label": "ÿþ"} in Latin-1: the bytes FF FE, which no UTF-8 text holds.
  const latin1 = Buffer.concat([Buffer.from('{"url": "https://example.com/", "label": "'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')])
  const writes = routes().filter((r) => ['POST', 'PATCH', 'PUT'].includes(r.method))
  assert.ok(writes.length >= 15, `${writes.length} routes take a body`)
  for (const r of writes) {
    const res = await send({ method: r.method, path: pathOf(r.url), body: latin1, headers: { 'content-type': 'application/json', authorization: keyFor(r) } })
    assert.equal(res.status, 400, `${r.method} ${r.url}: ${res.text}`)
    assert.equal(res.json().field, 'body', `${r.method} ${r.url}`)
    assert.equal(res.json().message, 'the body is not valid UTF-8 (byte 0xFF at offset 42); send JSON as UTF-8 text', `${r.method} ${r.url}`)
  }
  const truncated = await send({ method: 'POST', path: '/api/v1/monitors', body: Buffer.from([0x7b, 0x22, 0xe2, 0x82]), headers: { 'content-type': 'application/json' } })
  assert.equal(truncated.json().message, 'the body is not valid UTF-8 (it ends in the middle of a character); send JSON as UTF-8 text')
  const broken = await send({ method: 'POST', path: '/api/v1/monitors', body: Buffer.from([0x7b, 0x22, 0xe2, 0x41, 0x22, 0x7d]), headers: { 'content-type': 'application/json' } })
  assert.equal(broken.json().message, 'the body is not valid UTF-8 (bytes 0xE2 0x41 at offset 2); send JSON as UTF-8 text')
  const { rows: [{ n }] } = await t.db.query('SELECT count(*)::int AS n FROM monitors')
  assert.equal(n, 0, 'nothing was stored')

  // The same label in UTF-8 is stored as sent.
  const utf8 = await send({ method: 'POST', path: '/api/v1/monitors', body: Buffer.from('{"url": "https://example.com/", "label": "ÿþ", "locations": ["local"]}'), headers: { 'content-type': 'application/json; charset=utf-8' } })
  assert.equal(utf8.status, 201, utf8.text)
  assert.equal(utf8.json().label, 'ÿþ')
})

test('malformed and empty JSON bodies are 400s naming the body', async () => {
  for (const [body, message] of /** @type {[string, RegExp][]} */ ([
    ['{"url": ', /^the body is not valid JSON \(.+\)$/],
    ['{"url": "https://example.com/", "__proto__": {"admin": true}}', /^the body is not valid JSON \(it has a __proto__ or constructor\.prototype key\)$/],
    ['', /^the body is empty/],
    ['   ', /^the body is empty/]
  ])) {
    const res = await send({ method: 'POST', path: '/api/v1/monitors', body: Buffer.from(body), headers: { 'content-type': 'application/json' } })
    assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`)
    assert.equal(res.json().field, 'body')
    assert.match(res.json().message, message)
  }
  for (const body of ['[]', '"a string"', 'null']) {
    const res = await send({ method: 'POST', path: '/api/v1/monitors', body: Buffer.from(body), headers: { 'content-type': 'application/json' } })
    assert.equal(res.status, 400, body)
    assert.equal(res.json().field, 'body', `${body}: ${res.text}`)
  }
})

test('a path the router cannot decode is a 400 naming the path', async () => {
  for (const path of ['/api/v1/monitors/%FF', '/api/v1/monitors/%', '/api/v1/results/%E2%82']) {
    const res = await send({ path })
    assert.equal(res.status, 400, `${path}: ${res.text}`)
    assert.deepEqual(res.json(), { statusCode: 400, error: 'Bad Request', message: 'the path is not valid percent-encoding', field: 'path' })
  }
})

test('a path part longer than the router reads is a 400 naming the path, not a missing route', async () => {
  for (const path of [`/api/v1/monitors/${'9'.repeat(5000)}`, `/api/v1/monitors/${'9'.repeat(101)}/comparison`, `/api/v1/results/${'1'.repeat(200)}`]) {
    const res = await send({ path })
    assert.equal(res.status, 400, `${path.slice(0, 40)}…: ${res.text}`)
    assert.deepEqual(res.json(), { statusCode: 400, error: 'Bad Request', message: 'the path has a part longer than 100 characters', field: 'path' })
  }
  // A part of 100 characters is read, and its id checked.
  const res = await send({ path: `/api/v1/monitors/${'9'.repeat(100)}` })
  assert.equal(res.status, 400)
  assert.equal(res.json().field, 'id')
})

test('a query parameter given twice is a 400 that says so, naming it', async () => {
  const res = await send({ path: '/api/v1/monitors/1/side-by-side?location=a&location=b' })
  assert.equal(res.status, 400, res.text)
  assert.deepEqual([res.json().field, res.json().message], ['location', 'querystring location is given 2 times; give it once'])
})

test('integer ids and parameters written other than in decimal digits are 400s naming the parameter, on every route', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/ids', locations: ['local'] }, { allowPrivateTargets: true })
  const NOT_DECIMAL = ['1e0', '0x1', ' 1', '+1', '1 ', '1.0', '１']
  const withId = routes().filter((r) => r.url.includes(':id'))
  assert.ok(withId.length >= 20, `${withId.length} routes take an id`)
  for (const r of withId) {
    for (const id of NOT_DECIMAL) {
      const body = ['GET', 'DELETE'].includes(r.method) ? {} : { body: Buffer.from('{}'), headers: { authorization: keyFor(r), 'content-type': 'application/json' } }
      const res = await send({ method: r.method, path: pathOf(r.url, encodeURIComponent(id)), headers: { authorization: keyFor(r) }, ...body })
      assert.equal(res.status, 400, `${r.method} ${r.url} with id ${JSON.stringify(id)}: ${res.text}`)
      assert.equal(res.json().field, 'id', `${r.method} ${r.url} with id ${JSON.stringify(id)}`)
      assert.match(res.json().message, /^params id must be a whole number written in decimal digits/)
    }
  }
  // Leading zeros are still decimal: 0001 is monitor 1.
  const padded = await send({ path: `/api/v1/monitors/${String(m.id).padStart(4, '0')}` })
  assert.equal(padded.status, 200)
  assert.equal(padded.json().id, m.id)

  // Every integer query parameter the OpenAPI document lists.
  const doc = JSON.parse((await send({ path: '/api/openapi.json' })).text)
  const params = []
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      for (const p of op.parameters ?? []) if (p.in === 'query' && [p.schema?.type].flat().includes('integer')) params.push({ method: method.toUpperCase(), path, name: p.name })
    }
  }
  assert.deepEqual(params.map((p) => `${p.method} ${p.path} ${p.name}`).sort(), [
    'GET /api/v1/alerts limit', 'GET /api/v1/alerts monitor_id', 'GET /api/v1/alerts rule_id',
    'GET /api/v1/monitors/{id}/results limit', 'GET /api/v1/monitors/{id}/side-by-side percentile', 'GET /api/v1/results monitor',
    'POST /work/workdone.php cached', 'POST /work/workdone.php run', 'PUT /api/v1/agent/jobs/{id}/netlog raw_bytes'
  ])
  for (const p of params) {
    const r = { auth: p.path.startsWith('/api/v1/agent/') ? 'agent' : 'write' }
    for (const value of NOT_DECIMAL) {
      const path = `${p.path.replace('{id}', String(m.id))}?${new URLSearchParams({ [p.name]: value })}`
      const res = await send({ method: p.method, path, headers: { authorization: keyFor(r) } })
      assert.equal(res.status, 400, `${p.method} ${path}: ${res.text}`)
      assert.equal(res.json().field, p.name, `${p.method} ${path}: ${res.text}`)
    }
  }
  const results = await send({ path: `/api/v1/results?monitor=${m.id}&format=json&from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z` })
  assert.equal(results.status, 200, 'the same parameter in digits is served')

  // Every number query parameter: decimal digits with an optional fraction.
  const numbers = []
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      for (const p of op.parameters ?? []) if (p.in === 'query' && [p.schema?.type].flat().includes('number')) numbers.push({ method: method.toUpperCase(), path, name: p.name })
    }
  }
  assert.deepEqual(numbers.map((p) => `${p.method} ${p.path} ${p.name}`), ['GET /api/v1/monitors/{id}/browsers percentile'])
  for (const p of numbers) {
    for (const value of ['1e1', '0x14', ' 50', '+50', '50 ', '５０', '50.']) {
      const path = `${p.path.replace('{id}', String(m.id))}?${new URLSearchParams({ [p.name]: value })}`
      const res = await send({ method: p.method, path, headers: { authorization: keyFor({ auth: 'write' }) } })
      assert.equal(res.status, 400, `${p.method} ${path}: ${res.text}`)
      assert.equal(res.json().field, p.name, `${p.method} ${path}: ${res.text}`)
      assert.match(res.json().message, /must be a number written in decimal digits, such as 95 or 99\.9/)
    }
    for (const value of ['50', '99.9', '050']) {
      const res = await send({ method: p.method, path: `${p.path.replace('{id}', String(m.id))}?${new URLSearchParams({ [p.name]: value })}`, headers: { authorization: keyFor({ auth: 'write' }) } })
      assert.equal(res.status, 200, `${p.name}=${value}: ${res.text}`)
    }
  }
})
