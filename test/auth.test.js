// Who may do what: API keys with roles, the one rule that protects every
// route (checked against the routes the app really has, not a hand list),
// the OpenAPI document saying so, the limit on wrong credentials, and no
// secret ever reaching a log line.
// run-tests: concurrent — its one process is `h3lens keys` against its own database
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { spawnSync } from 'node:child_process'
import { createTestApp } from './helpers/app.js'
import { createTestDatabase } from './helpers/db.js'
import { buildApp } from '../api/app.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { createApiKey, listApiKeys, revokeApiKey, authenticateApiKey } from '../lib/store/api-keys.js'
import { createAgentToken } from '../lib/store/agents.js'

let t
// No limit on wrong credentials here: the coverage test sends hundreds of
// requests without a valid key from one address on purpose.
before(async () => { t = await createTestApp({ H3LENS_AUTH_FAILURES_PER_MIN: '0' }) })
after(async () => { await t.close() })

const bearer = (secret) => ({ authorization: `Bearer ${secret}` })
const noKey = { authorization: undefined }

/** A concrete URL for a route pattern. */
const urlOf = (pattern) => pattern.replace(/:\w+/g, '1').replace(/\*$/, 'index.html')

test('keys are created with a role, stored only as a hash, listed and revoked', async () => {
  const { key, secret } = await createApiKey(t.db, { name: 'grafana', role: 'read' })
  assert.match(secret, /^h3k_[\w-]{32}$/)
  const { rows } = await t.db.query('SELECT * FROM api_keys WHERE id = $1', [key.id])
  assert.ok(!JSON.stringify(rows[0]).includes(secret.slice(4)), 'the key itself is not stored')
  assert.equal((await listApiKeys(t.db)).find((k) => k.id === key.id).key_prefix, secret.slice(0, 8))
  assert.deepEqual(await authenticateApiKey(t.db, secret), { id: key.id, name: 'grafana', role: 'read' })

  assert.equal((await t.app.inject({ url: '/api/v1/monitors', headers: bearer(secret) })).statusCode, 200)
  await revokeApiKey(t.db, key.id)
  const revoked = await t.app.inject({ url: '/api/v1/monitors', headers: bearer(secret) })
  assert.equal(revoked.statusCode, 401)
  assert.match(revoked.json().message, /not valid \(unknown or revoked\)/)
  await assert.rejects(revokeApiKey(t.db, key.id), /already revoked/)
  await assert.rejects(revokeApiKey(t.db, 999999), /does not exist/)
  await assert.rejects(createApiKey(t.db, { name: 'x', role: 'admin' }), /role must be one of read, write/)
})

test('every write route answers 401 without a key and 403 with a read key', async () => {
  const writes = t.app.authRoutes.filter((r) => r.auth === 'write')
  assert.ok(writes.length >= 3, `write routes found: ${writes.map((r) => r.url)}`)
  for (const r of writes) {
    const url = urlOf(r.url)
    const none = await t.app.inject({ method: r.method, url, headers: noKey, payload: {} })
    assert.equal(none.statusCode, 401, `${r.method} ${r.url} without a key`)
    assert.match(none.json().message, /needs an API key.*Authorization: Bearer/)
    assert.equal(none.headers['www-authenticate'], 'Bearer realm="h3lens"')
    const wrong = await t.app.inject({ method: r.method, url, headers: bearer('h3k_wrong'), payload: {} })
    assert.equal(wrong.statusCode, 401, `${r.method} ${r.url} with a wrong key`)
    const read = await t.app.inject({ method: r.method, url, headers: bearer(t.readKey), payload: {} })
    assert.equal(read.statusCode, 403, `${r.method} ${r.url} with a read key`)
    assert.match(read.json().message, /may only read; this needs a key with role write/)
    const write = await t.app.inject({ method: r.method, url, headers: bearer(t.writeKey), payload: {} })
    assert.ok(![401, 403].includes(write.statusCode), `${r.method} ${r.url} with a write key: ${write.statusCode}`)
  }
})

test('every read route answers 401 without a key and lets a read key in', async () => {
  const reads = t.app.authRoutes.filter((r) => r.auth === 'read')
  assert.ok(reads.some((r) => r.url === '/metrics'), 'the metrics follow the read rule')
  for (const r of reads) {
    const url = urlOf(r.url)
    assert.equal((await t.app.inject({ method: r.method, url, headers: noKey })).statusCode, 401, `${r.method} ${r.url} without a key`)
    const read = await t.app.inject({ method: r.method, url, headers: bearer(t.readKey) })
    assert.ok(![401, 403].includes(read.statusCode), `${r.method} ${r.url} with a read key: ${read.statusCode}`)
  }
})

test('agent routes take agent tokens only; the public routes are exactly the documented ones', async () => {
  const agentRoutes = t.app.authRoutes.filter((r) => r.auth === 'agent')
  assert.ok(agentRoutes.length >= 4)
  const token = await t.agentToken('local')
  for (const r of agentRoutes) {
    assert.ok(r.url.startsWith('/api/v1/agent/'), r.url)
    const url = urlOf(r.url)
    assert.equal((await t.app.inject({ method: r.method, url, headers: noKey, payload: {} })).statusCode, 401, `${r.url} without a token`)
    assert.equal((await t.app.inject({ method: r.method, url, headers: bearer(t.writeKey), payload: {} })).statusCode, 401, `${r.url} with an API key`)
  }
  const claim = await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: bearer(token), payload: {} })
  assert.equal(claim.statusCode, 200)
  assert.equal((await t.app.inject({ url: '/api/v1/monitors', headers: bearer(token) })).statusCode, 401, 'an agent token is not an API key')

  // A new route is public only by being listed here, on purpose.
  // The real-user snippet and its beacon are public by nature (docs/RUM.md):
  // browsers of other sites' visitors fetch and post them.
  const isPublicByDesign = (url) => url === '/healthz' || url === '/api/openapi.json' || url === '/*' ||
    url === '/api/docs' || url.startsWith('/api/docs/') || url === '/rum/v1/h3lens.js' || url === '/rum/v1/beacon'
  for (const r of t.app.authRoutes.filter((x) => x.auth === 'public')) {
    assert.ok(isPublicByDesign(r.url), `${r.method} ${r.url} is public but not meant to be`)
  }
  for (const url of ['/healthz', '/', '/app.js', '/api/openapi.json', '/api/docs/']) {
    const res = await t.app.inject({ url, headers: noKey })
    assert.equal(res.statusCode, 200, url)
  }
  for (const r of t.app.authRoutes) {
    if (r.url.startsWith('/api/v1/') && !r.url.startsWith('/api/v1/agent/')) assert.ok(['read', 'write'].includes(r.auth), `${r.url}: ${r.auth}`)
  }
})

test('the OpenAPI document states each route\'s requirement', async () => {
  const doc = (await t.app.inject({ url: '/api/openapi.json', headers: noKey })).json()
  assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['agentToken', 'apiKey'])
  // WebPageTest agents send their location key in the query string (the route checks it).
  const expected = { read: [{ apiKey: [] }], write: [{ apiKey: [] }], agent: [{ agentToken: [] }], wpt: [], public: [] }
  let checked = 0
  for (const r of t.app.authRoutes) {
    const path = r.url.replace(/:(\w+)/g, '{$1}')
    const op = doc.paths[path]?.[r.method.toLowerCase()]
    if (!op) continue
    checked++
    assert.deepEqual(op.security, expected[r.auth], `${r.method} ${r.url}`)
    assert.match(op.description, /\*\*Auth:\*\* /, `${r.method} ${r.url}`)
    if (r.auth === 'write') {
      assert.ok(op.responses['401'] && op.responses['403'], `${r.method} ${r.url} documents 401 and 403`)
      assert.match(op.description, /role `write`/)
    }
  }
  assert.ok(checked > 15, `${checked} operations checked`)
})

test('with H3LENS_PUBLIC_READ anyone may read, and writing still needs a write key', async () => {
  const pub = await createTestApp({ H3LENS_PUBLIC_READ: 'true' })
  try {
    assert.equal((await pub.app.inject({ url: '/api/v1/monitors', headers: noKey })).statusCode, 200)
    assert.equal((await pub.app.inject({ url: '/metrics', headers: noKey })).statusCode, 200)
    const post = { method: /** @type {const} */ ('POST'), url: '/api/v1/monitors', payload: { url: 'https://example.com/' } }
    assert.equal((await pub.app.inject({ ...post, headers: noKey })).statusCode, 401)
    assert.equal((await pub.app.inject({ ...post, headers: bearer(pub.readKey) })).statusCode, 403)
    assert.equal((await pub.app.inject({ ...post, headers: bearer(pub.writeKey) })).statusCode, 201)
    const doc = (await pub.app.inject({ url: '/api/openapi.json' })).json()
    assert.deepEqual(doc.paths['/api/v1/monitors'].get.security, [{}, { apiKey: [] }])
    assert.match(doc.paths['/api/v1/monitors'].get.description, /No key needed on this server/)
  } finally {
    await pub.close()
  }
})

test('wrong keys and tokens from one address are answered 429 with Retry-After once over the limit', async () => {
  const limited = await createTestApp({ H3LENS_AUTH_FAILURES_PER_MIN: '3' })
  try {
    const get = (headers) => limited.app.inject({ url: '/api/v1/monitors', headers })
    // Asking without a key is not guessing: a dashboard opened without one
    // must still be able to ask for it.
    for (let i = 0; i < 10; i++) assert.equal((await get(noKey)).statusCode, 401)
    assert.equal((await get(bearer('h3k_guess1'))).statusCode, 401)
    assert.equal((await get(bearer('h3k_guess2'))).statusCode, 401)
    const agentGuess = await limited.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: bearer('h3a_guess'), payload: {} })
    assert.equal(agentGuess.statusCode, 401, 'agent tokens count towards the same limit')
    const over = await get(bearer('h3k_guess4'))
    assert.equal(over.statusCode, 429)
    assert.ok(Number(over.headers['retry-after']) >= 1 && Number(over.headers['retry-after']) <= 60, over.headers['retry-after'])
    assert.match(over.json().message, /too many wrong keys or tokens from this address; try again in \d+ s/)
    assert.equal((await get(bearer('h3k_guess5'))).statusCode, 429, 'wrong keys stay blocked')
    // The limit is on wrong credentials: a right key or agent token from the
    // same address (the dashboard and local agents share 127.0.0.1) works.
    assert.equal((await get(bearer(limited.writeKey))).statusCode, 200)
    assert.equal((await limited.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: bearer(await limited.agentToken()), payload: {} })).statusCode, 200)
    // Another address is not affected; public routes are not either.
    assert.equal((await limited.app.inject({ url: '/api/v1/monitors', remoteAddress: '10.9.8.7', headers: bearer(limited.writeKey) })).statusCode, 200)
    assert.equal((await get(noKey)).statusCode, 401)
    assert.equal((await limited.app.inject({ url: '/healthz', headers: noKey })).statusCode, 200)
  } finally {
    await limited.close()
  }
})

test('30 wrong keys from 127.0.0.1 never lock out the admin key or an agent token from there (default limit)', async () => {
  const limited = await createTestApp({ H3LENS_AUTH_FAILURES_PER_MIN: '' })
  try {
    const from = { remoteAddress: '127.0.0.1' }
    const statuses = []
    for (let i = 0; i < 30; i++) statuses.push((await limited.app.inject({ ...from, url: '/api/v1/monitors', headers: bearer(`h3k_wrong${i}`) })).statusCode)
    assert.deepEqual([...new Set(statuses)], [401, 429], 'the wrong keys are limited')
    assert.equal((await limited.app.inject({ ...from, url: '/api/v1/monitors', headers: bearer(limited.writeKey) })).statusCode, 200)
    assert.equal((await limited.app.inject({ ...from, url: '/api/v1/monitors', headers: bearer(limited.readKey) })).statusCode, 200)
    const claim = await limited.app.inject({ ...from, method: 'POST', url: '/api/v1/agent/claim', headers: bearer(await limited.agentToken()), payload: {} })
    assert.equal(claim.statusCode, 200)
  } finally {
    await limited.close()
  }
})

test('valid agents are limited per token, not per address', async () => {
  const limited = await createTestApp({ H3LENS_AGENT_REQUESTS_PER_MIN: '3' })
  try {
    const claim = (token) => limited.app.inject({ remoteAddress: '127.0.0.1', method: 'POST', url: '/api/v1/agent/claim', headers: bearer(token), payload: {} })
    const [busy, quiet] = [await limited.agentToken(), await limited.agentToken()]
    for (let i = 0; i < 3; i++) assert.equal((await claim(busy)).statusCode, 200)
    const over = await claim(busy)
    assert.equal(over.statusCode, 429)
    assert.equal(over.json().code, 'agent_rate_limited')
    assert.ok(Number(over.headers['retry-after']) >= 1)
    assert.equal((await claim(quiet)).statusCode, 200, 'another agent on the same address is not affected')
  } finally {
    await limited.close()
  }
})

test('no key, token or password reaches the log, whatever happens', async () => {
  const database = await createTestDatabase()
  const lines = []
  const destination = new Writable({ write (chunk, _enc, done) { lines.push(String(chunk)); done() } })
  const log = createLogger({ logLevel: 'trace', destination })
  const app = await buildApp({ db: database.pool, config: loadConfig({ H3LENS_AUTH_FAILURES_PER_MIN: '2' }), log })
  try {
    await app.ready()
    const { secret: write } = await createApiKey(database.pool, { name: 'w', role: 'write' })
    const { secret: read } = await createApiKey(database.pool, { name: 'r', role: 'read' })
    const { token } = await createAgentToken(database.pool, { location: 'local' })
    const guesses = ['h3k_notarealkeybutlooksclose', 'h3a_notarealtokenbutlooksclose', 'Basic-dXNlcjpwYXNz']
    await app.inject({ url: '/api/v1/monitors', headers: bearer(write) })
    await app.inject({ method: 'POST', url: '/api/v1/monitors', headers: bearer(read), payload: { url: 'https://example.com/' } })
    await app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: bearer(token), payload: {} })
    // A request the server fails on is logged with its context: still no secrets.
    await database.pool.query('ALTER TABLE monitors RENAME TO monitors_gone')
    await app.inject({ url: '/api/v1/monitors?x=1', headers: bearer(write) })
    await app.inject({ url: '/api/v1/monitors', headers: bearer(write) })
    await database.pool.query('ALTER TABLE monitors_gone RENAME TO monitors')
    for (const g of guesses) {
      await app.inject({ url: '/api/v1/monitors', headers: bearer(g) })
      await app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: bearer(g), payload: {} })
    }
    await app.inject({ url: `/no/such/page?token=${token}&key=${write}`, headers: bearer(write) })
    log.info({ token, password: 'hunter2', secret: write, req: { headers: { authorization: `Bearer ${write}` } } }, 'a careless log call')
    const text = lines.join('')
    assert.match(text, /authentication failed/, 'failures are logged')
    assert.match(text, /too many failed authentications/)
    assert.match(text, /request failed/, 'the 500 was logged')
    for (const secret of [write, read, token, ...guesses, 'hunter2', write.slice(4), token.slice(4)]) {
      assert.ok(!text.includes(secret), `log contains ${secret.slice(0, 8)}…:\n${text.slice(0, 3000)}`)
    }
  } finally {
    await app.close()
    await database.drop()
  }
})

test('h3lens keys create|list|revoke; the key goes to stdout only, once', async () => {
  const database = await createTestDatabase()
  const run = (args) => spawnSync(process.execPath, ['bin/h3lens.js', 'keys', ...args], { encoding: 'utf8', env: { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'trace' }, timeout: 60000 })
  try {
    const created = run(['create', '--role', 'write', '--name', 'ci'])
    assert.equal(created.status, 0, created.stderr)
    // Log lines (JSON, at trace level here) share stdout with the key.
    const keyLines = created.stdout.split('\n').filter((l) => l.startsWith('h3k_'))
    assert.equal(keyLines.length, 1, created.stdout)
    const secret = keyLines[0]
    assert.match(secret, /^h3k_[\w-]{32}$/)
    assert.match(created.stderr, /API key \d+ \(ci, role write\) created; it is shown once/)
    const elsewhere = created.stdout.replace(secret + '\n', '') + created.stderr
    assert.ok(!elsewhere.includes(secret.slice(4)), 'the key is printed once and is in no log line')
    const list = run(['list'])
    assert.equal(list.status, 0, list.stderr)
    assert.match(list.stdout, new RegExp(`^\\d+\\tci\\twrite\\t${secret.slice(0, 8)}…\\tactive\\tnever used$`, 'm'))
    assert.ok(!list.stdout.includes(secret) && !list.stderr.includes(secret))
    const id = list.stdout.match(/^(\d+)\tci/m)?.[1]
    assert.equal(run(['revoke', id]).status, 0)
    assert.match(run(['list']).stdout, /\tci\twrite\t.*\trevoked /)
    const again = run(['revoke', id])
    assert.notEqual(again.status, 0)
    assert.match(again.stderr, /already revoked/)
    assert.match(run(['create', '--role', 'admin', '--name', 'x']).stderr, /role must be one of read, write/)
    assert.match(run(['create']).stderr, /needs --name NAME/)
    assert.match(run(['revoke', 'abc']).stderr, /needs the id of a key/)
  } finally {
    await database.drop()
  }
})
