// Waiting for a condition rather than for a time (docs/TESTING.md).
import { setTimeout as sleep } from 'node:timers/promises'

/** @template T @typedef {Exclude<T, false | 0 | '' | null | undefined>} Truthy */

/**
 * Poll `fn` until it returns a truthy value. Every 100 ms by default: a
 * condition met just after a poll costs the test up to one interval.
 * @template T
 * @param {() => T | Promise<T>} fn
 * @param {{ timeoutMs?: number, intervalMs?: number, what?: string }} [opts]
 * @returns {Promise<Truthy<Awaited<T>>>} the first truthy value
 */
export async function eventually (fn, { timeoutMs = 60000, intervalMs = 100, what = 'condition' } = {}) {
  const until = Date.now() + timeoutMs
  let last
  while (Date.now() < until) {
    last = await fn()
    if (last) return /** @type {Truthy<Awaited<T>>} */ (last)
    await sleep(intervalMs)
  }
  throw new Error(`timed out waiting for ${what}`)
}
