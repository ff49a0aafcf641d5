// GET /monitors/{id}/auto on imported rounds, through the real API and
// PostgreSQL: the numbers a user reads in "As users get it" against values
// worked out by hand on a small dataset. The rates behind them (A/A with
// three arms, the received gain's coverage) are in bench/calibration.js.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from './helpers/app.js'
import { upsertLocation } from '../lib/store/locations.js'
import { storyOf } from '../lib/analysis/auto.js'
import { FDR_Q, noDifferenceReason } from '../lib/analysis/comparison.js'

let t
after(async () => { await t.close() })

const close = (/** @type {number | null} */ a, /** @type {number} */ b, tol = 1e-6, msg = '') => assert.ok(a !== null && Math.abs(a - b) <= tol, `${msg} ${a} vs ${b}`)

// 31 rounds ten minutes apart, ending two hours ago.
const ROUNDS = 31
const BASE = Math.floor((Date.now() - 2 * 3600e3) / 600e3) * 600e3 - ROUNDS * 600e3
const at = (/** @type {number} */ i) => new Date(BASE + i * 600e3).toISOString()
const reason = (/** @type {string} */ code, /** @type {string | null} */ usage) => ({ protocol_reason: { code, text: code, alternate_protocol_usage: usage, h3_announced: null } })

/**
 * Round i: H2 100 + i ms, H3 70 + i; the auto arm's first visit as H2
 * (100 + i), over H3 in rounds 0–2 only; its returning visit 80 + i, over H3
 * in rounds 0–23, failed in round 30. A visit over H3 is 1,000 bytes, 90% of
 * them over H3; one over H2 is 500 bytes, none over H3.
 */
function rows () {
  const out = []
  for (let i = 0; i < ROUNDS; i++) {
    const time = at(i)
    const loc = 'auto-a'
    out.push({ time, location_id: loc, mode: 'h2', ttfb_ms: 100 + i }, { time, location_id: loc, mode: 'h3', ttfb_ms: 70 + i })
    const visit = (/** @type {string} */ view, /** @type {boolean} */ h3, /** @type {number} */ ms, /** @type {Record<string, any>} */ details) => ({
      time, location_id: loc, mode: 'auto', view, observed_protocol: h3 ? 'h3' : 'h2', ttfb_ms: ms, bytes: h3 ? 1000 : 500, h3_byte_share: h3 ? 0.9 : 0, details
    })
    out.push(visit('first', i < 3, 100 + i, i < 3 ? reason('alt_svc', 'alternativeJobWonRace') : reason('not_known', 'mappingMissing')))
    if (i < 30) out.push(visit('returning', i < 24, 80 + i, i < 24 ? reason('alt_svc', 'alternativeJobWonWithoutRace') : reason('tcp_won', 'mainJobWonRace')))
    else out.push({ time, location_id: loc, mode: 'auto', view: 'returning', status: 'error', error: 'net::ERR_TIMED_OUT', observed_protocol: null, details: reason('failed', null) })
  }
  return out
}

let monitorId = 0
const window = () => `from=${new Date(BASE - 600e3).toISOString()}&to=${new Date(BASE + ROUNDS * 600e3).toISOString()}`

before(async () => {
  t = await createTestApp({ H3LENS_ALLOW_PRIVATE_TARGETS: 'true' })
  await upsertLocation(t.db, { id: 'auto-a', name: 'Auto A', region: 'Test', kind: 'real', profile: {} })
  const created = await t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload: { url: 'https://auto.h3lens.test/', locations: ['auto-a'], paused: true } })
  assert.equal(created.statusCode, 201, created.body)
  monitorId = created.json().id
  assert.deepEqual(created.json().modes, ['h2', 'h3', 'auto'], 'a new monitor runs the auto arm')
  const imported = await t.app.inject({
    method: 'POST',
    url: `/api/v1/monitors/${monitorId}/results/import`,
    headers: { 'content-type': 'application/x-ndjson' },
    payload: rows().map((r) => JSON.stringify(r)).join('\n') + '\n'
  })
  assert.equal(imported.statusCode, 200, imported.body)
  assert.equal(imported.json().imported, ROUNDS * 4)
})

test('the H3 share of each visit: navigations with a Wilson interval, bytes with the ratio interval, and why', async () => {
  const res = await t.app.inject(`/api/v1/monitors/${monitorId}/auto?${window()}&percentiles=25,50`)
  assert.equal(res.statusCode, 200, res.body)
  const body = res.json()
  assert.equal(body.has_auto, true)
  assert.equal(body.locations.length, 1)
  const [loc] = body.locations
  const { first, returning, repeat } = loc.shares

  // Returning: 24 of the 30 visits that loaded came over H3 (one of 31 failed).
  assert.deepEqual([returning.visits, returning.loaded, returning.h3], [31, 30, 24])
  // Wilson 24/30: centre (0.8 + z²/60) / (1 + z²/30), half-width
  // z·√(0.16/30 + z²/3600) / (1 + z²/30), z = 1.959964.
  close(returning.navigation_share.rate, 0.8)
  close(returning.navigation_share.lo, 0.626943)
  close(returning.navigation_share.hi, 0.904949)
  // Bytes: 24 · 900 / (24 · 1000 + 6 · 500) = 0.8; residuals y − 0.8·x are
  // 100 (24 visits) and −400 (6), so se = √(1,200,000 / 29 · 30) / 27,000
  // = 0.041266 and n_eff = 0.16 / se² = 94, at most the 30 visits: the
  // Wilson interval of 0.8 at 30.
  close(returning.byte_share.rate, 0.8)
  close(returning.byte_share.lo, 0.626943)
  close(returning.byte_share.hi, 0.904949)
  assert.equal(returning.byte_share.n, 30, 'the share rests on the 30 visits that loaded')
  assert.deepEqual(returning.reasons, { alt_svc: 24, tcp_won: 6, failed: 1 })
  assert.deepEqual(returning.alternate_protocol_usage, { alternativeJobWonWithoutRace: 24, mainJobWonRace: 6 }, 'counted over visits that loaded')

  // First: 3 of 31 over H3 (Wilson 0.033465–0.248999); 2,700 of 17,000
  // bytes, R = 0.158824: the residuals 741.2 (3 visits) and −79.4 (28)
  // square to 1,824,602, se = 0.080771, n_eff = R(1 − R) / se² = 20.48
  // visits (the large H3 visits weigh), and the Wilson interval of R there.
  assert.deepEqual([first.visits, first.loaded, first.h3], [31, 31, 3])
  close(first.navigation_share.lo, 0.033465)
  close(first.navigation_share.hi, 0.248999)
  close(first.byte_share.rate, 2700 / 17000)
  close(first.byte_share.lo, 0.057772)
  close(first.byte_share.hi, 0.367657)
  assert.deepEqual(first.reasons, { alt_svc: 3, not_known: 28 })
  assert.equal(first.byte_share.n, 31)
  assert.deepEqual([repeat.visits, repeat.navigation_share.rate, repeat.byte_share.rate, repeat.byte_share.n], [0, null, null, 0])

  assert.deepEqual(loc.story, { code: 'h3_returning', text: 'Users get H3 from their second visit on (80% of 30 returning visits that loaded; 1 of 31 failed)' })
})

test('auto against both forced arms per visit, paired per round, and the received gain', async () => {
  const body = (await t.app.inject(`/api/v1/monitors/${monitorId}/auto?${window()}&percentiles=25,50`)).json()
  const { first, returning } = body.locations[0].visits

  // The first visit has all 31 rounds; the returning visit loses round 30,
  // where it failed, and is paired with the forced arms' first view.
  assert.deepEqual(first.rounds, { total: 31, matched: 31, available: 31, used: 31, excluded: [] })
  assert.deepEqual(returning.rounds, { total: 31, matched: 30, available: 30, used: 30, excluded: [{ h2: 'ok', h3: 'ok', auto: 'failed', rounds: 1 }] })
  assert.deepEqual(returning.failures.auto, { attempted: 31, failed: 1, rate: returning.failures.auto.rate })
  close(returning.failures.auto.rate.rate, 1 / 31)

  // p25 needs 40 rounds: shown, not tested, and no received gain.
  const p25 = returning.rows[0]
  assert.equal(p25.percentile, 25)
  assert.equal(p25.contrasts.h3_vs_h2.verdict, 'insufficient_data')
  assert.equal(p25.received_gain.shown, false)
  assert.equal(p25.received_gain.reason, 'p25 needs at least 40 rounds; have 30')

  // p50 (percentile_cont) of rounds 0–30: H2 115, H3 85, auto 115. Users
  // receive none of the 30 ms.
  const f = first.rows[1]
  assert.deepEqual([f.h2_ms, f.h3_ms, f.auto_ms], [115, 85, 115])
  assert.equal(f.contrasts.auto_vs_h2.delta_ms, 0)
  assert.equal(f.contrasts.auto_vs_h2.verdict, 'no_clear_difference')
  assert.equal(f.contrasts.auto_vs_h2.reason, 'the 95% interval includes 0')
  assert.equal(f.contrasts.auto_vs_h2.reason_code, 'interval_includes_zero')
  assert.equal(f.contrasts.auto_vs_h3.verdict, 'slower')
  assert.equal(f.contrasts.h3_vs_h2.verdict, 'faster')
  // Both forced gains tested are shown (2 of 2): the interval is at 95%.
  assert.deepEqual(f.received_gain, { shown: true, value: 0, ci_low: 0, ci_high: 0, level: 0.95, reason: null })

  // Rounds 0–29: H2 114.5, H3 84.5, auto 94.5; the received gain is
  // (114.5 − 94.5) / (114.5 − 84.5) = 2/3, the same in every resample.
  const r = returning.rows[1]
  assert.deepEqual([r.h2_ms, r.h3_ms, r.auto_ms], [114.5, 84.5, 94.5])
  assert.deepEqual([r.contrasts.auto_vs_h2.delta_ms, r.contrasts.auto_vs_h3.delta_ms, r.contrasts.h3_vs_h2.delta_ms], [-20, 10, -30])
  assert.deepEqual([r.contrasts.auto_vs_h2.verdict, r.contrasts.auto_vs_h3.verdict, r.contrasts.h3_vs_h2.verdict], ['faster', 'slower', 'faster'])
  assert.ok(r.contrasts.auto_vs_h2.ci_high_ms < 0)
  assert.equal(r.received_gain.shown, true)
  close(r.received_gain.value, 2 / 3, 1e-12)
  close(r.received_gain.ci_high, 2 / 3, 1e-9)
  // Its low end is held to the auto arm's one failure (round 30): were it
  // its slowest load, auto's p50 could be slower by its worst shift.
  assert.ok(r.received_gain.ci_low > 0.4 && r.received_gain.ci_low < 2 / 3 - 0.01, `ci_low ${r.received_gain.ci_low}`)

  // Six columns (a visit and contrast each) of one tested cell. The one of
  // no difference (first visit, auto − H2: p = 1) is not selected; the
  // other five are (BH over the six: p × 6 / 5), and within each the cell's
  // p-value is scaled by 6 columns / 5 selected.
  assert.deepEqual(body.cells, { tested: 6, flagged: 5 })
  assert.equal(f.contrasts.auto_vs_h2.p_adjusted, 1)
  close(r.contrasts.h3_vs_h2.p_adjusted, r.contrasts.h3_vs_h2.p_value * 6 / 5, 1e-12)
})

test('a monitor without a forced arm says what it lacks, not that rounds are still to come', async () => {
  const created = await t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload: { url: 'https://auto-noh3.h3lens.test/', locations: ['auto-a'], modes: ['h2', 'auto'], paused: true } })
  const id = created.json().id
  const imported = await t.app.inject({ method: 'POST', url: `/api/v1/monitors/${id}/results/import`, headers: { 'content-type': 'application/x-ndjson' }, payload: rows().filter((r) => r.mode !== 'h3').map((r) => JSON.stringify(r)).join('\n') })
  assert.equal(imported.statusCode, 200, imported.body)
  const { visits } = (await t.app.inject(`/api/v1/monitors/${id}/auto?${window()}&percentiles=50`)).json().locations[0]
  for (const v of ['first', 'returning']) {
    assert.equal(visits[v].reason, 'this monitor does not run the h3 arm, and the auto arm is compared with both forced arms: add h3 to its modes', v)
  }
})

test('the received gain is not shown where forced H3 is no faster, and says why', async () => {
  // A second monitor: the same rounds with H3 as H2.
  const created = await t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload: { url: 'https://auto-flat.h3lens.test/', locations: ['auto-a'], paused: true } })
  const id = created.json().id
  const flat = rows().map((r) => (r.mode === 'h3' ? { ...r, ttfb_ms: /** @type {number} */ (r.ttfb_ms) + 30 } : r))
  const imported = await t.app.inject({ method: 'POST', url: `/api/v1/monitors/${id}/results/import`, headers: { 'content-type': 'application/x-ndjson' }, payload: flat.map((r) => JSON.stringify(r)).join('\n') })
  assert.equal(imported.statusCode, 200, imported.body)
  const r = (await t.app.inject(`/api/v1/monitors/${id}/auto?${window()}&percentiles=50`)).json().locations[0].visits.returning.rows[0]
  assert.equal(r.contrasts.h3_vs_h2.delta_ms, 0)
  assert.deepEqual(r.received_gain, {
    shown: false, value: null, ci_low: null, ci_high: null, level: null,
    reason: 'no H3 gain to receive: forced H3 shows no clear difference from H2 in these rounds'
  })
})

test('a metric of a probe the auto arm does not run is a 400 naming metric', async () => {
  for (const metric of ['request_ms', 'upload']) {
    const res = await t.app.inject(`/api/v1/monitors/${monitorId}/auto?${window()}&metric=${metric}`)
    assert.equal(res.statusCode, 400, res.body)
    assert.equal(res.json().field, 'metric')
    assert.match(res.json().message, /the auto arm runs the page probe/)
  }
  const unknown = await t.app.inject(`/api/v1/monitors/${monitorId}/auto?metric=speed`)
  assert.equal(unknown.statusCode, 400)
  assert.equal(unknown.json().field, 'metric')
})

test('the story: a page that mostly fails as users would load it is no blocked path, whatever forced H3 did', () => {
  const view = (/** @type {number} */ visits, /** @type {number} */ loaded, /** @type {Record<string, number>} */ reasons = {}, h3 = 0) =>
    ({ visits, loaded, h3, navigation_share: { rate: loaded ? h3 / loaded : null }, reasons })
  const at = (/** @type {any} */ shares, /** @type {number} */ h3Failed, attempted = 4, h2Failed = h3Failed) =>
    storyOf({ shares, visits: { first: { failures: { h3: { attempted, failed: h3Failed }, h2: { attempted, failed: h2Failed } } } } })
  // A page cut short: every arm fails, the auto arm's visits too.
  assert.deepEqual(at({ first: view(6, 0, { failed: 6 }), returning: view(6, 0, { failed: 6 }), repeat: view(0, 0) }, 6, 6),
    { code: 'page_fails', text: 'Most visits of the auto arm failed: users\' loads fail here (12 of 12 visits failed), whatever the protocol' })
  // Too few forced rounds to tell whether they load: the story says nothing of them.
  assert.deepEqual(at({ first: view(3, 0, { failed: 3 }), returning: view(3, 0, { failed: 3 }), repeat: view(0, 0) }, 3, 3),
    { code: 'page_fails', text: 'Most visits of the auto arm failed: users\' loads fail here (6 of 6 visits failed)' })
  // Only the auto arm fails; the forced arms load: not the page.
  assert.deepEqual(at({ first: view(6, 0, { failed: 6 }), returning: view(6, 0, { failed: 6 }), repeat: view(0, 0) }, 0, 6, 0),
    { code: 'page_fails', text: 'Most visits of the auto arm failed: users\' loads fail here (12 of 12 visits failed), though forced H2 loaded in 6 of 6 rounds: what fails is the browser as users run it, not the page' })
  // A path that blocks UDP: users' visits load over H2 while forced H3 fails.
  assert.equal(at({ first: view(4, 4, { not_known: 4 }), returning: view(4, 4, { tcp_won: 4 }), repeat: view(0, 0) }, 4).code, 'quic_blocked')
  // Half of the visits failing is no majority.
  assert.equal(at({ first: view(4, 2, { not_known: 2, failed: 2 }), returning: view(4, 2, { tcp_won: 2, failed: 2 }), repeat: view(0, 0) }, 4).code, 'quic_blocked')
})

test('the story claims a majority only when its 95% interval lies above half: one visit, or 3 of 3, tells none', () => {
  const view = (/** @type {number} */ visits, /** @type {number} */ loaded, /** @type {Record<string, number>} */ reasons = {}, h3 = 0) =>
    ({ visits, loaded, h3, navigation_share: { rate: loaded ? h3 / loaded : null }, reasons })
  const at = (/** @type {any} */ shares, /** @type {number} */ h3Failed, /** @type {number} */ attempted) => storyOf({ shares, visits: { first: { failures: { h3: { attempted, failed: h3Failed } } } } })
  // One returning visit over H3 is no "users get H3".
  assert.deepEqual(at({ first: view(1, 1, { not_known: 1 }), returning: view(1, 1, { alt_svc: 1 }, 1), repeat: view(0, 0) }, 0, 1),
    { code: 'undecided', text: 'Too few visits to say what most users get (100% of 1 returning visit over H3)' })
  // Nor is forced H3 failing in 3 of 3 rounds a blocked path (95% interval 44–100%), nor 3 of 3 returning visits over H2 "mostly H2".
  assert.equal(at({ first: view(3, 3, { not_known: 3 }), returning: view(3, 3, { tcp_won: 3 }), repeat: view(0, 0) }, 3, 3).code, 'undecided')
  // 4 of 4 is (51–100%).
  assert.equal(at({ first: view(4, 4, { not_known: 4 }), returning: view(4, 4, { alt_svc: 4 }, 4), repeat: view(0, 0) }, 0, 4).code, 'h3_returning')
  // Many visits split about evenly: no majority either way.
  assert.deepEqual(at({ first: view(10, 10, { not_known: 10 }), returning: view(400, 400, { alt_svc: 210, tcp_won: 190 }, 210), repeat: view(0, 0) }, 0, 400),
    { code: 'undecided', text: 'Too few visits to say what most users get (53% of 400 returning visits over H3)' })
  // A clear H2 majority tells why.
  // A clear H2 majority tells why, and how many visits said so.
  assert.deepEqual(at({ first: view(10, 10, { not_known: 10 }), returning: view(40, 40, { tcp_won: 37, broken: 3 }), repeat: view(0, 0) }, 0, 40),
    { code: 'tcp_wins', text: 'TCP wins the race: users mostly get H2 (37 of 40 returning visits)' })
  assert.deepEqual(at({ first: view(10, 10, { not_known: 10 }), returning: view(40, 40, { broken: 30, tcp_won: 10 }), repeat: view(0, 0) }, 0, 40),
    { code: 'broken', text: 'H3 marked broken after failures: users get H2 (30 of 40 returning visits)' })
  assert.deepEqual(at({ first: view(10, 10, { not_announced: 10 }), returning: view(40, 39, { not_announced: 39, failed: 1 }), repeat: view(0, 0) }, 0, 40),
    { code: 'not_announced', text: 'The origin does not announce H3: users get H2 (49 of 49 visits that loaded)' })
})

test('the story of a location that makes first visits only (a WebPageTest agent) says so, not that its visits are too few', () => {
  const view = (/** @type {number} */ visits, /** @type {number} */ loaded, /** @type {Record<string, number>} */ reasons = {}, h3 = 0) =>
    ({ visits, loaded, h3, navigation_share: { rate: loaded ? h3 / loaded : null }, reasons })
  const s = storyOf({ shares: { first: view(40, 40, { not_known: 40 }), returning: view(0, 0), repeat: view(0, 0) }, visits: { first: { failures: { h3: { attempted: 40, failed: 0 }, h2: { attempted: 40, failed: 0 } } } } })
  assert.deepEqual(s, { code: 'first_visit_only', text: 'First visits only here (a WebPageTest agent makes no returning visit): what users get from their second visit on is not measured (0% of 40 first visits over H3)' })
})

test('a grey cell\'s reason agrees with the interval shown beside it: an interval that excludes 0 is not said to include it', () => {
  assert.deepEqual(noDifferenceReason({ ci_low_ms: -44.1, ci_high_ms: 3, p_adjusted: 0.01, delta_ms: -20 }, 1),
    { code: 'interval_includes_zero', text: 'the 95% interval includes 0' })
  assert.deepEqual(noDifferenceReason({ ci_low_ms: -44.1, ci_high_ms: -2.8, p_adjusted: 0.358, delta_ms: -20 }, 1),
    { code: 'not_significant', text: `not significant after the false-discovery-rate correction (adjusted p = 0.36, above ${FDR_Q})` })
  assert.deepEqual(noDifferenceReason({ ci_low_ms: -44.1, ci_high_ms: -2.8, p_adjusted: FDR_Q, delta_ms: -20 }, 25.04),
    { code: 'below_minimum_effect', text: '|Δ| is below the practical minimum of 25 ms' })
  assert.equal(noDifferenceReason({ ci_low_ms: -44.1, ci_high_ms: -2.8, p_adjusted: FDR_Q, delta_ms: -20 }, 20), null)
})
