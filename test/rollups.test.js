// Rollups and the reading endpoints over real PostgreSQL: accuracy against
// exact SQL, idempotence, rebuild, and the comparison/trends contracts.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { parse } from 'csv-parse/sync'
import { createTestApp } from './helpers/app.js'
import { createMonitor } from '../lib/store/monitors.js'
import { upsertLocation } from '../lib/store/locations.js'
import { foldAllPending, rebuildRollups, mergedSeries, coverWindow } from '../lib/analysis/rollups.js'
import { sketchQuantile } from '../lib/analysis/stats/index.js'

let t
before(async () => {
  t = await createTestApp()
  await upsertLocation(t.db, { id: 'lab-eu', name: 'Europe (emulated)', region: 'Europe', kind: 'lab', profile: { rtt_ms: 60 } })
})
after(async () => { await t.close() })

const auth = (token) => ({ authorization: `Bearer ${token}` })
const HOUR = 3600e3

/**
 * n rounds in the past, one job each, results inserted as an agent would.
 * @param {number} monitorId @param {string} location @param {number} rounds
 * @param {(mode: string, i: number) => number} valueOf
 * @param {{ status?: (mode: string, i: number) => string }} [opts]
 */
async function seedRounds (monitorId, location, rounds, valueOf, { status = () => 'ok' } = {}) {
  const { rows: jobs } = await t.db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at, state) SELECT $1, $2, now() - make_interval(secs => g * 60), 'done'
       FROM generate_series(1, $3) g RETURNING id, due_at`, [monitorId, location, rounds])
  const values = []
  const params = []
  jobs.forEach((j, i) => {
    for (const mode of ['h2', 'h3']) {
      const v = valueOf(mode, i)
      const s = status(mode, i)
      params.push(j.id, monitorId, location, j.due_at, mode, s, s !== 'protocol_mismatch', v, v * 2)
      const b = params.length - 9
      values.push(`($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, 'first', 'page', $${b + 6}, $${b + 7}, $${b + 8}, $${b + 9})`)
    }
  })
  for (let i = 0; i < values.length; i += 5000) {
    const chunk = values.slice(i, i + 5000)
    const first = i * 9
    await t.db.query(
      `WITH ins AS (INSERT INTO results (job_id, monitor_id, location_id, time, mode, view, probe, status, protocol_ok, ttfb_ms, load_ms)
         VALUES ${chunk.join(', ').replace(/\$(\d+)/g, (_, n) => `$${Number(n) - first}`)} RETURNING id)
       INSERT INTO rollup_pending SELECT id FROM ins`, params.slice(first, first + chunk.length * 9))
  }
}

test('coverWindow uses whole days, then hours, then five-minute buckets', () => {
  const d = Date.UTC(2026, 0, 10)
  const ranges = coverWindow(d - 10 * 60e3, d + 2 * 86400e3 + 65 * 60e3)
  assert.deepEqual(ranges.map((r) => r.tier), ['1d', '5m', '1h', '5m'])
  assert.equal(ranges.reduce((s, r) => s + (r.to - r.from), 0), 2 * 86400e3 + 75 * 60e3)
})

test('percentiles from rollups are within 1% of exact percentile_cont on 100k heavy-tailed rows', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/heavy', locations: ['local'], interval_s: 60 }, { allowPrivateTargets: true })
  await t.db.query('SELECT setseed(0.42)')
  const { rows: jobs } = await t.db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at, state)
     SELECT $1, 'local', now() - make_interval(secs => g * 30), 'done' FROM generate_series(1, 50000) g RETURNING id`, [m.id])
  // Lognormal body (median 120 ms) with a Pareto tail on 5% of rows.
  await t.db.query(
    `WITH ins AS (
       INSERT INTO results (job_id, monitor_id, location_id, time, mode, status, protocol_ok, ttfb_ms)
       SELECT j.id, $1, 'local', j.due_at, mode, 'ok', true,
              CASE WHEN random() < 0.05 THEN 400 / power(random(), 1 / 1.5)
                   ELSE exp(ln(120) + 0.6 * sqrt(-2 * ln(random())) * cos(2 * pi() * random())) END
         FROM jobs j CROSS JOIN unnest('{h2,h3}'::text[]) mode WHERE j.id = ANY($2)
       RETURNING id)
     INSERT INTO rollup_pending SELECT id FROM ins`, [m.id, jobs.map((j) => j.id)])
  while (await foldAllPending(t.db, { budgetMs: 60000 }));
  const from = new Date(Date.now() - 30 * 86400e3)
  const to = new Date(Date.now() + 300e3)
  const series = await mergedSeries(t.db, { monitorId: m.id, metric: 'ttfb', probe: 'page', view: 'first', from, to })
  for (const mode of ['h2', 'h3']) {
    const s = series.get(`local|${mode}`)
    assert.ok(s)
    assert.equal(s.count, 50000)
    for (const q of [0.25, 0.5, 0.75, 0.9, 0.95, 0.99]) {
      const { rows } = await t.db.query(
        'SELECT percentile_cont($3) WITHIN GROUP (ORDER BY ttfb_ms) AS v FROM results WHERE monitor_id = $1 AND mode = $2', [m.id, mode, q])
      const exact = rows[0].v
      const approx = sketchQuantile(s.sketch, q)
      assert.ok(approx !== null && Math.abs(approx - exact) / exact <= 0.01, `${mode} q${q}: sketch ${approx} vs exact ${exact}`)
    }
  }
})

test('a resubmitted result leaves the rollups unchanged, and a rebuild equals the incremental rollups', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/idem', locations: ['local'], interval_s: 60 }, { allowPrivateTargets: true })
  await t.db.query(`INSERT INTO jobs (monitor_id, location_id, due_at) VALUES ($1, 'local', now() - interval '1 minute')`, [m.id])
  const token = await t.agentToken('local')
  const [job] = (await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: auth(token), payload: {} })).json().jobs
  const payload = { results: [
    { mode: 'h2', status: 'ok', protocol_ok: true, observed_protocol: 'h2', ttfb_ms: 50, load_ms: 90 },
    { mode: 'h3', status: 'ok', protocol_ok: true, observed_protocol: 'h3', ttfb_ms: 40, load_ms: 80 }
  ] }
  const snapshot = async () => (await t.db.query(
    `SELECT tier, bucket, mode, runs, errors, fallbacks, encode(ttfb, 'hex') AS ttfb, encode(load, 'hex') AS load FROM rollups
      WHERE monitor_id = $1 ORDER BY tier, bucket, mode`, [m.id])).rows
  await t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${job.id}/results`, headers: auth(token), payload })
  await foldAllPending(t.db)
  const once = await snapshot()
  assert.ok(once.length > 0)
  assert.equal(once.filter((r) => r.tier === '5m' && r.mode === 'h2').reduce((n, r) => n + r.runs, 0), 1)
  const again = await t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${job.id}/results`, headers: auth(token), payload })
  assert.deepEqual(again.json(), { stored: 0, duplicates: 2 })
  await foldAllPending(t.db)
  assert.deepEqual(await snapshot(), once)

  await seedRounds(m.id, 'local', 30, (mode, i) => 100 + i + (mode === 'h3' ? -10 : 0), { status: (mode, i) => (i === 3 ? 'error' : 'ok') })
  await foldAllPending(t.db)
  const incremental = await snapshot()
  await rebuildRollups(t.db, { monitorId: m.id })
  assert.deepEqual(await snapshot(), incremental)
})

test('the comparison endpoint: verdicts, intervals, counts, rates and the all-locations entry', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/cmp', locations: ['local', 'lab-eu'], interval_s: 60 }, { allowPrivateTargets: true })
  // local: H3 is exactly 20 ms faster on every round → the interval is [-20, -20].
  await seedRounds(m.id, 'local', 40, (mode) => (mode === 'h2' ? 100 : 80))
  // lab-eu: identical spread in both modes → no significant difference; one fallback on h3.
  await seedRounds(m.id, 'lab-eu', 40, (mode, i) => 200 + (i % 10) * 5, { status: (mode, i) => (mode === 'h3' && i === 0 ? 'protocol_mismatch' : 'ok') })
  // Half the data not yet folded: answers must already include it.
  await foldAllPending(t.db)
  await seedRounds(m.id, 'local', 4, (mode) => (mode === 'h2' ? 100 : 80))

  const res = await t.app.inject({ url: `/api/v1/monitors/${m.id}/comparison?metric=ttfb&percentiles=50,95` })
  assert.equal(res.statusCode, 200, res.body)
  const body = res.json()
  assert.deepEqual(body.percentiles, [50, 95])
  const local = body.locations.find((l) => l.location_id === 'local')
  assert.equal(local.n_h2, 44)
  assert.equal(local.n_h3, 44)
  const [p50, p95] = local.rows
  for (const row of local.rows) {
    assert.equal(row.h2_ms, 100, JSON.stringify(row))
    assert.equal(row.h3_ms, 80)
    assert.equal(row.delta_ms, -20)
    assert.equal(row.delta_pct, -20)
    assert.equal(row.rounds, 44, 'every round of the window, pending rollups or not')
  }
  assert.equal(p50.ci_low_ms, -20)
  assert.equal(p50.ci_high_ms, -20)
  assert.equal(p50.verdict, 'h3_faster')
  // The tail needs more rounds than 44 before it is tested.
  assert.equal(p95.verdict, 'insufficient_data')
  assert.equal(p95.ci_low_ms, null)
  assert.match(p95.reason, /p95 needs at least 200 rounds; have 44/)
  assert.equal(local.verdict, 'h3_faster')
  assert.equal(local.paired.hodges_lehmann_ms, -20)
  assert.equal(local.rounds.matched, 44)
  assert.ok(local.mann_whitney_p < 1e-6)
  assert.equal(local.cliffs_delta, -1)

  const eu = body.locations.find((l) => l.location_id === 'lab-eu')
  assert.equal(eu.rtt_ms, 60)
  assert.equal(eu.runs.h3.fallbacks, 1)
  assert.equal(eu.fallback_rate.h3, 1 / 40)
  assert.equal(eu.n_h3, 39, 'a fallback run is never averaged in')
  assert.equal(eu.n_h2, 39, 'and its round leaves the matched set on both sides')
  assert.deepEqual(eu.rounds.excluded, [{ h2: 'ok', h3: 'fallback', rounds: 1 }])
  assert.equal(eu.rows[0].verdict, 'no_clear_difference', JSON.stringify(eu.rows[0]))

  const all = body.locations.find((l) => l.location_id === null)
  assert.equal(all.name, 'All locations')
  assert.equal(all.n_h2, 83)
  assert.equal(all.stratified, true)
  // Equal weights: the mean of the two locations' deltas, not a pool.
  assert.ok(Math.abs(all.rows[0].delta_ms - (local.rows[0].delta_ms + eu.rows[0].delta_ms) / 2) < 1e-9)
})

test('too few samples say insufficient_data with the counts instead of numbers', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/few', locations: ['local'], interval_s: 60 }, { allowPrivateTargets: true })
  await seedRounds(m.id, 'local', 3, () => 100)
  const body = (await t.app.inject({ url: `/api/v1/monitors/${m.id}/comparison` })).json()
  const local = body.locations.find((l) => l.location_id === 'local')
  assert.equal(local.insufficient_data, true)
  assert.match(local.reason, /at least 10 rounds in which both arms loaded .* have 3/)
  assert.ok(local.rows.every((r) => r.h2_ms === 100 && r.ci_low_ms === null && r.verdict === 'insufficient_data'))
})

test('rounds whose arms loaded without the metric\'s value are not called failed: the reason says the metric has none', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/no-lcp', locations: ['local'], interval_s: 60 }, { allowPrivateTargets: true })
  await seedRounds(m.id, 'local', 3, () => 100)
  const local = (await t.app.inject({ url: `/api/v1/monitors/${m.id}/comparison?metric=lcp_ms` })).json().locations.find((l) => l.location_id === 'local')
  assert.equal(local.reason, 'both arms loaded in 3 rounds, but without a value of this metric in both (of 3 in the window)')
})

test('trends give percentiles per bucket as JSON and as CSV that round-trips', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/trend', locations: ['local'], interval_s: 60 }, { allowPrivateTargets: true })
  await seedRounds(m.id, 'local', 120, (mode, i) => (mode === 'h2' ? 100 : 90) + (i % 7))
  await foldAllPending(t.db)
  const from = new Date(Date.now() - 3 * HOUR).toISOString()
  const json = (await t.app.inject({ url: `/api/v1/monitors/${m.id}/trends?bucket=1h&from=${from}&percentiles=50,95` })).json()
  const h2 = json.series.find((s) => s.mode === 'h2' && s.location_id === 'local')
  assert.ok(h2.points.length >= 2 && h2.points.length <= 4)
  assert.equal(h2.points.reduce((n, p) => n + p.count, 0), 120)
  assert.ok(h2.points.every((p) => p.p50 >= 100 && p.p50 <= 107 && p.p95 >= p.p50))

  const res = await t.app.inject({ url: `/api/v1/monitors/${m.id}/trends?bucket=1h&from=${from}&percentiles=50,95&format=csv` })
  assert.match(res.headers['content-type'], /text\/csv/)
  const rows = parse(res.body, { columns: true, cast: true })
  assert.deepEqual(Object.keys(rows[0]), ['bucket_start', 'location_id', 'mode', 'metric', 'count', 'runs', 'errors', 'fallbacks', 'p50_ms', 'p95_ms'])
  assert.equal(rows.filter((r) => r.mode === 'h3').reduce((n, r) => n + r.count, 0), 120)
  assert.deepEqual(rows.filter((r) => r.mode === 'h2').map((r) => r.p50_ms), h2.points.map((p) => p.p50))

  const dist = (await t.app.inject({ url: `/api/v1/monitors/${m.id}/distribution?from=${from}` })).json()
  const d = dist.series.find((s) => s.mode === 'h3')
  assert.equal(d.points.length, 101)
  assert.ok(d.points.every((p, i) => i === 0 || p.ms >= d.points[i - 1].ms), 'a CDF never decreases')
})

test('trends cover exactly the window: a bucket the window cuts holds only what lies in the window, in day, hour and five-minute buckets', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/trend-window', locations: ['local'], interval_s: 60 }, { allowPrivateTargets: true })
  await seedRounds(m.id, 'local', 180, (mode, i) => (mode === 'h2' ? 100 : 90) + (i % 7))
  // Half of them folded into rollups, half still pending: both are read alike.
  await foldAllPending(t.db)
  await seedRounds(m.id, 'local', 30, (mode, i) => (mode === 'h2' ? 100 : 90) + (i % 5))
  const FIVE = 5 * 60e3
  const to = Math.floor(Date.now() / FIVE) * FIVE
  const from = to - 95 * 60e3
  const { rows: [{ n }] } = await t.db.query("SELECT count(*)::int AS n FROM results WHERE monitor_id = $1 AND mode = 'h2' AND time >= $2 AND time < $3", [m.id, new Date(from), new Date(to)])
  assert.ok(n > 60 && n < 180, `${n} rounds in the window, fewer than stored`)
  for (const bucket of ['1d', '1h', '5m']) {
    const q = new URLSearchParams({ bucket, from: new Date(from).toISOString(), to: new Date(to).toISOString(), percentiles: '50' })
    const json = (await t.app.inject({ url: `/api/v1/monitors/${m.id}/trends?${q}` })).json()
    const h2 = json.series.find((s) => s.mode === 'h2')
    assert.equal(h2.points.reduce((sum, p) => sum + p.count, 0), n, `${bucket}: every round of the window and none outside it`)
    assert.ok(h2.points.every((p) => +new Date(p.t) >= from && +new Date(p.t) < to), `${bucket}: every point inside the window`)
    assert.equal(h2.points[0].t, new Date(from).toISOString(), `${bucket}: the first point starts with the window`)
  }
})

test('bad comparison and trend queries get a 400 that says what to change and names the field', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/bad', locations: ['local'], interval_s: 60 }, { allowPrivateTargets: true })
  /** @type {[string, RegExp, string][]} */
  const cases = [
    [`/api/v1/monitors/${m.id}/comparison?metric=speed`, /metric must be one of ttfb_ms, load_ms, fcp_ms, lcp_ms, connect_ms/, 'metric'],
    [`/api/v1/monitors/${m.id}/comparison?percentiles=50,101`, /"101" is not a percentile/, 'percentiles'],
    [`/api/v1/monitors/${m.id}/comparison?percentiles=median`, /"median" is not a percentile/, 'percentiles'],
    [`/api/v1/monitors/${m.id}/comparison?percentiles=,`, /percentiles is empty/, 'percentiles'],
    [`/api/v1/monitors/${m.id}/trends?percentiles=${Array.from({ length: 21 }, (_, i) => i + 1).join(',')}`, /at most 20 percentiles/, 'percentiles'],
    [`/api/v1/monitors/${m.id}/comparison?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z`, /from must not be after to/, 'from'],
    [`/api/v1/monitors/${m.id}/distribution?from=2024-01-01T00:00:00Z&to=2026-01-01T00:00:00Z`, /the window is longer than 400 days/, 'from'],
    [`/api/v1/monitors/${m.id}/results?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z`, /from must not be after to/, 'from'],
    [`/api/v1/monitors/${m.id}/side-by-side?location=local&percentile=95&from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z`, /from must not be after to/, 'from'],
    [`/api/v1/monitors/${m.id}/trends?bucket=2m`, /bucket must be one of 5m, 1h, 1d/, 'bucket'],
    [`/api/v1/monitors/${m.id}/trends?bucket=5m&from=2025-01-01T00:00:00Z&to=2025-12-01T00:00:00Z`, /too many .* use a wider bucket/, 'bucket'],
    [`/api/v1/monitors/${m.id}/trends?format=xml`, /format must be one of json, csv/, 'format']
  ]
  for (const [url, message, field] of cases) {
    const res = await t.app.inject({ url })
    assert.equal(res.statusCode, 400, `${url}: ${res.body}`)
    assert.match(res.json().message, message, url)
    assert.equal(res.json().field, field, url)
  }
  assert.equal((await t.app.inject({ url: '/api/v1/monitors/99999/comparison' })).statusCode, 404)
  // A window of no length is one rule in every view: answered, and empty.
  const instant = 'from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:00Z'
  for (const view of ['comparison', 'results', 'side-by-side?location=local&percentile=95']) {
    const empty = await t.app.inject({ url: `/api/v1/monitors/${m.id}/${view}${view.includes('?') ? '&' : '?'}${instant}` })
    assert.equal(empty.statusCode, 200, `${view}: ${empty.body}`)
  }
  assert.equal((await t.app.inject({ url: `/api/v1/monitors/${m.id}/side-by-side?location=local&percentile=95&${instant}` })).json().rounds, 0)
  // A window at the end of year 9999 is echoed as a time a client can send back.
  for (const view of ['comparison', 'trends', 'distribution']) {
    const end = await t.app.inject({ url: `/api/v1/monitors/${m.id}/${view}?from=9999-12-31T23:00:00Z&to=9999-12-31T23:59:59Z` })
    assert.equal(end.statusCode, 200, end.body)
    assert.equal(end.json().to, '9999-12-31T23:59:59.999Z', view)
    // And one at its start: the default day before `to` stops at 0001-01-01.
    const start = await t.app.inject({ url: `/api/v1/monitors/${m.id}/${view}?to=0001-01-01T12:00:00Z` })
    assert.equal(start.statusCode, 200, start.body)
    assert.equal(start.json().from, '0001-01-01T00:00:00.000Z', view)
  }
})
