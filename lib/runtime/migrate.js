// Forward-only migrations: migrations/NNN_name.sql, applied in order, each in
// its own transaction, recorded in h3lens_migrations. A session-level advisory
// lock serialises concurrent starters (api and scheduler booting together).
import fs from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'migrations')
// Arbitrary but fixed: "h3ls" in ASCII.
const LOCK_ID = 0x68336c73

/** @returns {Promise<{ version: number, name: string, file: string }[]>} */
export async function listMigrations (dir = MIGRATIONS_DIR) {
  const files = (await fs.readdir(dir)).filter((f) => /^\d{3,}_[\w-]+\.sql$/.test(f)).sort()
  return files.map((file) => ({ version: Number(file.split('_')[0]), name: file.replace(/\.sql$/, ''), file: path.join(dir, file) }))
}

/**
 * @param {import('pg').Pool} pool
 * @param {{ log?: import('pino').Logger, dir?: string }} [opts]
 * @returns {Promise<string[]>} names of the migrations applied by this call
 */
export async function migrate (pool, { log, dir } = {}) {
  const client = await pool.connect()
  const applied = []
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_ID])
    await client.query(`CREATE TABLE IF NOT EXISTS h3lens_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
    const { rows } = await client.query('SELECT version FROM h3lens_migrations')
    const done = new Set(rows.map((r) => r.version))
    for (const m of await listMigrations(dir)) {
      if (done.has(m.version)) continue
      const sql = await fs.readFile(m.file, 'utf8')
      await client.query('BEGIN')
      try {
        await client.query(sql)
        await client.query('INSERT INTO h3lens_migrations (version, name) VALUES ($1, $2)', [m.version, m.name])
        await client.query('COMMIT')
      } catch (/** @type {any} */ err) {
        await client.query('ROLLBACK')
        throw new Error(`migration ${m.name} failed: ${err.message}`)
      }
      applied.push(m.name)
      log?.info({ migration: m.name }, 'applied migration')
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_ID]).catch(() => {})
    client.release()
  }
  return applied
}
