// The auto arm's H3 share of returning visits and its story per location,
// without the paired analysis: what the overview shows in each cell beside
// the forced verdicts. Two aggregate reads (the auto arm's results by view
// and reason, the forced H3 arm's failures) instead of the bootstraps of
// GET /monitors/{id}/auto; the share and the story are the same as there,
// computed by the same functions (./auto.js).
import { autoVisitOutcomes } from '../store/results.js'
import { forcedH3Failures } from '../store/round-summaries.js'
import { sharesOf, storyOf } from './auto.js'

/**
 * @typedef {{ rate: number | null, lo: number | null, hi: number | null }} Share
 * @typedef {{ story: { code: string, text: string }, returning: { visits: number, loaded: number, h3: number, navigation_share: Share } }} UsersGet
 */

/**
 * Per location with a visit of the auto arm in the window: its story and
 * the returning visits' H3 share with the visits it rests on.
 * @param {import('pg').Pool} db
 * @param {{ monitor: { id: number }, from: Date, to: Date }} q
 * @returns {Promise<Map<string, UsersGet>>}
 */
export async function returningShares (db, { monitor, from, to }) {
  const [outcomes, failures] = await Promise.all([
    autoVisitOutcomes(db, { monitorId: monitor.id, from, to }),
    forcedH3Failures(db, { monitorId: monitor.id, from, to })
  ])
  /** @type {Map<string, UsersGet>} */
  const out = new Map()
  for (const id of new Set(outcomes.totals.map((r) => r.location_id))) {
    const shares = sharesOf(outcomes, id)
    const h3 = failures.find((f) => f.location_id === id) ?? { attempted: 0, failed: 0 }
    const r = shares.returning
    out.set(id, {
      story: storyOf({ shares, visits: { first: { failures: { h3 } } } }),
      returning: { visits: r.visits, loaded: r.loaded, h3: r.h3, navigation_share: r.navigation_share }
    })
  }
  return out
}
