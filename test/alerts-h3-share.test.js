// The h3_share_drop alert rule end to end, through the API over PostgreSQL:
// the auto arm's visits imported with the import endpoint, rules evaluated
// by the real scheduler (its clock moved by the test), notifications sent to
// a real HTTP receiver on 127.0.0.1.
//
// One monitor, a round every 30 minutes, rules over 6 hours (12 returning
// visits a window) against the 7 days before:
//   cal-a: 96% of returning visits over H3 throughout (stable);
//   cal-b: 96% for a week, then none for 8 days (UDP blocked), then all
//          over H3 again;
//   cal-c: a returning visit every 2 hours, none over H3 (too few to say);
//   wpt-x: a WebPageTest location: first visits only.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from './helpers/app.js'
import { startReceiver } from './helpers/receiver.js'
import { upsertLocation } from '../lib/store/locations.js'
import { verifySignature } from '../lib/store/alert-channels.js'
import { createScheduler } from '../scheduler/scheduler.js'

const MIN = 60e3
const HOUR = 60 * MIN
const DAY = 24 * HOUR
const STEP = 30 * MIN
const SECRET = 'a-long-webhook-secret-1234'
// The week of baseline starts 20 days ago; the drop starts at DROP.
const BASE = Math.floor((Date.now() - 20 * DAY) / STEP) * STEP
const DROP = BASE + 7 * DAY
const RECOVERY = DROP + 8 * DAY
const END = RECOVERY + DAY
const WINDOW_S = 6 * 3600

let t
let clock = new Date(BASE)
let scheduler
let receiver
let channel
let monitor
let h2h3
before(async () => {
  t = await createTestApp({ H3LENS_ALLOW_PRIVATE_TARGETS: 'true' })
  for (const id of ['cal-a', 'cal-b', 'cal-c']) await upsertLocation(t.db, { id, name: id, region: 'Calibration', kind: 'real', profile: {} })
  await upsertLocation(t.db, { id: 'wpt-x', name: 'WPT X', region: 'Calibration', kind: 'wpt', profile: {} })
  scheduler = createScheduler({ db: t.db, config: { ...t.config, alertEvalS: 60 }, log: t.log, now: () => clock })
  receiver = await startReceiver()
  channel = (await api('POST', '/api/v1/channels', { kind: 'webhook', name: 'ops', url: receiver.url, secret: SECRET, format: 'json' })).body

  const created = await api('POST', '/api/v1/monitors', { url: 'https://share.h3lens.test/', label: 'share', locations: ['cal-a', 'cal-b', 'cal-c', 'wpt-x'], interval_s: 1800, paused: true })
  assert.equal(created.status, 201, JSON.stringify(created.body))
  monitor = created.body
  assert.deepEqual(monitor.modes, ['h2', 'h3', 'auto'], 'a new monitor runs the auto arm')
  const lines = []
  for (let time = BASE; time < END; time += STEP) {
    const j = (time - BASE) / STEP
    lines.push(...visit('cal-a', time, j % 25 !== 0))
    if (time < DROP) lines.push(...visit('cal-b', time, j % 25 !== 0))
    else if (time < RECOVERY) lines.push(...visit('cal-b', time, false))
    else lines.push(...visit('cal-b', time, true))
    if (j % 4 === 0) lines.push(...visit('cal-c', time, false))
    lines.push(JSON.stringify({ time: new Date(time + 5e3).toISOString(), location_id: 'wpt-x', mode: 'auto', view: 'first', status: 'ok', observed_protocol: 'h2', ttfb_ms: 120 }))
  }
  const res = await t.app.inject({ method: 'POST', url: `/api/v1/monitors/${monitor.id}/results/import`, payload: lines.join('\n') + '\n', headers: { 'content-type': 'application/x-ndjson' } })
  assert.equal(res.statusCode, 200, res.body)

  h2h3 = (await api('POST', '/api/v1/monitors', { url: 'https://forced.h3lens.test/', label: 'forced only', locations: ['cal-a'], modes: ['h2', 'h3'], interval_s: 1800, paused: true })).body
  assert.deepEqual(h2h3.modes, ['h2', 'h3'])
})
after(async () => {
  await receiver?.close()
  await t?.close()
})

/**
 * The auto arm's first visit (over H2: the origin not yet known) and
 * returning visit of one round.
 * @param {string} location
 * @param {number} time
 * @param {boolean} h3 whether the returning visit came over H3
 */
function visit (location, time, h3) {
  const at = new Date(time + 5e3).toISOString()
  const row = (/** @type {string} */ view, /** @type {string} */ protocol, /** @type {string} */ code) => JSON.stringify({
    time: at, location_id: location, mode: 'auto', view, status: 'ok', observed_protocol: protocol, ttfb_ms: protocol === 'h3' ? 90 : 110,
    details: { protocol_reason: { code } }
  })
  return [row('first', 'h2', 'not_known'), row('returning', h3 ? 'h3' : 'h2', h3 ? 'alt_svc' : 'broken')]
}

/** One scheduler tick with the clock at `ms`. */
async function tickAt (ms) {
  clock = new Date(ms)
  return scheduler.tick()
}

async function api (method, url, body) {
  const res = await t.app.inject({ method, url, payload: body })
  return { status: res.statusCode, body: res.body ? res.json() : null }
}

const states = async (ruleId, state = '') => (await api('GET', `/api/v1/alerts?rule_id=${ruleId}${state ? `&state=${state}` : ''}`)).body
const byLocation = (/** @type {any[]} */ current) => Object.fromEntries(current.map((a) => [a.location_id, a.state]))

test('a rule is refused, naming the field, when it could never say anything', async () => {
  const rule = { kind: 'h3_share_drop', monitor_id: monitor.id, min_drop_points: 20, window_s: WINDOW_S }
  /** @type {[Record<string, any>, string, RegExp][]} */
  const bad = [
    [{ ...rule, min_drop_points: undefined }, 'threshold_pct', /needs threshold_pct .*min_drop_points/],
    [{ ...rule, threshold_pct: 0 }, 'threshold_pct', /above 0 and below 100/],
    [{ ...rule, threshold_pct: 100 }, 'threshold_pct', /above 0 and below 100/],
    [{ ...rule, min_drop_points: 0 }, 'min_drop_points', /above 0 and below 100/],
    [{ ...rule, min_drop_points: 100 }, 'min_drop_points', /above 0 and below 100/],
    [{ ...rule, percentile: 95 }, 'percentile', /does not apply to a h3_share_drop rule/],
    [{ ...rule, monitor_id: h2h3.id }, 'monitor_id', new RegExp(`monitor ${h2h3.id} does not run the auto arm \\(its modes: h2, h3\\)`)],
    [{ ...rule, window_s: 3600 }, 'window_s', /at least 10 rounds of monitor \d+ \(one every 1800 s\): at least 18000/],
    [{ kind: 'h3_failure', threshold_pct: 5, min_drop_points: 20, window_s: 3600 }, 'min_drop_points', /does not apply to a h3_failure rule/]
  ]
  for (const [body, field, message] of bad) {
    const res = await api('POST', '/api/v1/alert-rules', body)
    assert.equal(res.status, 400, `${JSON.stringify(body)} → ${JSON.stringify(res.body)}`)
    assert.equal(res.body.field, field, JSON.stringify(res.body))
    assert.match(res.body.message, message)
  }
  const good = await api('POST', '/api/v1/alert-rules', { ...rule, threshold_pct: 50 })
  assert.equal(good.status, 201, JSON.stringify(good.body))
  assert.deepEqual([good.body.kind, good.body.threshold_pct, good.body.min_drop_points, good.body.metric], ['h3_share_drop', 50, 20, undefined])
  assert.equal((await api('PATCH', `/api/v1/alert-rules/${good.body.id}`, { min_drop_points: null, threshold_pct: null })).body.field, 'threshold_pct')
  assert.equal((await api('PATCH', `/api/v1/alert-rules/${good.body.id}`, { min_drop_points: null })).body.min_drop_points, null)
  assert.equal((await api('DELETE', `/api/v1/alert-rules/${good.body.id}`)).status, 204)
})

test('a drop of the returning visits\' H3 share fires once with its evidence, keeps firing while it lasts, and resolves when the share returns', async () => {
  const drop = (await api('POST', '/api/v1/alert-rules', {
    kind: 'h3_share_drop', monitor_id: monitor.id, min_drop_points: 20, window_s: WINDOW_S, evaluations: 1, severity: 'critical', channels: [channel.id]
  })).body
  // Below 50%, on every monitor: the one without the auto arm says why it is not watched.
  const floor = (await api('POST', '/api/v1/alert-rules', { kind: 'h3_share_drop', threshold_pct: 50, window_s: WINDOW_S, evaluations: 1 })).body

  // The week before the drop: quiet everywhere.
  await tickAt(DROP)
  assert.deepEqual((await states(drop.id)).history, [])
  const quiet = (await states(drop.id, 'ok')).current
  assert.deepEqual(byLocation(quiet), { 'cal-a': 'ok', 'cal-b': 'ok', 'wpt-x': 'ok' }, 'cal-c has too few visits to be evaluated')
  const stable = quiet.find((a) => a.location_id === 'cal-a').evidence
  assert.equal(stable.loaded, 12)
  assert.ok(stable.p_value > 0.01 && stable.dropped === false, JSON.stringify(stable))
  assert.equal(quiet.find((a) => a.location_id === 'wpt-x').evidence.reason, 'no returning visits: WebPageTest locations run only the first visit of the auto arm')

  // Six hours into the drop at cal-b.
  await tickAt(DROP + 6 * HOUR)
  let current = (await states(drop.id)).current
  assert.deepEqual(byLocation(current), { 'cal-b': 'firing' })
  const e = current[0].evidence
  assert.deepEqual([e.loaded, e.h3, e.baseline_loaded, e.baseline_h3, e.dropped, e.below_threshold], [12, 0, 336, 322, true, null])
  assert.equal(e.baseline_from, new Date(DROP - 7 * DAY).toISOString())
  assert.equal(e.baseline_to, new Date(DROP).toISOString())
  assert.ok(e.p_value < 1e-10, JSON.stringify(e))
  assert.match(e.text, /^returning visits over H3 fell from 96% of 336 to 0% of 12 \(96 points, p = \d\.\de-\d+\)$/)
  assert.deepEqual(byLocation((await states(floor.id)).current), { 'cal-b': 'firing' })
  const below = (await states(floor.id)).current[0].evidence
  assert.equal(below.text, 'returning visits over H3: 0% of 12 (Wilson 99.8%: 0–44%), below 50%')
  const forced = (await api('GET', `/api/v1/alerts?rule_id=${floor.id}&monitor_id=${h2h3.id}&state=ok`)).body.current
  assert.deepEqual(forced.map((a) => [a.location_id, a.evidence.reason]), [['cal-a', 'no auto visits: the monitor does not run the auto arm (its modes: h2, h3)']])
  // Too few visits never fire, though none of cal-c's came over H3.
  assert.deepEqual((await api('GET', `/api/v1/alerts?monitor_id=${monitor.id}&location_id=cal-c`)).body, { current: [], history: [] })

  assert.equal(receiver.requests.length, 1)
  const [fired] = receiver.requests
  assert.ok(verifySignature(SECRET, fired.headers['x-h3lens-timestamp'], fired.body, fired.headers['x-h3lens-signature']))
  assert.equal(fired.json.event, 'firing')
  assert.deepEqual([fired.json.alert.kind, fired.json.alert.location_id, fired.json.alert.monitor_id, fired.json.alert.severity], ['h3_share_drop', 'cal-b', monitor.id, 'critical'])
  assert.match(fired.json.alert.summary, /^Returning visits over H3 fell from 96% of 336 to 0% of 12 \(96 points, p = /)
  assert.equal(fired.json.alert.evidence.p_value, e.p_value)
  assert.ok(fired.json.alert.evidence_url.startsWith(`#/monitors/${monitor.id}?window=custom&from=`), fired.json.alert.evidence_url)

  // Eight days on the share is still down. Against the week before this
  // window (all of it down too) it would look normal; the alert keeps the
  // baseline it fired on, so it does not resolve.
  await tickAt(RECOVERY - HOUR)
  current = (await states(drop.id)).current
  assert.deepEqual(byLocation(current), { 'cal-b': 'firing' })
  assert.equal(receiver.requests.length, 1, 'no second notification, and no resolution')

  // The share comes back: resolved, once, with the evidence that cleared it.
  await tickAt(RECOVERY + 6 * HOUR)
  const after = await states(drop.id)
  assert.deepEqual(byLocation(after.current), { 'cal-b': 'resolved' })
  assert.deepEqual(after.history.map((h) => `${h.previous}→${h.state}`).reverse(), ['ok→firing', 'firing→resolved'])
  const cleared = after.history[0].evidence
  assert.deepEqual([cleared.loaded, cleared.h3, cleared.dropped, cleared.baseline_frozen, cleared.baseline_to], [12, 12, false, true, new Date(DROP).toISOString()])
  assert.deepEqual(receiver.requests.map((r) => r.json.event), ['firing', 'resolved'])
  assert.match(receiver.requests[1].json.alert.summary, /^Returning visits over H3: 100% of 12 \(Wilson 99.8%: 56–100%\); 96% of 336 before/)
  assert.deepEqual(byLocation((await states(floor.id)).current), { 'cal-b': 'resolved' })

  // After resolving, the baseline is the week before the window again.
  await tickAt(RECOVERY + 7 * HOUR)
  const next = (await states(drop.id, 'resolved')).current[0]
  assert.equal(next.evidence.baseline_frozen, false)
  assert.equal(next.evidence.baseline_to, new Date(RECOVERY + HOUR).toISOString())
})
