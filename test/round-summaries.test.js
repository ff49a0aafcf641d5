// Round summaries (migration 013) follow the results they summarise: a
// round whose arms are stored in separate inserts is one matched round of
// the comparison, and a sample that is not a number neither fails the insert
// nor reaches the statistics.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from './helpers/app.js'
import { createMonitor } from '../lib/store/monitors.js'
import { insertResults } from '../lib/store/results.js'

let t
before(async () => { t = await createTestApp() })
after(async () => { await t.close() })

async function newRound (monitorId, minutesAgo) {
  const { rows: [job] } = await t.db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at, state) VALUES ($1, 'local', now() - make_interval(mins => $2), 'done')
     RETURNING id, monitor_id, location_id, due_at`, [monitorId, minutesAgo])
  return job
}

// no-cache: each read must see the rounds just stored (test/comparison-cache.test.js covers the cache).
const comparison = async (m, metric) => (await t.app.inject({ url: `/api/v1/monitors/${m.id}/comparison?metric=${metric}&percentiles=50`, headers: { 'cache-control': 'no-cache' } })).json()
  .locations.find((l) => l.location_id === 'local')

test('a round whose arms are stored one at a time is one matched round', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/split', locations: ['local'], interval_s: 60 }, { allowPrivateTargets: true })
  const job = await newRound(m.id, 5)
  await insertResults(t.db, { job, agentId: null, results: [{ mode: 'h2', status: 'ok', protocol_ok: true, observed_protocol: 'h2', ttfb_ms: 50 }] })
  let local = await comparison(m, 'ttfb')
  assert.deepEqual([local.rounds.total, local.rounds.matched, local.rounds.excluded], [1, 0, [{ h2: 'ok', h3: 'missing', rounds: 1 }]])
  await insertResults(t.db, { job, agentId: null, results: [{ mode: 'h3', status: 'ok', protocol_ok: true, observed_protocol: 'h3', ttfb_ms: 40 }] })
  local = await comparison(m, 'ttfb')
  assert.deepEqual([local.rounds.total, local.rounds.matched, local.rounds.excluded], [1, 1, []])
  assert.equal(local.rows[0].delta_ms, -10)
})

test('a sample that is not a number is stored with its result and left out of the comparison', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/odd', locations: ['local'], interval_s: 60, probes: ['parallel'] }, { allowPrivateTargets: true })
  const job = await newRound(m.id, 5)
  const result = (mode, samples) => ({ mode, probe: 'parallel', status: 'ok', protocol_ok: true, observed_protocol: mode, details: { samples } })
  const inserted = await insertResults(t.db, { job, agentId: null, results: [result('h2', [10, 'fast', 12]), result('h3', [9, '1e999', 11])] })
  assert.equal(inserted.length, 2)
  const local = await comparison(m, 'request')
  assert.equal(local.rounds.matched, 1)
  assert.deepEqual([local.n_h2, local.n_h3], [2, 2])
})
