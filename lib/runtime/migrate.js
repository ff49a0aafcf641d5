// Forward-only migrations: migrations/NNN_name.sql, applied in order, each in
// its own transaction, recorded in h3lens_migrations with the sha256 of the
// file's bytes. A session-level advisory lock serialises concurrent starters
// (api and scheduler booting together).
//
// Landed migrations are immutable: a database only ever runs a file once, so
// editing it afterwards changes new databases and leaves existing ones as
// they were, and the two drift apart without anyone noticing (this happened
// to 002, see HISTORIC_CHECKSUMS). Every start therefore compares each
// applied migration's recorded checksum with its file and refuses to go on
// when they differ; a change goes into a new migration instead.
import { createHash } from 'node:crypto'
import fs from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'migrations')
// Arbitrary but fixed: "h3ls" in ASCII.
const LOCK_ID = 0x68336c73

/**
 * Earlier contents of landed files, by version, accepted as unchanged: edits
 * made before checksums were kept, each repaired by a later migration. A
 * database from before checksums records the current file instead (see the
 * backfill below), so these are met only where this code ran the old file
 * itself (a migrations folder carrying the pre-edit 002); the state they
 * stand for is known and repaired, not drift.
 * @type {Record<number, Record<string, string>>}
 */
export const HISTORIC_CHECKSUMS = {
  2: {
    // 002 before 89ef876, which reordered the rollups primary key to put
    // bucket before location_id and mode; 012_rollups_key brings databases
    // created from these to the current key (judged from the catalogue).
    fbdcae89966311ad32338a7cffaeabff993468b43e089a9b5d998b34d86597cd: '002 of 4866cb1: key (..., view, location_id, mode, bucket)',
    '642dd3e50c6acfa4e190dd75d6fe7f10f74c769bd2f0955a4d098b47ef165d11': '002 of 58d1060: the same key, without the rollup_pending backfill of older results'
    // 002 of 6a7301b (one row per metric, d078fb00...) is not accepted: its
    // rollups table has other columns, which no migration converts.
  }
}

/** A landed migration whose file no longer matches what the database ran. */
export class MigrationChangedError extends Error {
  /** @param {{ file: string, name: string, recorded: string, current: string, next: string }} m */
  constructor ({ file, name, recorded, current, next }) {
    // Relative to where h3lens runs when the file is below it.
    const rel = path.relative(process.cwd(), file)
    const shown = rel.startsWith('..') || path.isAbsolute(rel) ? file : rel
    super(`migration ${name} was changed after it was applied to this database ` +
      `(applied sha256 ${recorded.slice(0, 12)}, ${shown} now ${current.slice(0, 12)}). ` +
      'Migrations are immutable once landed: restore the file to what was applied ' +
      `(git log -p -- ${shown} shows the change) and make the change in a new migration, ` +
      `such as ${next}_<what>.sql, instead.`)
    this.name = 'MigrationChangedError'
    this.file = file
    this.userFacing = true
  }
}

/** @returns {Promise<{ version: number, name: string, file: string }[]>} */
export async function listMigrations (dir = MIGRATIONS_DIR) {
  const files = (await fs.readdir(dir)).filter((f) => /^\d{3,}_[\w-]+\.sql$/.test(f)).sort()
  return files.map((file) => ({ version: Number(file.split('_')[0]), name: file.replace(/\.sql$/, ''), file: path.join(dir, file) }))
}

/**
 * @param {import('pg').Pool} pool
 * @param {{ log?: import('pino').Logger, dir?: string }} [opts] dir: the
 *   migrations folder (tests pass a copy)
 * @returns {Promise<string[]>} names of the migrations applied by this call
 * @throws {MigrationChangedError} before applying anything, when an applied
 *   migration's file changed
 */
export async function migrate (pool, { log, dir } = {}) {
  const client = await pool.connect()
  const applied = []
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_ID])
    await client.query(`CREATE TABLE IF NOT EXISTS h3lens_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), checksum text)`)
    // Databases migrated before checksums were kept have the table without
    // the column, and NULL in it until the backfill below.
    await client.query('ALTER TABLE h3lens_migrations ADD COLUMN IF NOT EXISTS checksum text')
    const migrations = await Promise.all((await listMigrations(dir)).map(async (m) => {
      const bytes = await fs.readFile(m.file)
      return { ...m, sql: bytes.toString('utf8'), checksum: createHash('sha256').update(bytes).digest('hex') }
    }))
    const { rows } = await client.query('SELECT version, checksum FROM h3lens_migrations')
    /** @type {Map<number, string | null>} */
    const recorded = new Map(rows.map((r) => [r.version, r.checksum]))
    const next = String(Math.max(0, ...migrations.map((m) => m.version), ...recorded.keys()) + 1).padStart(3, '0')

    for (const m of migrations) {
      if (!recorded.has(m.version)) continue
      const sum = recorded.get(m.version) ?? null
      if (sum === null) {
        // Applied before checksums were kept: what ran then is unknown, so
        // the file as it is now becomes the reference from here on. The one
        // edit known to matter, 002's key order, is repaired by 012 from
        // the catalogue, not judged by checksum.
        await client.query('UPDATE h3lens_migrations SET checksum = $2 WHERE version = $1 AND checksum IS NULL', [m.version, m.checksum])
        log?.info({ migration: m.name }, 'recorded checksum of a migration applied before checksums were kept')
      } else if (sum !== m.checksum && !HISTORIC_CHECKSUMS[m.version]?.[sum]) {
        throw new MigrationChangedError({ file: m.file, name: m.name, recorded: sum, current: m.checksum, next })
      }
    }

    for (const m of migrations) {
      if (recorded.has(m.version)) continue
      await client.query('BEGIN')
      try {
        await client.query(m.sql)
        await client.query('INSERT INTO h3lens_migrations (version, name, checksum) VALUES ($1, $2, $3)', [m.version, m.name, m.checksum])
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
