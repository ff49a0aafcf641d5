// The results import through the real API and PostgreSQL: what a user who
// restores an export or brings history from another tool sees.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { Readable } from 'node:stream'
import { createTestApp } from './helpers/app.js'
import { createMonitor } from '../lib/store/monitors.js'
import { upsertLocation } from '../lib/store/locations.js'
import { IMPORT_MAX_LINES, IMPORT_MAX_BYTES, IMPORT_MAX_LINE_BYTES } from '../lib/store/results-import.js'
import { scheduleDueJobs } from '../lib/store/jobs.js'

// Recent enough for the default 24 h comparison window.
const BASE = Math.floor((Date.now() - 6 * 3600e3) / 60e3) * 60e3
const at = (i) => new Date(BASE + i * 60e3).toISOString()

let t
before(async () => {
  t = await createTestApp()
  await upsertLocation(t.db, { id: 'lab-eu', name: 'EU', region: 'Europe', kind: 'lab' })
})
after(async () => { await t.close() })

const newMonitor = (extra = {}) => createMonitor(t.db, { url: 'https://example.com/', interval_s: 60, locations: ['local', 'lab-eu'], ...extra }, { allowPrivateTargets: true })

/** One round: h2 and h3 page loads at one location and time. */
function round (i, location = 'local', extra = {}) {
  return [
    { time: at(i), location_id: location, mode: 'h2', ttfb_ms: 100 + (i % 17), load_ms: 300 + (i % 23), ...extra },
    { time: at(i), location_id: location, mode: 'h3', ttfb_ms: 90 + (i % 19), load_ms: 280 + (i % 29), ...extra }
  ]
}

const ndjson = (rows) => rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n'

function importInto (monitorId, body, headers = {}) {
  return t.app.inject({
    method: 'POST',
    url: `/api/v1/monitors/${monitorId}/results/import`,
    headers: { 'content-type': 'application/x-ndjson', ...headers },
    payload: typeof body === 'string' ? body : ndjson(body)
  })
}

async function stored (monitorId) {
  const { rows: [r] } = await t.db.query(
    `SELECT (SELECT count(*)::int FROM results WHERE monitor_id = $1) AS results,
            (SELECT count(*)::int FROM jobs WHERE monitor_id = $1) AS jobs`, [monitorId])
  return r
}

test('an import stores one done job per round and the results with their defaults', async () => {
  const m = await newMonitor()
  const rows = [
    ...round(0), ...round(0, 'lab-eu'), ...round(1),
    { time: at(1), location_id: 'local', mode: 'h3', probe: 'parallel', details: { samples: [12.5, 13, 14.25] } },
    { time: at(2), location_id: 'local', mode: 'h3', status: 'error', error: 'net::ERR_QUIC_PROTOCOL_ERROR' },
    { time: at(2), location_id: 'local', mode: 'h2', observed_protocol: 'http/1.1', status: 'protocol_mismatch' }
  ]
  const res = await importInto(m.id, rows)
  assert.equal(res.statusCode, 200, res.body)
  assert.deepEqual(res.json(), { imported: 9, skipped_existing: 0, rounds: 4, added_locations: [] })

  const { rows: jobs } = await t.db.query('SELECT id, location_id, due_at, state FROM jobs WHERE monitor_id = $1 ORDER BY due_at, location_id', [m.id])
  assert.equal(jobs.length, 4)
  assert.ok(jobs.every((j) => j.state === 'done'))
  const { rows: results } = await t.db.query(
    `SELECT r.*, j.due_at FROM results r JOIN jobs j ON j.id = r.job_id WHERE r.monitor_id = $1 ORDER BY r.time, r.location_id, r.mode, r.probe`, [m.id])
  assert.equal(results.length, 9)
  for (const r of results) {
    assert.equal(+r.time, +r.due_at, 'a result\'s time is its round\'s due time')
    assert.equal(r.agent_id, null)
    assert.equal(r.view, 'first')
  }
  const first = results[0]
  assert.deepEqual([first.mode, first.probe, first.status, first.observed_protocol, first.protocol_ok], ['h2', 'page', 'ok', 'h2', true],
    'status ok without a protocol came over the forced one')
  const parallel = results.find((r) => r.probe === 'parallel')
  assert.deepEqual(parallel.details, { samples: [12.5, 13, 14.25] })
  const failed = results.find((r) => r.status === 'error')
  assert.deepEqual([failed.protocol_ok, failed.observed_protocol, failed.error], [false, null, 'net::ERR_QUIC_PROTOCOL_ERROR'])
  const fallback = results.find((r) => r.status === 'protocol_mismatch')
  assert.equal(fallback.protocol_ok, false)
})

test('re-importing the same file stores nothing new', async () => {
  const m = await newMonitor()
  const body = ndjson(Array.from({ length: 30 }, (_, i) => round(i)).flat())
  assert.deepEqual((await importInto(m.id, body)).json(), { imported: 60, skipped_existing: 0, rounds: 30, added_locations: [] })
  const again = await importInto(m.id, body)
  assert.equal(again.statusCode, 200)
  assert.deepEqual(again.json(), { imported: 0, skipped_existing: 60, rounds: 30, added_locations: [] })
  assert.deepEqual(await stored(m.id), { results: 60, jobs: 30 })
  const { rows: [{ n }] } = await t.db.query('SELECT count(*)::int AS n FROM rollup_pending p JOIN results r ON r.id = p.result_id WHERE r.monitor_id = $1', [m.id])
  assert.equal(n, 60, 'each result is queued for the rollups once')
})

test('one bad line out of 50,000 gets a 400 naming its line and field, and nothing is stored', async () => {
  const m = await newMonitor()
  const lines = []
  // Rounds a minute apart going back 17 days from BASE.
  for (let i = 0; lines.length < 49_999; i++) lines.push(...round(-i, i % 2 ? 'local' : 'lab-eu'))
  lines.length = 49_999
  lines.push({ time: at(0), location_id: 'local', mode: 'h2', probe: 'upload', ttfb_ms: -5 })
  const res = await importInto(m.id, lines)
  assert.equal(res.statusCode, 400, res.body)
  const body = res.json()
  assert.equal(body.line, 50_000)
  assert.equal(body.field, 'line 50000: ttfb_ms')
  assert.match(body.message, /^line 50000: ttfb_ms must be from 0/)
  assert.deepEqual(await stored(m.id), { results: 0, jobs: 0 })
})

test('bad lines are refused with the line and the field at fault', async () => {
  const m = await newMonitor()
  const good = JSON.stringify(round(0)[0])
  /** @type {[any, string, RegExp][]} */
  const cases = [
    ['{"time": "2026-01-01T00:00:00Z", "location_id": "local", "mode": "h2"', 'line 2', /not valid JSON/],
    ['[1, 2]', 'line 2', /must be a JSON object/],
    [{ location_id: 'local', mode: 'h2' }, 'line 2: time', /time is required/],
    [{ time: at(1), mode: 'h2' }, 'line 2: location_id', /location_id is required/],
    [{ time: at(1), location_id: 'local' }, 'line 2: mode', /mode is required/],
    [{ time: at(1), location_id: 'local', mode: 'h2', colour: 'blue' }, 'line 2: colour', /not a result field/],
    [{ time: at(1), location_id: 'mars', mode: 'h2' }, 'line 2: location_id', /"mars" is not a known location/],
    [{ time: at(1), location_id: 'local', mode: 'h1' }, 'line 2: mode', /must be one of h2, h3/],
    // Names every JavaScript object has are no result fields either.
    ...['valueOf', 'constructor', 'toString', 'hasOwnProperty', '__defineGetter__'].map((k) =>
      /** @type {[any, string, RegExp]} */ ([`{"time": "${at(1)}", "location_id": "local", "mode": "h2", "${k}": 1}`, `line 2: ${k}`, /not a result field/])),
    ['{"time": "' + at(1) + '", "location_id": "local", "mode": "h2", "__proto__": {"x": 1}}', 'line 2: __proto__', /not a result field/],
    [{ time: 'yesterday', location_id: 'local', mode: 'h2' }, 'line 2: time', /RFC 3339 date-time/],
    // A day that does not exist is refused, not moved to the next month.
    [{ time: '2026-02-30T00:00:00Z', location_id: 'local', mode: 'h2' }, 'line 2: time', /RFC 3339 date-time/],
    [{ time: at(1), measured_at: '2026-02-29T12:00:00Z', location_id: 'local', mode: 'h2' }, 'line 2: measured_at', /RFC 3339 date-time/],
    [{ time: '1970-01-01T00:00:00Z', location_id: 'local', mode: 'h2' }, 'line 2: time', /not a plausible round time/],
    [{ time: at(1), location_id: 'local', mode: 'h2', ttfb_ms: '12' }, 'line 2: ttfb_ms', /finite number/],
    [{ time: at(1), location_id: 'local', mode: 'h2', ttfb_ms: 500, load_ms: 200 }, 'line 2: ttfb_ms', /larger than load_ms/],
    [{ time: at(1), location_id: 'local', mode: 'h3', observed_protocol: 'h2', status: 'ok' }, 'line 2: status', /protocol/],
    [{ time: at(1), location_id: 'local', mode: 'h2', details: [1] }, 'line 2: details', /must be an object/],
    [{ time: at(1), location_id: 'local', mode: 'h2', details: { note: 'a\u0000b' } }, 'line 2: details', /NUL/],
    [{ time: at(1), location_id: 'local', mode: 'h2', flags: ['--disable-quic', 'a\u0000b'] }, 'line 2: flags', /NUL/],
    [{ time: at(1), location_id: 'local', mode: 'h2', flags: ['a\ud800b'] }, 'line 2: flags', /unpaired surrogate/],
    [{ time: at(1), location_id: 'local', mode: 'h2', details: { requests: [{ url: 'https://example.com/' }, null] } }, 'line 2: details.requests', /must be a list of objects/],
    [{ time: at(1), location_id: 'local', mode: 'h2', probe: 'parallel', details: { samples: [-1e299, 'x'] } }, 'line 2: details.samples', /\[0\] must be a number from 0 to 3600000/],
    [{ time: at(1), location_id: 'local', mode: 'h2', probe: 'parallel', samples: [12, 'x'] }, 'line 2: samples', /\[1\] must be a number from 0 to 3600000/],
    [{ time: at(0), location_id: 'local', mode: 'h2' }, 'line 2: mode', /repeats the h2\/first\/page result/]
  ]
  for (const [line, field, message] of cases) {
    const res = await importInto(m.id, [good, line])
    assert.equal(res.statusCode, 400, `${JSON.stringify(line)}: ${res.body}`)
    const body = res.json()
    assert.equal(body.field, field, JSON.stringify(line))
    assert.equal(body.line, 2)
    assert.match(body.message, message)
    assert.match(body.message, /^line 2/)
  }
  assert.deepEqual(await stored(m.id), { results: 0, jobs: 0 })
})

test('details the results views read back with a fixed shape are refused with their line when they have another', async () => {
  const m = await newMonitor()
  for (const [details, field, message] of /** @type {[object, string, RegExp][]} */ ([
    [{ protocol_reason: 'x' }, 'line 1: details.protocol_reason', /must be an object such as/],
    [{ filmstrip: { progress: [[1, 'a']] } }, 'line 1: details.filmstrip.progress', /pairs of numbers/]
  ])) {
    const [first, second] = round(0)
    const res = await importInto(m.id, [{ ...first, details }, second])
    assert.equal(res.statusCode, 400, res.body)
    assert.equal(res.json().field, field, res.body)
    assert.match(res.json().message, message)
  }
  assert.deepEqual(await stored(m.id), { results: 0, jobs: 0 })
})

test('an export imported again into its own monitor stores nothing twice, rounds an agent measured included', async () => {
  const m = await newMonitor({ modes: ['h2', 'h3'], locations: ['local'] })
  // A round falls on its monitor's anchor, a time with microseconds; its
  // results are stored, and exported, to the millisecond.
  await t.db.query("UPDATE jobs SET state = 'cancelled' WHERE state IN ('queued', 'leased')")
  await t.db.query("UPDATE monitors SET paused = (id <> $1), anchor_at = date_trunc('second', now()) - interval '30 seconds' + interval '0.123456 seconds' WHERE id = $1 OR NOT paused", [m.id])
  await scheduleDueJobs(t.db, { maxAttempts: 3 })
  const auth = { authorization: `Bearer ${await t.agentToken('local')}` }
  const [job] = (await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: auth, payload: { limit: 1 } })).json().jobs
  assert.equal(job?.monitor_id, m.id)
  const arm = (/** @type {string} */ mode) => ({ mode, status: 'ok', protocol_ok: true, observed_protocol: mode, ttfb_ms: 50, load_ms: 90 })
  const sent = await t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${job.id}/results`, headers: auth, payload: { results: [arm('h2'), arm('h3')] } })
  assert.equal(sent.statusCode, 200, sent.body)

  const exported = await t.app.inject({ url: `/api/v1/results?monitor=${m.id}&format=ndjson` })
  assert.equal(exported.statusCode, 200, exported.body)
  assert.match(exported.body, /"time":"[^"]+\.\d{3}Z"/)
  const again = await importInto(m.id, exported.body)
  assert.equal(again.statusCode, 200, again.body)
  assert.deepEqual(again.json(), { imported: 0, skipped_existing: 2, rounds: 1, added_locations: [] })
  assert.deepEqual(await stored(m.id), { results: 2, jobs: 1 })
  await t.db.query('UPDATE monitors SET paused = true WHERE id = $1', [m.id])
})

test('an import that names a live round\'s due time is refused with 409 naming the line, while the round is queued and while it is measured', async () => {
  const m = await newMonitor({ modes: ['h2', 'h3'], locations: ['local'] })
  await t.db.query("UPDATE jobs SET state = 'cancelled' WHERE state IN ('queued', 'leased')")
  await t.db.query("UPDATE monitors SET paused = (id <> $1), anchor_at = date_trunc('second', now()) - interval '30 seconds' WHERE id = $1 OR NOT paused", [m.id])
  await scheduleDueJobs(t.db, { maxAttempts: 3 })
  const { rows: [live] } = await t.db.query("SELECT id, due_at FROM jobs WHERE monitor_id = $1 AND state = 'queued'", [m.id])
  const lines = [
    ...round(0, 'local'),
    { time: live.due_at.toISOString(), location_id: 'local', mode: 'h2', ttfb_ms: 100, load_ms: 300 },
    { time: live.due_at.toISOString(), location_id: 'local', mode: 'h3', ttfb_ms: 90, load_ms: 280 }
  ]
  const queued = await importInto(m.id, lines)
  assert.equal(queued.statusCode, 409, queued.body)
  assert.equal(queued.json().field, 'line 3: time')
  assert.equal(queued.json().line, 3)
  assert.equal(queued.json().code, 'live_round')
  assert.match(queued.json().message, /queued to run/)
  assert.deepEqual(await stored(m.id), { results: 0, jobs: 1 }, 'nothing stored, not even the other round')

  const auth = { authorization: `Bearer ${await t.agentToken('local')}` }
  const [job] = (await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: auth, payload: { limit: 1 } })).json().jobs
  assert.equal(job?.id, Number(live.id))
  const leased = await importInto(m.id, lines)
  assert.equal(leased.statusCode, 409, leased.body)
  assert.match(leased.json().message, /being measured/)
  // The agent's results are its round's alone.
  const arm = (/** @type {string} */ mode) => ({ mode, status: 'ok', protocol_ok: true, observed_protocol: mode, ttfb_ms: 50, load_ms: 90 })
  const sent = await t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${job.id}/results`, headers: auth, payload: { results: [arm('h2'), arm('h3')] } })
  assert.equal(sent.statusCode, 200, sent.body)
  const { rows } = await t.db.query('SELECT mode, ttfb_ms FROM results WHERE job_id = $1 ORDER BY mode', [job.id])
  assert.deepEqual(rows.map((r) => [r.mode, r.ttfb_ms]), [['h2', 50], ['h3', 50]])
  // Done, the round takes the import as any stored round does: nothing twice.
  const after = await importInto(m.id, lines)
  assert.equal(after.statusCode, 200, after.body)
  assert.deepEqual(after.json(), { imported: 2, skipped_existing: 2, rounds: 2, added_locations: [] })
  await t.db.query('UPDATE monitors SET paused = true WHERE id = $1', [m.id])
})

test('bytes that are not UTF-8 are refused with their line, never stored as replacement characters', async () => {
  const m = await newMonitor()
  const lines = ndjson([...round(0), ...round(1)]).split('\n')
  const bad = Buffer.concat([Buffer.from(lines.slice(0, 3).join('\n') + '\n'), Buffer.from(lines[3]), Buffer.from([0xff]), Buffer.from('\n')])
  const res = await t.app.inject({ method: 'POST', url: `/api/v1/monitors/${m.id}/results/import`, headers: { 'content-type': 'application/x-ndjson' }, payload: bad })
  assert.equal(res.statusCode, 400, res.body)
  assert.equal(res.json().message, 'line 4 is not UTF-8: send the results as UTF-8 text')
  assert.deepEqual(await stored(m.id), { results: 0, jobs: 0 })
})

test('rows at a location the monitor does not run at are refused, unless the import adds it to the monitor', async () => {
  await upsertLocation(t.db, { id: 'lab-asia', name: 'Asia', region: 'Asia', kind: 'lab' })
  const m = await newMonitor()
  const rows = [...round(0), ...round(0, 'lab-asia')]
  const refused = await importInto(m.id, rows)
  assert.equal(refused.statusCode, 400, refused.body)
  assert.equal(refused.json().field, 'line 3: location_id')
  assert.equal(refused.json().line, 3)
  assert.match(refused.json().message, new RegExp(`^line 3: location_id "lab-asia" is not a location of monitor ${m.id} \\(it runs at local, lab-eu\\); .*add_locations=true`))
  assert.deepEqual(await stored(m.id), { results: 0, jobs: 0 })

  const added = await t.app.inject({
    method: 'POST', url: `/api/v1/monitors/${m.id}/results/import?add_locations=true`, headers: { 'content-type': 'application/x-ndjson' }, payload: ndjson(rows)
  })
  assert.equal(added.statusCode, 200, added.body)
  assert.deepEqual(added.json(), { imported: 4, skipped_existing: 0, rounds: 2, added_locations: ['lab-asia'] })
  const monitor = (await t.app.inject({ url: `/api/v1/monitors/${m.id}` })).json()
  assert.deepEqual(monitor.locations, ['local', 'lab-eu', 'lab-asia'], 'the location is now the monitor\'s, and measured there')
  const comparison = (await t.app.inject({ url: `/api/v1/monitors/${m.id}/comparison` })).json()
  assert.ok(comparison.locations.some((l) => l.location_id === 'lab-asia'))

  // Adding a location is checked as a PATCH of the locations is: a real
  // location may not measure a loopback target.
  await upsertLocation(t.db, { id: 'real-eu', name: 'Real EU', region: 'Europe', kind: 'real' })
  const loopback = await newMonitor({ url: 'http://127.0.0.1:8/', locations: ['local'] })
  const guarded = await t.app.inject({
    method: 'POST', url: `/api/v1/monitors/${loopback.id}/results/import?add_locations=true`, headers: { 'content-type': 'application/x-ndjson' }, payload: ndjson(round(0, 'real-eu'))
  })
  assert.equal(guarded.statusCode, 400, guarded.body)
  assert.equal(guarded.json().field, 'add_locations')
  assert.match(guarded.json().message, /^add_locations: monitor \d+ cannot run at real-eu: .*may not target/)
  assert.deepEqual(await stored(loopback.id), { results: 0, jobs: 0 })
  assert.deepEqual((await t.app.inject({ url: `/api/v1/monitors/${loopback.id}` })).json().locations, ['local'], 'nothing changed')

  const flag = await t.app.inject({ method: 'POST', url: `/api/v1/monitors/${m.id}/results/import?add_locations=maybe`, headers: { 'content-type': 'application/x-ndjson' }, payload: ndjson(round(1)) })
  assert.equal(flag.statusCode, 400)
  assert.equal(flag.json().field, 'add_locations')
})

test('rows more than a minute ahead of the server\'s clock are refused, naming the line and field', async () => {
  const m = await newMonitor()
  const ahead = (s) => new Date(Date.now() + s * 1000).toISOString()
  for (const [row, field] of /** @type {[Record<string, any>, string][]} */ ([
    [{ time: ahead(90), location_id: 'local', mode: 'h2' }, 'line 2: time'],
    [{ time: ahead(24 * 3600 - 60), location_id: 'local', mode: 'h2' }, 'line 2: time'],
    [{ time: at(1), measured_at: ahead(90), location_id: 'local', mode: 'h2' }, 'line 2: measured_at']
  ])) {
    const res = await importInto(m.id, [round(0)[0], row])
    assert.equal(res.statusCode, 400, res.body)
    assert.equal(res.json().field, field)
    assert.equal(res.json().line, 2)
    assert.match(res.json().message, /is more than 60 s ahead of this server's clock/)
  }
  assert.deepEqual(await stored(m.id), { results: 0, jobs: 0 })
  // A clock a few seconds ahead of this server's is drift, not a wrong row.
  const drift = await importInto(m.id, [round(0)[0], { time: ahead(20), measured_at: ahead(20), location_id: 'local', mode: 'h2' }])
  assert.equal(drift.statusCode, 200, drift.body)
})

test('source ids are ignored; blank lines are skipped but counted for line numbers', async () => {
  const m = await newMonitor()
  const [a, b] = round(0).map((r) => ({ id: 77, job_id: 5, monitor_id: 999, agent_id: 3, ...r }))
  const res = await importInto(m.id, `${JSON.stringify(a)}\n\n${JSON.stringify(b)}\r\n{"oops"\n`)
  assert.equal(res.json().line, 4)
  const ok = await importInto(m.id, `${JSON.stringify(a)}\n\n${JSON.stringify(b)}\r\n`)
  assert.deepEqual(ok.json(), { imported: 2, skipped_existing: 0, rounds: 1, added_locations: [] })
  const { rows } = await t.db.query('SELECT monitor_id, agent_id FROM results WHERE monitor_id = $1', [m.id])
  assert.deepEqual(rows.map((r) => [Number(r.monitor_id), r.agent_id]), [[m.id, null], [m.id, null]])
})

test('an export imported into another monitor gives the same comparison, and rollups count it at once', async () => {
  const source = await newMonitor({ probes: ['page', 'parallel'] })
  const rows = []
  for (let i = 0; i < 120; i++) {
    rows.push(...round(i, i % 3 ? 'local' : 'lab-eu', { measured_at: at(i), browser_version: 'Chromium 140', flags: ['--disable-quic'] }))
    if (i % 10 === 0) rows.push({ time: at(i), location_id: 'local', mode: 'h3', view: 'repeat', status: 'timeout', error: 'timed out after 30 s' })
    // Why a run failed, and why a page came over its protocol: read by the analyses from details.
    if (i % 3 === 0) {
      rows.push({ time: at(i), location_id: 'lab-eu', mode: 'h3', view: 'repeat', status: 'error', observed_protocol: null, error: 'H3 not supported: refused QUIC', details: { failure_kind: 'h3_unsupported' } },
        { time: at(i), location_id: 'lab-eu', mode: 'h2', view: 'repeat', status: 'ok', observed_protocol: 'h2', ttfb_ms: 20, load_ms: 80, details: { protocol_reason: { code: 'forced' } } })
    }
    // The parallel probe's five requests of the round: what its comparison rests on.
    if (i % 3) {
      const samples = (/** @type {number} */ base) => Array.from({ length: 5 }, (_, k) => base + ((i * 7 + k * 3) % 11))
      rows.push({ time: at(i), location_id: 'local', mode: 'h2', probe: 'parallel', details: { samples: samples(40) } },
        { time: at(i), location_id: 'local', mode: 'h3', probe: 'parallel', details: { samples: samples(36) } })
    }
  }
  const first = await importInto(source.id, rows)
  assert.equal(first.statusCode, 200)

  const exported = await t.app.inject({ url: `/api/v1/results?monitor=${source.id}&format=ndjson` })
  assert.equal(exported.statusCode, 200)
  const copy = await newMonitor({ probes: ['page', 'parallel'] })
  const res = await importInto(copy.id, exported.body)
  assert.equal(res.statusCode, 200, res.body)
  assert.deepEqual(res.json(), first.json())
  assert.equal(res.json().imported, rows.length)

  const comparison = async (id, query = '') => {
    const r = await t.app.inject({ url: `/api/v1/monitors/${id}/comparison?${query}` })
    assert.equal(r.statusCode, 200, r.body)
    return countsOf(r.json())
  }
  const a = await comparison(source.id)
  assert.deepEqual(await comparison(copy.id), a)
  assert.deepEqual(await comparison(copy.id, 'view=repeat'), await comparison(source.id, 'view=repeat'))
  const unsupported = async (id) => (await t.app.inject({ url: `/api/v1/monitors/${id}/comparison?view=repeat` })).json().locations.find((l) => l.location_id === 'lab-eu')
  assert.equal((await unsupported(source.id)).verdict, 'h3_not_supported')
  assert.equal((await unsupported(copy.id)).verdict, 'h3_not_supported', 'failure_kind comes through the export')
  const { rows: reasons } = await t.db.query("SELECT monitor_id, details->'protocol_reason'->>'code' AS reason, count(*)::int AS n FROM results WHERE monitor_id = ANY($1) AND details ? 'protocol_reason' GROUP BY 1, 2 ORDER BY 1", [[source.id, copy.id]])
  assert.deepEqual(reasons.map((r) => [r.reason, r.n]), [['forced', 40], ['forced', 40]])
  assert.match(JSON.stringify(a), /"h2_ms":\d/, 'the comparison has figures, not only "insufficient data"')
  // The parallel probe's requests come through the export (its samples) and compare the same.
  const requests = await comparison(source.id, 'probe=parallel&metric=request_ms')
  assert.match(JSON.stringify(requests), /"h2_ms":\d/, 'the parallel probe has figures')
  assert.deepEqual(await comparison(copy.id, 'probe=parallel&metric=request_ms'), requests)

  // Trends read the rollups (merged with rows not folded yet): every
  // imported run is counted the moment the import returns.
  const trends = await t.app.inject({ url: `/api/v1/monitors/${copy.id}/trends?bucket=1h&percentiles=50` })
  assert.equal(trends.statusCode, 200, trends.body)
  assert.equal(sumRuns(trends.json()), 240, JSON.stringify(trends.json()).slice(0, 400))
})

test('an A/A monitor expects its protocol on both arms', async () => {
  const m = await newMonitor({ aa_protocol: 'h2' })
  const ok = await importInto(m.id, [
    { time: at(0), location_id: 'local', mode: 'h2', ttfb_ms: 50 },
    { time: at(0), location_id: 'local', mode: 'h3', ttfb_ms: 51 },
    { time: at(1), location_id: 'local', mode: 'h3', observed_protocol: 'h2', ttfb_ms: 52 }
  ])
  assert.equal(ok.statusCode, 200, ok.body)
  const { rows } = await t.db.query('SELECT mode, observed_protocol, protocol_ok, status FROM results WHERE monitor_id = $1 ORDER BY time, mode', [m.id])
  assert.deepEqual(rows.map((r) => [r.mode, r.observed_protocol, r.protocol_ok, r.status]),
    [['h2', 'h2', true, 'ok'], ['h3', 'h2', true, 'ok'], ['h3', 'h2', true, 'ok']])
  const wrong = await importInto(m.id, [{ time: at(2), location_id: 'local', mode: 'h3', observed_protocol: 'h3', status: 'ok' }])
  assert.equal(wrong.statusCode, 400, 'arm B of an h2 A/A monitor over h3 is no ok load')
  assert.equal(wrong.json().field, 'line 1: status')
})

test('a line longer than the limit is refused with its number as soon as it is too long, ended or not', async () => {
  const m = await newMonitor()
  const good = JSON.stringify(round(0)[0])
  const chunk = '9'.repeat(65536)
  // Sent in chunks as a socket delivers them: an ended line, and one that
  // never ends (a body up to the 64 MiB limit), which is refused after its
  // first MiB rather than at the body's limit.
  const bodies = {
    ended: function* () { yield `${good}\n{"time": "`; for (let i = 0; i < 20; i++) yield chunk; yield `"}\n${good}` },
    endless: function* () { yield `${good}\n{"time": "`; for (let i = 0; i < (IMPORT_MAX_BYTES / chunk.length) + 16; i++) yield chunk }
  }
  for (const [what, body] of Object.entries(bodies)) {
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/v1/monitors/${m.id}/results/import`,
      headers: { 'content-type': 'application/x-ndjson' },
      payload: Readable.from(body())
    })
    assert.equal(res.statusCode, 400, `${what}: ${res.body}`)
    assert.equal(res.json().message, `line 2 is longer than ${IMPORT_MAX_LINE_BYTES} characters`, what)
  }
  assert.deepEqual(await stored(m.id), { results: 0, jobs: 0 })
})

test('importing needs a write key and NDJSON', async () => {
  const m = await newMonitor()
  const body = ndjson(round(0))
  const read = await importInto(m.id, body, { authorization: `Bearer ${t.readKey}` })
  assert.equal(read.statusCode, 403)
  assert.equal((await importInto(m.id, body, { authorization: undefined })).statusCode, 401)
  const json = await t.app.inject({ method: 'POST', url: `/api/v1/monitors/${m.id}/results/import`, payload: round(0)[0] })
  assert.equal(json.statusCode, 415)
  assert.match(json.json().message, /application\/x-ndjson/)
  assert.equal((await importInto(987654, body)).statusCode, 404)
  assert.deepEqual(await stored(m.id), { results: 0, jobs: 0 })
})

test(`more than ${IMPORT_MAX_LINES} lines are refused with the limit`, async () => {
  const m = await newMonitor()
  let body = ''
  for (let i = 0; i <= IMPORT_MAX_LINES; i++) body += `{"time":"${new Date(BASE - i * 1000).toISOString()}","location_id":"local","mode":"h2"}\n`
  const res = await importInto(m.id, body)
  assert.equal(res.statusCode, 413)
  assert.match(res.json().message, /at most 100000 results per request/)
  assert.deepEqual(await stored(m.id), { results: 0, jobs: 0 })
})

/**
 * What two monitors holding the same results must agree on: counts and the
 * percentiles themselves. Bootstrap intervals are left out: their seed may
 * include the monitor.
 */
function countsOf (value) {
  if (Array.isArray(value)) return value.map(countsOf)
  if (value === null || typeof value !== 'object') return value
  const kept = Object.entries(value).filter(([k, v]) => (v !== null && typeof v === 'object') || COUNT_KEY.test(k))
  return Object.fromEntries(kept.map(([k, v]) => [k, countsOf(v)]))
}
const COUNT_KEY = /^(n_.*|runs|ok|total|errors|fallbacks|count|.*rounds.*|excluded.*|h2_ms|h3_ms|percentile|location_id)$/

/** Runs over every series and bucket of a trends answer, whatever its nesting. */
function sumRuns (value) {
  if (Array.isArray(value)) return value.reduce((n, v) => n + sumRuns(v), 0)
  if (value === null || typeof value !== 'object') return 0
  return Object.entries(value).reduce((n, [k, v]) => n + (k === 'runs' && typeof v === 'number' ? v : sumRuns(v)), 0)
}

test('over a socket, a bad line early in a large upload is answered while the rest drains, and the server stays up', async () => {
  const m = await newMonitor()
  await t.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = /** @type {import('node:net').AddressInfo} */ (t.app.server.address())
  const filler = `${JSON.stringify(round(0)[0])}\n`
  const body = Buffer.from('{"broken\n' + filler.repeat(Math.ceil(20e6 / filler.length)))
  const answer = await new Promise((resolve, reject) => {
    const req = http.request({
      port, method: 'POST', path: `/api/v1/monitors/${m.id}/results/import`,
      headers: { authorization: `Bearer ${t.writeKey}`, 'content-type': 'application/x-ndjson', 'content-length': body.length }
    }, (res) => {
      let text = ''
      res.on('data', (c) => { text += c })
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(text) }))
    })
    req.on('error', reject)
    req.end(body)
  })
  assert.equal(answer.status, 400)
  assert.equal(answer.body.line, 1)
  const ok = await fetch(`http://127.0.0.1:${port}/api/v1/monitors/${m.id}/results/import`, {
    method: 'POST', headers: { authorization: `Bearer ${t.writeKey}`, 'content-type': 'application/x-ndjson' }, body: ndjson(round(0))
  })
  assert.equal(ok.status, 200)
  assert.deepEqual(await ok.json(), { imported: 2, skipped_existing: 0, rounds: 1, added_locations: [] })
})

test('a body over the byte limit is refused with 413, announced or streamed', async () => {
  const m = await newMonitor()
  const announced = await importInto(m.id, 'x', { 'content-length': String(IMPORT_MAX_BYTES + 1) })
  assert.equal(announced.statusCode, 413)
  assert.equal(announced.json().field, 'body', announced.body)
  // Streamed without a length: blank lines, so only the byte count can stop it.
  const chunk = '\n'.repeat(1024 * 1024)
  const streamed = await t.app.inject({
    method: 'POST',
    url: `/api/v1/monitors/${m.id}/results/import`,
    headers: { 'content-type': 'application/x-ndjson' },
    payload: Readable.from((function* () { for (let i = 0; i < 70; i++) yield chunk })())
  })
  assert.equal(streamed.statusCode, 413, streamed.body)
  assert.match(streamed.json().message, /larger than 64 MiB/)
  assert.equal(streamed.json().field, 'body', streamed.body)
  assert.deepEqual(await stored(m.id), { results: 0, jobs: 0 })
})

test('a protocol however spelt is stored in one spelling, so the H3 shares count it', async () => {
  const m = await newMonitor({ modes: ['h2', 'h3', 'auto'] })
  const res = await importInto(m.id, [...round(0), { time: at(0), location_id: 'local', mode: 'auto', view: 'returning', observed_protocol: 'HTTP/3', ttfb_ms: 80 },
    ...round(1), { time: at(1), location_id: 'local', mode: 'auto', view: 'returning', observed_protocol: 'h3-29', ttfb_ms: 80 },
    ...round(2), { time: at(2), location_id: 'local', mode: 'auto', view: 'returning', observed_protocol: 'HTTP/2', ttfb_ms: 90 }])
  assert.equal(res.statusCode, 200, res.body)
  const { rows } = await t.db.query("SELECT observed_protocol FROM results WHERE monitor_id = $1 AND mode = 'auto' ORDER BY time", [m.id])
  assert.deepEqual(rows.map((r) => r.observed_protocol), ['h3', 'h3', 'h2'])
  // The auto arm forces none: an ok load of it must say what it came over, and is refused naming that field.
  const none = await importInto(m.id, [{ time: at(3), location_id: 'local', mode: 'auto', status: 'ok', ttfb_ms: 80 }])
  assert.equal(none.statusCode, 400, none.body)
  assert.equal(none.json().field, 'line 1: observed_protocol')
  assert.match(none.json().message, /observed_protocol is missing, but status ok says the run loaded over the protocol the browser chose/)
})
