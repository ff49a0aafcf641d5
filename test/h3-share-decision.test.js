// The h3_share_drop rule's decision and its exact test, as pure logic.
// The Fisher p-values were computed with exact rational arithmetic
// (Python's fractions and math.comb).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fisherLowerP } from '../lib/analysis/stats/index.js'
import { shareDecision, baselineWindow, MIN_VISITS, BASELINE_S } from '../lib/analysis/alert-h3-share.js'

const close = (/** @type {number} */ a, /** @type {number} */ b, rel = 1e-9) => assert.ok(Math.abs(a - b) <= rel * Math.abs(b), `${a} ≉ ${b}`)

test('the one-sided Fisher test gives the exact hypergeometric tail', () => {
  close(fisherLowerP(1, 4, 3, 4), 17 / 70)
  close(fisherLowerP(6, 12, 1935, 2016), 3.945624697599016e-06)
  close(fisherLowerP(0, 12, 1935, 2016), 4.259714033807047e-17)
  close(fisherLowerP(5, 50, 384, 400), 1.655748086561219e-42)
  close(fisherLowerP(11, 12, 1935, 2016), 0.3914437229636513)
  close(fisherLowerP(40, 1000, 900, 30000), 0.967553329337055)
  assert.equal(fisherLowerP(12, 12, 1935, 2016), 1)
  assert.equal(fisherLowerP(0, 0, 5, 10), 1, 'no visits: nothing to test')
})

test('a window with too few visits neither breaches nor clears, and says so', () => {
  const d = shareDecision({ threshold_pct: 50, min_drop_points: 20 }, { loaded: MIN_VISITS - 1, h3: 0 }, { loaded: 400, h3: 390 })
  assert.equal(d.breach, null)
  assert.equal(d.evidence.text, `not enough visits: ${MIN_VISITS - 1} returning visits loaded in the window; the rule needs ${MIN_VISITS}`)
})

test('below the threshold needs the whole Wilson 99.8% interval below it', () => {
  const floor = { threshold_pct: 50, min_drop_points: null }
  // 1 of 12: the 95% interval (1–35%) is below 50%, the 99.8% one is not.
  const unsure = shareDecision(floor, { loaded: 12, h3: 1 }, { loaded: 0, h3: 0 })
  assert.equal(unsure.breach, false)
  assert.equal(unsure.evidence.text, 'returning visits over H3: 8% of 12 (Wilson 99.8%: 1–53%), not clearly below 50%')
  assert.equal(shareDecision(floor, { loaded: 12, h3: 0 }, { loaded: 0, h3: 0 }).evidence.text, 'returning visits over H3: 0% of 12 (Wilson 99.8%: 0–44%), below 50%')
  const sure = shareDecision(floor, { loaded: 50, h3: 6 }, { loaded: 0, h3: 0 })
  assert.equal(sure.breach, true)
  assert.equal(sure.evidence.text, 'returning visits over H3: 12% of 50 (Wilson 99.8%: 4–32%), below 50%')
})

test('a drop needs both the points and the significance; without a baseline it is not tested', () => {
  const rule = { threshold_pct: null, min_drop_points: 20 }
  const dropped = shareDecision(rule, { loaded: 50, h3: 5 }, { loaded: 400, h3: 384 })
  assert.equal(dropped.breach, true)
  assert.equal(dropped.evidence.text, 'returning visits over H3 fell from 96% of 400 to 10% of 50 (86 points, p = 1.7e-42)')
  // 96% → 75% of 12 is 21 points, but 3 visits of 12 over H2 happen by chance (p ≈ 0.01).
  const chance = shareDecision(rule, { loaded: 12, h3: 9 }, { loaded: 400, h3: 384 })
  assert.equal(chance.breach, false)
  assert.ok(chance.evidence.p_value > 1e-3 && chance.evidence.drop_points > 20, JSON.stringify(chance.evidence))
  // Significant but small: 96% → 90% of 2,000.
  const small = shareDecision(rule, { loaded: 2000, h3: 1800 }, { loaded: 4000, h3: 3840 })
  assert.ok(small.evidence.p_value < 1e-10)
  assert.equal(small.breach, false)
  const young = shareDecision(rule, { loaded: 12, h3: 0 }, { loaded: 3, h3: 3 })
  assert.equal(young.breach, null, 'a monitor younger than its baseline cannot drop yet')
  assert.match(young.evidence.text, /no drop test: the baseline has 3 loaded returning visits; it needs 10/)
  const floorToo = shareDecision({ threshold_pct: 50, min_drop_points: 20 }, { loaded: 12, h3: 0 }, { loaded: 3, h3: 3 })
  assert.equal(floorToo.breach, true, 'the floor is still tested')
})

test('the baseline is the week before the window, or while firing the one it fired on', () => {
  const from = new Date('2026-03-10T12:00:00Z')
  assert.deepEqual(baselineWindow(from, undefined), { from: new Date(+from - BASELINE_S * 1000), to: from, frozen: false })
  const fired = { baseline_from: '2026-02-01T00:00:00.000Z', baseline_to: '2026-02-08T00:00:00.000Z' }
  assert.deepEqual(baselineWindow(from, fired), { from: new Date(fired.baseline_from), to: new Date(fired.baseline_to), frozen: true })
})
