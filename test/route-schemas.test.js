// Every route the app has (enumerated from the app, not listed by hand)
// refuses unknown query parameters, malformed ids and unknown body fields.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from './helpers/app.js'

let t, agentToken
before(async () => {
  t = await createTestApp({ H3LENS_AUTH_FAILURES_PER_MIN: '0' })
  agentToken = await t.agentToken('local')
})
after(async () => { await t.close() })

// Evidence an agent attaches to a result: free-form by design, bounded by
// the 1 MiB body limit, stored as jsonb and never interpreted as columns;
// its lists of requests and origins are lists of objects, each free-form.
const FREE_FORM = [/\.results\[\]\.details$/, /\.results\[\]\.notes\[\]$/, /\.results\[\]\.details\.(requests|origins)\[\]$/]

const apiRoutes = () => t.app.authRoutes.filter((r) => r.url.startsWith('/api/v1/') && r.method !== 'HEAD')
const headersFor = (r) => ({ authorization: `Bearer ${r.auth === 'agent' ? agentToken : t.writeKey}` })
const urlOf = (pattern, id = '1') => pattern.replace(/:\w+/g, id)

test('every route\'s validators and response serializers compile (the app compiles each at its route\'s first call)', () => {
  assert.doesNotThrow(() => t.app.compileAllSchemas())
})

test('unknown query parameters are refused on every API route', async () => {
  for (const r of apiRoutes()) {
    const res = await t.app.inject({ method: r.method, url: `${urlOf(r.url)}?zz_unknown=1`, headers: headersFor(r), payload: r.method === 'GET' || r.method === 'DELETE' ? undefined : {} })
    assert.equal(res.statusCode, 400, `${r.method} ${r.url}: ${res.body}`)
    // Bodies are checked before query strings, so an empty body may be what is reported.
    const message = r.method === 'GET' || r.method === 'DELETE' ? /unknown field "zz_unknown"|is required/ : /unknown field "zz_unknown"|is required|body|must NOT have fewer/
    assert.match(res.json().message, message, `${r.method} ${r.url}`)
  }
})

test('ids that are not positive integers are refused on every route that takes one', async () => {
  const withId = apiRoutes().filter((r) => r.url.includes(':id'))
  assert.ok(withId.length >= 6)
  for (const r of withId) {
    for (const id of ['abc', '0', '-3', '1.5', '99999999999', "1'%20OR%20'1'='1"]) {
      const res = await t.app.inject({ method: r.method, url: urlOf(r.url, id), headers: headersFor(r), payload: r.method === 'GET' || r.method === 'DELETE' ? undefined : {} })
      assert.equal(res.statusCode, 400, `${r.method} ${r.url} with id ${id}: ${res.body}`)
      assert.equal(res.json().field, 'id', `${r.method} ${r.url} with id ${id}`)
    }
  }
})

test('unknown body fields are refused on every route that takes a body, at every depth', async () => {
  const doc = (await t.app.inject({ url: '/api/openapi.json' })).json()
  const loose = []
  const walk = (schema, where) => {
    if (!schema || typeof schema !== 'object') return
    if ((schema.type === 'object' || schema.properties) && schema.additionalProperties !== false && !FREE_FORM.some((re) => re.test(where))) loose.push(where)
    for (const [k, v] of Object.entries(schema.properties ?? {})) walk(v, `${where}.${k}`)
    if (schema.items) walk(schema.items, `${where}[]`)
  }
  let bodies = 0
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const schema = op.requestBody?.content?.['application/json']?.schema
      if (!schema) continue
      bodies++
      walk(schema, `${method.toUpperCase()} ${path}`)
    }
  }
  assert.ok(bodies >= 5, `${bodies} JSON bodies found`)
  assert.deepEqual(loose, [], 'object schemas that let unknown fields through')

  for (const r of apiRoutes().filter((x) => ['POST', 'PATCH', 'PUT'].includes(x.method))) {
    const res = await t.app.inject({ method: r.method, url: urlOf(r.url), headers: { ...headersFor(r), 'content-type': 'application/json' }, payload: '{"zz_unknown": 1}' })
    // A route that takes no body, or not JSON, says so; none accepts it quietly.
    assert.ok([400, 404, 409, 415].includes(res.statusCode), `${r.method} ${r.url}: ${res.statusCode} ${res.body}`)
    if (res.statusCode === 400) assert.match(res.json().message, /unknown field "zz_unknown"|is required|must/, `${r.method} ${r.url}`)
  }
})
