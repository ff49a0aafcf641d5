// The OpenAPI document is generated from the route schemas: every route is
// in it, with a description, and the docs UI is served; every status and
// content type a route answers with is in it.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { gzipSync } from 'node:zlib'
import { createTestApp } from './helpers/app.js'
import { createMonitor, MIN_INTERVAL_S, MIN_LAB_INTERVAL_S } from '../lib/store/monitors.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createWptKey } from '../lib/store/wpt-keys.js'

let t
before(async () => { t = await createTestApp() })
after(async () => { await t.close() })

test('every API route is documented with a description', async () => {
  const res = await t.app.inject({ url: '/api/openapi.json', headers: { authorization: undefined } })
  assert.equal(res.statusCode, 200)
  const doc = res.json()
  assert.match(doc.openapi, /^3\./)
  const documented = []
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      documented.push(`${method.toUpperCase()} ${path}`)
      assert.ok(typeof op.description === 'string' && op.description.length > 10, `${method.toUpperCase()} ${path} has no description`)
    }
  }
  for (const route of ['POST /api/v1/monitors', 'GET /api/v1/monitors/{id}/comparison', 'GET /api/v1/monitors/{id}/trends',
    'GET /api/v1/results', 'POST /api/v1/agent/claim', 'POST /api/v1/agent/jobs/{id}/results', 'GET /metrics', 'GET /healthz']) {
    assert.ok(documented.includes(route), `${route} missing from the OpenAPI document`)
  }
  const docs = await t.app.inject({ url: '/api/docs/', headers: { authorization: undefined } })
  assert.equal(docs.statusCode, 200)
  assert.match(docs.body, /swagger-ui/i)
})

test('the document keeps OpenAPI 3.0\'s form of bounds: an exclusive bound is a flag beside its minimum or maximum', async () => {
  // JSON Schema's numeric exclusiveMinimum is not OpenAPI 3.0: clients
  // and fuzzers refuse the whole operation that carries one.
  const doc = (await t.app.inject({ url: '/api/openapi.json', headers: { authorization: undefined } })).json()
  const wrong = []
  const walk = (node, where) => {
    if (!node || typeof node !== 'object') return
    for (const [key, bound] of [['exclusiveMinimum', 'minimum'], ['exclusiveMaximum', 'maximum']]) {
      if (key in node && (typeof node[key] !== 'boolean' || !(bound in node))) wrong.push(`${where}.${key}`)
    }
    for (const [k, v] of Object.entries(node)) walk(v, `${where}.${k}`)
  }
  walk(doc, '$')
  assert.deepEqual(wrong, [])
})

/** "GET /api/v1/monitors/{id}" for Fastify's "/api/v1/monitors/:id" */
const operationOf = (method, url) => `${method} ${url.replace(/:(\w+)/g, '{$1}')}`

test('every status and content type the server answers is documented for its route, on every route', async () => {
  // Two wrong credentials a minute, so the 429s are reached.
  const s = await createTestApp({ H3LENS_AUTH_FAILURES_PER_MIN: '2' })
  try {
    const doc = (await s.app.inject({ url: '/api/openapi.json' })).json()
    /** @type {Map<string, any>} operation → its OpenAPI responses */
    const documented = new Map()
    for (const [path, ops] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(ops)) documented.set(`${method.toUpperCase()} ${path}`, op.responses)
    const routes = s.app.authRoutes.filter((r) => r.method !== 'HEAD' && documented.has(operationOf(r.method, r.url)))
    assert.equal(routes.length, documented.size, 'every documented operation is a route')

    // Something for every kind of id to find.
    await upsertLocation(s.db, { id: 'wpt-x', name: 'WPT X', region: 'Europe', kind: 'wpt' })
    const wptKey = (await createWptKey(s.db, { location: 'wpt-x' })).key
    const agentToken = await s.agentToken('local')
    const monitor = await createMonitor(s.db, { url: 'https://example.com/', interval_s: 60, locations: ['local', 'wpt-x'] }, { allowPrivateTargets: true })
    await s.db.query("INSERT INTO jobs (monitor_id, location_id, due_at) VALUES ($1, 'local', now() - interval '1 minute'), ($1, 'wpt-x', now() - interval '1 minute')", [monitor.id])
    const imported = await s.app.inject({
      method: 'POST', url: `/api/v1/monitors/${monitor.id}/results/import`, headers: { 'content-type': 'application/x-ndjson' },
      payload: ['h2', 'h3'].map((mode) => JSON.stringify({ time: new Date(Date.now() - 3600e3).toISOString(), location_id: 'local', mode, ttfb_ms: 10 })).join('\n')
    })
    assert.equal(imported.statusCode, 200, imported.body)
    const { rows: [result] } = await s.db.query('SELECT id FROM results WHERE monitor_id = $1 LIMIT 1', [monitor.id])
    // Evidence for it, so its net log and a frame answer 200.
    await s.db.query(`INSERT INTO netlogs (job_id, mode, view, probe, monitor_id, location_id, kind, raw_bytes, gzip)
                      SELECT job_id, mode, view, probe, monitor_id, location_id, 'run', 2, $2 FROM results WHERE id = $1`, [result.id, gzipSync('{}')])
    await s.db.query(`INSERT INTO filmstrip_frames (job_id, mode, view, probe, seq, t_ms, jpeg, monitor_id, location_id)
                      SELECT job_id, mode, view, probe, 0, 100, $2, monitor_id, location_id FROM results WHERE id = $1`, [result.id, Buffer.from([0xff, 0xd8, 0xff, 0xd9])])
    const claimed = await s.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: { authorization: `Bearer ${agentToken}` }, payload: {} })
    const job = claimed.json().jobs[0]
    const channel = await s.app.inject({ method: 'POST', url: '/api/v1/channels', payload: { kind: 'webhook', name: 'c', url: 'http://127.0.0.1:9/hook', secret: 'x'.repeat(16) } })
    const rule = await s.app.inject({ method: 'POST', url: '/api/v1/alert-rules', payload: { kind: 'location_silent', window_s: 600 } })
    assert.equal(rule.statusCode, 201, rule.body)
    const ids = { '/api/v1/monitors/:id': monitor.id, '/api/v1/results/:id': result.id, '/api/v1/agent/jobs/:id': job.id, '/api/v1/channels/:id': channel.json().id ?? 1, '/api/v1/alert-rules/:id': rule.json().id }
    const idFor = (url) => Object.entries(ids).find(([prefix]) => url.startsWith(prefix))?.[1] ?? 1

    /** @type {Set<string>} "operation status type" of every answer */
    const served = new Set()
    const undocumented = []
    const ask = async (r, opts) => {
      const res = await s.app.inject({ method: r.method, ...opts })
      const type = res.headers['content-type'] === undefined ? null : String(res.headers['content-type']).split(';')[0].trim()
      const op = operationOf(r.method, r.url)
      served.add(`${op} ${res.statusCode} ${type}`)
      const answer = documented.get(op)[res.statusCode]
      const types = Object.keys(answer?.content ?? {})
      if (!answer) undocumented.push(`${op}: status ${res.statusCode} (${res.body.slice(0, 120)})`)
      else if (type && res.body !== '' && !types.includes(type)) undocumented.push(`${op}: ${res.statusCode} as ${type}, documented as ${types.join(', ') || 'no body'}`)
      return res
    }
    const keyOf = (r) => (r.auth === 'agent' ? agentToken : s.writeKey)
    const bodyOf = (r) => (['POST', 'PATCH', 'PUT'].includes(r.method) ? { payload: {} } : {})
    const wptQuery = (extra = {}) => `?${new URLSearchParams({ location: 'wpt-x', pc: 'p1', key: wptKey, id: 'nope', ...extra })}`
    // The other forms the routes answer in.
    const at = (method, url) => ({ method, url: url.replace(/\{(\w+)\}/g, ':$1') })
    await ask(at('GET', '/api/v1/monitors/{id}/trends'), { url: `/api/v1/monitors/${monitor.id}/trends?format=csv` })
    for (const format of ['csv', 'ndjson', 'json']) await ask(at('GET', '/api/v1/results'), { url: `/api/v1/results?monitor=${monitor.id}&format=${format}&from=2020-01-01T00:00:00Z&to=2020-01-02T00:00:00Z` })
    for (let i = 0; i < 2; i++) await ask(at('GET', '/work/getwork.php'), { url: `/work/getwork.php${wptQuery()}` })
    await ask(at('GET', '/work/requeue.php'), { url: '/work/requeue.php?id=nope&location=wpt-x' })
    await ask(at('GET', '/api/v1/results/{id}/filmstrip/{seq}'), { url: `/api/v1/results/${result.id}/filmstrip/0` })
    await ask(at('GET', '/work/started.php'), { url: '/work/started.php' })

    // Deletions last: the other routes are asked about things that exist.
    for (const r of [...routes].sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'))) {
      const url = r.url.replace(/:id/g, String(idFor(r.url)))
      const work = r.url.startsWith('/work/')
      // As documented: the key the route needs, the ids that exist.
      await ask(r, { url: work ? `${url}${wptQuery()}` : url, headers: { authorization: `Bearer ${keyOf(r)}` }, ...bodyOf(r) })
      // Without credentials, with wrong ones (twice, then over the limit), with a read key.
      await ask(r, { url, headers: { authorization: undefined }, ...bodyOf(r) })
      for (let i = 0; i < 3; i++) await ask(r, { url: work ? `${url}${wptQuery({ key: 'wrong' })}` : url, headers: { authorization: 'Bearer h3k_wrong' }, ...bodyOf(r) })
      await ask(r, { url, headers: { authorization: `Bearer ${s.readKey}` }, ...bodyOf(r) })
      // Malformed and unknown ids, unknown parameters, bodies of the wrong type or size.
      if (r.url.includes(':id')) {
        await ask(r, { url: r.url.replace(/:id/g, 'x'), headers: { authorization: `Bearer ${keyOf(r)}` }, ...bodyOf(r) })
        await ask(r, { url: r.url.replace(/:id/g, '2147483647'), headers: { authorization: `Bearer ${keyOf(r)}` }, ...bodyOf(r) })
      }
      await ask(r, { url: `${url}?zz_unknown=1`, headers: { authorization: `Bearer ${keyOf(r)}` }, ...bodyOf(r) })
      if (bodyOf(r).payload) {
        await ask(r, { url, headers: { authorization: `Bearer ${keyOf(r)}`, 'content-type': 'text/html' }, payload: '<p>' })
        await ask(r, { url, headers: { authorization: `Bearer ${keyOf(r)}`, 'content-type': 'application/json' }, payload: `{"a": "${'x'.repeat(1024 * 1024)}"}` })
      }
    }
    assert.deepEqual(undocumented, [], 'answers the OpenAPI document does not list')
    for (const answer of [
      'GET /work/getwork.php 200 application/json', 'GET /work/getwork.php 200 text/plain', 'GET /work/getwork.php 403 text/plain', 'GET /work/getwork.php 429 text/plain',
      'GET /work/ping.php 429 text/plain', 'POST /work/workdone.php 429 text/plain',
      'GET /work/requeue.php 200 text/plain', 'GET /work/started.php 200 text/plain',
      'GET /api/v1/monitors/{id}/trends 200 text/csv', 'GET /api/v1/results 200 text/csv', 'GET /api/v1/results 200 application/x-ndjson',
      'GET /api/v1/monitors 401 application/json', 'GET /api/v1/monitors 429 application/json', 'POST /api/v1/monitors 403 application/json',
      'POST /api/v1/monitors 413 application/json', 'POST /api/v1/monitors 415 application/json', 'GET /api/v1/monitors 400 application/json',
      'DELETE /api/v1/monitors/{id} 404 application/json',
      'GET /api/v1/results/{id}/netlog 200 application/gzip', 'GET /api/v1/results/{id}/filmstrip/{seq} 200 image/jpeg'
    ]) assert.ok(served.has(answer), `not reached: ${answer}`)
  } finally {
    await s.close()
  }
})

test('interval_s is documented as the server requires it: 60 s, 10 s for lab monitors', async () => {
  const doc = (await t.app.inject({ url: '/api/openapi.json' })).json()
  for (const method of ['post', 'patch']) {
    const path = method === 'post' ? '/api/v1/monitors' : '/api/v1/monitors/{id}'
    const schema = doc.paths[path][method].requestBody.content['application/json'].schema.properties.interval_s
    assert.equal(schema.minimum, MIN_LAB_INTERVAL_S)
    assert.match(schema.description, new RegExp(`at least ${MIN_INTERVAL_S}; lab monitors \\(on lab\\.h3lens\\.test or lab2\\.h3lens\\.test\\) at least ${MIN_LAB_INTERVAL_S}`))
  }
  const create = (url, interval) => t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload: { url, interval_s: interval, locations: ['local'] } })
  for (const [url, interval, status] of /** @type {[string, number, number][]} */ ([
    ['https://example.com/', MIN_INTERVAL_S - 1, 400], ['https://example.com/', MIN_INTERVAL_S, 201],
    ['https://lab.h3lens.test:8443/', MIN_LAB_INTERVAL_S - 1, 400], ['https://lab.h3lens.test:8443/', MIN_LAB_INTERVAL_S, 201]
  ])) {
    const res = await create(url, interval)
    assert.equal(res.statusCode, status, `${url} every ${interval} s: ${res.body}`)
    if (status === 400) assert.equal(res.json().field, 'interval_s')
  }
})
