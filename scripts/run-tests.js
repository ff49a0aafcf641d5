#!/usr/bin/env node
// Runs the test suite against real PostgreSQL: DATABASE_URL when set,
// otherwise an embedded cluster kept under .h3lens/test-pg between runs.
// A migrated template database is made once per run; each test file clones
// it (CREATE DATABASE ... TEMPLATE, a file copy: test/helpers/db.js), which
// takes ~25 ms instead of migrating.
//
// Each file runs as its own `node <file>` (node:test runs a file's tests
// and reports them in the file's own process: no second process per file
// to run the reporters), in one of three lanes that
// run side by side (docs/TESTING.md): the serial lane, one file at a time,
// for files that drive a browser to measure page loads or start processes
// (lab, Caddy, agents, the CLI); the side lane, one file at a time beside
// it, for such files that mostly wait (intervals, timeouts, outages) or only
// look at the dashboard; the concurrent lane, H3LENS_TEST_CONCURRENCY files
// at a time, for files that only talk to their own database and loopback
// ports. scripts/test-plan.js decides which is which from each file's
// imports and from a file's own `// run-tests: serial|side|concurrent
// <reason>` mark. The serial and side lanes are the long ones, of about the
// same length; the concurrent lane runs one file at a time by default: it
// still ends minutes before them, and on 2 cores a second file at a time
// took more from their browsers than it saved (a fresh clone's suite in
// 560 s with 1, 622 s with 2). The files run in name order: the side and
// serial lanes run one file at a time, so no order shortens them.
// A file's output is printed whole when it ends, headed by its wall and CPU
// time; the end of the run sums up: the counts, every failed test with its
// error, the ten slowest files, each lane's wall and CPU time.
//
//   node scripts/run-tests.js                 every file under test/
//   node scripts/run-tests.js test/ui.test.js just this file (or several)
//   node scripts/run-tests.js --checks        also lint and type check, beside the tests
//   node scripts/run-tests.js --plan          which lane each file runs in, and why
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { startEmbeddedPostgres, createPool } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { createLogger } from '../lib/runtime/log.js'
import { ROOT, findTestFiles, planTests } from './test-plan.js'

const REPORTER = path.join(ROOT, 'scripts', 'test-reporter.js')
const SLOWEST = 10
// The package.json scripts --checks runs beside the tests, at the lowest CPU
// priority: they are pure computation, and each minute they take from the
// serial lane, whose files follow one another, is a minute on the whole run;
// the tests leave the CPU idle for longer than the checks need.
const CHECKS = ['lint', 'typecheck']
const CHECKS_NICENESS = '19'
// The concurrent lane's files, at a lower CPU priority too: they talk to
// their own database and time nothing, so the serial and side lanes'
// browsers, whose files follow one another, go first. On 2 cores the suite
// took 428 s with it, 469–499 s without (docs/TESTING.md).
// H3LENS_TEST_CONCURRENT_NICE=0 runs them at the runner's own priority.
// The side lane's files, a little below the serial lane: they wait, or look
// at the dashboard, and time no page load, while the serial lane's files
// time page loads and paints. Beside both other lanes at the same priority,
// the serial lane's timings were off under load (a first paint one frame
// late, a parallel request on a connection of its own).
// H3LENS_TEST_SIDE_NICE=0 runs them at the runner's own priority.
/** The niceness each lane's files run at. @type {Record<string, string>} */
const NICENESS = { concurrent: niceness('H3LENS_TEST_CONCURRENT_NICE', '5'), side: niceness('H3LENS_TEST_SIDE_NICE', '2'), serial: '0' }

// The embedded cluster holds nothing but throwaway test databases, so it
// skips what keeps data safe through a crash of the machine: flushes to
// disk, waiting for the WAL at commit, whole pages in the WAL. A crash of
// postgres itself loses nothing (the OS still has the writes); after a crash
// of the machine, remove .h3lens/test-pg and the next run makes it anew.
const THROWAWAY_CLUSTER = { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' }

const argv = process.argv.slice(2)
const flags = new Set(argv.filter((a) => a.startsWith('--')))
for (const f of flags) if (!['--plan', '--checks'].includes(f)) throw new Error(`unknown option ${f} (use --plan or --checks)`)
const files = (argv.filter((a) => !a.startsWith('--')).length ? argv.filter((a) => !a.startsWith('--')) : ['test'])
  .map((a) => path.resolve(a))
  .flatMap((a) => {
    const stat = fs.statSync(a, { throwIfNoEntry: false })
    if (!stat) {
      console.error(`run-tests: no such test file or folder: ${path.relative(process.cwd(), a)}`)
      process.exit(2)
    }
    return stat.isDirectory() ? findTestFiles(a) : [a]
  })
const plan = planTests(files)
const concurrency = Number(process.env.H3LENS_TEST_CONCURRENCY ?? 1)
if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`H3LENS_TEST_CONCURRENCY must be a whole number ≥ 1, not "${process.env.H3LENS_TEST_CONCURRENCY}"`)

if (flags.has('--plan')) {
  for (const p of plan) console.log(`${p.lane.padEnd(10)}  ${p.file}${p.why.map((w) => `\n              ${w}`).join('')}`)
  process.exit(0)
}

const started = Date.now()
const log = createLogger({ logLevel: process.env.LOG_LEVEL ?? 'warn', name: 'test-runner' })
let embedded = null
let adminUrl = process.env.DATABASE_URL
if (!adminUrl) {
  embedded = await startEmbeddedPostgres({ dataDir: path.resolve('.h3lens', 'test-pg'), port: Number(process.env.H3LENS_TEST_PG_PORT ?? 54339), log, settings: THROWAWAY_CLUSTER })
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

/** @typedef {{ name: string, lane: import('./test-plan.js').Lane | 'check', command: string[], report?: string }} Job */
/** @typedef {Job & { code: number, ms: number, output: string, events: any[], stopped: boolean }} Done */

// Each file's limit, a stop for a file that hangs: far above the slowest
// file (the Schemathesis fuzz, a loop of requests that waits on the CPU:
// 120 s of it, and 310–560 s of wall time in the concurrent lane at its
// lower priority beside the browsers on 2 cores). A file past it is
// stopped, with all it started, and fails. H3LENS_TEST_TIMEOUT_S raises it
// for a long fuzz hunt (docs/API.md); the files see the value in use.
const timeoutS = Number(process.env.H3LENS_TEST_TIMEOUT_S ?? 900)
// How long a stopped file's group has after SIGTERM before SIGKILL.
const KILL_GRACE_MS = 10_000
const reportDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-test-report-'))
const env = { ...process.env, H3LENS_TEST_ADMIN_URL: adminUrl, H3LENS_TEST_TEMPLATE: template, H3LENS_TEST_TIMEOUT_S: String(timeoutS), ...(process.stdout.isTTY ? { FORCE_COLOR: '1' } : {}) }
/** @type {Job[]} */
const checks = flags.has('--checks') ? CHECKS.map((s) => ({ name: `npm run ${s}`, lane: 'check', command: ['nice', '-n', CHECKS_NICENESS, 'npm', 'run', '--silent', s] })) : []
/** @type {Job[]} */
const tests = plan.map((p, i) => {
  const report = path.join(reportDir, `${i}.jsonl`)
  return {
    name: p.file,
    lane: p.lane,
    report,
    command: [...(NICENESS[p.lane] !== '0' ? ['nice', '-n', NICENESS[p.lane]] : []), process.execPath, '--test-reporter=spec', '--test-reporter-destination=stdout',
      `--test-reporter=${REPORTER}`, `--test-reporter-destination=${report}`, path.join(ROOT, p.file)]
  }
})
const laneOf = (/** @type {Job['lane']} */ lane) => tests.filter((j) => j.lane === lane)
const serial = laneOf('serial')
const side = laneOf('side')
const concurrent = laneOf('concurrent')
console.log(`# ${tests.length} test files: ${serial.length} in the serial lane and ${side.length} in the side lane, one at a time each; ${concurrent.length} in the concurrent lane, ${concurrency} at a time` +
  (checks.length ? `; beside them ${checks.map((c) => c.name).join(' and ')}` : ''))

/** @type {Set<import('node:child_process').ChildProcess>} */
const running = new Set()
let stopping = false
for (const sig of /** @type {const} */ (['SIGINT', 'SIGTERM'])) {
  process.on(sig, () => {
    stopping = true
    for (const c of running) signalGroup(c, sig)
  })
}

/** @type {Done[]} */
const done = []
/** Files not yet started, by lane. @type {Record<string, Job[]>} */
const queues = { serial: [...serial], side: [...side], concurrent: [...concurrent], check: [...checks] }
await Promise.all([lane('serial', 1), lane('side', 1), lane('concurrent', concurrency), lane('check', checks.length)])
const postgresCpu = embedded ? clusterCpuSeconds(path.resolve('.h3lens', 'test-pg', 'pg')) : null
if (embedded) await embedded.stop()
fs.rmSync(reportDir, { recursive: true, force: true })
process.exit(summarise(done))

/**
 * A lane's niceness from the environment, or its default.
 * @param {string} name the variable
 * @param {string} fallback
 */
function niceness (name, fallback) {
  const value = process.env[name] ?? fallback
  if (!/^(1?\d)$/.test(value)) throw new Error(`${name} must be a niceness from 0 to 19, not "${value}"`)
  return value
}

/**
 * Run a lane's files in order, `width` at a time. A test lane whose files
 * are all started then lends its place to the lanes whose files may run
 * beside others, the concurrent lane's first, then the side lane's (never
 * a serial file): the run does not end on one lane's last files with a
 * core idle. In the full suite the serial and side lanes ended about
 * 100 s before the concurrent one, which ran alone one file at a time.
 * @param {Job['lane']} name
 * @param {number} width
 */
async function lane (name, width) {
  const worker = async () => {
    for (let job = queues[name].shift(); job && !stopping; job = queues[name].shift()) await runAndSay(job)
    if (name === 'check') return
    for (let job = nextToLend(); job && !stopping; job = nextToLend()) await runAndSay(job)
  }
  await Promise.all(Array.from({ length: Math.max(1, width) }, worker))
}

/** A file of a lane that lets others run beside it, not yet started; null when none. */
function nextToLend () {
  return queues.concurrent.shift() ?? queues.side.shift() ?? null
}

/** @param {Job} job */
async function runAndSay (job) {
  const result = await run(job)
  done.push(result)
  const cpu = cpuOf(result)
  const took = `${seconds(result.ms)}${cpu === null ? '' : `, CPU ${seconds(cpu * 1000)}`}${result.code === 0 ? '' : ', FAILED'}`
  console.log(`\n# ── ${job.name} (${job.lane}, ${took})\n${withoutCounts(result.output).trimEnd()}`)
}

/**
 * @param {Job} job
 * @returns {Promise<Done>}
 */
function run (job) {
  const at = Date.now()
  // A group of its own, so that a signal to the job reaches what it started
  // too: a file's browsers, agents and Caddy, and the tools npm runs for a
  // check (npm does not pass signals on).
  const child = spawn(job.command[0], job.command.slice(1), { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  running.add(child)
  let output = ''
  child.stdout.on('data', (d) => { output += d })
  child.stderr.on('data', (d) => { output += d })
  /** @type {NodeJS.Timeout[]} */
  const timers = []
  let stopped = false
  if (job.report) {
    timers.push(setTimeout(() => {
      stopped = true
      output += `\n# stopped: the file ran past its limit of ${timeoutS} s (H3LENS_TEST_TIMEOUT_S)\n`
      signalGroup(child, 'SIGTERM')
      timers.push(setTimeout(() => signalGroup(child, 'SIGKILL'), KILL_GRACE_MS))
    }, timeoutS * 1000))
  }
  return new Promise((resolve) => {
    child.on('error', (err) => { output += `\n${err.message}\n` })
    child.on('close', (code, signal) => {
      for (const t of timers) clearTimeout(t)
      running.delete(child)
      resolve({ ...job, code: code ?? (signal ? 1 : 0), ms: Date.now() - at, output, events: job.report ? readReport(job.report) : [], stopped })
    })
  })
}

/**
 * A signal to a job's process group: the job and what it started that
 * stayed in its group.
 * @param {import('node:child_process').ChildProcess} child
 * @param {NodeJS.Signals} sig
 */
function signalGroup (child, sig) {
  try {
    if (child.pid) process.kill(-child.pid, sig)
  } catch {
    // the group has ended
  }
}

/**
 * A file's output without node:test's closing counts, which the summary
 * at the end adds up.
 * @param {string} output
 */
function withoutCounts (output) {
  const counts = /^ℹ (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) [\d.]+$/
  // eslint-disable-next-line no-control-regex
  return output.split('\n').filter((l) => !counts.test(l.replace(/\x1b\[[\d;]*m/g, ''))).join('\n')
}

/** @param {string} report */
function readReport (report) {
  if (!fs.existsSync(report)) return []
  return fs.readFileSync(report, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
}

/**
 * Print what the run adds up to; the exit code for the run.
 * @param {Done[]} results
 */
function summarise (results) {
  /** @type {Record<string, number>} */
  const counts = {}
  for (const e of results.flatMap((r) => r.events).filter((e) => e.kind === 'count')) counts[e.name] = (counts[e.name] ?? 0) + e.n
  const slowest = results.filter((r) => r.report).sort((a, b) => b.ms - a.ms).slice(0, SLOWEST)
  const out = ['', `# the ${slowest.length} slowest test files (wall time)`]
  for (const r of slowest) out.push(`#   ${seconds(r.ms).padStart(7)}  ${r.name} (${r.lane})`)
  const failed = results.filter((r) => r.code !== 0)
  if (failed.length) {
    out.push('', `# ${failed.length} failed:`)
    for (const r of failed) {
      const failures = r.events.filter((e) => e.kind === 'fail')
      if (r.stopped) out.push(`# ✖ ${r.name} was stopped at its limit of ${timeoutS} s (its output is above)`)
      else if (!failures.length) out.push(`# ✖ ${r.name} exited with ${r.code} (its output is above)`)
      for (const f of failures) {
        out.push(`# ✖ ${path.relative(ROOT, f.file ?? r.name)}${f.line ? `:${f.line}` : ''}  ${f.name}`)
        out.push(...String(f.error).split('\n').map((l) => `#     ${l}`))
      }
    }
  }
  out.push('', `# ${['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'].map((k) => `${k} ${counts[k] ?? 0}`).join(', ')}`)
  const lanes = ['serial', 'side', 'concurrent'].filter((lane) => results.some((r) => r.lane === lane)).map((lane) => {
    const files = results.filter((r) => r.lane === lane)
    const cpu = files.map(cpuOf)
    return `${lane} ${seconds(files.reduce((a, r) => a + r.ms, 0))}` +
      (cpu.every((c) => c !== null) ? ` (CPU ${seconds(cpu.reduce((a, c) => a + (c ?? 0), 0) * 1000)})` : '')
  })
  out.push(`# the lanes' files took: ${lanes.join(', ')}; CPU counts each file's process and what it started, not the shared PostgreSQL` +
    (postgresCpu === null ? '' : `, which took CPU ${seconds(postgresCpu * 1000)}`))
  out.push(`# ${results.filter((r) => r.report).length} files in ${seconds(Date.now() - started)}`)
  console.log(out.join('\n'))
  return failed.length ? 1 : 0
}

/**
 * The CPU seconds a file took, as its reporter saw them; null where unknown.
 * @param {Done} result
 */
function cpuOf (result) {
  const e = result.events.find((x) => x.kind === 'cpu')
  return e ? e.seconds : null
}

/**
 * The CPU seconds the embedded cluster has taken so far: its postmaster's
 * and those of the backends it has reaped (every test file's connections
 * but the ones still open). Null where /proc does not say.
 * @param {string} dataDir
 */
function clusterCpuSeconds (dataDir) {
  try {
    const pid = fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0].trim()
    // Fields 14–17 of /proc/PID/stat, after the command's closing parenthesis.
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')
    const ticks = fields.slice(11, 15).reduce((a, f) => a + Number(f), 0)
    return ticks / 100
  } catch {
    return null
  }
}

/** @param {number} ms */
function seconds (ms) {
  return `${(ms / 1000).toFixed(1)} s`
}

/**
 * @param {string} url
 * @param {string} db
 */
function withDatabase (url, db) {
  const u = new URL(url)
  u.pathname = `/${db}`
  return u.toString()
}
