// Alerts end to end, through the API over PostgreSQL: rounds imported with
// the import endpoint, rules evaluated by the real scheduler (its clock moved
// by the test), notifications sent to a real HTTP receiver on 127.0.0.1.
// Every test's data and clock lie after the previous test's, because the
// evaluator runs at most once per interval of that clock.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from './helpers/app.js'
import { startReceiver } from './helpers/receiver.js'
import { upsertLocation } from '../lib/locations.js'
import { createPool } from '../lib/db.js'
import { verifySignature } from '../lib/alert-channels.js'
import { createScheduler } from '../scheduler/scheduler.js'
import { scenario, CALIBRATION_LOCATIONS } from '../bench/lib/scenarios.js'

const MIN = 60e3
const HOUR = 3600e3
const SECRET = 'a-long-webhook-secret-1234'
// 20 hours ago, on a 5-minute boundary: room for every test's timeline.
const BASE = Math.floor((Date.now() - 20 * HOUR) / (5 * MIN)) * 5 * MIN
const [CAL_A, CAL_B, CAL_C] = CALIBRATION_LOCATIONS
const LOCATION_IDS = CALIBRATION_LOCATIONS.map((l) => l.id)

let t
let clock = new Date(BASE)
let scheduler
before(async () => {
  t = await createTestApp({ H3LENS_ALLOW_PRIVATE_TARGETS: 'true' })
  for (const l of CALIBRATION_LOCATIONS) await upsertLocation(t.db, { id: l.id, name: l.name, region: 'Calibration', kind: 'real', profile: {} })
  scheduler = newScheduler(t.db)
})
after(async () => { await t.close() })

function newScheduler (db) {
  return createScheduler({ db, config: { ...t.config, alertEvalS: 60 }, log: t.log, now: () => clock })
}

/** One scheduler tick with the clock at `ms`. */
async function tickAt (ms, s = scheduler) {
  clock = new Date(ms)
  return s.tick()
}

async function api (method, url, body) {
  const res = await t.app.inject({ method, url, payload: body })
  return { status: res.statusCode, body: res.body ? res.json() : null }
}

/**
 * A paused monitor (nothing is scheduled) with imported rounds: each part is
 * a scenario whose rounds are spread over [from, from + 1 h).
 * @param {{ scenario: ReturnType<typeof scenario>, from: number }[]} parts
 */
async function monitorWith (parts, extra = {}) {
  const created = await api('POST', '/api/v1/monitors', { url: 'https://alerts.h3lens.test/', label: 'alerts', locations: LOCATION_IDS, interval_s: 60, paused: true, ...extra })
  assert.equal(created.status, 201, JSON.stringify(created.body))
  const m = created.body
  for (const [i, { scenario: s, from }] of parts.entries()) {
    const rows = [...s.rows(`${m.id}-${i}`, from + 5e3, Math.floor(HOUR / s.rounds))]
    const lines = rows.map((r) => JSON.stringify(extra.aa_protocol ? { ...r, observed_protocol: extra.aa_protocol } : r))
    const res = await t.app.inject({ method: 'POST', url: `/api/v1/monitors/${m.id}/results/import`, payload: lines.join('\n') + '\n', headers: { 'content-type': 'application/x-ndjson' } })
    assert.equal(res.statusCode, 200, res.body)
  }
  return m
}

const identical = (name, locations = CALIBRATION_LOCATIONS) => scenario({ name, truth: 'identical', rounds: 300, locations })
const slower = (name, locations) => scenario({ name, truth: 'H3 30% slower', rounds: 300, gain: -0.3, locations })

async function webhook (receiver, name = 'ops') {
  const res = await api('POST', '/api/v1/channels', { kind: 'webhook', name, url: receiver.url, secret: SECRET, format: 'json' })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  return res.body
}

async function regressionRule (monitorId, channelId, extra = {}) {
  const res = await api('POST', '/api/v1/alert-rules', {
    kind: 'h3_regression', monitor_id: monitorId, percentile: 95, min_effect_pct: 10, window_s: 3600, evaluations: 3, severity: 'critical', channels: [channelId], ...extra
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  return res.body
}

const alertsOf = async (ruleId) => (await api('GET', `/api/v1/alerts?rule_id=${ruleId}`)).body

function assertSigned (req) {
  assert.ok(verifySignature(SECRET, req.headers['x-h3lens-timestamp'], req.body, req.headers['x-h3lens-signature']), 'valid X-H3lens-Signature')
  assert.ok(!verifySignature('another-secret-entirely', req.headers['x-h3lens-timestamp'], req.body, req.headers['x-h3lens-signature']))
}

test('an A/A monitor never fires a regression, over 30 sliding windows', async () => {
  const receiver = await startReceiver()
  const channel = await webhook(receiver, 'aa')
  const parts = [0, 1, 2, 3, 4, 5].map((h) => ({ scenario: scenario({ name: `aa-${h}`, truth: 'identical', rounds: 300, sigmaPath: 0.3, sigmaArm: 0.5 }), from: BASE + h * HOUR }))
  const m = await monitorWith(parts, { aa_protocol: 'h2' })
  const rule = await regressionRule(m.id, channel.id, { evaluations: 1, min_effect_pct: 2 })
  for (let k = 0; k <= 30; k++) await tickAt(BASE + HOUR + k * 10 * MIN)
  const { current, history } = await alertsOf(rule.id)
  assert.deepEqual(current.filter((a) => a.state === 'firing'), [])
  assert.deepEqual(history.filter((e) => e.state === 'firing'), [])
  assert.equal(receiver.requests.length, 0)
  // Evaluated, on full tables: every location ok, its p95 cell tested.
  const ok = (await api('GET', `/api/v1/alerts?rule_id=${rule.id}&state=ok`)).body.current
  assert.deepEqual(ok.map((a) => a.location_id).sort(), LOCATION_IDS)
  for (const a of ok) assert.ok(a.evidence.rounds_used >= 200 && a.evidence.p_adjusted !== null, JSON.stringify(a.evidence))
  await receiver.close()
})

test('H3 turning slower at one location fires one h3_regression with its evidence, and it resolves once when H3 recovers', async () => {
  const receiver = await startReceiver()
  const channel = await webhook(receiver)
  const start = BASE + 7 * HOUR
  const m = await monitorWith([
    { scenario: slower('slow-b', [CAL_B]), from: start },
    { scenario: identical('fine-ac', [CAL_A, CAL_C]), from: start },
    { scenario: identical('recovered'), from: start + 2 * HOUR }
  ])
  const rule = await regressionRule(m.id, channel.id)
  const slowEnd = start + HOUR

  await tickAt(slowEnd)
  let { current } = await alertsOf(rule.id)
  assert.deepEqual(current.map((a) => [a.location_id, a.state]), [[CAL_B.id, 'pending']], 'one breach of three: pending at cal-b only')
  await tickAt(slowEnd + 30e3)
  assert.equal((await alertsOf(rule.id)).history.length, 1, 'a tick before the interval is up does not evaluate')
  await tickAt(slowEnd + MIN)
  await tickAt(slowEnd + 2 * MIN)
  ;({ current } = await alertsOf(rule.id))
  assert.deepEqual(current.map((a) => [a.location_id, a.state]), [[CAL_B.id, 'firing']])
  const firing = current[0]
  assert.equal(firing.kind, 'h3_regression')
  assert.equal(firing.evidence.verdict, 'h3_slower')
  assert.equal(firing.evidence.percentile, 95)
  assert.ok(firing.evidence.delta_pct >= 10, JSON.stringify(firing.evidence))
  assert.ok(firing.evidence.ci_low_ms > 0)

  // The evidence is the dashboard's table for that window, cell for cell.
  const q = `from=${firing.evidence.from}&to=${firing.evidence.to}&metric=ttfb&percentiles=25,50,75,90,95,99&analysis=matched`
  const table = (await api('GET', `/api/v1/monitors/${m.id}/comparison?${q}`)).body
  const cell = table.locations.find((l) => l.location_id === CAL_B.id).rows.find((r) => r.percentile === 95)
  assert.equal(cell.verdict, 'h3_slower')
  assert.equal(cell.delta_ms, firing.evidence.delta_ms)
  assert.equal(cell.p_adjusted, firing.evidence.p_adjusted)
  assert.ok(firing.evidence.link.startsWith(`#/monitors/${m.id}?`) && firing.evidence.link.includes('percentile=95'))

  // Still firing: no second notification, nor after a restart of the scheduler.
  await tickAt(slowEnd + 3 * MIN)
  await tickAt(slowEnd + 4 * MIN, newScheduler(t.db))
  assert.equal(receiver.requests.length, 1)
  const [fired] = receiver.requests
  assertSigned(fired)
  assert.equal(fired.json.event, 'firing')
  assert.equal(fired.json.alert.location_id, CAL_B.id)
  assert.equal(fired.json.alert.monitor_id, m.id)
  assert.equal(fired.json.alert.evidence.delta_ms, firing.evidence.delta_ms)
  assert.match(fired.json.alert.summary, /HTTP\/3 slower than HTTP\/2 at p95 ttfb/)

  const metrics = (await t.app.inject({ url: '/metrics' })).body
  assert.match(metrics, new RegExp(`h3lens_alerts_firing\\{rule="${rule.id}",monitor="${m.id}",location="${CAL_B.id}"\\} 1`))

  // H3 recovers: three clear evaluations resolve it, once.
  const recovered = start + 3 * HOUR
  for (let k = 0; k < 5; k++) await tickAt(recovered + k * MIN)
  const after = await alertsOf(rule.id)
  assert.deepEqual(after.current.map((a) => [a.location_id, a.state]), [[CAL_B.id, 'resolved']])
  assert.deepEqual(after.history.map((e) => `${e.previous}→${e.state}`).reverse(), ['ok→pending', 'pending→firing', 'firing→resolved'])
  assert.deepEqual(receiver.requests.map((r) => r.json.event), ['firing', 'resolved'])
  assertSigned(receiver.requests[1])
  assert.doesNotMatch((await t.app.inject({ url: '/metrics' })).body, new RegExp(`h3lens_alerts_firing\\{rule="${rule.id}"`))
  await receiver.close()
})
