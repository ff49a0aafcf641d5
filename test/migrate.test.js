// Migrations against real PostgreSQL: applied files are checksummed and may
// not change afterwards (the CLI refuses to start and says what to do),
// databases from before checksums get them recorded, and 012 brings a
// rollups table from before 002's key edit to the current key.
// run-tests: concurrent — its processes are one-shot h3lens commands against its own databases (the one `start` is refused before it listens)
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createTestDatabase } from './helpers/db.js'
import { freePort } from '../dev/free-port.js'
import { migrate, listMigrations, MIGRATIONS_DIR, MigrationChangedError } from '../lib/runtime/migrate.js'

// The key 012 gives the rollups, and the key once every migration ran (024 adds the browser).
const KEY_012 = ['monitor_id', 'tier', 'probe', 'view', 'bucket', 'location_id', 'mode']
const NEW_KEY = ['monitor_id', 'tier', 'probe', 'view', 'browser', 'bucket', 'location_id', 'mode']
const OLD_KEY = ['monitor_id', 'tier', 'probe', 'view', 'location_id', 'mode', 'bucket']
const PRE_EDIT_002 = fileURLToPath(new URL('./fixtures/002_rollups.before-key-edit.sql', import.meta.url))

const run = (args, env) => spawnSync(process.execPath, ['bin/h3lens.js', ...args], { encoding: 'utf8', env: { ...process.env, LOG_LEVEL: 'warn', ...env }, timeout: 60000 })
const sha256 = async (file) => createHash('sha256').update(await fs.readFile(file)).digest('hex')

/** A copy of the migrations folder to edit. */
async function copyMigrations () {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'h3lens-migrations-'))
  for (const m of await listMigrations()) await fs.copyFile(m.file, path.join(dir, path.basename(m.file)))
  return dir
}

/** @param {import('pg').Pool} pool */
async function rollupsKey (pool) {
  const { rows } = await pool.query(`SELECT a.attname AS col
    FROM pg_constraint c CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
    JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
    WHERE c.conrelid = 'rollups'::regclass AND c.contype = 'p' ORDER BY k.ord`)
  return rows.map((r) => r.col)
}

/** @param {import('pg').Pool} pool */
async function recorded (pool) {
  const { rows } = await pool.query('SELECT name, checksum FROM h3lens_migrations ORDER BY version')
  return Object.fromEntries(rows.map((r) => [r.name, r.checksum]))
}

test('a new database gets every migration with its checksum, the current rollups key, and a second run changes nothing', async () => {
  const db = await createTestDatabase({ empty: true })
  try {
    const all = await listMigrations()
    assert.deepEqual(await migrate(db.pool), all.map((m) => m.name))
    const sums = await recorded(db.pool)
    for (const m of all) assert.equal(sums[m.name], await sha256(m.file), m.name)
    assert.deepEqual(await rollupsKey(db.pool), NEW_KEY, '012 leaves the current key alone')
    assert.deepEqual(await migrate(db.pool), [])
    assert.deepEqual(await recorded(db.pool), sums)
  } finally {
    await db.drop()
  }
})

test('a landed migration that changed stops migrate before it applies anything, naming the file and what to do', async () => {
  const db = await createTestDatabase({ empty: true })
  const dir = await copyMigrations()
  try {
    await migrate(db.pool, { dir })
    const file = path.join(dir, '005_api_keys.sql')
    const original = await fs.readFile(file)
    await fs.appendFile(file, '-- one more comment\n')
    await fs.writeFile(path.join(dir, '099_later.sql'), 'CREATE TABLE later (id int);\n')
    await assert.rejects(migrate(db.pool, { dir }), (err) => {
      assert.ok(err instanceof MigrationChangedError)
      assert.match(err.message, /^migration 005_api_keys was changed after it was applied to this database/)
      assert.match(err.message, new RegExp(`${path.basename(dir)}/005_api_keys\\.sql now [0-9a-f]{12}`))
      assert.match(err.message, /restore the file to what was applied .* and make the change in a new migration, such as 100_<what>\.sql, instead/)
      return true
    })
    const { rows } = await db.pool.query("SELECT to_regclass('later') AS t")
    assert.equal(rows[0].t, null, 'the pending migration did not run')

    await fs.writeFile(file, original)
    assert.deepEqual(await migrate(db.pool, { dir }), ['099_later'])
    assert.deepEqual(await migrate(db.pool, { dir }), [])
  } finally {
    await fs.rm(dir, { recursive: true, force: true })
    await db.drop()
  }
})

test('h3lens migrate and h3lens start refuse a database whose applied migration differs from the file, with the message alone', async () => {
  const db = await createTestDatabase()
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'h3lens-migrate-cli-'))
  try {
    const env = { DATABASE_URL: db.url, H3LENS_DATA_DIR: dataDir }
    const ok = run(['migrate'], env)
    assert.equal(ok.status, 0, ok.stderr)
    assert.match(ok.stdout, /database is up to date/)

    // As if migrations/010_jobs_retention.sql had been edited since it ran.
    await db.pool.query("UPDATE h3lens_migrations SET checksum = repeat('ab', 32) WHERE name = '010_jobs_retention'")
    const expected = /^h3lens: migration 010_jobs_retention was changed after it was applied to this database \(applied sha256 abababababab, migrations\/010_jobs_retention\.sql now [0-9a-f]{12}\)\. Migrations are immutable once landed: restore the file .* make the change in a new migration, such as \d{3}_<what>\.sql, instead\.$/m
    const refused = run(['migrate'], env)
    assert.equal(refused.status, 1)
    assert.match(refused.stderr, expected)
    assert.doesNotMatch(refused.stderr, /\n\s+at /, 'a message, not a stack trace')

    const start = run(['start', '--lab', 'off', '--no-seed', '--port', String(await freePort())], env)
    assert.equal(start.status, 1)
    assert.match(start.stderr, expected)
  } finally {
    await fs.rm(dataDir, { recursive: true, force: true })
    await db.drop()
  }
})

test('a database migrated before checksums were kept gets the files\' checksums recorded on its first run', async () => {
  const db = await createTestDatabase()
  try {
    const sums = await recorded(db.pool)
    await db.pool.query('ALTER TABLE h3lens_migrations DROP COLUMN checksum')
    assert.deepEqual(await migrate(db.pool), [])
    assert.deepEqual(await recorded(db.pool), sums)
  } finally {
    await db.drop()
  }
})

test('012 brings a database created with 002 before its key edit to the current rollups key, keeping its rows', async () => {
  const db = await createTestDatabase({ empty: true })
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'h3lens-migrations-'))
  try {
    // What such a database ran: 001, then 002 as it was before 89ef876.
    await fs.copyFile(path.join(MIGRATIONS_DIR, '001_init.sql'), path.join(dir, '001_init.sql'))
    await fs.copyFile(PRE_EDIT_002, path.join(dir, '002_rollups.sql'))
    assert.deepEqual(await migrate(db.pool, { dir }), ['001_init', '002_rollups'])
    assert.deepEqual(await rollupsKey(db.pool), OLD_KEY)
    await db.pool.query(`INSERT INTO rollups (monitor_id, tier, probe, view, location_id, mode, bucket, runs)
      VALUES (1, '5m', 'page', 'first', 'eu', 'h3', '2026-11-20T10:00:00Z', 3), (1, '5m', 'page', 'first', 'eu', 'h2', '2026-11-20T10:00:00Z', 4)`)

    // Its 002 checksum is the historic one, accepted; 012 re-keys.
    const applied = await migrate(db.pool)
    assert.ok(applied.includes('012_rollups_key'), applied.join(', '))
    assert.ok(!applied.includes('002_rollups'))
    assert.deepEqual(await rollupsKey(db.pool), NEW_KEY)
    assert.equal((await recorded(db.pool))['002_rollups'], await sha256(PRE_EDIT_002))
    const { rows } = await db.pool.query('SELECT mode, runs FROM rollups ORDER BY mode')
    assert.deepEqual(rows, [{ mode: 'h2', runs: 4 }, { mode: 'h3', runs: 3 }])
    assert.deepEqual(await migrate(db.pool), [])
    assert.deepEqual(await rollupsKey(db.pool), NEW_KEY)
  } finally {
    await fs.rm(dir, { recursive: true, force: true })
    await db.drop()
  }
})

test('012 also re-keys a database from before checksums whose rollups still have the old key', async () => {
  const db = await createTestDatabase()
  try {
    // Migrated up to 011 by an earlier h3lens, with 002 before its key edit.
    await db.pool.query(`ALTER TABLE rollups DROP CONSTRAINT rollups_pkey,
      ADD PRIMARY KEY (${OLD_KEY.join(', ')})`)
    await db.pool.query("DELETE FROM h3lens_migrations WHERE name = '012_rollups_key'")
    await db.pool.query('ALTER TABLE h3lens_migrations DROP COLUMN checksum')
    assert.deepEqual(await migrate(db.pool), ['012_rollups_key'])
    assert.deepEqual(await rollupsKey(db.pool), KEY_012)
    assert.equal((await recorded(db.pool))['002_rollups'], await sha256(path.join(MIGRATIONS_DIR, '002_rollups.sql')))
  } finally {
    await db.drop()
  }
})
