// Computed comparisons, served again for a short while
// (H3LENS_COMPARISON_MAX_AGE_S).
//
// A 30-day comparison reads ~216,000 rounds and bootstraps every location:
// half a second to a second of CPU. A dashboard asks the same question each
// time it is shown (the overview asks one per monitor), while agents add
// rounds at the window's end every few seconds, so a cache that had to be
// exactly current would almost never be used. Instead an answer is served
// again while it is younger than the maximum age, and past half of it the
// request that finds it starts a recomputation in the background
// (stale-while-revalidate): a dashboard that is looked at gets answers at
// most the maximum age old without waiting for one. Every answer says when
// it was computed (computed_at; the API adds the Age header). One question
// is computed once at a time, however many ask.
//
// The key is everything an answer depends on: the question (monitor,
// metric, probe, view, analysis, percentiles, window; windows are aligned
// to 5 minutes, so "the last 7 days" asked twice in one slot is one
// question), the monitor's settings that shape the answer (locations, A/A
// protocol, practical minimum), the page timeout, and when the monitor's
// results were last imported (migration 017), so an import is seen at once,
// on every replica. What is left out (a location's name or profile, rounds
// from agents) shows within the maximum age.
//
// A live window (one that ends in the future) is also computed ahead for
// the next 5-minute slot once it is served within the last maximum age of its
// slot, so the dashboard does not wait when its window moves on.
import { LRUCache } from 'lru-cache'
import { regionalComparison } from './comparison.js'
import { returningShares } from './auto-shares.js'

const SLOT_MS = 5 * 60e3

/**
 * @typedef {Parameters<typeof regionalComparison>[1]} Question
 * @typedef {Awaited<ReturnType<typeof regionalComparison>> & { computed_at: string }} Answer
 * @typedef {{ answer: Answer, computedAt: number }} Entry
 */

/**
 * @param {{ maxAgeMs: number, max?: number, now?: () => number }} o
 *   max: questions kept (least recently asked ones go first)
 */
export function createComparisonCache ({ maxAgeMs, max = 500, now = Date.now }) {
  /** @param {import('pg').Pool} db @param {Question} q @returns {Promise<Entry>} */
  const compute = async (db, q) => {
    const computedAt = now()
    // Each location also says what users get of H3 (the auto arm's
    // returning visits), so the overview needs no second request per monitor.
    const [answer, users] = await Promise.all([regionalComparison(db, q), returningShares(db, q)])
    const locations = answer.locations.map((l) => ({ ...l, users_get: l.location_id === null ? null : users.get(l.location_id) ?? null }))
    return { answer: { ...answer, locations, computed_at: new Date(computedAt).toISOString() }, computedAt }
  }
  /** @type {LRUCache<string, Entry, { db: import('pg').Pool, q: Question }> | null} */
  const cache = maxAgeMs > 0
    ? new LRUCache({
        max,
        ttl: maxAgeMs / 2,
        allowStale: true,
        fetchMethod: async (_key, _stale, { context }) => compute(context.db, context.q)
      })
    : null

  /**
   * The answer to a question: kept, or computed now.
   * @param {import('pg').Pool} db
   * @param {Question} q
   * @param {{ fresh?: boolean }} [o] fresh: compute now whatever is kept (Cache-Control: no-cache)
   * @returns {Promise<{ answer: Answer, ageMs: number, cached: boolean }>}
   */
  async function answer (db, q, { fresh = false } = {}) {
    if (!cache) {
      const e = await compute(db, q)
      return { answer: e.answer, ageMs: 0, cached: false }
    }
    const key = keyOf(q)
    // Nothing kept: computed now, or joined where it is being computed already.
    const kept = cache.peek(key, { allowStale: true })
    const tooOld = fresh || (kept !== undefined && now() - kept.computedAt > maxAgeMs)
    const e = /** @type {Entry} */ (await cache.fetch(key, { context: { db, q }, forceRefresh: tooOld, allowStale: !tooOld }))
    ahead(db, q)
    return { answer: e.answer, ageMs: Math.max(0, now() - e.computedAt), cached: e === kept }
  }

  /**
   * The next slot's question of a live window, computed in the background
   * when the window's slot ends within the maximum age.
   * @param {import('pg').Pool} db
   * @param {Question} q
   */
  function ahead (db, q) {
    const t = now()
    if (!cache || +q.to <= t || +q.to - t > maxAgeMs) return
    const next = { ...q, from: new Date(+q.from + SLOT_MS), to: new Date(+q.to + SLOT_MS) }
    const key = keyOf(next)
    if (cache.has(key)) return
    cache.fetch(key, { context: { db, q: next } }).catch(() => {})
  }

  return { answer, get size () { return cache?.size ?? 0 } }
}

/**
 * Everything an answer depends on, as one string.
 * @param {Question} q
 */
export function keyOf (q) {
  const m = q.monitor
  return JSON.stringify([
    m.id, m.results_changed_at ? +new Date(m.results_changed_at) : null, m.locations, m.aa_protocol ?? null, m.min_effect_pct ?? null, m.min_effect_ms ?? null,
    q.metric, q.probe, q.view, q.analysis ?? 'matched', q.percentiles, +q.from, +q.to, q.timeoutMs ?? null, q.browser ?? 'chromium'
  ])
}
