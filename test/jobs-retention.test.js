// Jobs retention against real PostgreSQL: the scheduler deletes finished jobs
// past H3LENS_JOBS_RETENTION_DAYS, and nothing a user sees changes.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from './helpers/app.js'
import { createScheduler } from '../scheduler/scheduler.js'
import { createMonitor, deleteMonitor } from '../lib/store/monitors.js'
import { pruneFinishedJobs } from '../lib/store/jobs.js'

// Recent enough for the default 24 h comparison window.
const BASE = Math.floor((Date.now() - 6 * 3600e3) / 60e3) * 60e3
const at = (i) => new Date(BASE + i * 60e3).toISOString()
const WINDOW = new URLSearchParams({ from: at(-60), to: new Date(Math.ceil(Date.now() / 3600e3) * 3600e3 + 3600e3).toISOString() }).toString()

let t
before(async () => { t = await createTestApp({ H3LENS_JOBS_RETENTION_DAYS: '7' }) })
after(async () => { await t.close() })

const tick = () => createScheduler({ db: t.db, config: t.config, log: t.log }).tick()
const jobsOf = async (monitorId) => (await t.db.query('SELECT id, state FROM jobs WHERE monitor_id = $1 ORDER BY id', [monitorId])).rows
const ndjson = (rows) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n'

function rounds (n) {
  const rows = []
  for (let i = 0; i < n; i++) {
    rows.push({ time: at(i), location_id: 'local', mode: 'h2', ttfb_ms: 100 + (i % 17), load_ms: 300 + (i % 23) })
    rows.push({ time: at(i), location_id: 'local', mode: 'h3', ttfb_ms: 90 + (i % 19), load_ms: 280 + (i % 29) })
  }
  return ndjson(rows)
}

const importInto = (monitorId, body) => t.app.inject({
  method: 'POST', url: `/api/v1/monitors/${monitorId}/results/import`, headers: { 'content-type': 'application/x-ndjson' }, payload: body
})

/** What a user reads about a monitor: its results, comparison and trends. */
async function userView (monitorId) {
  // no-cache: each view reads the database, not the comparison kept from the one before.
  const read = async (url) => {
    const res = await t.app.inject({ url, headers: { 'cache-control': 'no-cache' } })
    assert.equal(res.statusCode, 200, res.body)
    return res.json()
  }
  // One window for both reads: the default one ends now, rounded up to 5
  // minutes, and a 5-minute mark between the two reads would move it.
  const results = await read(`/api/v1/monitors/${monitorId}/results?limit=1000`)
  const comparison = await read(`/api/v1/monitors/${monitorId}/comparison?${WINDOW}`)
  delete comparison.computed_at
  const trends = await read(`/api/v1/monitors/${monitorId}/trends?bucket=1h&percentiles=50&${WINDOW}`)
  return { results, comparison, trends }
}

test('finished jobs past retention are deleted; results, comparison and trends are unchanged, and a re-import stores nothing twice', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/', interval_s: 60, locations: ['local'], paused: true }, { allowPrivateTargets: true })
  const body = rounds(40)
  assert.equal((await importInto(m.id, body)).json().imported, 80)
  // Ten of the rounds failed, five were cancelled: all finished 8 days ago.
  await t.db.query("UPDATE jobs SET finished_at = now() - interval '8 days' WHERE monitor_id = $1", [m.id])
  await t.db.query(`UPDATE jobs SET state = 'failed', last_error = 'timed out' WHERE id IN (
    SELECT id FROM jobs WHERE monitor_id = $1 ORDER BY id LIMIT 10)`, [m.id])
  await t.db.query(`UPDATE jobs SET state = 'cancelled' WHERE id IN (
    SELECT id FROM jobs WHERE monitor_id = $1 AND state = 'done' ORDER BY id LIMIT 5)`, [m.id])
  const before = await userView(m.id)
  assert.equal(before.results.items.length, 80)

  const { pruned } = await tick()
  assert.ok(pruned >= 40, `pruned ${pruned}`)
  assert.deepEqual(await jobsOf(m.id), [])
  assert.deepEqual(await userView(m.id), before, 'the results, comparison and trends read exactly as before')

  const again = await importInto(m.id, body)
  assert.equal(again.statusCode, 200, again.body)
  assert.deepEqual(again.json(), { imported: 0, skipped_existing: 80, rounds: 40, added_locations: [] })
  assert.deepEqual(await jobsOf(m.id), [], 'the re-import files its rounds under their old job ids')
})

test('live jobs, recently finished jobs and a monitor\'s current round are kept', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/', interval_s: 60, locations: ['local'], paused: true }, { allowPrivateTargets: true })
  const { rows: old } = await t.db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at, state, finished_at) VALUES
       ($1, 'local', now() - interval '9 days', 'queued', NULL),
       ($1, 'local', now() - interval '9 days 1 minute', 'leased', NULL),
       ($1, 'local', now() - interval '2 days', 'done', now() - interval '2 days')
     RETURNING id`, [m.id])
  // A daily monitor whose current round finished 9 days ago under a
  // retention of 1 day: deleting it would let the scheduler create it again.
  const daily = await createMonitor(t.db, { url: 'https://example.com/daily', interval_s: 86400, locations: ['local'] }, { allowPrivateTargets: true })
  await t.db.query("UPDATE monitors SET interval_s = 30 * 86400, anchor_at = now() - interval '9 days' WHERE id = $1", [daily.id])
  await t.db.query(`INSERT INTO jobs (monitor_id, location_id, due_at, state, finished_at)
    SELECT id, 'local', anchor_at, 'done', anchor_at FROM monitors WHERE id = $1`, [daily.id])

  await pruneFinishedJobs(t.db, { retentionDays: 1 })
  assert.deepEqual((await jobsOf(m.id)).map((j) => j.id), old.map((j) => j.id).filter((_, i) => i < 2), 'the 2-day-old done job went at 1 day; queued and leased stay')
  await pruneFinishedJobs(t.db, { retentionDays: 7 })
  assert.equal((await jobsOf(m.id)).length, 2)
  assert.equal((await jobsOf(daily.id)).length, 1, 'the current round stays')
  await tick()
  assert.equal((await jobsOf(daily.id)).length, 1, 'and is not created again')
})

test('a deleted monitor\'s cancelled rounds finish, and are pruned with their WebPageTest tests', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/', interval_s: 60, locations: ['local'] }, { allowPrivateTargets: true })
  const { rows: [job] } = await t.db.query(
    "INSERT INTO jobs (monitor_id, location_id, due_at) VALUES ($1, 'local', now() - interval '8 days') RETURNING id", [m.id])
  const { rows: [agent] } = await t.db.query("INSERT INTO agents (location_id, name, kind) VALUES ('local', 'wpt-pc', 'wpt') RETURNING id")
  await t.db.query(`INSERT INTO wpt_tests (test_id, job_id, attempt, mode, position, location_id, agent_id, repeat_view, state)
    VALUES ('t-retention', $1, 1, 'h2', 0, 'local', $2, false, 'dropped')`, [job.id, agent.id])
  await t.db.query(`INSERT INTO wpt_runs (test_id, run, cached, result) VALUES ('t-retention', 1, false, '{}')`)

  await deleteMonitor(t.db, m.id)
  const { rows: [cancelled] } = await t.db.query('SELECT state, finished_at FROM jobs WHERE id = $1', [job.id])
  assert.equal(cancelled.state, 'cancelled')
  assert.ok(cancelled.finished_at, 'a cancelled round has a finish time, so retention applies to it')

  await t.db.query("UPDATE jobs SET finished_at = now() - interval '8 days' WHERE id = $1", [job.id])
  assert.equal(await pruneFinishedJobs(t.db, { retentionDays: 7 }), 1)
  const { rows } = await t.db.query("SELECT (SELECT count(*) FROM wpt_tests WHERE test_id = 't-retention')::int AS tests, (SELECT count(*) FROM wpt_runs WHERE test_id = 't-retention')::int AS runs")
  assert.deepEqual(rows[0], { tests: 0, runs: 0 })
})

test('a backlog is pruned in bounded batches, oldest first', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/', interval_s: 60, locations: ['local'] }, { allowPrivateTargets: true })
  await t.db.query(`INSERT INTO jobs (monitor_id, location_id, due_at, state, finished_at)
    SELECT $1, 'local', now() - make_interval(days => 10, mins => g), 'done', now() - make_interval(days => 10, mins => g)
      FROM generate_series(1, 2500) g`, [m.id])
  assert.equal(await pruneFinishedJobs(t.db, { retentionDays: 7, batch: 1000 }), 1000)
  const { rows: [left] } = await t.db.query(
    `SELECT count(*)::int AS n, min(finished_at) > now() - interval '10 days 1501 minutes' AS oldest_went
       FROM jobs WHERE monitor_id = $1`, [m.id])
  assert.deepEqual(left, { n: 1500, oldest_went: true }, 'the 1,000 oldest went first')
  const { pruned } = await tick()
  assert.equal(pruned, 1500)
})
