// Probe options, the evidence the agent submits and what the API makes of
// it: per-request samples in rollups and comparisons, the H3 capability
// matrix, net log upload and download, and the hints a claim carries.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { gunzipSync, gzipSync } from 'node:zlib'
import { createTestApp } from './helpers/app.js'
import { upsertLocation } from '../lib/store/locations.js'
import { foldAllPending } from '../lib/analysis/rollups.js'
import { OUTLIER_MIN_RUNS } from '../lib/store/netlogs.js'
import { recordCapabilities } from '../lib/store/monitor-origins.js'

const LAB = 'https://lab.h3lens.test:8443'
let t
let agent
before(async () => {
  t = await createTestApp()
  await upsertLocation(t.db, { id: 'lab-x', name: 'X', region: 'Test', kind: 'lab', profile: { rtt_ms: 40 } })
  agent = { authorization: `Bearer ${await t.agentToken('lab-x')}` }
})
after(async () => { await t.close() })

const post = (payload) => t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload })

test('bad probe options get a 400 that names the field', async (s) => {
  /** @type {[object, RegExp, string][]} */
  const cases = [
    [{ url: `${LAB}/`, probes: ['page', 'speedtest'] }, /must be one of page, parallel, upload/, 'probes.1'],
    [{ url: `${LAB}/`, options: { parallel_requests: 0 } }, />= 1/, 'options.parallel_requests'],
    [{ url: `${LAB}/`, options: { parallel_requests: 51 } }, /<= 50/, 'options.parallel_requests'],
    [{ url: `${LAB}/`, options: { upload_bytes: 1023 } }, />= 1024/, 'options.upload_bytes'],
    [{ url: `${LAB}/`, options: { upload_bytes: 100 * 1024 * 1024 + 1 } }, /<= 104857600/, 'options.upload_bytes'],
    [{ url: `${LAB}/`, options: { colour: 'red' } }, /unknown field "colour"/, 'options.colour'],
    [{ url: `${LAB}/`, options: { force_quic: 'some' } }, /must be one of main, all/, 'options.force_quic'],
    [{ url: `${LAB}/`, options: { allow_empty: 'yes' } }, /must be boolean/, 'options.allow_empty'],
    [{ url: `${LAB}/`, probes: ['upload'], options: { upload_url: 'https://elsewhere.example/upload' } }, /another origin.*allow_cross_origin/, 'options.upload_url'],
    [{ url: `${LAB}/`, options: { parallel_url: 'https://elsewhere.example/noop' } }, /another origin/, 'options.parallel_url'],
    [{ url: `${LAB}/`, options: { upload_url: 'ftp://lab.h3lens.test/x' } }, /http or https/, 'options.upload_url'],
    [{ url: 'https://example.com/', probes: ['upload'] }, /upload probe needs options.upload_url/, 'options.upload_url']
  ]
  for (const [payload, message, field] of cases) {
    await s.test(JSON.stringify(payload), async () => {
      const res = await post(payload)
      assert.equal(res.statusCode, 400, res.body)
      assert.match(res.json().message, message)
      assert.equal(res.json().field, field)
    })
  }
})

test('good options are stored normalised; a cross-origin URL needs the explicit override', async () => {
  const ok = await post({
    url: `${LAB}/page-15k.html`,
    probes: ['page', 'parallel', 'upload'],
    repeat_view: true,
    options: { parallel_requests: 10, parallel_url: '/noop', upload_bytes: 2048, upload_url: 'https://www.example.com/upload', allow_cross_origin: true, force_quic: 'all', netlog: 'always', allow_empty: true }
  })
  assert.equal(ok.statusCode, 201, ok.body)
  assert.deepEqual(ok.json().options, {
    parallel_requests: 10, parallel_url: `${LAB}/noop`, upload_bytes: 2048, upload_url: 'https://www.example.com/upload', allow_cross_origin: true, force_quic: 'all', netlog: 'always', allow_empty: true
  })
  // The override can not be dropped while a URL still needs it.
  const patched = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${ok.json().id}`, payload: { options: { upload_url: 'https://www.example.com/upload' } } })
  assert.equal(patched.statusCode, 400, patched.body)
  assert.equal(patched.json().field, 'options.upload_url')
  // Nor can the page move to another origin under its same-origin options.
  const plain = (await post({ url: `${LAB}/a.html`, options: { parallel_url: `${LAB}/noop` } })).json()
  const moved = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${plain.id}`, payload: { url: 'https://example.com/' } })
  assert.equal(moved.statusCode, 400, moved.body)
  assert.equal(moved.json().field, 'options.parallel_url')
})

test('a probe URL on another host must be public, at real and lab locations alike', async () => {
  await upsertLocation(t.db, { id: 'real-x', name: 'Real X', region: 'Test', kind: 'real' })
  // Address literals: checking them needs no name lookup.
  const res = await post({ url: 'https://93.184.215.14/', locations: ['real-x'], probes: ['upload'], options: { upload_url: 'https://10.0.0.5/upload', allow_cross_origin: true } })
  assert.equal(res.statusCode, 400, res.body)
  assert.equal(res.json().field, 'options.upload_url')
  assert.match(res.json().message, /options\.upload_url points at the non-public address 10\.0\.0\.5/)
  const lab = await post({ url: `${LAB}/`, locations: ['lab-x'], probes: ['upload'], options: { upload_url: 'https://10.0.0.5/upload', allow_cross_origin: true } })
  assert.equal(lab.statusCode, 400, 'the lab origin is exempt, not whatever else a lab monitor names')
  assert.equal(lab.json().field, 'options.upload_url')
})

/** A queued job for the monitor at lab-x, due `secondsAgo` ago. */
async function queueJob (monitorId, secondsAgo = 0) {
  const { rows } = await t.db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at) VALUES ($1, 'lab-x', date_trunc('second', now()) - make_interval(secs => $2)) RETURNING id`, [monitorId, secondsAgo])
  return rows[0].id
}

async function claim () {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: agent, payload: { limit: 1 } })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

const parallelResult = (mode, samples, extra = {}) => ({
  mode, probe: 'parallel', status: 'ok', protocol_ok: true, observed_protocol: mode, ttfb_ms: 130, connect_ms: 60, rtt_ms: 40,
  connect_rtt: 1.5, ttfb_rtt: 3.25, notes: [{ code: 'slow_ttfb', message: 'TTFB took 3.3 RTT (floor 2 for H3 on a new connection)', rtt: 3.25, floor: 2 }],
  details: {
    samples,
    requests: [],
    origins: [{ origin: LAB, alt_svc: mode === 'h2' ? 'h3=":8443"; ma=2592000' : null, h3_advertised: mode === 'h2', requests: { h3: mode === 'h3' ? 12 : 0, h2: mode === 'h2' ? 12 : 0, other: 0 } }]
  },
  ...extra
})

test('parallel samples reach rollups and the comparison; origins reach the capability matrix', async () => {
  const m = (await post({ url: `${LAB}/page-15k.html`, locations: ['lab-x'], probes: ['parallel'], options: { parallel_url: '/noop', parallel_requests: 12, force_quic: 'all' } })).json()
  const jobId = await queueJob(m.id)
  const { jobs, location } = await claim()
  assert.equal(jobs[0].id, jobId)
  assert.equal(location.profile.rtt_ms, 40)
  assert.deepEqual(jobs[0].force_quic_origins, [], 'nothing discovered yet')
  const h3 = Array.from({ length: 12 }, (_, i) => 20 + i)
  const h2 = Array.from({ length: 12 }, (_, i) => 30 + i)
  const submit = await t.app.inject({
    method: 'POST', url: `/api/v1/agent/jobs/${jobId}/results`, headers: agent,
    payload: { agent_version: '0.1.0', results: [parallelResult('h3', h3), parallelResult('h2', h2)] }
  })
  assert.equal(submit.statusCode, 200, submit.body)

  const { items } = (await t.app.inject({ url: `/api/v1/monitors/${m.id}/results?probe=parallel` })).json()
  const stored = items.find((r) => r.mode === 'h3')
  assert.equal(stored.connect_rtt, 1.5)
  assert.equal(stored.ttfb_rtt, 3.25)
  assert.equal(stored.notes[0].code, 'slow_ttfb')
  assert.equal((await t.app.inject({ url: `/api/v1/results/${stored.id}` })).json().details.samples.length, 12)

  // Twelve samples per mode from one result each: the comparison is over requests.
  const cmp = (await t.app.inject({ url: `/api/v1/monitors/${m.id}/comparison?metric=request&percentiles=50` })).json()
  assert.equal(cmp.probe, 'parallel', 'the request metric implies the parallel probe')
  const row = cmp.locations.find((l) => l.location_id === 'lab-x')
  assert.equal(row.n_h3, 12)
  assert.equal(row.n_h2, 12)
  assert.ok(Math.abs(row.rows[0].delta_ms - -10) < 1, JSON.stringify(row.rows[0]))
  await foldAllPending(t.db)
  const again = (await t.app.inject({ url: `/api/v1/monitors/${m.id}/comparison?metric=request&percentiles=50`, headers: { 'cache-control': 'no-cache' } })).json()
  assert.equal(again.locations.find((l) => l.location_id === 'lab-x').n_h3, 12, 'same answer from the folded rollups')

  const matrix = (await t.app.inject({ url: `/api/v1/monitors/${m.id}/capabilities` })).json()
  assert.deepEqual(matrix.locations, ['lab-x'])
  assert.equal(matrix.origins.length, 1)
  const [o] = matrix.origins
  assert.equal(o.origin, LAB)
  assert.equal(o.h3_advertised, true)
  assert.equal(o.served_h3, true)
  assert.equal(o.locations[0].alt_svc, 'h3=":8443"; ma=2592000')
  assert.equal(o.locations[0].h3_requests, 12)
  assert.equal(o.locations[0].h2_requests, 12)

  // Next round: the origin seen advertising h3 is forced onto QUIC too.
  await queueJob(m.id, 60)
  assert.deepEqual((await claim()).jobs[0].force_quic_origins, [LAB])
  assert.equal((await t.app.inject({ url: '/api/v1/monitors/999999/capabilities' })).statusCode, 404)
})

test('a net log is uploaded by the agent holding the job and downloaded with its result', async () => {
  const m = (await post({ url: `${LAB}/page-15k.html`, locations: ['lab-x'], options: { netlog: 'always' } })).json()
  const jobId = await queueJob(m.id, 120)
  await claim()
  const netlog = Buffer.from(JSON.stringify({ constants: { logEventTypes: { QUIC_SESSION: 1 } }, events: [] }))
  const url = `/api/v1/agent/jobs/${jobId}/netlog?mode=h3&kind=run&raw_bytes=${netlog.length}`
  const put = (body, headers = {}) => t.app.inject({ method: 'PUT', url, headers: { ...agent, 'content-type': 'application/gzip', ...headers }, payload: body })

  const bad = await put(Buffer.from('not gzip'))
  assert.equal(bad.statusCode, 400, bad.body)
  assert.match(bad.json().message, /gzip/)
  const stranger = { authorization: `Bearer ${await t.agentToken('lab-x')}` }
  assert.equal((await put(gzipSync(netlog), stranger)).statusCode, 409, 'another agent of the location does not hold the job')
  const tooBig = await put(Buffer.concat([Buffer.from([0x1f, 0x8b]), Buffer.alloc(32 * 1024 * 1024)]))
  assert.equal(tooBig.statusCode, 413)
  const ok = await put(gzipSync(netlog))
  assert.equal(ok.statusCode, 200, ok.body)

  // Uploaded before the results exist; found through the result's key.
  const submit = await t.app.inject({
    method: 'POST', url: `/api/v1/agent/jobs/${jobId}/results`, headers: agent,
    payload: { results: [{ mode: 'h3', status: 'ok', protocol_ok: true, observed_protocol: 'h3', ttfb_ms: 100, details: { netlog: { kind: 'run', uploaded: true } } }, { mode: 'h2', status: 'ok', protocol_ok: true, observed_protocol: 'h2', ttfb_ms: 90 }] }
  })
  assert.equal(submit.statusCode, 200, submit.body)
  const { items } = (await t.app.inject({ url: `/api/v1/monitors/${m.id}/results` })).json()
  const h3 = items.find((r) => r.mode === 'h3')
  const download = await t.app.inject({ url: `/api/v1/results/${h3.id}/netlog` })
  assert.equal(download.statusCode, 200)
  assert.equal(download.headers['content-type'], 'application/gzip')
  assert.match(download.headers['content-disposition'], /\.netlog\.json\.gz/)
  assert.deepEqual(gunzipSync(download.rawPayload), netlog)
  const none = await t.app.inject({ url: `/api/v1/results/${items.find((r) => r.mode === 'h2').id}/netlog` })
  assert.equal(none.statusCode, 404)
  assert.match(none.json().message, /no net log/)
})

test('a claim carries the p99 above which a run is captured again', async () => {
  const m = (await post({ url: `${LAB}/page-100k.html`, locations: ['lab-x'] })).json()
  // OUTLIER_MIN_RUNS earlier rounds with load times 100..(100 + n - 1) ms.
  for (let i = 0; i < OUTLIER_MIN_RUNS; i++) {
    await t.db.query(
      `INSERT INTO results (time, job_id, monitor_id, location_id, mode, status, protocol_ok, load_ms)
       VALUES (now() - make_interval(secs => $1), $2, $3, 'lab-x', 'h3', 'ok', true, $4)`, [600 + i, 1000 + i, m.id, 100 + i])
  }
  await queueJob(m.id, 300)
  const { jobs } = await claim()
  const job = jobs.find((j) => j.monitor_id === m.id)
  const expected = 100 + (OUTLIER_MIN_RUNS - 1) * 0.99
  assert.ok(Math.abs(job.netlog_thresholds['page/h3'] - expected) < 0.2, JSON.stringify(job.netlog_thresholds))
  assert.equal(job.netlog_thresholds['page/h2'], undefined, 'no h2 history yet')
})

test('an agent whose clock runs ahead does not freeze what an origin advertises: a later result on time replaces it', async () => {
  const m = (await post({ url: `${LAB}/page-15k.html`, locations: ['lab-x'] })).json()
  const origin = 'https://skew.h3lens.test'
  const seen = (/** @type {number} */ aheadMs, /** @type {string} */ altSvc) => recordCapabilities(t.db, {
    monitorId: m.id, locationId: 'lab-x',
    rows: [{ measured_at: new Date(Date.now() + aheadMs).toISOString(), details: { origins: [{ origin, alt_svc: altSvc, h3_advertised: altSvc !== 'clear', requests: { h2: 1 } }] } }]
  })
  await seen(20 * 3600e3, 'h3=":443"; ma=86400')
  await seen(0, 'clear')
  const row = (await t.app.inject({ url: `/api/v1/monitors/${m.id}/capabilities` })).json().origins.find((/** @type {any} */ o) => o.origin === origin)
  assert.equal(row.h3_advertised, false, 'the result on time says what the origin advertises now')
  assert.equal(row.locations[0].alt_svc, 'clear')
  assert.ok(Date.parse(row.locations[0].last_seen_at) <= Date.now(), `never seen in the future: ${row.locations[0].last_seen_at}`)
})

test('an agent\'s evidence lists are of objects: a request that is not one is a 400 naming it, never a run page that cannot draw', async () => {
  const m = (await post({ url: `${LAB}/page-15k.html`, locations: ['lab-x'], probes: ['parallel'], options: { parallel_url: '/noop' } })).json()
  const jobId = await queueJob(m.id, 240)
  const { jobs } = await claim()
  assert.equal(jobs[0].id, jobId)
  const bad = parallelResult('h3', [20], { details: { samples: [20], requests: [{ url: `${LAB}/noop`, start_ms: 0, end_ms: 5 }, null, 5, 'x'] } })
  const res = await t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${jobId}/results`, headers: agent, payload: { agent_version: '0.1.0', results: [bad, parallelResult('h2', [30])] } })
  assert.equal(res.statusCode, 400, res.body)
  assert.equal(res.json().message, 'results.0.details.requests.1 must be object')
})
