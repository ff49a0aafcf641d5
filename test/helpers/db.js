// Each test file gets its own database cloned from the migrated template (or
// an empty one, for tests of the migrations themselves). When a test in the
// file failed, its databases are kept and their URLs printed, for
// inspection; the next run of scripts/run-tests.js drops them.
//
// Whether a test failed is known only once the file's tests have run: a
// database dropped in a test's `finally` goes before node:test marks that
// test failed. So drop() closes the pool and parks the database, and the
// parked ones are settled when the event loop empties ('beforeExit', after
// every test and file-level hook has run; node:test sets process.exitCode
// to 1 as soon as any test fails). Databases dropped after that point, by
// hooks that run late, are settled at once.
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { createPool } from '../../lib/runtime/db.js'

/** @type {{ name: string, url: string }[]} */
const parked = []
let testsDone = false
let listening = false
/** The template copy's STRATEGY clause, once asked of the server. @type {Promise<string> | undefined} */
let strategy

/**
 * @param {{ empty?: boolean, later?: boolean }} [opts] empty: a new database without the
 *   migrations, instead of a clone of the migrated template; later: not made
 *   until `create()` is called, so that until then every connection of its
 *   pool fails (a database that is down)
 * @returns {Promise<{ pool: import('pg').Pool, url: string, name: string, create: () => Promise<void>, drop: (opts?: { keep?: boolean }) => Promise<void> }>}
 */
export async function createTestDatabase ({ empty = false, later = false } = {}) {
  const adminUrl = process.env.H3LENS_TEST_ADMIN_URL
  const template = process.env.H3LENS_TEST_TEMPLATE
  if (!adminUrl || !template) throw new Error('run tests through `npm test` (scripts/run-tests.js), which provides PostgreSQL')
  if (!listening) {
    listening = true
    process.once('beforeExit', () => {
      testsDone = true
      settle(adminUrl).catch((err) => console.error(`# could not drop test databases: ${err.message}`))
    })
  }
  const name = `h3lens_t_${randomBytes(4).toString('hex')}`
  const create = () => withAdmin(adminUrl, async (c) => c.query(empty ? `CREATE DATABASE ${name}` : `CREATE DATABASE ${name} TEMPLATE ${template}${await copyStrategy(c)}`))
  if (!later) await create()
  const u = new URL(adminUrl)
  u.pathname = `/${name}`
  const url = u.toString()
  const pool = createPool(url, { max: 20 })
  return {
    pool,
    url,
    name,
    create,
    /** @param {{ keep?: boolean }} [opts] keep: keep it even if every test passed */
    async drop ({ keep = false } = {}) {
      await pool.end()
      if (keep) return report({ name, url }, 'kept on request')
      parked.push({ name, url })
      if (testsDone) await settle(adminUrl)
    }
  }
}

/** Drop the parked databases, or keep and name them when a test failed. */
async function settle (adminUrl) {
  const failed = Boolean(process.exitCode)
  for (const db of parked.splice(0)) {
    if (failed) report(db, 'a test in this file failed')
    else await withAdmin(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${db.name} WITH (FORCE)`))
  }
}

/** @param {{ name: string, url: string }} db @param {string} why */
function report ({ name, url }, why) {
  const u = new URL(url)
  u.password = ''
  console.log(`# kept test database ${name} for inspection (${why}): ${u}`)
}

/**
 * How a test database is copied from the template: file by file on a
 * cluster that does not flush to disk (the suite's own: scripts/run-tests.js)
 * where the server can (PostgreSQL 15 and later, whose default writes every
 * page of the template into the WAL). There a file copy takes a third of
 * the CPU and time of a WAL copy (0.02 s and 24 ms against 0.06 s and 63 ms,
 * one copy at a time of the migrated template); on a cluster that flushes,
 * the checkpoints a file copy forces are not cheap, and the default stays.
 * @param {import('pg').Client} c
 */
async function copyStrategy (c) {
  strategy ??= c.query("SELECT current_setting('server_version_num')::int >= 150000 AND current_setting('fsync') = 'off' AS file_copy")
    .then((r) => (r.rows[0].file_copy ? ' STRATEGY FILE_COPY' : ''), (err) => { strategy = undefined; throw err })
  return strategy
}

async function withAdmin (url, fn) {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try { return await fn(c) } finally { await c.end() }
}
