// A computed comparison is served again for up to H3LENS_COMPARISON_MAX_AGE_S
// (lib/analysis/comparison-cache.js), through the real API and PostgreSQL:
// what a dashboard user notices is how old an answer is (computed_at, Age),
// that it is never older than the maximum age, that an import shows at once,
// and that Cache-Control: no-cache computes it now.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { createTestApp } from './helpers/app.js'
import { createMonitor } from '../lib/store/monitors.js'
import { insertResults } from '../lib/store/results.js'

/** @type {Awaited<ReturnType<typeof createTestApp>>[]} */
const apps = []
after(async () => { for (const t of apps) await t.close() })
/** @param {Record<string, string>} [env] */
async function app (env) {
  const t = await createTestApp(env)
  apps.push(t)
  return t
}

/** A round of both arms stored as an agent's submission stores it. */
async function agentRound (t, monitorId, minutesAgo, h2 = 50, h3 = 40) {
  const { rows: [job] } = await t.db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at, state) VALUES ($1, 'local', now() - make_interval(mins => $2), 'done')
     RETURNING id, monitor_id, location_id, due_at`, [monitorId, minutesAgo])
  await insertResults(t.db, {
    job,
    agentId: null,
    results: [
      { mode: 'h2', status: 'ok', protocol_ok: true, observed_protocol: 'h2', ttfb_ms: h2 },
      { mode: 'h3', status: 'ok', protocol_ok: true, observed_protocol: 'h3', ttfb_ms: h3 }
    ]
  })
}

async function comparison (t, monitorId, { query = 'percentiles=50', headers = {} } = {}) {
  const res = await t.app.inject({ url: `/api/v1/monitors/${monitorId}/comparison?${query}`, headers })
  assert.equal(res.statusCode, 200, res.body)
  const body = res.json()
  return { body, age: Number(res.headers.age), computedAt: Date.parse(body.computed_at), matched: body.locations.find((l) => l.location_id === 'local').rounds.matched }
}

test('an answer is served again and says how old it is; no-cache and an import give a current one at once', async () => {
  const t = await app()
  const m = await createMonitor(t.db, { url: 'https://example.com/cached', locations: ['local'], interval_s: 60 }, { allowPrivateTargets: true })
  // One window for every question here, ending an hour from now: the
  // default one ends now, rounded up to 5 minutes, so two questions on either
  // side of a 5-minute mark are two windows, and the second is computed anew
  // (this test once met one, 0.2 s apart).
  const window = `to=${encodeURIComponent(new Date(Date.now() + 3600e3).toISOString())}`
  const ask = (/** @type {{ percentiles?: string, headers?: Record<string, string> }} */ { percentiles = '50', headers } = {}) =>
    comparison(t, m.id, { query: `percentiles=${percentiles}&${window}`, headers })
  await agentRound(t, m.id, 30)
  const first = await ask()
  assert.equal(first.matched, 1)
  assert.equal(first.age, 0)
  assert.ok(Math.abs(first.computedAt - Date.now()) < 10e3, first.body.computed_at)

  await agentRound(t, m.id, 20)
  const again = await ask()
  assert.equal(again.body.computed_at, first.body.computed_at, 'the same question within the maximum age is served again')
  assert.equal(again.matched, 1, 'as it was computed')
  assert.ok(again.age >= 0 && again.age <= 60, `Age: ${again.age}`)

  const fresh = await ask({ headers: { 'cache-control': 'no-cache' } })
  assert.equal(fresh.matched, 2, 'Cache-Control: no-cache computes it now')
  assert.ok(fresh.computedAt >= first.computedAt)
  assert.equal((await ask()).body.computed_at, fresh.body.computed_at, 'and the new answer is the one kept')

  const time = new Date(Date.now() - 10 * 60e3).toISOString()
  const lines = ['h2', 'h3'].map((mode) => JSON.stringify({ time, location_id: 'local', mode, status: 'ok', observed_protocol: mode, ttfb_ms: mode === 'h2' ? 60 : 45 }))
  const imported = await t.app.inject({ method: 'POST', url: `/api/v1/monitors/${m.id}/results/import`, payload: lines.join('\n'), headers: { 'content-type': 'application/x-ndjson' } })
  assert.equal(imported.statusCode, 200, imported.body)
  assert.equal((await ask()).matched, 3, 'an import is seen as soon as it returns')

  // Another question is another answer: nothing is borrowed from a neighbour.
  const p90 = await ask({ percentiles: '50,90' })
  assert.deepEqual(p90.body.percentiles, [50, 90])
  const patched = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { min_effect_pct: 7 } })
  assert.equal(patched.statusCode, 200, patched.body)
  assert.equal((await ask()).body.min_effect.pct, 7, 'a changed monitor is a new question')
})

test('no answer is older than the maximum age, and a watched one is refreshed in the background', async () => {
  const t = await app({ H3LENS_COMPARISON_MAX_AGE_S: '2' })
  const m = await createMonitor(t.db, { url: 'https://example.com/watched', locations: ['local'], interval_s: 60 }, { allowPrivateTargets: true })
  await agentRound(t, m.id, 60)
  let rounds = 1
  let served = 0
  const seen = new Set()
  const start = Date.now()
  while (Date.now() < start + 7000) {
    const asked = Date.now()
    const c = await comparison(t, m.id)
    assert.ok(asked - c.computedAt <= 2000, `an answer ${asked - c.computedAt} ms old was served (maximum 2 s)`)
    assert.ok(c.age <= 2, `Age: ${c.age}`)
    if (c.computedAt < asked) served++
    seen.add(c.matched)
    // Rounds keep arriving for 5 s, as from an agent.
    if (Date.now() < start + 5000) {
      await agentRound(t, m.id, 59 - rounds)
      rounds++
    }
    await sleep(300)
  }
  assert.ok(served > 0, 'some answers were served again')
  assert.ok(seen.size >= 3, `the answers followed the new rounds: saw ${[...seen]}`)
  // Once the rounds stop, the answer catches up within the maximum age.
  await sleep(2100)
  assert.equal((await comparison(t, m.id)).matched, rounds)
})

test('H3LENS_COMPARISON_MAX_AGE_S=0 computes every answer', async () => {
  const t = await app({ H3LENS_COMPARISON_MAX_AGE_S: '0' })
  const m = await createMonitor(t.db, { url: 'https://example.com/uncached', locations: ['local'], interval_s: 60 }, { allowPrivateTargets: true })
  for (let i = 1; i <= 3; i++) {
    await agentRound(t, m.id, 10 * i)
    const c = await comparison(t, m.id)
    assert.equal(c.matched, i)
    assert.equal(c.age, 0)
  }
})

test('a live window is computed ahead for its next 5-minute slot, so a dashboard does not wait when its window moves on', async () => {
  const { createComparisonCache } = await import('../lib/analysis/comparison-cache.js')
  const t = await app()
  const m = await createMonitor(t.db, { url: 'https://example.com/live', locations: ['local'], interval_s: 60 }, { allowPrivateTargets: true })
  await agentRound(t, m.id, 3)
  const slot = 5 * 60e3
  const to = Math.ceil(Date.now() / slot) * slot + slot // a window that ends in the future
  let clock = to - 30e3 // 30 s before its slot ends
  const cache = createComparisonCache({ maxAgeMs: 60e3, now: () => clock })
  const q = { monitor: m, metric: 'ttfb_ms', percentiles: [50], probe: 'page', view: 'first', from: new Date(to - 86400e3), to: new Date(to), analysis: 'matched', timeoutMs: 30000 }
  const first = await cache.answer(t.db, q)
  assert.equal(first.cached, false)
  assert.equal(cache.size, 2, 'the next slot\'s window is computed in the background')
  clock = to + 10e3
  const next = await cache.answer(t.db, { ...q, from: new Date(+q.from + slot), to: new Date(to + slot) })
  assert.equal(next.ageMs, 40e3, 'the moved window\'s answer was computed ahead, 30 s before its slot began')
  assert.equal(next.answer.locations.find((l) => l.location_id === 'local')?.rounds.matched, 1)
  // A window that ended long ago is not computed ahead.
  const past = { ...q, from: new Date(to - 3 * 86400e3), to: new Date(to - 2 * 86400e3) }
  await cache.answer(t.db, past)
  await sleep(300)
  assert.equal(cache.size, 3)
})
