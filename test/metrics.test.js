// /metrics against real PostgreSQL: what a Prometheus server scraping h3lens
// would see after jobs, agents and results exist.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { createTestApp } from './helpers/app.js'
import { createMonitor } from '../lib/store/monitors.js'
import { upsertLocation } from '../lib/store/locations.js'
import { insertResults } from '../lib/store/results.js'
import { createAgentToken, touchAgent, revokeAgent } from '../lib/store/agents.js'
import { scheduleDueJobs, COUNT_JOBS_SQL } from '../lib/store/jobs.js'
import { createPool } from '../lib/runtime/db.js'
import { createMetrics } from '../api/prometheus.js'

// Loaded through require: the package ships no types, and an import would
// make the type check (jsconfig follows JS into node_modules) check its
// transpiled source.
const parsePrometheusTextFormat = createRequire(import.meta.url)('parse-prometheus-text-format')

let t
let monitor
before(async () => {
  t = await createTestApp()
  for (const id of ['lab-eu', 'lab-asia']) await upsertLocation(t.db, { id, name: id, region: id, kind: 'lab' })
  monitor = await createMonitor(t.db, { url: 'https://example.com/?utm=1', interval_s: 60, locations: ['local', 'lab-eu'], paused: true }, { allowPrivateTargets: true })

  // local: 100 rounds in the last hour; TTFB 1..100 ms over h2 and 1..20 ms
  // over h3, load 10× TTFB. Older, failed and warm runs must not count.
  const recent = Array.from({ length: 100 }, (_, i) => `${3500 - i * 30} seconds`)
  await seed('local', recent, 'done', (i) => [
    ok('h2', i + 1),
    ...(i < 20 ? [ok('h3', i + 1)] : []),
    { ...ok('h3', 5000), view: 'repeat' },
    { ...ok('h3', 7000), probe: 'parallel' }
  ])
  await seed('local', ['2 hours'], 'done', () => [ok('h2', 9000), ok('h3', 9000)])
  await seed('local', ['10 seconds'], 'done', () => [
    { mode: 'h2', status: 'error', protocol_ok: false, error: 'net::ERR_FAILED', ttfb_ms: 8000 },
    { mode: 'h3', status: 'protocol_mismatch', protocol_ok: false, observed_protocol: 'h2', ttfb_ms: 8000 }
  ])
  // Job states: a few of each in lab-eu, where no test agent claims.
  await seed('lab-eu', ['1 minute', '2 minutes', '3 minutes'], 'queued', () => [])
  await seed('lab-eu', ['4 minutes', '5 minutes'], 'failed', () => [])
  await seed('lab-eu', ['6 minutes'], 'leased', () => [])

  // Agents: one live and one silent at local, one silent at lab-eu, one
  // revoked at lab-asia.
  const live = await createAgentToken(t.db, { location: 'local' })
  await touchAgent(t.db, live.agent.id)
  await createAgentToken(t.db, { location: 'local' })
  const silent = await createAgentToken(t.db, { location: 'lab-eu' })
  await t.db.query("UPDATE agents SET last_seen_at = now() - interval '10 minutes' WHERE id = $1", [silent.agent.id])
  const revoked = await createAgentToken(t.db, { location: 'lab-asia' })
  await touchAgent(t.db, revoked.agent.id)
  await revokeAgent(t.db, revoked.agent.id)
})
after(async () => { await t.close() })

const ok = (mode, ttfb) => ({ mode, status: 'ok', protocol_ok: true, observed_protocol: mode, ttfb_ms: ttfb, load_ms: ttfb * 10 })

async function seed (location, agos, state, resultsOf) {
  const { rows: jobs } = await t.db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at, state, finished_at)
     SELECT $1, $2, now() - ago::interval, $3,
            CASE WHEN $3 IN ('done', 'failed', 'cancelled') THEN now() - ago::interval END
       FROM unnest($4::text[]) AS ago
     RETURNING id, monitor_id, location_id, due_at`, [monitor.id, location, state, agos])
  for (const [i, job] of jobs.entries()) await insertResults(t.db, { job, agentId: null, results: resultsOf(i) })
}

/** @returns {Promise<Map<string, any>>} metric families by name */
async function scrape (inject = (opts) => t.app.inject(opts)) {
  const res = await inject({ url: '/metrics' })
  assert.equal(res.statusCode, 200, res.body)
  assert.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  return new Map(parsePrometheusTextFormat(res.body).map((f) => [f.name, f]))
}

/** The value of the sample of `name` whose labels include `labels`; undefined when absent. */
function sample (families, name, labels = {}) {
  const m = families.get(name)?.metrics.find((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v))
  return m === undefined ? undefined : Number(m.value)
}

test('/metrics is Prometheus text with process and service metrics', async () => {
  const families = await scrape()
  assert.equal(families.get('h3lens_jobs').type, 'GAUGE')
  assert.equal(families.get('h3lens_results_ingested_total').type, 'COUNTER')
  assert.ok(families.has('process_resident_memory_bytes'))
  assert.equal(sample(families, 'h3lens_database_up'), 1)
})

test('the job gauges count the queue exactly and the jobs finished in the last hour', async () => {
  const families = await scrape()
  const { rows } = await t.db.query(
    `SELECT state, count(*)::int AS n FROM jobs
      WHERE state IN ('queued', 'leased') OR finished_at > now() - interval '1 hour' GROUP BY state`)
  const n = (state) => rows.find((r) => r.state === state)?.n ?? 0
  for (const state of ['queued', 'leased']) assert.equal(sample(families, 'h3lens_jobs', { state }), n(state), state)
  for (const state of ['done', 'failed', 'cancelled']) {
    assert.equal(sample(families, 'h3lens_jobs', { state }), undefined, `${state} is not a live state`)
    assert.equal(sample(families, 'h3lens_jobs_finished_last_hour', { state }), n(state), state)
  }
  assert.equal(sample(families, 'h3lens_jobs', { state: 'queued' }), 3)
  assert.equal(sample(families, 'h3lens_jobs', { state: 'leased' }), 1)
  assert.equal(sample(families, 'h3lens_jobs_finished_last_hour', { state: 'failed' }), 2)
  assert.equal(sample(families, 'h3lens_jobs_finished_last_hour', { state: 'done' }), 101, 'the round 2 hours ago is out of the window')
})

test('a scrape reads the job counts through indexes, not the whole jobs table', async () => {
  const client = await t.db.connect()
  try {
    // Small tables are scanned whole whatever the indexes; this asks the
    // planner what it does when scans cost what they do on a big table.
    await client.query('SET enable_seqscan = off')
    const { rows } = await client.query(`EXPLAIN ${COUNT_JOBS_SQL}`, [3600])
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n')
    assert.doesNotMatch(plan, /Seq Scan on jobs/, plan)
    // Each of the three counts reads a partial index that holds no finished
    // job but the last hour's: the queue's (the planner may count leased
    // jobs through jobs_pending, which holds queued and leased ones, rather
    // than jobs_leased, depending on the table's statistics) and the
    // finished jobs' by time.
    const used = [...plan.matchAll(/Index (?:Only )?Scan (?:using|on) (\w+)/g)].map((m) => m[1])
    assert.equal(used.length, 3, plan)
    const live = ['jobs_claimable', 'jobs_leased', 'jobs_pending']
    assert.ok(used.every((index) => live.includes(index) || index === 'jobs_finished'), plan)
    assert.equal(used.filter((index) => index === 'jobs_finished').length, 1, plan)
  } finally {
    client.release()
  }
})

test('live agents are counted per location; revoked agents are left out', async () => {
  const families = await scrape()
  assert.equal(sample(families, 'h3lens_agents_alive', { location: 'local' }), 1)
  assert.equal(sample(families, 'h3lens_agents_alive', { location: 'lab-eu' }), 0)
  assert.equal(sample(families, 'h3lens_agents_alive', { location: 'lab-asia' }), undefined)
})

test('p50/p95 TTFB and load per monitor, location and mode cover the last hour of ok first-view page loads', async () => {
  const families = await scrape()
  const at = (name, mode, quantile) => sample(families, name, { monitor_id: String(monitor.id), location: 'local', mode, quantile })
  // percentile_cont over 1..100: p50 = 50.5, p95 = 95.05; over 1..20: 10.5, 19.05.
  assert.equal(at('h3lens_ttfb_ms', 'h2', '0.5'), 50.5)
  assert.ok(Math.abs(Number(at('h3lens_ttfb_ms', 'h2', '0.95')) - 95.05) < 1e-9)
  assert.equal(at('h3lens_ttfb_ms', 'h3', '0.5'), 10.5)
  assert.ok(Math.abs(Number(at('h3lens_ttfb_ms', 'h3', '0.95')) - 19.05) < 1e-9)
  assert.equal(at('h3lens_load_ms', 'h2', '0.5'), 505)
  assert.ok(Math.abs(Number(at('h3lens_load_ms', 'h3', '0.95')) - 190.5) < 1e-9)
  // lab-eu has no results, so no series; nothing was dropped.
  assert.equal(sample(families, 'h3lens_ttfb_ms', { location: 'lab-eu' }), undefined)
  assert.equal(families.get('h3lens_ttfb_ms').metrics.length, 4)
  assert.equal(sample(families, 'h3lens_metric_series_dropped'), 0)
})

test('above the series cap only the most recently measured series are exported, and the rest are counted', async () => {
  const other = await createMonitor(t.db, { url: 'https://example.org/', interval_s: 60, locations: ['local'], paused: true }, { allowPrivateTargets: true })
  const { rows: [job] } = await t.db.query(
    "INSERT INTO jobs (monitor_id, location_id, due_at, state) VALUES ($1, 'local', now(), 'done') RETURNING id, monitor_id, location_id, due_at", [other.id])
  await insertResults(t.db, { job, agentId: null, results: [ok('h2', 42)] })

  const metrics = createMetrics({ db: t.db, log: t.log, maxSeries: 1 })
  const families = await scrape(async () => ({ statusCode: 200, headers: { 'content-type': metrics.registry.contentType }, body: await metrics.registry.metrics() }))
  assert.deepEqual(families.get('h3lens_ttfb_ms').metrics.map((m) => m.labels.monitor_id), [String(other.id), String(other.id)])
  assert.equal(sample(families, 'h3lens_ttfb_ms', { quantile: '0.5' }), 42)
  assert.equal(sample(families, 'h3lens_metric_series_dropped'), 2)
  metrics.registry.clear()
})

test('results stored through the agent route increase h3lens_results_ingested_total; duplicates do not', async () => {
  const auth = { authorization: `Bearer ${await t.agentToken('local')}` }
  const fresh = await t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload: { url: 'https://lab.h3lens.test:8443/page-15k.html', interval_s: 10, locations: ['local'] } })
  assert.equal(fresh.statusCode, 201, fresh.body)
  await scheduleDueJobs(t.db, { maxAttempts: 3 })
  const [job] = (await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: auth, payload: { limit: 1 } })).json().jobs
  assert.equal(job.monitor_id, fresh.json().id)
  const submit = (results) => t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${job.id}/results`, headers: auth, payload: { results } })
  const ingested = async (status) => sample(await scrape(), 'h3lens_results_ingested_total', { location: 'local', status }) ?? 0

  const results = [ok('h2', 10), { mode: 'h3', status: 'error', protocol_ok: false, error: 'timeout' }]
  assert.deepEqual((await submit(results)).json(), { stored: 2, duplicates: 0 })
  assert.equal(await ingested('ok'), 1)
  assert.equal(await ingested('error'), 1)

  assert.deepEqual((await submit(results)).json(), { stored: 0, duplicates: 2 })
  assert.equal(await ingested('ok'), 1)
  assert.equal(await ingested('error'), 1)

  // A resubmission that adds a result is refused (a round is stored whole) and counts nothing.
  const more = await submit([...results, { ...ok('h2', 11), view: 'repeat' }])
  assert.equal(more.statusCode, 409, more.body)
  assert.equal(more.json().code, 'round_done')
  assert.equal(await ingested('ok'), 1)
  assert.equal(await ingested('unknown'), 0)
})

test('request durations are labelled by route pattern; no label carries a raw URL or id', async () => {
  await t.app.inject({ url: `/api/v1/monitors/${monitor.id}` })
  await t.app.inject({ url: '/api/v1/monitors/987654' })
  await t.app.inject({ url: `/api/v1/results?monitor=${monitor.id}&format=ndjson` })
  await t.app.inject({ url: '/no/such/path/12345?token=secret' })
  const res = await t.app.inject({ url: '/metrics' })
  // Names, labels and help, without the sample values: a value's digits (a
  // start time, a byte count) can hold "12345" by chance.
  const text = res.body.split('\n').map((l) => (l.startsWith('#') ? l : l.replace(/\s+\S+(\s+\d+)?$/, ''))).join('\n')
  assert.match(text, /route="\/api\/v1\/monitors\/:id"/, 'the label sets are read')
  assert.doesNotMatch(text, /987654|12345|secret|example\.com|format=/)

  // parse-prometheus-text-format drops the labels of histograms, so the
  // labels are read from the registry the text is rendered from.
  const all = await t.app.metrics.registry.getMetricsAsJSON()
  const durations = all.find((m) => m.name === 'h3lens_http_request_duration_seconds').values
    .filter((v) => v.metricName === 'h3lens_http_request_duration_seconds_count')
  const byId = durations.filter((v) => v.labels.route === '/api/v1/monitors/:id')
  assert.deepEqual(byId.map((v) => v.labels.status_code).sort(), ['200', '404'])
  assert.ok(durations.some((v) => v.labels.route === '/api/v1/results' && v.labels.method === 'GET'))
  for (const metric of all) {
    for (const v of metric.values) {
      for (const [name, value] of Object.entries(v.labels ?? {})) {
        assert.doesNotMatch(String(value), /[?&=]|https?:/, `${metric.name}{${name}="${value}"}`)
        if (name === 'route') assert.ok(value === 'unmatched' || String(value).startsWith('/'), String(value))
      }
    }
  }
})

test('with the database down, /metrics still answers and says so', async () => {
  const dead = createPool('postgres://nobody:none@127.0.0.1:1/none')
  const metrics = createMetrics({ db: dead, log: t.log })
  try {
    const families = new Map(parsePrometheusTextFormat(await metrics.registry.metrics()).map((f) => [f.name, f]))
    assert.equal(sample(families, 'h3lens_database_up'), 0)
    assert.equal(families.get('h3lens_jobs').metrics.length, 0)
    assert.ok(families.has('process_cpu_seconds_total'))
  } finally {
    metrics.registry.clear()
    await dead.end()
  }
})

test('/metrics needs an API key; a read key is enough', async () => {
  const none = await t.app.inject({ url: '/metrics', headers: { authorization: undefined } })
  assert.equal(none.statusCode, 401)
  const read = await t.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${t.readKey}` } })
  assert.equal(read.statusCode, 200)
})

test('/metrics is documented in the OpenAPI document', async () => {
  const doc = (await t.app.inject({ url: '/api/openapi.json' })).json()
  assert.ok(doc.paths['/metrics'].get.description.includes('Prometheus'))
})
