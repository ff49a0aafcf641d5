// The OpenAPI document is generated from the route schemas: every route is
// in it, with a description, and the docs UI is served.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from './helpers/app.js'

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
