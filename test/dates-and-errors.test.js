// Dates the schema format allows but JavaScript or PostgreSQL cannot hold
// are a 400 naming the field on every route that takes one; an export that
// fails after its first bytes ends as a broken download and is logged.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { createTestApp } from './helpers/app.js'
import { createTestDatabase } from './helpers/db.js'
import { buildApp } from '../api/app.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { createMonitor } from '../lib/store/monitors.js'
import { createApiKey } from '../lib/store/api-keys.js'

let t
let monitorId
before(async () => {
  t = await createTestApp()
  monitorId = (await createMonitor(t.db, { url: 'https://example.com/', locations: ['local'] }, { allowPrivateTargets: true })).id
})
after(async () => { await t.close() })

const BAD = [
  '2026-11-22T23:59:60Z', // a leap second: Invalid Date in JavaScript
  '0000-01-01T00:00:00Z', // PostgreSQL has no year 0
  '2026-11-21T13:00:00-23:59', // offset beyond PostgreSQL's ±15:59
  '2026-02-29T00:00:00Z', // no such day
  '2026-11-21T24:00:00Z'
]

test('every route with a date-time parameter answers 400 naming it for impossible or out-of-range values', async () => {
  const routes = [
    `/api/v1/monitors/${monitorId}/comparison`,
    `/api/v1/monitors/${monitorId}/results`,
    `/api/v1/monitors/${monitorId}/trends`,
    `/api/v1/monitors/${monitorId}/trends?format=csv`,
    `/api/v1/monitors/${monitorId}/distribution`,
    `/api/v1/results?monitor=${monitorId}`,
    `/api/v1/results?monitor=${monitorId}&format=csv`,
    `/api/v1/results?monitor=${monitorId}&format=ndjson`,
    `/api/v1/results?monitor=${monitorId}&format=json`
  ]
  for (const route of routes) {
    for (const field of ['from', 'to']) {
      for (const value of BAD) {
        const res = await t.app.inject({ url: `${route}${route.includes('?') ? '&' : '?'}${field}=${encodeURIComponent(value)}` })
        assert.equal(res.statusCode, 400, `${route} ${field}=${value}: ${res.body}`)
        assert.equal(res.json().field, field, `${route} ${field}=${value}`)
        assert.match(res.json().message, new RegExp(`^querystring ${field} must be an RFC 3339 date-time`))
      }
    }
  }
  // Values at the edges of the rule are fine.
  const ok = await t.app.inject({ url: `/api/v1/monitors/${monitorId}/results?from=2024-02-29T00:00:00%2B15:59` })
  assert.equal(ok.statusCode, 200, ok.body)
})

test('an export that fails after it started is an aborted chunked download, and is logged', async () => {
  const database = await createTestDatabase()
  const lines = []
  const destination = new Writable({ write (chunk, _enc, done) { lines.push(String(chunk)); done() } })
  const app = await buildApp({ db: database.pool, config: loadConfig({ LOG_LEVEL: 'silent' }), log: createLogger({ logLevel: 'info', destination }) })
  try {
    const address = await app.listen({ port: 0, host: '127.0.0.1' })
    const key = (await createApiKey(database.pool, { name: 't', role: 'read' })).secret
    const id = (await createMonitor(database.pool, { url: 'https://example.com/', locations: ['local'] }, { allowPrivateTargets: true })).id
    // The header row is written before the first query; the query then fails.
    await database.pool.query('ALTER TABLE results RENAME TO results_gone')
    for (const format of ['csv', 'ndjson']) {
      const res = await fetch(`${address}/api/v1/results?monitor=${id}&format=${format}`, { headers: { authorization: `Bearer ${key}` } })
      const body = res.text().then(() => 'complete', (err) => `aborted: ${err.message}`)
      if (res.status === 200) {
        assert.equal(res.headers.get('transfer-encoding'), 'chunked')
        assert.match(await body, /^aborted/, `${format}: a short download must not look complete`)
      } else {
        assert.equal(res.status, 500, `${format}: failed before the first byte`)
      }
    }
    // csv writes its header row first, so it fails after the first byte;
    // either way the failure is in the log with the route.
    const logged = lines.map((l) => JSON.parse(l)).filter((l) => /export failed|request failed/.test(l.msg))
    assert.deepEqual(logged.map((l) => [l.msg, l.url, l.err.message]), [
      ['export failed after it started; the download was aborted', '/api/v1/results', 'relation "results" does not exist'],
      ['request failed', '/api/v1/results', 'relation "results" does not exist']
    ])
  } finally {
    await app.close()
    await database.drop()
  }
})
