// Each test file gets its own database cloned from the migrated template.
// On failure the database is kept and its name printed, for inspection.
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { createPool } from '../../lib/runtime/db.js'

/** @returns {Promise<{ pool: import('pg').Pool, url: string, name: string, drop: () => Promise<void> }>} */
export async function createTestDatabase () {
  const adminUrl = process.env.H3LENS_TEST_ADMIN_URL
  const template = process.env.H3LENS_TEST_TEMPLATE
  if (!adminUrl || !template) throw new Error('run tests through `npm test` (scripts/run-tests.js), which provides PostgreSQL')
  const name = `h3lens_t_${randomBytes(4).toString('hex')}`
  await withAdmin(adminUrl, (c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`))
  const u = new URL(adminUrl)
  u.pathname = `/${name}`
  const url = u.toString()
  const pool = createPool(url, { max: 20 })
  return {
    pool,
    url,
    name,
    async drop ({ keep = false } = {}) {
      await pool.end()
      if (keep) {
        console.log(`# kept test database ${name} for inspection`)
        return
      }
      await withAdmin(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
    }
  }
}

async function withAdmin (url, fn) {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try { return await fn(c) } finally { await c.end() }
}
