// A round's time budget: how long the agent may spend on one round, in
// parts, each a pool of time its loads draw from. A load gets at most a
// page timeout (H3LENS_PAGE_TIMEOUT_MS) and never more than its pool has
// left, and is not started with less than MIN_LOAD_MS left, so a page that
// hangs costs its round a bounded time, never one page timeout per load;
// the back-pressure in the scheduler makes sure it costs no more rounds
// than that (lib/store/jobs.js scheduleDueJobs).
//
// The parts:
//   - each arm (h2, h3, auto) has a pool of its own: a page timeout for
//     each probe it runs (a journey's own timeout_ms for the journey), and
//     the auto arm one for each of its two visits (first, returning), each
//     with VISIT_BROWSER_MS more for the browser the visit starts and stops:
//     the agent's time, not the page's. On a busy agent a browser takes
//     seconds to start, and to write what it learnt as it closes, which
//     would otherwise leave the returning visit less than a page timeout.
//     Arms run in random order (agents/measure.js runRound), so with one
//     pool for all of them an arm that went last got what the others left:
//     a page that always loads in 7 s with a 15 s page timeout lost one
//     forced arm in every round once the auto arm's two visits and the
//     redirect discovery shared that pool, and a page whose H3 hangs lost
//     its H2 load whenever the auto arm's returning visit (over H3) and the
//     H3 arm hung first. With a pool each, the forced arms the comparison
//     pairs each get a whole page timeout whatever the other arms took:
//     "H3 hangs where H2 loads" is a finding, and it needs the H2 load.
//   - the redirect discovery has its own (at most CHAIN_TIMEOUT_MS, and
//     never more than a page timeout): it waits for the page's headers, as
//     long as a slow page makes it.
// So a round of a page that hangs in every arm costs the discovery and a
// page timeout per load, and the auto arm's browsers their allowance: with
// the default modes (h2, h3, auto) and 30 s page timeouts,
// 10 + 2 × 30 + 2 × (30 + 5) = 140 s at most.
//
// A backed-off monitor's round (its last rounds at this location all timed
// out, lib/store/round-backoffs.js) has one pool of one page timeout for the
// discovery and every load: its page hung in every arm twice in a row, so
// what the arms compare is no longer at stake, and the agent's time is
// (docs/OPERATIONS.md has the arithmetic).
import { probeOf } from '../lib/measurement/probes/index.js'
import { JOURNEY_PROBE } from '../lib/measurement/probes/journey.js'
import { monotonicNow } from './clock.js'

/** The budget of a backed-off monitor's round, in page timeouts. */
export const BACKED_OFF_BUDGET_TIMEOUTS = 1
/** The redirect discovery's own limit (agents/redirects.js). */
export const CHAIN_TIMEOUT_MS = 10_000
/** A load (a visit, a journey's step) is not started with less than this left of its pool. */
export const MIN_LOAD_MS = 1000
/** The auto arm's visits, each with a page timeout of its own: first and returning (a repeat view is part of the returning visit). */
const AUTO_VISITS = 2
/** What each auto visit's pool has beyond its page timeout, for starting and stopping the visit's own browser. */
const VISIT_BROWSER_MS = 5000

/**
 * @typedef {{ ms: number, left: () => number, spend: <T>(fn: (deadline: number) => Promise<T>) => Promise<T>, notRun: string }} Pool
 *   left: what is left of it, in ms; spend: run fn, its time drawn from the
 *   pool, with the pool's end as a deadline on the agent's monotonic clock (./clock.js); notRun: the error of
 *   a load it had no room for
 */

/**
 * @param {{ timeoutMs: number, modes: string[], probes: string[], journeyMs?: number, backedOffTimeouts?: number | null }} o
 *   journeyMs: the journey's timeout_ms, when the round runs the journey probe
 * @returns {{ discovery: Pool, arm: (mode: string) => Pool, totalMs: number }}
 */
export function roundBudget ({ timeoutMs, modes, probes, journeyMs = 0, backedOffTimeouts = null }) {
  if (backedOffTimeouts) {
    const ms = BACKED_OFF_BUDGET_TIMEOUTS * timeoutMs + journeyRuns(modes, probes) * journeyMs
    const all = pool(ms, `not run: the round's time budget of ${ms / 1000} s (${BACKED_OFF_BUDGET_TIMEOUTS} page timeout` +
      `${BACKED_OFF_BUDGET_TIMEOUTS === 1 ? '' : 's'}: backed off, the last ${backedOffTimeouts} rounds timed out) was spent`)
    return { discovery: all, arm: () => all, totalMs: ms }
  }
  /** @type {Map<string, Pool>} */
  const arms = new Map()
  for (const mode of modes) {
    const auto = mode === 'auto'
    const visits = auto ? AUTO_VISITS : 1
    const ms = probes.filter((p) => probeOf(p).modes.includes(/** @type {any} */ (mode)))
      .reduce((sum, p) => sum + visits * ((p === JOURNEY_PROBE ? journeyMs : timeoutMs) + (auto ? VISIT_BROWSER_MS : 0)), 0)
    const per = auto ? `a page timeout and ${VISIT_BROWSER_MS / 1000} s for its browser per visit` : 'a page timeout per probe'
    arms.set(mode, pool(ms, `not run: the ${mode} arm's time budget of ${ms / 1000} s (${per}) was spent`))
  }
  const discovery = pool(Math.min(CHAIN_TIMEOUT_MS, timeoutMs), 'not run: the redirect discovery\'s time was spent')
  return {
    discovery,
    arm: (mode) => arms.get(mode) ?? pool(0, `not run: the round asked for no ${mode} arm`),
    totalMs: discovery.ms + [...arms.values()].reduce((sum, p) => sum + p.ms, 0)
  }
}

/**
 * The journey's runs in a round: one per forced arm, two in the auto arm
 * (agents/probes/journey.js).
 * @param {string[]} modes
 * @param {string[]} probes
 */
function journeyRuns (modes, probes) {
  if (!probes.includes(JOURNEY_PROBE)) return 0
  return modes.reduce((n, m) => n + (m === 'auto' ? AUTO_VISITS : 1), 0)
}

/**
 * @param {number} ms
 * @param {string} notRun
 * @returns {Pool}
 */
function pool (ms, notRun) {
  let spent = 0
  /** When the load running now started, or null. */
  let since = /** @type {number | null} */ (null)
  const left = () => ms - spent - (since === null ? 0 : monotonicNow() - since)
  return {
    ms,
    left,
    notRun,
    async spend (fn) {
      const outer = since === null
      if (outer) since = monotonicNow()
      try {
        return await fn(monotonicNow() + left())
      } finally {
        if (outer && since !== null) {
          spent += monotonicNow() - since
          since = null
        }
      }
    }
  }
}
