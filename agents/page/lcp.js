// Runs in the page. Largest contentful paint in ms, or null if none was
// reported within `waitMs`. An image that finished loading with the load
// event is painted a frame or two later, so two animation frames pass before
// the buffered entries are read; otherwise the smaller heading painted
// earlier would be taken for the largest.
/** @param {number} waitMs */
export function lcp (waitMs) {
  return new Promise((resolve) => {
    /** @type {number | null} */
    let latest = null
    /** @type {PerformanceObserver | null} */
    let observer = null
    const finish = () => {
      if (observer) observer.disconnect()
      resolve(latest)
    }
    const deadline = setTimeout(finish, waitMs)
    const afterPaint = (/** @type {FrameRequestCallback} */ callback) => requestAnimationFrame(() => requestAnimationFrame(callback))
    afterPaint(() => {
      observer = new PerformanceObserver((list) => {
        const entries = list.getEntries()
        latest = entries[entries.length - 1].startTime
        clearTimeout(deadline)
        finish()
      })
      observer.observe({ type: 'largest-contentful-paint', buffered: true })
    })
  })
}
