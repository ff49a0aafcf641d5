#!/usr/bin/env node
// Runs the test suite against real PostgreSQL: DATABASE_URL when set,
// otherwise an embedded cluster kept under .h3lens/test-pg between runs.
// A migrated template database is made once per run; each test file clones
// it (CREATE DATABASE ... TEMPLATE), which takes ~50 ms instead of migrating.
import { spawn } from 'node:child_process'
import path from 'node:path'
import pg from 'pg'
import { startEmbeddedPostgres, createPool } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { createLogger } from '../lib/runtime/log.js'

const log = createLogger({ logLevel: process.env.LOG_LEVEL ?? 'warn', name: 'test-runner' })
const files = process.argv.slice(2)

let embedded = null
let adminUrl = process.env.DATABASE_URL
if (!adminUrl) {
  embedded = await startEmbeddedPostgres({ dataDir: path.resolve('.h3lens', 'test-pg'), port: Number(process.env.H3LENS_TEST_PG_PORT ?? 54339), log })
  adminUrl = embedded.adminUrl
}

const template = 'h3lens_test_template'
const admin = new pg.Client({ connectionString: adminUrl })
await admin.connect()
// Databases left by an earlier interrupted run are dropped; the ones kept on
// failure (see test/helpers/db.js) are named in that run's output.
const { rows } = await admin.query("SELECT datname FROM pg_database WHERE datname LIKE 'h3lens_t_%' OR datname = $1", [template])
for (const r of rows) await admin.query(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`)
await admin.query(`CREATE DATABASE ${template}`)
const templateUrl = withDatabase(adminUrl, template)
const pool = createPool(templateUrl, { max: 1 })
await migrate(pool)
await pool.end()
await admin.end()

// Each file's limit; H3LENS_TEST_TIMEOUT_S raises it for a long fuzz hunt (docs/API.md).
const timeoutS = Number(process.env.H3LENS_TEST_TIMEOUT_S ?? 300)
const args = ['--test', '--test-concurrency=1', `--test-timeout=${timeoutS * 1000}`, ...(files.length ? files : ['test/'])]
const child = spawn(process.execPath, args, {
  stdio: 'inherit',
  env: { ...process.env, H3LENS_TEST_ADMIN_URL: adminUrl, H3LENS_TEST_TEMPLATE: template }
})
for (const sig of /** @type {const} */ (['SIGINT', 'SIGTERM'])) process.on(sig, () => child.kill(sig))
const code = await new Promise((resolve) => child.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0))))
if (embedded) await embedded.stop()
process.exit(code)

/**
 * @param {string} url
 * @param {string} db
 */
function withDatabase (url, db) {
  const u = new URL(url)
  u.pathname = `/${db}`
  return u.toString()
}
