// The production storage path on real TimescaleDB: the TimescaleDB 2.23
// extension built for PGlite (WebAssembly), served over the PostgreSQL wire
// protocol on a loopback port. `h3lens migrate` runs against it as a
// separate process; the same results go into it and into plain PostgreSQL
// through the same code, and the API must answer the same on both, before
// and after every chunk is compressed.
// Serial: PGlite answers one connection at a time, and seeding the demo
// data queues on it; beside other files it is slow enough that those waits
// pass the pool's 10 s connect timeout.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createPool } from '../lib/runtime/db.js'
import { createTestDatabase } from './helpers/db.js'
import { freePort } from '../dev/free-port.js'
import { seedDemo } from '../dev/demo-data.js'
import { buildApp } from '../api/app.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { startTimescale } from '../dev/timescale.js'

/** @type {Awaited<ReturnType<typeof startTimescale>>} */
let timescale
/** @type {import('pg').Pool} */
let ts
/** @type {Awaited<ReturnType<typeof createTestDatabase>>} */
let plain

before(async () => {
  timescale = await startTimescale({ port: await freePort() })
  plain = await createTestDatabase()
})
after(async () => {
  await ts?.end()
  await timescale?.stop()
  await plain?.drop()
})

/** `h3lens migrate` as a user runs it; async, since this process serves the database. */
function migrateCli (env) {
  const child = spawn(process.execPath, ['bin/h3lens.js', 'migrate'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => { stdout += d })
  child.stderr.on('data', (d) => { stderr += d })
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })))
}

test('h3lens migrate makes results a hypertable with the configured compression and retention policies', async () => {
  // pglite-socket serves one connection at a time: one per process.
  const env = { DATABASE_URL: timescale.url, H3LENS_DB_POOL_MAX: '1', H3LENS_COMPRESS_AFTER_DAYS: '3', H3LENS_RETENTION_DAYS: '400', LOG_LEVEL: 'warn' }
  const first = await migrateCli(env)
  assert.equal(first.code, 0, first.stderr)
  assert.match(first.stdout, /^applied: 001_init, 002_rollups, 003_timescaledb/m)
  assert.match(first.stdout, /storage: TimescaleDB: results is a hypertable, compressed after 3 days, raw rows kept 400 days/)
  // Settings, not schema: a second run with other values changes the policies.
  const second = await migrateCli({ ...env, H3LENS_COMPRESS_AFTER_DAYS: '5', H3LENS_RETENTION_DAYS: '0' })
  assert.equal(second.code, 0, second.stderr)
  assert.match(second.stdout, /database is up to date/)
  assert.match(second.stdout, /compressed after 5 days, raw rows kept forever/)

  ts = createPool(timescale.url, { max: 1 })
  const { rows: hypertables } = await ts.query("SELECT hypertable_name, num_dimensions FROM timescaledb_information.hypertables WHERE hypertable_name = 'results'")
  assert.deepEqual(hypertables, [{ hypertable_name: 'results', num_dimensions: 1 }])
  const { rows: policies } = await ts.query(
    "SELECT proc_name, config FROM timescaledb_information.jobs WHERE hypertable_name = 'results' ORDER BY proc_name")
  assert.deepEqual(policies.map((p) => [p.proc_name, p.config.compress_after ?? p.config.drop_after]), [['policy_compression', '5 days']])
  const third = await migrateCli({ ...env, H3LENS_RETENTION_DAYS: '30' })
  assert.equal(third.code, 0, third.stderr)
  const { rows: after } = await ts.query("SELECT proc_name, config FROM timescaledb_information.jobs WHERE hypertable_name = 'results' ORDER BY proc_name")
  assert.deepEqual(after.map((p) => [p.proc_name, p.config.compress_after ?? p.config.drop_after]), [['policy_compression', '3 days'], ['policy_retention', '30 days']])
})

// PGlite stops reading a request at a message that ends exactly where its
// 8 KiB receive buffer runs empty and drops the rest unanswered
// (dev/timescale.js cuts requests there). A parameterised query is Parse,
// Bind, Describe, Execute and Sync in one write; as its parameter grows by a
// byte at a time, each of those messages ends on byte 8,192 once. Each must
// be answered in full: a dropped one would leave the query waiting forever,
// hence a read timeout far above the few milliseconds a query takes.
test('a query is answered in full whatever its size, also when a message ends on PGlite\'s 8 KiB receive buffer', async () => {
  assert.ok(ts, 'needs the migrated database of the test before')
  for (let length = 8192 - 160; length <= 8192; length++) {
    // query_timeout: pg's per-query read timeout, missing from its types.
    const query = /** @type {import('pg').QueryConfig} */ ({ text: 'SELECT length($1::text) AS n', values: ['x'.repeat(length)], query_timeout: 20_000 })
    const { rows } = await ts.query(query)
    assert.deepEqual(rows, [{ n: length }])
  }
})

test('comparison, trends, distribution and export answer the same on TimescaleDB as on plain PostgreSQL, compressed or not', async () => {
  assert.ok(ts, 'needs the migrated database of the test before')
  const end = Date.now()
  // Two days of rounds, so the hypertable has several daily chunks.
  const seed = { hours: 48, stepMinutes: 60, seed: 11, end }
  const [a, b] = [await seedDemo(plain.pool, seed), await seedDemo(ts, seed)]
  assert.equal(a.results, b.results)
  const apps = await Promise.all([plain.pool, ts].map(async (db) => {
    const app = await buildApp({ db, config: loadConfig({ LOG_LEVEL: 'silent', H3LENS_PUBLIC_READ: 'true' }), log: createLogger({ logLevel: 'silent' }) })
    await app.ready()
    return app
  }))
  try {
    const window = `from=${new Date(end - 49 * 3600e3).toISOString()}&to=${new Date(end).toISOString()}`
    const urls = (monitorId) => [
      `/api/v1/monitors/${monitorId}/comparison?${window}`,
      `/api/v1/monitors/${monitorId}/comparison?${window}&metric=ttfb&percentiles=50,95`,
      `/api/v1/monitors/${monitorId}/trends?${window}&bucket=1h`,
      `/api/v1/monitors/${monitorId}/trends?${window}&bucket=1d&format=csv`,
      `/api/v1/monitors/${monitorId}/distribution?${window}`,
      `/api/v1/results?monitor=${monitorId}&${window}&format=csv`
    ]
    const answers = async (app, monitors) => {
      const out = []
      for (const m of monitors) {
        for (const url of urls(m.id)) {
          // no-cache: the compressed round must read the chunks, not the answer kept from the first.
          const res = await app.inject({ url, headers: { 'cache-control': 'no-cache' } })
          assert.equal(res.statusCode, 200, `${url}: ${res.body.slice(0, 300)}`)
          out.push(normalise(res.body))
        }
      }
      return out
    }
    const expected = await answers(apps[0], a.monitors)
    assert.deepEqual(await answers(apps[1], b.monitors), expected, 'uncompressed hypertable')

    // Compress every chunk, as the policy does to old ones.
    const { rows: [{ n }] } = await ts.query("SELECT count(compress_chunk(c, if_not_compressed => true))::int AS n FROM show_chunks('results') c")
    assert.ok(n >= 2, `${n} chunks compressed`)
    const { rows: [stats] } = await ts.query("SELECT count(*)::int AS compressed FROM timescaledb_information.chunks WHERE hypertable_name = 'results' AND is_compressed")
    assert.equal(stats.compressed, n)
    assert.deepEqual(await answers(apps[1], b.monitors), expected, 'compressed hypertable')
  } finally {
    await Promise.all(apps.map((app) => app.close()))
  }
})

/**
 * Result ids are the databases' own: the same result may get another id,
 * and rows of the same round time (ordered by id) another order. Everything
 * else must match.
 * @param {string} body
 */
function normalise (body) {
  try {
    return JSON.parse(body, (k, v) => (k === 'generated_at' || k === 'computed_at' ? undefined : v))
  } catch {
    const [header, ...lines] = body.trimEnd().split('\n')
    if (!header.startsWith('id,')) return body
    return [header, ...lines.map((l) => l.slice(l.indexOf(',') + 1)).sort()]
  }
}
