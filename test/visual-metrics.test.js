// Filmstrips and visual metrics (docs/FILMSTRIPS.md), with real Chromium,
// the lab origin (Caddy, H2 and H3), PostgreSQL and the API over HTTP:
//   - ground truth: the lab page that paints in known steps gives the
//     visual metrics computed by hand, within 10 %, in both arms;
//   - a monitor with options.filmstrip = always: the agent captures a
//     separate load of each arm, uploads the frames (under the cap), the
//     API serves them, the export names them, retention deletes them, and
//     the import takes the exported runs without frames.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { measurePageViews } from '../agents/measure.js'
import { createJobRunner } from '../agents/job-runner.js'
import { createFilmstripUploader } from '../agents/filmstrip.js'
import { startOrigin } from '../lab/origin.js'
import { PAINT_STEPS } from '../lab/site/build.js'
import { labBrowserFlags } from '../lib/measurement/browsers/chromium.js'
import { FILMSTRIP_MAX_BYTES, FRAME_STEP_MS, handPaintedMetrics, VISUAL_COLUMNS } from '../lib/measurement/visual.js'
import { pruneFilmstrips } from '../lib/store/filmstrips.js'
import { createTestApp } from './helpers/app.js'
import { freePort } from '../dev/free-port.js'
import { createLogger } from '../lib/runtime/log.js'

let dataDir
let origin
let pool

before(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-visual-'))
  origin = await startOrigin({ dataDir, port: await freePort() })
  pool = createBrowserPool({ dataDir, executablePath: process.env.H3LENS_CHROMIUM ?? '/usr/bin/chromium' })
})

after(async () => {
  await pool?.close()
  await origin?.stop()
  if (dataDir) await rm(dataDir, { recursive: true, force: true })
})

/** Loads of the painting page before its metrics count as wrong (matchingHandComputed). */
const ATTEMPTS = 3

const paintUrl = () => `${origin.baseUrl}${PAINT_STEPS.path}`

/**
 * How a result's visual metrics miss the hand-computed ones: none when each
 * is within 10 % and one frame. Frames come at most one per 100 ms, so a
 * paint may be seen one frame late besides.
 * @param {Record<string, any>} r
 * @param {Record<string, number | null>} expected
 * @param {string} arm
 * @returns {string[]}
 */
function misses (r, expected, arm) {
  const progress = JSON.stringify(r.filmstrip?.progress ?? r.details?.filmstrip?.progress)
  return VISUAL_COLUMNS.flatMap((c) => {
    const want = /** @type {number} */ (expected[c])
    if (typeof r[c] !== 'number') return [`${arm} ${c} not measured`]
    return Math.abs(r[c] - want) <= want * 0.1 + FRAME_STEP_MS ? [] : [`${arm} ${c}: ${r[c]} ms, by hand ${want} ms (±10 % and one frame); progress ${progress}`]
  })
}

/**
 * Measure with `load` until its results' visual metrics match the hand-computed
 * ones, at most three times. The hand-computed times assume the page's timers
 * fire on time: on a machine busy with the rest of the suite a paint can come
 * late (a first change by hand at 700 ms was once seen at 905 ms, in one full
 * run of ten, and machines since have had slower cores). So a load that
 * misses is reported and measured again; a fault of the measurement misses in
 * every load and fails.
 * @template T
 * @param {import('node:test').TestContext} t
 * @param {() => Promise<{ value: T, results: Record<string, any>[] }>} load
 * @returns {Promise<T>}
 */
async function matchingHandComputed (t, load) {
  const expected = handPaintedMetrics(PAINT_STEPS.steps)
  /** @type {string[]} */
  let missed = []
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const { value, results } = await load()
    missed = results.flatMap((r) => misses(r, expected, r.mode))
    if (!missed.length) return value
    t.diagnostic(`load ${attempt} missed the hand-computed metrics: ${missed.join('; ')}`)
  }
  assert.fail(`all ${ATTEMPTS} loads missed the hand-computed metrics; the last: ${missed.join('; ')}`)
}

test('the page that paints in known steps gives the hand-computed visual metrics within 10 % and one frame, over H2 and over H3', async (t) => {
  const expected = handPaintedMetrics(PAINT_STEPS.steps)
  // 700·1 + 700·0.6 + 700·0.3 + 700·0.1: the area above the progress curve.
  assert.equal(Math.round(expected.speed_index_ms), 1400)
  assert.equal(expected.visually_complete_85_ms, 2100)
  const extraFlags = labBrowserFlags({ spki: origin.spki, hostname: origin.hostname, address: origin.address })
  for (const mode of /** @type {const} */ (['h2', 'h3'])) {
    const r = await matchingHandComputed(t, async () => {
      const [r] = await measurePageViews({ pool, url: paintUrl(), mode, extraFlags, lab: true, filmstrip: true })
      assert.equal(r.status, 'ok', r.error)
      assert.equal(r.observed_protocol, mode, `${mode} arm loaded over ${r.observed_protocol}`)
      return { value: r, results: [r] }
    })
    // Frames at most one per 100 ms; the last shows the page complete.
    const times = r.filmstrip.frames.map((/** @type {any} */ f) => f.t_ms)
    assert.ok(times.length >= PAINT_STEPS.steps.length, `${mode}: ${times.length} frames`)
    for (let i = 1; i < times.length; i++) assert.ok(Math.floor(times[i] / FRAME_STEP_MS) > Math.floor(times[i - 1] / FRAME_STEP_MS), `${mode}: frames ${times[i - 1]} and ${times[i]} in one 100 ms step`)
    assert.equal(r.filmstrip.progress.at(-1).progress, 100)
  }
})

test('options.filmstrip = always: frames of a separate load of each arm are stored under the cap, served, exported as URLs, removed by retention; the import takes runs without frames', async (tc) => {
  const t = await createTestApp({ H3LENS_LAB_PORT: String(origin.port) })
  try {
    const port = await freePort()
    await t.app.listen({ port, host: '127.0.0.1' })
    const token = await t.agentToken('local')
    const runJob = createJobRunner({
      pool, lab: { spki: origin.spki, address: '127.0.0.1', port: origin.port }, timeoutMs: 15_000, log: createLogger({ logLevel: 'silent' }),
      uploadFilmstrip: createFilmstripUploader({ apiUrl: `http://127.0.0.1:${port}`, token })
    })
    // An option it does not know is refused, naming it.
    const bad = await t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload: { url: paintUrl(), locations: ['local'], options: { filmstrip: 'sometimes' } } })
    assert.equal(bad.statusCode, 400)
    assert.match(bad.json().field, /filmstrip/)

    // A monitor's round, run by the agent's job runner and stored: a second
    // monitor's if the first one's paints came late (matchingHandComputed).
    const { monitor, items } = await matchingHandComputed(tc, async () => {
      const created = await t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload: { url: paintUrl(), locations: ['local'], modes: ['h2', 'h3'], interval_s: 60, options: { filmstrip: 'always', netlog: 'off' } } })
      assert.equal(created.statusCode, 201, created.body)
      const monitor = created.json()
      await t.db.query(`INSERT INTO jobs (monitor_id, location_id, due_at) VALUES ($1, 'local', date_trunc('minute', now()) - interval '1 minute')`, [monitor.id])
      const claim = (await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', payload: { limit: 1 }, headers: { authorization: `Bearer ${token}` } })).json()
      assert.equal(claim.jobs.length, 1)
      const results = await runJob(claim.jobs[0], { location: claim.location, allowPrivateTargets: claim.allow_private_targets })
      const stored = await t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${claim.jobs[0].id}/results`, payload: { agent_version: 'test', results }, headers: { authorization: `Bearer ${token}` } })
      assert.equal(stored.statusCode, 200, stored.body)
      const { items } = (await t.app.inject({ url: `/api/v1/monitors/${monitor.id}/results?limit=10` })).json()
      assert.equal(items.length, 2)
      for (const r of items) assert.equal(r.status, 'ok', r.error)
      return { value: { monitor, items }, results: items }
    })
    for (const r of items) {
      const detail = (await t.app.inject({ url: `/api/v1/results/${r.id}` })).json()
      assert.equal(detail.details.filmstrip.kind, 'capture')
      assert.equal(detail.details.filmstrip.uploaded, true, detail.details.filmstrip.error)
      assert.ok(detail.details.filmstrip.bytes <= FILMSTRIP_MAX_BYTES)
      const film = await t.app.inject({ url: `/api/v1/results/${r.id}/filmstrip` })
      assert.equal(film.statusCode, 200, film.body)
      const { frames, progress } = film.json()
      assert.ok(frames.length >= PAINT_STEPS.steps.length && frames.reduce((/** @type {number} */ s, /** @type {any} */ f) => s + f.bytes, 0) <= FILMSTRIP_MAX_BYTES)
      assert.equal(progress.at(-1).progress, 100)
      const jpeg = await t.app.inject({ url: frames.at(-1).url })
      assert.equal(jpeg.headers['content-type'], 'image/jpeg')
      assert.deepEqual([...jpeg.rawPayload.subarray(0, 2)], [0xff, 0xd8])
    }

    // The export names each result's frames.
    const exported = (await t.app.inject({ url: `/api/v1/results?monitor=${monitor.id}&format=ndjson` })).body.trim().split('\n').map((l) => JSON.parse(l))
    for (const row of exported) assert.equal(row.filmstrip_url, `/api/v1/results/${row.id}/filmstrip`)

    // Retention: frames older than their own retention go, the results stay.
    await t.db.query("UPDATE filmstrip_frames SET created_at = now() - interval '31 days'")
    assert.ok(await pruneFilmstrips(t.db, { retentionDays: 30 }) >= 2 * PAINT_STEPS.steps.length)
    for (const r of items) {
      const gone = await t.app.inject({ url: `/api/v1/results/${r.id}/filmstrip` })
      assert.equal(gone.statusCode, 404)
      assert.match(gone.json().message, /no filmstrip for result .*H3LENS_FILMSTRIP_RETENTION_DAYS/)
      assert.equal((await t.app.inject({ url: `/api/v1/results/${r.id}` })).json().speed_index_ms, r.speed_index_ms)
    }

    // The import takes exported runs (their filmstrip_url ignored), without frames.
    const other = (await t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload: { url: paintUrl(), locations: ['local'], modes: ['h2', 'h3'], interval_s: 60, options: { filmstrip: 'off' } } })).json()
    const imported = await t.app.inject({ method: 'POST', url: `/api/v1/monitors/${other.id}/results/import`, headers: { 'content-type': 'application/x-ndjson' }, payload: exported.map((r) => JSON.stringify(r)).join('\n') })
    assert.equal(imported.statusCode, 200, imported.body)
    assert.equal(imported.json().imported, 2)
    const copies = (await t.app.inject({ url: `/api/v1/monitors/${other.id}/results?limit=10` })).json().items
    for (const r of copies) {
      assert.ok(r.speed_index_ms > 0)
      assert.equal((await t.app.inject({ url: `/api/v1/results/${r.id}/filmstrip` })).statusCode, 404)
    }
  } finally {
    await t.close()
  }
})

test('options.filmstrip = outliers: only an outlier\'s arm loads again with capture; its frames are the outlier\'s filmstrip (kind rerun) and the timed result keeps no visual metrics', async () => {
  /** @type {{ jobId: number, f: any }[]} */
  const uploads = []
  const runJob = createJobRunner({
    pool, lab: { spki: origin.spki, address: '127.0.0.1', port: origin.port }, timeoutMs: 15_000, log: createLogger({ logLevel: 'silent' }),
    uploadFilmstrip: async (jobId, f) => { uploads.push({ jobId, f }); return { stored: true } }
  })
  // Every H3 load is above this p99, no H2 load is.
  const results = await runJob({ id: 42, url: paintUrl(), modes: ['h2', 'h3'], options: { filmstrip: 'outliers', netlog: 'off' }, netlog_thresholds: { 'page/h3': 1, 'page/h2': 1e6 } }, {})
  const [h2, h3] = ['h2', 'h3'].map((mode) => /** @type {Record<string, any>} */ (results.find((r) => r.mode === mode)))
  assert.equal(h2.details.filmstrip, undefined)
  assert.equal(h3.details.filmstrip.kind, 'rerun')
  assert.match(h3.details.filmstrip.reason, /load_ms .* above the p99 of recent runs \(1\)/)
  assert.equal(h3.details.filmstrip.uploaded, true)
  assert.equal(h3.details.filmstrip.rerun.status, 'ok')
  assert.deepEqual(uploads.map((u) => [u.jobId, u.f.mode, u.f.view, u.f.probe]), [[42, 'h3', 'first', 'page']])
  assert.equal(uploads[0].f.frames.length, h3.details.filmstrip.frames)
  // The timed loads were not filmed: no visual metrics in their columns.
  for (const r of [h2, h3]) assert.equal(r.speed_index_ms ?? null, null)
})
