// A counting gate: at most `limit` tasks run at once, the rest wait in order.
// Agents on one machine share one, so page loads from different locations
// never compete for the same two cores and distort each other's timings.

/** @param {number} [limit] */
export function createGate (limit = 1) {
  let running = 0
  /** @type {Array<() => void>} */
  const waiting = []
  return {
    /** The tasks running now (at most `limit`). */
    get running () {
      return running
    },
    /**
     * @template T
     * @param {() => Promise<T>} task
     * @returns {Promise<T>}
     */
    async run (task) {
      if (running >= limit) await new Promise((resolve) => waiting.push(() => resolve(undefined)))
      running++
      try {
        return await task()
      } finally {
        running--
        waiting.shift()?.()
      }
    }
  }
}
