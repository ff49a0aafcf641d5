// What the catalogue promises whoever extends it (docs/ARCHITECTURE.md,
// "Where to make the usual changes"): a column metric is three files, and a
// probe that feeds existing metrics is two plus its agent's measurement.
// Each test copies the repository, writes exactly those files into the
// copy, counts what differs from this checkout, and then uses the copy as a
// user would: a fresh database migrated by it, its API, and its agent code
// measuring the lab page in Chromium, claiming and submitting through the
// agent protocol. Nothing else is edited, so anything that still lists
// metrics or probes by hand fails here.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { startOrigin } from '../lab/origin.js'
import { createTestDatabase } from './helpers/db.js'
import { freePort } from '../dev/free-port.js'

const ROOT = path.resolve(import.meta.dirname, '..')
/** Not part of a checkout's sources: dependencies, git, local state. */
const NOT_SOURCES = new Set(['node_modules', '.git', '.h3lens', 'tmp'])
/** Rounds each test measures and submits; both arms each. */
const ROUNDS = 3

let dataDir
let origin
let pool
/** @type {string[]} */
const copies = []

before(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-extension-'))
  origin = await startOrigin({ dataDir, port: await freePort() })
  pool = createBrowserPool({ dataDir, executablePath: process.env.H3LENS_CHROMIUM ?? '/usr/bin/chromium' })
})

after(async () => {
  await pool?.close()
  await origin?.stop()
  for (const dir of [dataDir, ...copies]) if (dir) await rm(dir, { recursive: true, force: true })
})

/** A copy of this checkout's sources, sharing its node_modules. */
async function copyRepository () {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-copy-'))
  copies.push(dir)
  fs.cpSync(ROOT, dir, { recursive: true, filter: (src) => src === ROOT || path.dirname(src) !== ROOT || !NOT_SOURCES.has(path.basename(src)) })
  fs.symlinkSync(fs.realpathSync(path.join(ROOT, 'node_modules')), path.join(dir, 'node_modules'))
  return dir
}

/**
 * The files of the copy that differ from this checkout, or that it lacks.
 * @param {string} dir
 */
function changedFiles (dir) {
  /** @type {string[]} */
  const out = []
  const walk = (/** @type {string} */ rel) => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const f = path.join(rel, e.name)
      if (rel === '' && NOT_SOURCES.has(e.name)) continue
      if (e.isDirectory()) walk(f)
      else if (!fs.existsSync(path.join(ROOT, f)) || !fs.readFileSync(path.join(ROOT, f)).equals(fs.readFileSync(path.join(dir, f)))) out.push(f)
    }
  }
  walk('')
  return out.sort()
}

/**
 * Replace `find` in a file of the copy, which must hold it exactly once.
 * @param {string} dir @param {string} file @param {string} find @param {string} replace
 */
function edit (dir, file, find, replace) {
  const text = fs.readFileSync(path.join(dir, file), 'utf8')
  assert.equal(text.split(find).length, 2, `${file} holds ${JSON.stringify(find)} once`)
  fs.writeFileSync(path.join(dir, file), text.replace(find, replace))
}

/**
 * The copy running: a fresh database its own migrations made, its API, an
 * agent token, and its agent's job runner for the lab origin.
 * @param {string} dir
 */
async function run (dir) {
  const mod = (/** @type {string} */ file) => import(pathToFileURL(path.join(dir, file)).href)
  const [{ migrate }, { buildApp }, { loadConfig }, { createLogger }, { createApiKey }, { createAgentToken }, { createJobRunner }, { foldPendingResults }] = await Promise.all([
    'lib/runtime/migrate.js', 'api/app.js', 'lib/runtime/config.js', 'lib/runtime/log.js', 'lib/store/api-keys.js', 'lib/store/agents.js', 'agents/job-runner.js', 'lib/analysis/rollups.js'
  ].map(mod))
  const database = await createTestDatabase({ empty: true })
  await migrate(database.pool)
  const log = createLogger({ logLevel: 'silent' })
  const app = await buildApp({ db: database.pool, config: loadConfig({ LOG_LEVEL: 'silent', H3LENS_LAB_PORT: String(origin.port) }), log })
  await app.ready()
  const key = (await createApiKey(database.pool, { name: 'extension', role: 'write' })).secret
  const agent = (await createAgentToken(database.pool, { location: 'local' })).token
  const runJob = createJobRunner({ pool, lab: { spki: origin.spki, address: '127.0.0.1', port: origin.port }, timeoutMs: 15_000, log })
  /** @param {import('fastify').InjectOptions & { as?: string }} o */
  const call = ({ as = key, ...o }) => app.inject({ ...o, headers: { authorization: `Bearer ${as}` } })
  return {
    db: database.pool,
    mod,
    call,
    /** @param {string} url */
    get: (url) => call({ url }),
    /**
     * `ROUNDS` rounds of a monitor, due a minute apart, each claimed,
     * measured by the copy's agent and submitted through the agent protocol;
     * then the rollups folded as the scheduler would.
     * @param {number} monitorId
     */
    async measureRounds (monitorId) {
      await database.pool.query(`INSERT INTO jobs (monitor_id, location_id, due_at)
        SELECT $1, 'local', date_trunc('minute', now()) - make_interval(mins => g) FROM generate_series(1, $2) g`, [monitorId, ROUNDS])
      const claim = (await call({ method: 'POST', url: '/api/v1/agent/claim', payload: { limit: ROUNDS }, as: agent })).json()
      assert.equal(claim.jobs.length, ROUNDS)
      for (const job of claim.jobs) {
        const results = await runJob(job, { location: claim.location, allowPrivateTargets: claim.allow_private_targets })
        const stored = await call({ method: 'POST', url: `/api/v1/agent/jobs/${job.id}/results`, payload: { agent_version: 'extension-test', results }, as: agent })
        assert.equal(stored.statusCode, 200, stored.body)
        assert.equal(stored.json().stored, results.length)
      }
      await foldPendingResults(database.pool)
    },
    async close () {
      await app.close()
      await database.drop()
    }
  }
}

const page = () => `${origin.baseUrl}/page-15k.html`
const sum = (/** @type {number[]} */ xs) => xs.reduce((a, b) => a + b, 0)

test('a column metric takes three files: its catalogue entry, its in-page script and a migration of columns; it is measured, stored, compared, trended, exported and served', async () => {
  const dir = await copyRepository()
  // 1. The catalogue entry: no alias, so no deprecated name; the rollup column is the id.
  edit(dir, 'lib/measurement/metrics.js', '  })\n])\n', `  }),
  metric({
    id: 'throwaway_ms', label: 'Throwaway', long: 'Response end', description: 'responseEnd of the navigation, by its own in-page script',
    comparable: true, atLeast: ['ttfb_ms'], pageScript: true
  })
])
`)
  // 2. What measures it.
  fs.writeFileSync(path.join(dir, 'agents/page/metrics/throwaway_ms.js'), `// Runs in the page. The navigation's responseEnd, in ms since its start.
export default function throwaway () {
  const [entry] = /** @type {PerformanceNavigationTiming[]} */ (performance.getEntriesByType('navigation'))
  return entry ? entry.responseEnd - entry.startTime : null
}
`)
  // 3. A migration of columns only, numbered after the last one.
  const last = Math.max(...fs.readdirSync(path.join(dir, 'migrations')).map((f) => Number.parseInt(f, 10)).filter(Number.isFinite))
  const migration = `migrations/${String(last + 1).padStart(3, '0')}_throwaway.sql`
  fs.writeFileSync(path.join(dir, migration), `ALTER TABLE results ADD COLUMN throwaway_ms double precision;
ALTER TABLE round_summaries
  ADD COLUMN h2_throwaway_ms double precision,
  ADD COLUMN h3_throwaway_ms double precision,
  ADD COLUMN auto_throwaway_ms double precision;
ALTER TABLE rollups ADD COLUMN throwaway_ms bytea;
SELECT round_summaries_define_fold();
`)
  assert.deepEqual(changedFiles(dir), ['agents/page/metrics/throwaway_ms.js', 'lib/measurement/metrics.js', migration].sort(), 'three files')

  const copy = await run(dir)
  try {
    const created = await copy.call({ method: 'POST', url: '/api/v1/monitors', payload: { url: page(), locations: ['local'], modes: ['h2', 'h3'], probes: ['page'], interval_s: 60, options: { netlog: 'off' } } })
    assert.equal(created.statusCode, 201, created.body)
    const monitor = created.json()
    await copy.measureRounds(monitor.id)

    // Measured by its script in Chromium, and stored as a column.
    const { items } = (await copy.get(`/api/v1/monitors/${monitor.id}/results?limit=50`)).json()
    assert.equal(items.length, ROUNDS * 2)
    for (const r of items) {
      assert.equal(r.status, 'ok', r.error)
      assert.ok(r.throwaway_ms >= r.ttfb_ms && r.throwaway_ms <= r.load_ms, `responseEnd ${r.throwaway_ms} between the first byte ${r.ttfb_ms} and the load ${r.load_ms}`)
    }

    // Compared on the matched rounds (the round summaries' h2_/h3_ columns).
    const comparison = await copy.get(`/api/v1/monitors/${monitor.id}/comparison?metric=throwaway_ms&percentiles=50`)
    assert.equal(comparison.statusCode, 200, comparison.body)
    assert.equal(comparison.json().metric, 'throwaway_ms')
    const local = comparison.json().locations.find((l) => l.location_id === 'local')
    assert.equal(local.rounds.used, ROUNDS)
    const h2 = items.filter((r) => r.mode === 'h2').map((r) => r.throwaway_ms).sort((a, b) => a - b)
    assert.equal(local.rows[0].h2_ms, h2[1], 'p50 of H2 is the middle round\'s')
    // Without an alias it has no other name.
    const alias = await copy.get(`/api/v1/monitors/${monitor.id}/comparison?metric=throwaway`)
    assert.equal(alias.statusCode, 400)
    assert.equal(alias.json().field, 'metric')

    // Trended from its own rollup column.
    const trends = await copy.get(`/api/v1/monitors/${monitor.id}/trends?metric=throwaway_ms&bucket=1h`)
    assert.equal(trends.statusCode, 200, trends.body)
    assert.equal(sum(trends.json().series.flatMap((s) => s.points.map((p) => p.count))), ROUNDS * 2)
    const { rows: [folded] } = await copy.db.query('SELECT count(*)::int AS n FROM rollups WHERE monitor_id = $1 AND throwaway_ms IS NOT NULL', [monitor.id])
    assert.ok(folded.n > 0, 'the rollups hold its sketches')

    // Exported, in CSV and NDJSON.
    const csv = (await copy.get(`/api/v1/results?monitor=${monitor.id}&format=csv`)).body
    assert.ok(csv.split('\n')[0].split(',').includes('throwaway_ms'), 'a CSV column')
    const lines = (await copy.get(`/api/v1/results?monitor=${monitor.id}&format=ndjson`)).body.trim().split('\n').map((l) => JSON.parse(l))
    assert.deepEqual(lines.map((l) => l.throwaway_ms).sort(), items.map((r) => r.throwaway_ms).sort())

    // Served by the catalogue, for the dashboard's menus and tables.
    const catalogue = (await copy.get('/api/v1/catalogue')).json()
    const entry = catalogue.metrics.find((m) => m.id === 'throwaway_ms')
    assert.deepEqual([entry.alias, entry.column, entry.rollup, entry.comparable, entry.timeline, entry.wpt], [null, 'throwaway_ms', 'throwaway_ms', true, 'mark', null])

    // WebPageTest results do not have it: null, never 0.
    const { resultFromDevtools } = await copy.mod('lib/measurement/wpt/devtools.js')
    const { readResultZip } = await copy.mod('lib/measurement/wpt/zip.js')
    const [view] = await readResultZip(fs.readFileSync(path.join(ROOT, 'test/fixtures/wpt/164917_h3l_11_h3_47938c6a2d1a.zip')))
    const wpt = resultFromDevtools(view.devtools, { mode: 'h3', view: 'first', expected: 'h3' })
    assert.equal(wpt.status, 'ok', wpt.error)
    assert.equal(wpt.throwaway_ms, null)
  } finally {
    await copy.close()
  }
})

test('a probe that feeds existing metrics takes its file, its place in the list and its agent\'s measurement: no migration; its options are checked, stored, applied and compared', async () => {
  const dir = await copyRepository()
  // 1. The probe: its options (schema, defaults, checks, effective values).
  fs.writeFileSync(path.join(dir, 'lib/measurement/probes/throwaway.js'), `// A throwaway probe: a page of the site, loaded after a pause; its results
// carry the page timings as the page probe's do.
import { FORCED_MODES } from '../modes.js'
import { wholeNumber } from './option-checks.js'

const PAUSE_MS = Object.freeze({ default: 0, min: 0, max: 2000 })

/** @type {import('./index.js').Probe} */
export const throwaway = Object.freeze({
  id: 'throwaway',
  label: 'Throwaway',
  hint: 'another page, after a pause',
  modes: FORCED_MODES,
  samplesMetric: null,
  outlier: Object.freeze({ label: 'load_ms', rule: 'column', column: 'load_ms' }),
  options: Object.freeze({
    throwaway_url: { type: 'string', minLength: 1, maxLength: 2048, description: 'throwaway probe: the page it loads (default: the monitor URL)' },
    throwaway_pause_ms: { type: 'integer', minimum: PAUSE_MS.min, maximum: PAUSE_MS.max, description: 'throwaway probe: the pause before it loads' }
  }),
  defaults: Object.freeze({ throwaway_pause_ms: PAUSE_MS.default }),
  targets: Object.freeze(['throwaway_url']),
  check (options) {
    wholeNumber(options, 'throwaway_pause_ms', PAUSE_MS, ' ms')
  },
  effective (options, pageUrl) {
    return {
      throwaway_url: new URL(options.throwaway_url ?? pageUrl, pageUrl).toString(),
      throwaway_pause_ms: options.throwaway_pause_ms ?? PAUSE_MS.default
    }
  }
})
`)
  // 2. Its place in the one list of probes.
  edit(dir, 'lib/measurement/probes/index.js', "import { upload, UPLOAD_BYTES, LAB_UPLOAD_PATH } from './upload.js'\n",
    "import { upload, UPLOAD_BYTES, LAB_UPLOAD_PATH } from './upload.js'\nimport { throwaway } from './throwaway.js'\n")
  edit(dir, 'lib/measurement/probes/index.js', '[page, parallel, upload, journey]', '[page, parallel, upload, journey, throwaway]')
  // And the agent's measurement of it, found by its id.
  fs.writeFileSync(path.join(dir, 'agents/probes/throwaway.js'), `// The throwaway probe (lib/measurement/probes/throwaway.js): after its
// pause, one load of options.throwaway_url.
import { setTimeout as sleep } from 'node:timers/promises'
import { measure, loadAndRead } from '../measure.js'

/** @type {import('./index.js').ProbeRunner} */
export function run (o, { options }) {
  const protocol = o.protocol ?? o.mode
  return measure({ ...o, probe: 'throwaway' }, async ({ page, result, network, summarize }) => {
    result.target_url = options.throwaway_url
    await sleep(options.throwaway_pause_ms)
    await loadAndRead(page, options.throwaway_url, protocol, o.timeoutMs ?? 30_000, result, network)
    summarize(result)
  })
}
`)
  const changed = changedFiles(dir)
  assert.deepEqual(changed, ['agents/probes/throwaway.js', 'lib/measurement/probes/index.js', 'lib/measurement/probes/throwaway.js'])
  assert.equal(changed.filter((f) => !f.startsWith('agents/')).length, 2, 'two files, plus the agent\'s')

  const copy = await run(dir)
  try {
    const monitor = (body) => copy.call({ method: 'POST', url: '/api/v1/monitors', payload: { url: page(), locations: ['local'], modes: ['h2', 'h3'], probes: ['throwaway'], interval_s: 60, ...body } })
    // Its options are checked as its file says (the schema, then its own
    // checks), naming the option.
    const { createMonitor } = await copy.mod('lib/store/monitors.js')
    await assert.rejects(createMonitor(copy.db, { url: page(), locations: ['local'], probes: ['throwaway'], options: { throwaway_pause_ms: 2.5 } }),
      (/** @type {any} */ err) => err.field === 'options.throwaway_pause_ms' && /whole number from 0 to 2000 ms/.test(err.message))
    /** @type {[Record<string, any>, string, RegExp][]} */
    const refusals = [
      [{ throwaway_pause_ms: 5000 }, 'options.throwaway_pause_ms', /must be <= 2000/],
      [{ throwaway_url: 'ftp://lab.h3lens.test/x' }, 'options.throwaway_url', /http or https/],
      [{ throwaway_url: 'https://elsewhere.example/x' }, 'options.throwaway_url', /another origin/]
    ]
    for (const [options, field, message] of refusals) {
      const refused = await monitor({ options })
      assert.equal(refused.statusCode, 400, `${field}: ${refused.body}`)
      assert.equal(refused.json().field, field)
      assert.match(refused.json().message, message)
    }
    const created = await monitor({ options: { throwaway_url: '/page-many.html', throwaway_pause_ms: 20, netlog: 'off' } })
    assert.equal(created.statusCode, 201, created.body)
    const m = created.json()
    const target = `${origin.baseUrl}/page-many.html`
    assert.equal(m.options.throwaway_url, target, 'stored resolved against the monitor URL')
    assert.deepEqual(m.probes, ['throwaway'])

    const catalogue = (await copy.get('/api/v1/catalogue')).json()
    assert.deepEqual(catalogue.probes.find((p) => p.id === 'throwaway'), {
      id: 'throwaway', label: 'Throwaway', hint: 'another page, after a pause', samplesMetric: null, options: ['throwaway_url', 'throwaway_pause_ms'], defaults: { throwaway_pause_ms: 0 }
    })

    await copy.measureRounds(m.id)
    const { items } = (await copy.get(`/api/v1/monitors/${m.id}/results?probe=throwaway&limit=50`)).json()
    assert.equal(items.length, ROUNDS * 2)
    for (const r of items) {
      assert.equal(r.status, 'ok', r.error)
      assert.equal(r.observed_protocol, r.mode)
      assert.ok(r.ttfb_ms > 0 && r.load_ms >= r.ttfb_ms, `${r.ttfb_ms} ${r.load_ms}`)
    }
    const detail = (await copy.get(`/api/v1/results/${items[0].id}`)).json()
    assert.equal(detail.details.target_url, target, 'the agent loaded the page the options name')
    assert.ok(detail.details.requests.some((q) => q.url === target))

    const comparison = await copy.get(`/api/v1/monitors/${m.id}/comparison?probe=throwaway&metric=load_ms&percentiles=50`)
    assert.equal(comparison.statusCode, 200, comparison.body)
    assert.equal(comparison.json().probe, 'throwaway')
    assert.equal(comparison.json().locations.find((l) => l.location_id === 'local').rounds.used, ROUNDS)
    const trends = (await copy.get(`/api/v1/monitors/${m.id}/trends?probe=throwaway&metric=ttfb_ms&bucket=1h`)).json()
    assert.equal(sum(trends.series.flatMap((s) => s.points.map((p) => p.count))), ROUNDS * 2)
  } finally {
    await copy.close()
  }
})
