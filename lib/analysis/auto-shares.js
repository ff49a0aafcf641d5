// The auto arm's H3 share of returning visits and its story per location,
// without the paired analysis: what the overview shows in each cell beside
// the forced verdicts. Aggregate reads (the auto arm's visits by view, the
// forced arms' failures, and only where a story needs them the visits'
// reasons) instead of the bootstraps of GET /monitors/{id}/auto; the share
// and the story are the same as there, computed by the same functions
// (./auto.js). Timed on 30 days of dev/demo-auto-arm.js's monitor at
// two locations (69,120 results, 34,560 of them the auto arm's), on the 2
// shared cores: 70-160 ms where the counts tell every story, about 380 ms
// where the reasons must be read, against 120-180 ms for the comparison
// it is served with (and kept with, lib/analysis/comparison-cache.js).
import { autoVisitOutcomes } from '../store/results.js'
import { forcedFailures } from '../store/round-summaries.js'
import { sharesOf, storyOf } from './auto.js'

/**
 * @typedef {{ rate: number | null, lo: number | null, hi: number | null }} Share
 * @typedef {{ story: { code: string, text: string }, returning: { visits: number, loaded: number, h3: number, navigation_share: Share } }} UsersGet
 */

/**
 * Per location with a visit of the auto arm in the window: its story and
 * the returning visits' H3 share with the visits it rests on.
 * @param {import('pg').Pool} db
 * @param {{ monitor: { id: number }, from: Date, to: Date, browser?: string }} q
 * @returns {Promise<Map<string, UsersGet>>}
 */
export async function returningShares (db, { monitor, from, to, browser }) {
  const w = { monitorId: monitor.id, from, to, browser }
  const [outcomes, failures] = await Promise.all([autoVisitOutcomes(db, { ...w, reasons: false }), forcedFailures(db, w)])
  const ids = [...new Set(outcomes.totals.map((r) => r.location_id))]
  const storyAt = (/** @type {string} */ id) => {
    const none = { attempted: 0, failed: 0 }
    const forced = failures.find((f) => f.location_id === id) ?? { h2: none, h3: none }
    return storyOf({ shares: sharesOf(outcomes, id), visits: { first: { failures: { h2: forced.h2, h3: forced.h3 } } } })
  }
  // The reasons (most of the cost) are read only where a story needs them:
  // "no visits", "most visits failed" and "users get H3 from their second
  // visit on" rest on the counts alone, every other story on why the
  // visits came over H2.
  if (ids.some((id) => !COUNTS_TELL.has(storyAt(id).code))) {
    outcomes.reasons = (await autoVisitOutcomes(db, { ...w, totals: false })).reasons
  }
  /** @type {Map<string, UsersGet>} */
  const out = new Map()
  for (const id of ids) {
    const r = sharesOf(outcomes, id).returning
    out.set(id, { story: storyAt(id), returning: { visits: r.visits, loaded: r.loaded, h3: r.h3, navigation_share: r.navigation_share } })
  }
  return out
}

/** Stories told by the visit counts alone (storyOf decides them before it reads a reason). */
const COUNTS_TELL = new Set(['no_data', 'page_fails', 'h3_returning'])
