// Runs in the page. Starts `count` fetches of `url` at once, on the
// connection the page already holds, and returns each one's time in ms from
// the fetch() call to the last byte of its body, with its status or error.
// no-store: every request goes to the server, none is answered by a cache.
/** @param {string} url @param {number} count */
export function parallelFetch (url, count) {
  const one = async () => {
    const start = performance.now()
    try {
      const res = await fetch(url, { cache: 'no-store' })
      await res.arrayBuffer()
      return { ms: performance.now() - start, status: res.status, error: null }
    } catch (/** @type {any} */ err) {
      return { ms: performance.now() - start, status: null, error: String(err && err.message ? err.message : err) }
    }
  }
  return Promise.all(Array.from({ length: count }, one))
}
