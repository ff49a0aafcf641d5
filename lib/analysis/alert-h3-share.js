// What an h3_share_drop alert rule observes: the share of the auto arm's
// returning visits that loaded over H3, per (monitor, location), over the
// rule's window. A returning visit is the browser coming back to an origin
// it has learnt speaks H3 (agents/visits.js), so its share falls towards 0
// when UDP is blocked on the path, the origin stops announcing H3 (Alt-Svc
// removed) or Chromium marks QUIC broken. Two conditions, either of which
// breaches:
//   - below: the share's Wilson interval at FLOOR_CONFIDENCE lies wholly
//     below threshold_pct;
//   - drop: the share is at least min_drop_points percentage points lower
//     than in the baseline (the 7 days before the window) and a one-sided
//     Fisher exact test puts it lower at p ≤ DROP_ALPHA.
// A window with fewer than MIN_VISITS loaded returning visits neither
// breaches nor clears. docs/STATISTICS.md explains the levels;
// bench/h3-share-alert.js measures how often a stable share fires.
import { fisherLowerP, wilsonInterval } from './stats/index.js'
import { returningVisitCounts } from '../store/results.js'
import { SHARE_MIN_VISITS } from '../store/alert-rules.js'

/** Loaded returning visits a window (and a baseline) needs before it says anything. */
export const MIN_VISITS = SHARE_MIN_VISITS
/** The baseline: the 7 days before the window. */
export const BASELINE_S = 7 * 86400
/**
 * The drop test's level. The rule is evaluated once a minute, 1,440 times a
 * day, and a window's counts change at most once per round, so a stable
 * share gets at most 1,440 chances a day to fire by chance: with p ≤ 1e-5
 * each, at most 1.44% a day per (monitor, location) at the shortest monitor
 * interval (union bound), 0.29% at the default 5 minutes. A real loss of H3
 * is far past it: 0 of 12 visits against 96% of a week gives p < 1e-16.
 */
export const DROP_ALPHA = 1e-5
/**
 * The floor's interval: two-sided 99.8%, so its upper bound is a one-sided
 * 99.9% bound. The floor's null ("the share is at least threshold_pct") is
 * met with room to spare when all is well, and the chance of firing falls
 * steeply with that room. On a steady 95% share, 12 visits a window, against
 * a floor of 90%: the dashboard's 95% interval fired 7.5 times a month, this
 * one about once (against 80%: never; bench/h3-share-alert.js). 0 of 12
 * visits still fire below 50% (upper bound 44%).
 */
export const FLOOR_CONFIDENCE = 0.998

/**
 * @typedef {{ loaded: number, h3: number }} Counts
 * @typedef {{ threshold_pct: number | null, min_drop_points: number | null }} ShareRule
 */

/**
 * The baseline a location's window is compared with: the BASELINE_S before
 * the window; while the rule fires there, the baseline it fired against, so
 * a drop that lasts is not taken for the new normal and resolves only when
 * the share comes back.
 * @param {Date} from the window's start
 * @param {Record<string, any> | undefined} firing the evidence of the firing alert, if any
 * @returns {{ from: Date, to: Date, frozen: boolean }}
 */
export function baselineWindow (from, firing) {
  if (firing?.baseline_from && firing?.baseline_to) return { from: new Date(firing.baseline_from), to: new Date(firing.baseline_to), frozen: true }
  return { from: new Date(+from - BASELINE_S * 1000), to: from, frozen: false }
}

/**
 * The decision for one window, pure: whether the share breaches, and the
 * figures behind it.
 * @param {ShareRule} rule
 * @param {Counts} current the window's loaded returning visits and how many were over H3
 * @param {Counts} baseline the baseline's
 * @param {{ alpha?: number, confidence?: number }} [o] the drop test's level and the floor's interval (others only in
 *   bench/h3-share-alert.js, to show why they are these)
 * @returns {{ breach: boolean | null, evidence: Record<string, any> }}
 */
export function shareDecision (rule, current, baseline, { alpha = DROP_ALPHA, confidence = FLOOR_CONFIDENCE } = {}) {
  const share = wilsonInterval(current.h3, current.loaded, confidence)
  const baselineShare = wilsonInterval(baseline.h3, baseline.loaded)
  const evidence = {
    loaded: current.loaded,
    h3: current.h3,
    share,
    confidence,
    baseline_loaded: baseline.loaded,
    baseline_h3: baseline.h3,
    baseline_share: baselineShare,
    threshold_pct: rule.threshold_pct,
    below_threshold: /** @type {boolean | null} */ (null),
    min_drop_points: rule.min_drop_points,
    drop_points: baselineShare.rate !== null && share.rate !== null ? (baselineShare.rate - share.rate) * 100 : null,
    p_value: /** @type {number | null} */ (null),
    alpha,
    dropped: /** @type {boolean | null} */ (null),
    min_visits: MIN_VISITS,
    reason: /** @type {string | null} */ (null),
    text: ''
  }
  if (current.loaded < MIN_VISITS) {
    evidence.reason = `not enough visits: ${current.loaded} returning visit${current.loaded === 1 ? '' : 's'} loaded in the window; the rule needs ${MIN_VISITS}`
    evidence.text = evidence.reason
    return { breach: null, evidence }
  }
  if (rule.threshold_pct != null) evidence.below_threshold = /** @type {number} */ (share.hi) < rule.threshold_pct / 100
  if (rule.min_drop_points != null) {
    if (baseline.loaded >= MIN_VISITS) {
      evidence.p_value = fisherLowerP(current.h3, current.loaded, baseline.h3, baseline.loaded)
      evidence.dropped = evidence.p_value <= alpha && /** @type {number} */ (evidence.drop_points) >= rule.min_drop_points
    } else {
      evidence.reason = `no drop test: the baseline has ${baseline.loaded} loaded returning visit${baseline.loaded === 1 ? '' : 's'}; it needs ${MIN_VISITS}`
    }
  }
  const tested = [evidence.below_threshold, evidence.dropped].filter((x) => x !== null)
  evidence.text = shareText(evidence)
  return { breach: tested.length ? tested.some(Boolean) : null, evidence }
}

/** @param {number | null} x a share */
const pct = (x) => `${Math.round(/** @type {number} */ (x) * 100)}%`
/** @param {number} p */
const pValue = (p) => (p >= 0.001 ? p.toPrecision(2) : p.toExponential(1))

/**
 * The evidence in words, what fired first: "returning visits over H3 fell
 * from 96% of 400 to 10% of 50 (86 points, p = 2.0e-42)".
 * @param {Record<string, any>} e
 */
export function shareText (e) {
  const share = `${pct(e.share.rate)} of ${e.loaded}`
  const interval = `Wilson ${Math.round(e.confidence * 1000) / 10}%: ${Math.round(e.share.lo * 100)}–${pct(e.share.hi)}`
  const baseline = e.baseline_loaded ? `${pct(e.baseline_share.rate)} of ${e.baseline_loaded}` : null
  const drop = e.p_value !== null ? `${Math.round(e.drop_points)} points, p = ${pValue(e.p_value)}` : null
  if (e.dropped) {
    const text = `returning visits over H3 fell from ${baseline} to ${share} (${drop})`
    return e.below_threshold ? `${text}, below ${e.threshold_pct}% (${interval})` : text
  }
  let text = `returning visits over H3: ${share} (${interval})`
  if (e.below_threshold) return `${text}, below ${e.threshold_pct}%`
  if (e.below_threshold === false) text += `, not clearly below ${e.threshold_pct}%`
  if (e.dropped === false) text += `; ${baseline} before (${drop}), not a drop of ${e.min_drop_points} points at p ≤ ${e.alpha}`
  else if (e.reason) text += `; ${e.reason}`
  return text
}

/**
 * Observations of one h3_share_drop rule for one monitor.
 * @param {import('pg').Pool} db
 * @param {Record<string, any>} rule
 * @param {Record<string, any>} monitor a monitor row
 * @param {string[]} locations the monitor's locations the rule watches
 * @param {{ from: Date, to: Date, link: string, firing: Map<string, Record<string, any>> }} w the rule's window, the dashboard page
 *   showing it, and the evidence of each location where the rule fires (lib/store/alert-states.js firingEvidence)
 * @returns {Promise<import('./alert-conditions.js').Observation[]>}
 */
export async function observeShares (db, rule, monitor, locations, { from, to, link, firing }) {
  const base = { from: from.toISOString(), to: to.toISOString(), link }
  if (!(monitor.modes ?? []).includes('auto')) {
    const reason = `no auto visits: the monitor does not run the auto arm (its modes: ${(monitor.modes ?? []).join(', ')})`
    return locations.map((id) => ({ location_id: id, breach: false, evidence: { ...base, reason, text: reason } }))
  }
  const baselines = locations.map((id) => ({ location_id: id, ...baselineWindow(from, firing.get(id)) }))
  const rows = await returningVisitCounts(db, { monitorId: monitor.id, from, to, baselines })
  return baselines.map((b) => {
    const mine = rows.filter((r) => r.location_id === b.location_id)
    // The query returns both parts of every location it is given.
    const current = /** @type {typeof rows[number]} */ (mine.find((r) => r.part === 'window'))
    const before = /** @type {typeof rows[number]} */ (mine.find((r) => r.part === 'baseline'))
    const where = { ...base, baseline_from: b.from.toISOString(), baseline_to: b.to.toISOString(), baseline_frozen: b.frozen, visits: current.visits }
    if (current.kind === 'wpt' && !current.visits && !before.visits) {
      // WebPageTest agents run the auto arm's first visit only.
      const reason = 'no returning visits: WebPageTest locations run only the first visit of the auto arm'
      return { location_id: b.location_id, breach: false, evidence: { ...where, reason, text: reason } }
    }
    const { breach, evidence } = shareDecision(/** @type {ShareRule} */ (rule), current, before)
    return { location_id: b.location_id, breach, evidence: { ...where, ...evidence } }
  })
}
