// Alerts end to end, through the API over PostgreSQL: rounds imported with
// the import endpoint, rules evaluated by the real scheduler (its clock moved
// by the test), notifications sent to a real HTTP receiver on 127.0.0.1.
// Every test's data and clock lie after the previous test's, because the
// evaluator runs at most once per interval of that clock.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from './helpers/app.js'
import { startReceiver } from './helpers/receiver.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createPool } from '../lib/runtime/db.js'
import { slackBody, verifySignature } from '../lib/store/alert-channels.js'
import { createScheduler } from '../scheduler/scheduler.js'
import { deliverDue, enqueueDeliveries } from '../lib/store/alert-deliveries.js'
import { targetPolicy } from '../lib/measurement/targets.js'
import { scenario, CALIBRATION_LOCATIONS } from '../dev/calibration-scenarios.js'

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
 * @param {Record<string, any>} [extra] more of the monitor's fields
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

  // Filters: by monitor, location and state, on the current list and the history alike.
  const filtered = (await api('GET', `/api/v1/alerts?monitor_id=${m.id}&location_id=${CAL_B.id}&state=firing`)).body
  // The default p95 regression rule (same condition, every monitor, no channel) fires here too.
  const defaultRule = (await api('GET', '/api/v1/alert-rules')).body.items[0]
  assert.deepEqual(filtered.current.map((a) => a.rule_id).sort((a, b) => a - b), [defaultRule.id, rule.id])
  assert.deepEqual(filtered.history.map((e) => e.state), ['firing', 'firing'])
  assert.deepEqual((await api('GET', `/api/v1/alerts?monitor_id=${m.id}&location_id=${CAL_A.id}&state=firing`)).body, { current: [], history: [] })
  assert.equal((await api('GET', '/api/v1/alerts?state=burning')).status, 400)

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

test('a receiver that is down gets every delivery exactly once when it comes back, signed, each attempt logged', async () => {
  const receiver = await startReceiver()
  await receiver.stop()
  const channel = await webhook(receiver, 'down')
  const start = BASE + 11 * HOUR
  const m = await monitorWith([
    { scenario: slower('down-b', [CAL_B]), from: start },
    { scenario: identical('down-ac', [CAL_A, CAL_C]), from: start },
    { scenario: identical('down-recovered'), from: start + 2 * HOUR }
  ])
  const rule = await regressionRule(m.id, channel.id, { evaluations: 1 })
  for (let k = 0; k <= 12; k++) await tickAt(start + HOUR + k * 5 * MIN)
  for (let k = 0; k <= 12; k++) await tickAt(start + 3 * HOUR + k * 5 * MIN)
  const history = (await alertsOf(rule.id)).history
  assert.deepEqual(history.map((e) => e.state).reverse(), ['firing', 'resolved'])

  const down = (await api('GET', `/api/v1/channels/${channel.id}/deliveries`)).body.items
  assert.deepEqual(down.map((d) => [d.kind, d.status]).sort(), [['firing', 'pending'], ['resolved', 'pending']])
  for (const d of down) {
    assert.ok(d.attempts >= 3, `retried: ${d.attempts}`)
    assert.equal(d.attempt_log.length, d.attempts)
    for (const a of d.attempt_log) assert.ok(a.status_code === null && a.error, JSON.stringify(a))
    // Back-off: the next attempt waits 30 s × 2^(attempts − 1), so most ticks pass it by.
    assert.ok(d.attempts < 26, `${d.attempts} attempts in 26 ticks`)
    const wait = +new Date(d.next_attempt_at) - +new Date(d.attempt_log.at(-1).at)
    assert.equal(wait, Math.min(3600, 30 * 2 ** (d.attempts - 1)) * 1000)
  }
  assert.equal(receiver.requests.length, 0)

  // The receiver comes back, and h3lens restarted meanwhile (a new scheduler): the outbox is in PostgreSQL.
  await receiver.start()
  const restarted = newScheduler(t.db)
  for (let k = 0; k < 6; k++) await tickAt(start + 5 * HOUR + k * 5 * MIN, restarted)
  assert.deepEqual(receiver.requests.map((r) => r.json.event).sort(), ['firing', 'resolved'])
  for (const r of receiver.requests) assertSigned(r)
  const ids = receiver.requests.map((r) => Number(r.headers['x-h3lens-delivery'])).sort()
  assert.deepEqual(ids, down.map((d) => d.id).sort())
  const back = (await api('GET', `/api/v1/channels/${channel.id}/deliveries`)).body.items
  for (const d of back) {
    assert.equal(d.status, 'delivered')
    assert.deepEqual(d.body, receiver.requests.find((r) => r.headers['x-h3lens-delivery'] === String(d.id))?.json)
    assert.equal(d.attempt_log.at(-1).status_code, 204)
  }
  await receiver.close()
})

test('a slow receiver holds a tick for at most its time budget, and each attempt is logged at the time it was sent', async () => {
  const receiver = await startReceiver({ delayMs: 1500 })
  try {
    const channel = await webhook(receiver, 'slow')
    const now = new Date()
    for (let n = 0; n < 3; n++) await enqueueDeliveries(/** @type {any} */ (t.db), { eventId: /** @type {any} */ (null), channels: [channel.id], body: { version: 1, event: 'firing', n }, now })
    const policy = targetPolicy(t.config)
    // A budget of 1 s: the first answer takes 1.5 s, so the tick starts no second one.
    assert.deepEqual(await deliverDue(t.db, { now, budgetMs: 1000, policy }), { delivered: 1, failed: 0 })
    assert.deepEqual(await deliverDue(t.db, { now: new Date(), policy }), { delivered: 2, failed: 0 })
    const sent = (await api('GET', `/api/v1/channels/${channel.id}/deliveries`)).body.items
      .map((d) => +new Date(d.attempt_log[0].at)).sort((a, b) => a - b)
    assert.equal(sent.length, 3)
    assert.ok(sent[2] - sent[1] >= 1400, `the two of one tick logged ${sent[2] - sent[1]} ms apart, as they were sent`)
    assert.deepEqual(receiver.requests.map((r) => r.json.n), [0, 1, 2], 'in order')
  } finally {
    await receiver.close()
  }
})

test('two scheduler replicas evaluate once per interval and send no duplicates', async () => {
  const receiver = await startReceiver({ delayMs: 200 })
  const channel = await webhook(receiver, 'replicas')
  const start = BASE + 16 * HOUR
  const m = await monitorWith([
    { scenario: slower('rep-b', [CAL_B]), from: start },
    { scenario: identical('rep-ac', [CAL_A, CAL_C]), from: start },
    { scenario: identical('rep-recovered'), from: start + 2 * HOUR }
  ])
  const rule = await regressionRule(m.id, channel.id)
  const other = createPool(t.db.options.connectionString)
  try {
    const a = newScheduler(t.db)
    const b = newScheduler(other)
    const both = async (ms) => {
      clock = new Date(ms)
      const [x, y] = await Promise.all([a.tick(), b.tick()])
      assert.ok(!(x.alerts.evaluated && y.alerts.evaluated), 'only one replica evaluates a given interval')
    }
    for (let k = 0; k < 5; k++) await both(start + HOUR + k * MIN)
    for (let k = 0; k < 5; k++) await both(start + 3 * HOUR + k * MIN)
  } finally {
    await other.end()
  }
  const history = (await alertsOf(rule.id)).history
  assert.deepEqual(history.map((e) => e.state).reverse(), ['pending', 'firing', 'resolved'])
  assert.deepEqual(receiver.requests.map((r) => r.json.event), ['firing', 'resolved'])
  assert.equal(new Set(receiver.requests.map((r) => r.headers['x-h3lens-delivery'])).size, 2)
  await receiver.close()
})

test('H3 failing at one location fires h3_failure and error_rate there; a threshold above the rate does not', async () => {
  const start = BASE + 18 * HOUR
  const failing = scenario({ name: 'h3-fails-c', truth: 'H3 fails 30% at cal-c', rounds: 300, fails: ({ mode, location, random }) => mode === 'h3' && location === CAL_C.id && random() < 0.3 })
  const m = await monitorWith([{ scenario: failing, from: start }])
  const rule = async (body) => (await api('POST', '/api/v1/alert-rules', { monitor_id: m.id, window_s: 7200, evaluations: 1, ...body })).body
  const failure = await rule({ kind: 'h3_failure', threshold_pct: 5 })
  const errors = await rule({ kind: 'error_rate', threshold_pct: 10 })
  const high = await rule({ kind: 'h3_failure', threshold_pct: 50 })
  await tickAt(BASE + 19 * HOUR + 10 * MIN)
  const f = (await alertsOf(failure.id)).current
  assert.deepEqual(f.map((a) => [a.location_id, a.state]), [[CAL_C.id, 'firing']])
  assert.equal(f[0].evidence.failure_verdict, 'h3_fails_more')
  assert.ok(f[0].evidence.h3_lost_pct > 20 && f[0].evidence.h3_lost_pct < 40, JSON.stringify(f[0].evidence))
  assert.deepEqual((await alertsOf(errors.id)).current.map((a) => [a.location_id, a.state]), [[CAL_C.id, 'firing']])
  assert.deepEqual((await alertsOf(high.id)).current, [])

  // A rule that stops covering the location resolves its alert there at the next evaluation, and says why.
  assert.equal((await api('PATCH', `/api/v1/alert-rules/${failure.id}`, { locations: [CAL_A.id] })).status, 200)
  await tickAt(BASE + 19 * HOUR + 12 * MIN)
  const moved = (await alertsOf(failure.id)).current.find((a) => a.location_id === CAL_C.id)
  assert.equal(moved?.state, 'resolved')
  assert.match(moved.evidence.unwatched, /^no longer watched: the rule or its monitor no longer covers this location/)
  // A firing rule that is deleted resolves first, with its notification.
  const closed = (await api('POST', '/api/v1/channels', { kind: 'webhook', name: 'closed port', url: 'http://127.0.0.1:9/hook', secret: SECRET })).body
  assert.equal((await api('PATCH', `/api/v1/alert-rules/${errors.id}`, { channels: [closed.id] })).status, 200)
  assert.equal((await api('DELETE', `/api/v1/alert-rules/${errors.id}`)).status, 204)
  const { rows } = await t.db.query('SELECT kind, body FROM alert_deliveries WHERE channel_id = $1', [closed.id])
  assert.deepEqual(rows.map((r) => [r.kind, r.body.alert.location_id, r.body.alert.summary]), [['resolved', CAL_C.id, 'The rule was deleted; resolved without a new observation']])
  assert.equal((await api('DELETE', `/api/v1/channels/${closed.id}`)).status, 204)
})

test('a short window asks more of the failure test: evidence that passes the dashboard\'s 0.05 fires a day-long rule, not a 2-hour one, which slides past far more windows', async () => {
  const start = BASE + 18 * HOUR
  // H3 alone fails 7 of 300 loads at cal-c: McNemar's p 0.016, 0.031 corrected over the locations.
  const failing = scenario({ name: 'h3-fails-7', truth: 'H3 fails 7 loads at cal-c', rounds: 300, fails: ({ mode, location, i }) => mode === 'h3' && location === CAL_C.id && i % 43 === 0 })
  const m = await monitorWith([{ scenario: failing, from: start }])
  const rule = async (/** @type {number} */ windowS) => (await api('POST', '/api/v1/alert-rules', { monitor_id: m.id, kind: 'h3_failure', threshold_pct: 2, window_s: windowS, evaluations: 1 })).body
  const day = await rule(86400)
  const short = await rule(7200)
  await tickAt(start + HOUR + 15 * MIN)
  const fired = (await alertsOf(day.id)).current
  assert.deepEqual(fired.map((a) => [a.location_id, a.state]), [[CAL_C.id, 'firing']])
  assert.equal(fired[0].evidence.level, 0.05)
  assert.ok(fired[0].evidence.failure_p_adjusted > 0.01 && fired[0].evidence.failure_p_adjusted < 0.05, JSON.stringify(fired[0].evidence))
  assert.deepEqual((await alertsOf(short.id)).current, [], 'at 0.05 × 2 h / 24 h')
})

/**
 * A monitor at one location, and a location_silent rule (15 minutes, one
 * evaluation) on it that notifies a receiver of its own.
 * @param {string} name
 * @param {string} location
 * @param {number} intervalS
 */
async function silentRule (name, location, intervalS) {
  const receiver = await startReceiver()
  const channel = await webhook(receiver, name)
  const created = await api('POST', '/api/v1/monitors', { url: `https://${name}.h3lens.test/`, label: name, locations: [location], interval_s: intervalS })
  assert.equal(created.status, 201)
  const rule = (await api('POST', '/api/v1/alert-rules', { kind: 'location_silent', monitor_id: created.body.id, window_s: 900, evaluations: 1, channels: [channel.id] })).body
  return { receiver, monitor: created.body, rule }
}

test('a location with due rounds and no results goes silent', async () => {
  const { receiver, rule } = await silentRule('silent', CAL_A.id, 60)
  await tickAt(Date.now()) // schedules the first round; no agent answers
  assert.deepEqual((await alertsOf(rule.id)).current, [], 'rounds due for less than 15 minutes are not silence')
  await tickAt(Date.now() + 16 * MIN)
  const { current } = await alertsOf(rule.id)
  assert.deepEqual(current.map((a) => [a.location_id, a.state, a.kind]), [[CAL_A.id, 'firing', 'location_silent']])
  assert.ok(current[0].evidence.due_rounds >= 1)
  assert.deepEqual(receiver.requests.map((r) => r.json.alert.kind), ['location_silent'])
  await receiver.close()
})

test('a location that answered its hourly round is not silent: a round is answered by its own result, whenever it was due', async () => {
  const { receiver, monitor, rule } = await silentRule('hourly', CAL_B.id, 3600)
  const start = Date.now()
  await tickAt(start) // schedules the hour's round
  const token = await t.agentToken(CAL_B.id)
  const claim = await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: { authorization: `Bearer ${token}` }, payload: { limit: 5 } })
  const jobs = claim.json().jobs.filter((/** @type {any} */ j) => j.monitor_id === monitor.id)
  assert.equal(jobs.length, 1, claim.body)
  const stored = await t.app.inject({
    method: 'POST', url: `/api/v1/agent/jobs/${jobs[0].id}/results`, headers: { authorization: `Bearer ${token}` },
    payload: { results: ['h2', 'h3'].map((mode) => ({ mode, status: 'ok', protocol_ok: true, observed_protocol: mode, ttfb_ms: 100, load_ms: 200 })) }
  })
  assert.equal(stored.statusCode, 200, stored.body)
  // 16 to 29 minutes later the round lies between 2 and 1 windows ago; the next is not due for half an hour.
  for (const later of [16, 22, 29]) await tickAt(start + later * MIN)
  const { current, history } = await alertsOf(rule.id)
  assert.deepEqual([current, history.filter((e) => e.state === 'firing')], [[], []], 'never fired')
  // Evaluated, and found the round answered.
  const ok = (await api('GET', `/api/v1/alerts?rule_id=${rule.id}&state=ok`)).body.current
  assert.deepEqual(ok.map((a) => [a.location_id, a.evidence.due_rounds, a.evidence.answered_rounds]), [[CAL_B.id, 1, 1]])
  assert.equal(receiver.requests.length, 0)
  await receiver.close()
})

test('rules and channels: defaults, the kept shapes, secrets never returned, send test, and bad input named', async () => {
  const rules = (await api('GET', '/api/v1/alert-rules')).body.items
  const defaults = rules.slice(0, 3).map(({ kind, percentile, min_effect_pct, threshold_pct, window_s, evaluations, monitor_id, channels }) =>
    ({ kind, percentile, min_effect_pct, threshold_pct, window_s, evaluations, monitor_id, channels }))
  assert.deepEqual(defaults, [
    // p95 needs 200 rounds per location in the window: a day holds them at the default interval.
    { kind: 'h3_regression', percentile: 95, min_effect_pct: 10, threshold_pct: null, window_s: 86400, evaluations: 3, monitor_id: null, channels: [] },
    { kind: 'h3_failure', percentile: null, min_effect_pct: null, threshold_pct: 5, window_s: 3600, evaluations: 3, monitor_id: null, channels: [] },
    { kind: 'location_silent', percentile: null, min_effect_pct: null, threshold_pct: null, window_s: 900, evaluations: 1, monitor_id: null, channels: [] }
  ])

  const receiver = await startReceiver()
  const channel = await webhook(receiver, 'shapes')
  assert.equal(channel.secret, undefined)
  for (const c of (await api('GET', '/api/v1/channels')).body.items) assert.equal(c.secret, undefined)
  assert.equal((await api('GET', `/api/v1/channels/${channel.id}`)).body.secret, undefined)
  const sent = await api('POST', `/api/v1/channels/${channel.id}/test`)
  assert.deepEqual([sent.status, sent.body.ok, sent.body.status_code], [200, true, 204])
  assert.equal(receiver.requests.at(-1)?.json.event, 'test')
  assertSigned(receiver.requests.at(-1))
  await receiver.stop()
  const failed = await api('POST', `/api/v1/channels/${channel.id}/test`)
  assert.deepEqual([failed.body.ok, failed.body.status_code], [false, null])
  assert.ok(failed.body.error)

  await receiver.start()
  // Slack reads <…> as a mention or a link: a name is text, escaped as Slack asks.
  const slack = await api('POST', '/api/v1/channels', { kind: 'webhook', name: 'slack <!channel> & <https://evil.example|docs>', url: receiver.url, secret: SECRET, format: 'slack' })
  assert.equal((await api('POST', `/api/v1/channels/${slack.body.id}/test`)).body.ok, true)
  assert.deepEqual(receiver.requests.at(-1)?.json, { text: 'h3lens test notification from channel "slack &lt;!channel&gt; &amp; &lt;https://evil.example|docs&gt;"' })
  const firing = slackBody({ event: 'firing', alert: { severity: 'warning', summary: 'H3 slower on <b>', monitor_label: '<!here> shop', location_id: 'lab-eu', evidence_url: 'https://h3lens.example/#/m/1?a=1&b=2' } })
  assert.equal(firing.text, ':rotating_light: [warning] FIRING: H3 slower on &lt;b&gt; — &lt;!here&gt; shop at lab-eu <https://h3lens.example/#/m/1?a=1&b=2|evidence>')
  assertSigned(receiver.requests.at(-1))

  const slackish = await api('POST', '/api/v1/channels', { kind: 'webhook', name: 'token in path', url: `${receiver.url}/T000/B000/XXXXtoken?x=1`, secret: SECRET })
  assert.equal(slackish.body.url, `http://127.0.0.1:${new URL(receiver.url).port}/hook/…`, 'a token in the URL is not shown')
  // A token in the query alone: the address and "…", one slash.
  const queryOnly = await api('POST', '/api/v1/channels', { kind: 'webhook', name: 'query token', url: `http://127.0.0.1:${new URL(receiver.url).port}?token=SECRET`, secret: SECRET })
  assert.equal(queryOnly.body.url, `http://127.0.0.1:${new URL(receiver.url).port}/…`)
  assert.equal((await api('DELETE', `/api/v1/channels/${queryOnly.body.id}`)).status, 204)
  assert.equal((await api('POST', `/api/v1/channels/${slackish.body.id}/test`)).body.ok, true, 'but it is used')

  const patched = await api('PATCH', `/api/v1/channels/${channel.id}`, { name: 'renamed' })
  assert.equal(patched.body.name, 'renamed')

  const rule = { kind: 'h3_failure', threshold_pct: 5, window_s: 3600, evaluations: 2, channels: [channel.id] }
  const bad = [
    [{ ...rule, bogus: 1 }, 'bogus'],
    [{ ...rule, threshold_pct: 150 }, 'threshold_pct'],
    [{ ...rule, threshold_pct: 0 }, 'threshold_pct'],
    [{ ...rule, threshold_pct: undefined }, 'threshold_pct'],
    [{ ...rule, percentile: 95 }, 'percentile'],
    [{ ...rule, window_s: 10 }, 'window_s'],
    [{ ...rule, evaluations: 0 }, 'evaluations'],
    [{ ...rule, severity: 'meh' }, 'severity'],
    [{ ...rule, monitor_id: 99999 }, 'monitor_id'],
    [{ ...rule, locations: ['nowhere'] }, 'locations'],
    [{ ...rule, channels: [99999] }, 'channels'],
    [{ kind: 'h3_regression', percentile: 100, min_effect_pct: 10, window_s: 3600 }, 'percentile'],
    [{ kind: 'h3_regression', percentile: 95, window_s: 3600 }, 'min_effect_pct'],
    [{ kind: 'h3_regression', percentile: 95, min_effect_pct: -5, window_s: 3600 }, 'min_effect_pct'],
    [{ kind: 'nope', window_s: 3600 }, 'kind']
  ]
  for (const [body, field] of bad) {
    const res = await api('POST', '/api/v1/alert-rules', body)
    assert.equal(res.status, 400, `${JSON.stringify(body)} → ${JSON.stringify(res.body)}`)
    // An unknown field is named in the message, like the other endpoints' (see api/plugins/errors.js).
    if (field === 'bogus') assert.match(res.body.message, /unknown field "bogus"/)
    else assert.equal(res.body.field, field, `${JSON.stringify(body)} → ${JSON.stringify(res.body)}`)
  }
  const good = await api('POST', '/api/v1/alert-rules', rule)
  assert.equal(good.status, 201)
  assert.equal((await api('PATCH', `/api/v1/alert-rules/${good.body.id}`, { threshold_pct: 101 })).body.field, 'threshold_pct')
  const seven = await api('PATCH', `/api/v1/alert-rules/${good.body.id}`, { threshold_pct: 7 })
  assert.equal(seven.body.threshold_pct, 7, JSON.stringify(seven.body))
  assert.equal((await api('DELETE', `/api/v1/channels/${channel.id}`)).status, 204)
  assert.deepEqual((await api('GET', `/api/v1/alert-rules/${good.body.id}`)).body.channels, [], 'a deleted channel leaves its rules')
  assert.equal((await api('DELETE', `/api/v1/alert-rules/${good.body.id}`)).status, 204)

  // A rule whose monitor is deleted stays editable; naming a deleted monitor is refused.
  const gone = await api('POST', '/api/v1/monitors', { url: 'https://example.com/gone', locations: ['local'], paused: true })
  assert.equal(gone.status, 201, JSON.stringify(gone.body))
  // A regression rule must watch a probe its monitor runs (a page-only monitor here), or it could never compare anything.
  const regression = { kind: 'h3_regression', monitor_id: gone.body.id, min_effect_pct: 10, window_s: 3600 }
  const upload = await api('POST', '/api/v1/alert-rules', { ...regression, metric: 'upload_ms' })
  assert.deepEqual([upload.status, upload.body.field], [400, 'metric'], JSON.stringify(upload.body))
  assert.match(upload.body.message, /does not run the upload probe \(its probes: page\)/)
  const step = await api('POST', '/api/v1/alert-rules', { ...regression, metric: 'step_ms', probe: 'journey:zzz' })
  assert.deepEqual([step.status, step.body.field], [400, 'probe'], JSON.stringify(step.body))
  const page = await api('POST', '/api/v1/alert-rules', { ...regression, metric: 'ttfb_ms' })
  assert.equal(page.status, 201, JSON.stringify(page.body))
  assert.equal((await api('DELETE', `/api/v1/alert-rules/${page.body.id}`)).status, 204)
  // A running monitor at the default 5-minute interval makes 12 rounds an
  // hour: p95 (200 rounds) over an hour could never be tested; p50 over
  // 100 minutes (20 rounds) can. A paused monitor's rounds are imported.
  const running = await api('POST', '/api/v1/monitors', { url: 'https://example.com/running', locations: ['local'], interval_s: 300 })
  assert.equal(running.status, 201, JSON.stringify(running.body))
  const dead = await api('POST', '/api/v1/alert-rules', { ...regression, monitor_id: running.body.id })
  assert.deepEqual([dead.status, dead.body.field], [400, 'window_s'], JSON.stringify(dead.body))
  assert.match(dead.body.message, /p95 is tested only with 200 rounds per location in the window, and monitor \d+ runs 12 in 3600 s \(one every 300 s\), so this rule could never fire: give window_s at least 60000/)
  const p50 = await api('POST', '/api/v1/alert-rules', { ...regression, monitor_id: running.body.id, percentile: 50, window_s: 6000 })
  assert.equal(p50.status, 201, JSON.stringify(p50.body))
  // A location the monitor does not run at would never be evaluated.
  const elsewhere = await api('PATCH', `/api/v1/alert-rules/${p50.body.id}`, { locations: ['local', CAL_A.id] })
  assert.deepEqual([elsewhere.status, elsewhere.body.field], [400, 'locations'], JSON.stringify(elsewhere.body))
  assert.match(elsewhere.body.message, new RegExp(`monitor \\d+ does not run at ${CAL_A.id} \\(its locations: local\\)`))
  const narrowed = await api('PATCH', `/api/v1/alert-rules/${p50.body.id}`, { window_s: 3600 })
  assert.deepEqual([narrowed.status, narrowed.body.field], [400, 'window_s'], 'a patch of the window is checked too')
  assert.equal((await api('DELETE', `/api/v1/alert-rules/${p50.body.id}`)).status, 204)
  assert.equal((await api('DELETE', `/api/v1/monitors/${running.body.id}`)).status, 204)
  // Rules read Chromium's rounds: a monitor that runs in Firefox only could never fire one.
  const firefoxOnly = await api('POST', '/api/v1/monitors', { url: 'https://example.com/ff', locations: ['local'], browsers: ['firefox'], paused: true })
  assert.equal(firefoxOnly.status, 201, JSON.stringify(firefoxOnly.body))
  const onFirefox = await api('POST', '/api/v1/alert-rules', { kind: 'h3_failure', monitor_id: firefoxOnly.body.id, threshold_pct: 5, window_s: 3600 })
  assert.deepEqual([onFirefox.status, onFirefox.body.field], [400, 'monitor_id'], JSON.stringify(onFirefox.body))
  assert.match(onFirefox.body.message, /runs in firefox only; alert rules read Chromium's rounds/)
  assert.equal((await api('DELETE', `/api/v1/monitors/${firefoxOnly.body.id}`)).status, 204)
  const orphan = await api('POST', '/api/v1/alert-rules', { kind: 'h3_failure', monitor_id: gone.body.id, threshold_pct: 5, window_s: 3600 })
  assert.equal(orphan.status, 201, JSON.stringify(orphan.body))
  assert.equal((await api('DELETE', `/api/v1/monitors/${gone.body.id}`)).status, 204)
  const edited = await api('PATCH', `/api/v1/alert-rules/${orphan.body.id}`, { description: 'kept' })
  assert.equal(edited.status, 200, JSON.stringify(edited.body))
  assert.equal(edited.body.description, 'kept')
  const renamed = await api('PATCH', `/api/v1/alert-rules/${orphan.body.id}`, { monitor_id: gone.body.id })
  assert.deepEqual([renamed.status, renamed.body.field], [400, 'monitor_id'])
  assert.equal((await api('DELETE', `/api/v1/alert-rules/${orphan.body.id}`)).status, 204)

  /** @type {[Record<string, any>, string][]} */
  const badChannels = [
    [{ url: 'ftp://example.com/' }, 'url'],
    [{ url: 'not a url' }, 'url'],
    [{ secret: 'short' }, 'secret'],
    [{ format: 'xml' }, 'format'],
    [{ name: '' }, 'name'],
    // A name is one line; port 0 is no receiver's.
    [{ name: 'ops\nteam' }, 'name'],
    [{ url: 'https://hooks.example.com:0/h' }, 'url'],
    [{ url: 'https://hooks.example.com/h#token' }, 'url'],
    [{ secret: ' '.repeat(20) }, 'secret'],
    [{ kind: 'email' }, 'kind'],
    [{ extra: true }, 'extra']
  ]
  // A name up to 200 characters, as the API's schema says.
  const longName = await api('POST', '/api/v1/channels', { kind: 'webhook', name: 'n'.repeat(150), url: 'https://hooks.example.com/h', secret: SECRET })
  assert.equal(longName.status, 201, JSON.stringify(longName.body))
  // A channel stored before a check was added stays editable: only what a patch gives is checked anew.
  await t.db.query("UPDATE alert_channels SET url = 'https://hooks.example.com/h#old', name = 'old\tname' WHERE id = $1", [longName.body.id])
  const older = await api('PATCH', `/api/v1/channels/${longName.body.id}`, { format: 'slack' })
  assert.equal(older.status, 200, JSON.stringify(older.body))
  assert.deepEqual((await api('PATCH', `/api/v1/channels/${longName.body.id}`, { url: 'https://hooks.example.com/h#new' })).body.field, 'url')
  assert.equal((await api('DELETE', `/api/v1/channels/${longName.body.id}`)).status, 204)
  for (const [patch, field] of badChannels) {
    const res = await api('POST', '/api/v1/channels', { kind: 'webhook', name: 'x', url: 'https://hooks.example.com/h', secret: SECRET, ...patch })
    assert.equal(res.status, 400, JSON.stringify(res.body))
    if (field === 'extra') assert.match(res.body.message, /unknown field "extra"/)
    else assert.equal(res.body.field, field, JSON.stringify(res.body))
  }
  await receiver.close()
})

test('webhooks to private addresses are refused unless H3LENS_ALLOW_PRIVATE_TARGETS is set', async () => {
  const strict = await createTestApp()
  try {
    for (const url of ['http://127.0.0.1:9/hook', 'http://10.1.2.3/', 'http://169.254.169.254/latest', 'http://localhost:8080/', 'http://[::1]/']) {
      const res = await strict.app.inject({ method: 'POST', url: '/api/v1/channels', payload: { kind: 'webhook', name: 'x', url, secret: SECRET } })
      assert.equal(res.statusCode, 400, url)
      assert.equal(res.json().field, 'url')
      assert.match(res.json().message, /H3LENS_ALLOW_PRIVATE_TARGETS/)
    }
  } finally {
    await strict.close()
  }
})
