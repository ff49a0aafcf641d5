// Results that cannot be true are refused with 422 and the field at fault,
// and nothing of the submission is stored; results that are merely
// surprising are kept.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from './helpers/app.js'
import { createMonitor } from '../lib/store/monitors.js'
import { scheduleDueJobs } from '../lib/store/jobs.js'
import { checkResults, keepImplausibleAsData } from '../lib/measurement/checks.js'
import { expectedProtocolFor } from '../lib/measurement/modes.js'
import { withinNoteLimit } from '../lib/measurement/result.js'

let t, token

before(async () => {
  t = await createTestApp()
  token = await t.agentToken('local')
})
after(async () => { await t.close() })

const page = (extra = {}) => ({
  mode: 'h2', status: 'ok', protocol_ok: true, observed_protocol: 'h2',
  dns_ms: 1, connect_ms: 8, tls_ms: 5, ttfb_ms: 20, dcl_ms: 40, load_ms: 60, fcp_ms: 45, lcp_ms: 50, ...extra
})

async function leasedJob () {
  await t.db.query("UPDATE jobs SET state = 'cancelled' WHERE state IN ('queued', 'leased')")
  await t.db.query('UPDATE monitors SET paused = true')
  // Every arm, view and probe the results below may be of: a round is refused a result it did not ask for.
  await createMonitor(t.db, { url: 'https://lab.h3lens.test:8443/page-15k.html', interval_s: 10, locations: ['local'], repeat_view: true, probes: ['page', 'parallel', 'upload'] })
  await scheduleDueJobs(t.db, { maxAttempts: 3 })
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: { authorization: `Bearer ${token}` }, payload: { limit: 1 } })
  return res.json().jobs[0]
}

/** @param {any} job @param {object[] | string} results a list, or a whole body as JSON text */
const submit = (job, results) => t.app.inject({
  method: 'POST',
  url: `/api/v1/agent/jobs/${job.id}/results`,
  headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  payload: typeof results === 'string' ? results : { results }
})

test('impossible values are a 422 naming the field, and nothing is stored', async () => {
  const job = await leasedJob()
  /** @type {[object[] | string, string, RegExp][]} */
  const cases = [
    [[page({ ttfb_ms: 70 })], 'results.0.ttfb_ms', /ttfb_ms \(70 ms\) is larger than dcl_ms \(40 ms\)/],
    [[page({ dcl_ms: 65 })], 'results.0.dcl_ms', /larger than load_ms/],
    [[page({ dns_ms: 25 })], 'results.0.dns_ms', /larger than ttfb_ms/],
    [[page({ connect_ms: 30 })], 'results.0.connect_ms', /larger than ttfb_ms/],
    [[page({ tls_ms: 12 })], 'results.0.tls_ms', /larger than connect_ms/],
    [[page({ fcp_ms: 10 })], 'results.0.ttfb_ms', /larger than fcp_ms/],
    [[page(), page({ mode: 'h3', observed_protocol: 'h3', lcp_ms: 5 })], 'results.1.ttfb_ms', /larger than lcp_ms/],
    [[page({ ttfb_ms: -1 })], 'results.0.ttfb_ms', /must be >= 0/],
    [[page({ load_ms: 3600001 })], 'results.0.load_ms', /must be <= 3600000/],
    [[page({ h3_request_share: 1.5 })], 'results.0.h3_request_share', /must be <= 1/],
    [[page({ bytes: -5 })], 'results.0.bytes', /must be >= 0/],
    [[page({ protocol_ok: false })], 'results.0.status', /status is ok but protocol_ok is false/],
    [[page({ status: 'protocol_mismatch' })], 'results.0.status', /protocol_mismatch but observed_protocol "h2" is the expected h2/],
    [[page(), page()], 'results.1.mode', /already the h2\/first\/page result/],
    [[page({ measured_at: '2199-01-01T00:00:00Z' })], 'results.0.measured_at', /not a plausible measurement time/],
    // A probe's samples are what its comparison rests on, as the columns are a page's.
    [[page({ probe: 'parallel', details: { samples: [12, 'abc'] } })], 'results.0.details.samples', /\[1\] must be a number from 0 to 3600000 \(ms\), not "abc"/],
    [[page({ probe: 'parallel', details: { samples: [-5, 1e200] } })], 'results.0.details.samples', /\[0\] must be a number/],
    [[page({ probe: 'parallel', details: { samples: Array(1001).fill(1) } })], 'results.0.details.samples', /at most 1000 numbers/],
    [[page({ probe: 'parallel', details: { samples: { a: 1 } } })], 'results.0.details.samples', /must be a list/],
    // What the results' lists and the filmstrip views read back with a fixed shape: stored wrong, each of them answered 500.
    [[page({ details: { protocol_reason: 'forced' } })], 'results.0.details.protocol_reason', /must be an object such as \{"code": "forced"/],
    [[page({ details: { protocol_reason: { code: 7 } } })], 'results.0.details.protocol_reason.code', /must be text of at most 64 characters/],
    [[page({ details: { filmstrip: { progress: {} } } })], 'results.0.details.filmstrip.progress', /must be a list of at most 10000 \[t_ms, progress\] pairs/],
    [[page({ details: { filmstrip: { step_ms: 'abc' } } })], 'results.0.details.filmstrip.step_ms', /must be a number of ms/],
    // The run page shows the filmstrip's error as text, and the requests not kept as part of the run's count.
    [[page({ details: { filmstrip: { uploaded: false, error: 123 } } })], 'results.0.details.filmstrip.error', /must be text of at most 4000 characters, or null/],
    [[page({ details: { filmstrip: { uploaded: 'no' } } })], 'results.0.details.filmstrip.uploaded', /must be true or false/],
    [[page({ details: { requests_not_kept: 2.5 } })], 'results.0.details.requests_not_kept', /must be a whole number of requests/],
    [[page({ requests: 4, details: { requests: [{}, {}], requests_not_kept: 5 } })], 'results.0.details.requests_not_kept', /\(5\) and the 2 requests kept are more than the run's 4 requests/]
  ]
  for (const [results, field, message] of cases) {
    const res = await submit(job, results)
    assert.equal(res.statusCode, 422, `${field}: ${res.body}`)
    assert.equal(res.json().field, field)
    assert.match(res.json().message, message)
  }
  const { rows } = await t.db.query('SELECT count(*)::int AS n FROM results WHERE job_id = $1', [job.id])
  assert.equal(rows[0].n, 0)
  const { rows: [state] } = await t.db.query('SELECT state FROM jobs WHERE id = $1', [job.id])
  assert.equal(state.state, 'leased', 'the job still waits for plausible results')
})

test('wrong shapes stay 400: types, unknown fields, missing fields', async () => {
  const job = await leasedJob()
  for (const [results, message] of /** @type {[object[] | string, RegExp][]} */ ([
    [[page({ ttfb_ms: '20' })], /ttfb_ms must be a finite number or null/],
    // JSON's 1e400 parses to Infinity.
    ['{"results": [{"mode": "h2", "status": "ok", "protocol_ok": true, "load_ms": 1e400}]}', /load_ms must be a finite number or null/],
    [[page({ colour: 'red' })], /unknown field "colour"/],
    [[{ mode: 'h2', status: 'ok' }], /protocol_ok is required/],
    [[page({ mode: 'h4' })], /must be one of h2, h3/]
  ])) {
    const res = await submit(job, results)
    assert.equal(res.statusCode, 400, res.body)
    assert.match(res.json().message, message)
  }
})

test('surprising but possible results are stored: lcp before fcp, paints after load, failed loads without timings', async () => {
  const job = await leasedJob()
  const res = await submit(job, [
    page({ fcp_ms: 55, lcp_ms: 50 }),
    page({ mode: 'h3', observed_protocol: 'h3', fcp_ms: 90, lcp_ms: 120, load_ms: 60, dcl_ms: 40 }),
    { mode: 'h3', view: 'repeat', status: 'timeout', protocol_ok: false, error: 'load did not finish within 30000 ms', ttfb_ms: null, load_ms: null },
    { mode: 'h3', probe: 'parallel', status: 'ok', protocol_ok: true, observed_protocol: 'h3', ttfb_ms: 30, load_ms: 12 },
    page({ mode: 'h2', view: 'repeat', dns_ms: 0, connect_ms: 0, tls_ms: null, ttfb_ms: 20.05, dcl_ms: 20 })
  ])
  assert.equal(res.statusCode, 200, res.body)
  assert.deepEqual(res.json(), { stored: 5, duplicates: 0 })
})

test('an origin count no page makes is left out of the origin\'s capabilities, and the round is stored', async () => {
  const job = await leasedJob()
  const origins = [{ origin: 'https://cdn.example.com', alt_svc: 'h3=":443"', h3_advertised: true, requests: { h3: 1e20, h2: 3, other: 0 } }]
  const res = await submit(job, [page({ details: { origins } }), page({ mode: 'h3', observed_protocol: 'h3' })])
  assert.equal(res.statusCode, 200, res.body)
  const { rows } = await t.db.query("SELECT * FROM monitor_origins WHERE origin = 'https://cdn.example.com'")
  assert.equal(rows.length, 1)
  assert.equal(Number(rows[0].h3_requests), 0)
  assert.equal(Number(rows[0].h2_requests), 3)
})

test('protocol truth: a status or protocol_ok that contradicts observed_protocol is a 422 naming the field', async () => {
  const job = await leasedJob()
  const h3 = (extra) => page({ mode: 'h3', observed_protocol: 'h3', ...extra })
  /** @type {[object[], string, RegExp][]} */
  const cases = [
    [[h3({ observed_protocol: 'h2' })], 'results.0.protocol_ok', /protocol_ok is true but the run has observed_protocol "h2", not h3/],
    [[page({ observed_protocol: 'http/1.1' })], 'results.0.protocol_ok', /observed_protocol "http\/1.1", not h2/],
    [[page({ observed_protocol: 'h3' })], 'results.0.protocol_ok', /not h2/],
    [[h3({ observed_protocol: null })], 'results.0.observed_protocol', /missing, but status ok says the run loaded over h3/],
    [[h3({ observed_protocol: undefined })], 'results.0.observed_protocol', /missing/],
    [[h3({ status: 'protocol_mismatch', protocol_ok: false, observed_protocol: 'h3-29' })], 'results.0.status', /protocol_mismatch but observed_protocol "h3-29" is the expected h3/],
    [[h3({ status: 'protocol_mismatch', protocol_ok: true, observed_protocol: 'h2' })], 'results.0.protocol_ok', /protocol_ok is true/],
    [[{ mode: 'h3', status: 'error', protocol_ok: false, error: 'x', details: { failure_kind: 'slow' } }], 'results.0.details.failure_kind', /must be one of truncated, h3_unsupported/],
    [[h3({ details: { failure_kind: 'truncated' } })], 'results.0.details.failure_kind', /describes a failed run, but status is ok/],
    [[{ mode: 'h2', status: 'error', protocol_ok: false, error: 'x', details: { failure_kind: 'h3_unsupported' } }], 'results.0.details.failure_kind', /only possible for a run that expects h3/]
  ]
  for (const [results, field, message] of cases) {
    const res = await submit(job, results)
    assert.equal(res.statusCode, 422, `${field}: ${res.body}`)
    assert.equal(res.json().field, field)
    assert.match(res.json().message, message)
  }
  const { rows } = await t.db.query('SELECT count(*)::int AS n FROM results WHERE job_id = $1', [job.id])
  assert.equal(rows[0].n, 0)
})

test('protocol truth: the server stores protocol_ok as observed_protocol says, whatever the agent claimed', async () => {
  const job = await leasedJob()
  const res = await submit(job, [
    page({ mode: 'h3', observed_protocol: 'h3-29' }),
    page({ status: 'protocol_mismatch', protocol_ok: false, observed_protocol: 'http/1.1' }),
    // Failed runs may have observed nothing, or the document's protocol before the failure.
    { mode: 'h3', view: 'repeat', status: 'timeout', protocol_ok: true, observed_protocol: null, error: 'load did not finish' },
    { mode: 'h2', view: 'repeat', status: 'error', protocol_ok: false, observed_protocol: 'h2', error: 'incomplete document: received 1,024 of 100,000 declared bytes', details: { failure_kind: 'truncated' } },
    { mode: 'h3', probe: 'upload', status: 'error', protocol_ok: false, observed_protocol: null, error: 'H3 not supported', details: { failure_kind: 'h3_unsupported' } }
  ])
  assert.equal(res.statusCode, 200, res.body)
  const { rows } = await t.db.query(
    `SELECT mode, view, probe, status, protocol_ok, details->>'failure_kind' AS failure_kind FROM results WHERE job_id = $1 ORDER BY mode, probe, view`, [job.id])
  assert.deepEqual(rows.map((r) => [r.mode, r.view, r.probe, r.status, r.protocol_ok, r.failure_kind]), [
    ['h2', 'first', 'page', 'protocol_mismatch', false, null],
    ['h2', 'repeat', 'page', 'error', true, 'truncated'],
    ['h3', 'first', 'page', 'ok', true, null],
    ['h3', 'repeat', 'page', 'timeout', false, null],
    ['h3', 'first', 'upload', 'error', false, 'h3_unsupported']
  ])
})

test('expectedProtocolFor: the mode, or both arms on an A/A monitor\'s protocol', () => {
  assert.equal(expectedProtocolFor('h3', null), 'h3')
  assert.equal(expectedProtocolFor('h2', {}), 'h2')
  assert.equal(expectedProtocolFor('h2', { aa_protocol: 'h3' }), 'h3')
  assert.equal(expectedProtocolFor('h3', { aa_protocol: 'h2' }), 'h2')
  // An A/A h3 monitor's second arm is called h2 but must load over h3.
  const aa = { expectedProtocol: (mode) => expectedProtocolFor(mode, { aa_protocol: 'h3' }) }
  const arms = [page({ mode: 'h3', observed_protocol: 'h3' }), page({ mode: 'h2', observed_protocol: 'h3' })]
  checkResults(arms, aa)
  assert.deepEqual(arms.map((r) => r.protocol_ok), [true, true])
  assert.throws(() => checkResults([page({ mode: 'h2', observed_protocol: 'h2' })], aa), { field: 'results.0.protocol_ok' })
})

test('a result stored before its details were checked reads back: a protocol reason or filmstrip of the wrong shape is left out, not a 500', async () => {
  const job = await leasedJob()
  const res = await submit(job, [page(), page({ mode: 'h3', observed_protocol: 'h3' })])
  assert.equal(res.statusCode, 200, res.body)
  const { rows: [row] } = await t.db.query('SELECT id, monitor_id FROM results WHERE job_id = $1 AND mode = $2', [job.id, 'h2'])
  await t.db.query(`UPDATE results SET details = '{"protocol_reason": "x", "filmstrip": {"progress": {}, "step_ms": "abc", "kind": 5}}' WHERE id = $1`, [row.id])
  await t.db.query(`INSERT INTO filmstrip_frames (job_id, mode, view, probe, seq, t_ms, jpeg, monitor_id, location_id)
                    SELECT job_id, mode, view, probe, 0, 0, $2, monitor_id, location_id FROM results WHERE id = $1`, [row.id, Buffer.from([0xff, 0xd8, 0xff, 0xd9])])
  const one = await t.app.inject({ url: `/api/v1/results/${row.id}` })
  assert.equal(one.statusCode, 200, one.body)
  assert.equal(one.json().protocol_reason, null)
  const list = await t.app.inject({ url: `/api/v1/monitors/${row.monitor_id}/results` })
  assert.equal(list.statusCode, 200, list.body)
  const film = await t.app.inject({ url: `/api/v1/results/${row.id}/filmstrip` })
  assert.equal(film.statusCode, 200, film.body)
  assert.deepEqual([film.json().kind, film.json().step_ms, film.json().progress, film.json().frames.length], ['capture', 100, [], 1])
})

test('an agent keeps a run that cannot be true as data: it is sent as an error saying why, a detail out of shape is left out with a note, and the round is stored with its other runs', async () => {
  const job = await leasedJob()
  const expectedProtocol = (/** @type {string} */ mode) => expectedProtocolFor(mode, null)
  // What the agent (agents/job-runner.js) and the WebPageTest upload do before a round is sent or stored.
  const impossible = 'ttfb_ms (70 ms) is larger than dcl_ms (40 ms), which cannot happen in one page load'
  const runs = [
    page({ ttfb_ms: 70 }),
    page({ mode: 'h3', observed_protocol: 'h3', details: { filmstrip: { uploaded: false, error: 123 }, protocol_reason: { code: 'forced', text: 'forced' } } }),
    // More notes than the API takes (a net log's findings have no bound), and a value JSON cannot carry (an upload timed at 0 ms).
    page({ mode: 'h2', view: 'repeat', upload_mbps: Infinity, notes: withinNoteLimit(Array.from({ length: 60 }, (_, i) => ({ code: 'finding', message: `finding ${i}` }))) }),
    // A run that failed already: its timings cannot be true either.
    page({ mode: 'h3', view: 'repeat', status: 'timeout', error: 'load did not finish within 30000 ms', ttfb_ms: 70 })
  ]
  assert.deepEqual(runs.map((r) => keepImplausibleAsData(r, { expectedProtocol })), [impossible, null, null, impossible])
  assert.equal(/** @type {Record<string, any>} */ (runs[2]).upload_mbps, null, 'no value, as the API would store it')
  // A measurement time a day off is the agent's clock: failing the run mends nothing, and the API refuses it.
  assert.throws(() => keepImplausibleAsData(page({ measured_at: '2199-01-01T00:00:00Z' }), { expectedProtocol }), { field: 'results.0.measured_at' })
  const res = await submit(job, runs)
  assert.equal(res.statusCode, 200, res.body)
  const { rows } = await t.db.query('SELECT mode, view, status, error, ttfb_ms, load_ms, notes, details FROM results WHERE job_id = $1 ORDER BY mode, view', [job.id])
  assert.deepEqual(rows.map((r) => [r.mode, r.view, r.status]), [['h2', 'first', 'error'], ['h2', 'repeat', 'ok'], ['h3', 'first', 'ok'], ['h3', 'repeat', 'timeout']])
  assert.equal(rows[0].error, `implausible timings: ${impossible}`)
  assert.deepEqual([rows[0].ttfb_ms, rows[0].load_ms], [null, null], 'none of its timings is read as a measurement')
  assert.deepEqual([rows[3].error, rows[3].ttfb_ms], [`load did not finish within 30000 ms (implausible timings: ${impossible})`, null], 'the failure keeps its own words')
  assert.equal(rows[1].notes.length, 50)
  assert.deepEqual(rows[1].notes.at(-1), { code: 'notes_left_out', message: '11 more notes left out' })
  assert.deepEqual(rows[2].notes, [{ code: 'detail_left_out', message: 'details.filmstrip was left out: details.filmstrip.error must be text of at most 4000 characters, or null' }])
  assert.equal(rows[2].details.filmstrip, undefined)
  assert.deepEqual(rows[2].details.protocol_reason, { code: 'forced', text: 'forced' }, 'the rest of its details is kept')
  assert.equal(rows[2].ttfb_ms, 20)
})
