// Paging through results with next_cursor returns every row exactly once,
// even when round times carry microseconds (they do: due times come from SQL).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from './helpers/app.js'
import { createMonitor } from '../lib/store/monitors.js'

let t
before(async () => { t = await createTestApp() })
after(async () => { await t.close() })

test('next_cursor pages through microsecond-precise times without skipping or repeating', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/page', locations: ['local'], interval_s: 60 }, { allowPrivateTargets: true })
  // Pairs of rounds 300 µs apart: same millisecond, different times.
  const { rows: jobs } = await t.db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at, state)
     SELECT $1, 'local', timestamptz '2026-01-01 00:00:00.000100+00' + make_interval(secs => (g / 2) * 60 + (g % 2) * 0.0003), 'done'
       FROM generate_series(0, 49) g RETURNING id, due_at`, [m.id])
  await t.db.query(
    `INSERT INTO results (job_id, monitor_id, location_id, time, mode, status, protocol_ok, ttfb_ms)
     SELECT j.id, $1, 'local', j.due_at, mode, 'ok', true, 100 FROM jobs j CROSS JOIN unnest('{h2,h3}'::text[]) mode
      WHERE j.monitor_id = $1`, [m.id])
  const seen = []
  let cursor = null
  for (let page = 0; page < 20; page++) {
    const res = await t.app.inject({ url: `/api/v1/monitors/${m.id}/results?limit=7${cursor ? `&cursor=${cursor}` : ''}` })
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json()
    seen.push(...body.items.map((r) => r.id))
    assert.ok(body.items.every((r) => !('cursor_time' in r)))
    cursor = body.next_cursor
    if (!cursor) break
  }
  assert.equal(seen.length, jobs.length * 2)
  assert.equal(new Set(seen).size, seen.length)
  // Made by hand: not a cursor, a date that does not exist, an offset or an
  // id PostgreSQL refuses. Each is a 400 naming the cursor, never a 500.
  for (const text of ['nope', '2026-02-30 00:00:00|1', '2026-13-01 00:00:00|1', '0000-01-01 00:00:00|1', '2026-01-01 24:00:00|1',
    '2026-01-01 00:00:00+99:99|1', '2026-01-01 00:00:00|99999999999999999999', '2026-01-01 00:00:00|1|2']) {
    const bad = await t.app.inject({ url: `/api/v1/monitors/${m.id}/results?cursor=${Buffer.from(text).toString('base64url')}` })
    assert.equal(bad.statusCode, 400, `${text}: ${bad.body}`)
    assert.equal(bad.json().field, 'cursor')
    assert.match(bad.json().message, /cursor is not valid/)
  }
  // A leap day and an offset PostgreSQL prints are a cursor like any other.
  const leap = await t.app.inject({ url: `/api/v1/monitors/${m.id}/results?cursor=${Buffer.from('2028-02-29 12:00:00.5+05:30|1').toString('base64url')}` })
  assert.equal(leap.statusCode, 200, leap.body)
})
