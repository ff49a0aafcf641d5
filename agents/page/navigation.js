// Runs in the page. The navigation's Navigation Timing entry, as plain data
// (times in ms relative to its startTime), or null before a document loaded.
export function navigation () {
  const [entry] = /** @type {PerformanceNavigationTiming[]} */ (performance.getEntriesByType('navigation'))
  if (!entry) return null
  return {
    name: entry.name,
    nextHopProtocol: entry.nextHopProtocol,
    responseStatus: /** @type {any} */ (entry).responseStatus ?? null,
    startTime: entry.startTime,
    domainLookupStart: entry.domainLookupStart,
    domainLookupEnd: entry.domainLookupEnd,
    connectStart: entry.connectStart,
    secureConnectionStart: entry.secureConnectionStart,
    connectEnd: entry.connectEnd,
    requestStart: entry.requestStart,
    responseStart: entry.responseStart,
    responseEnd: entry.responseEnd,
    domContentLoadedEventEnd: entry.domContentLoadedEventEnd,
    loadEventEnd: entry.loadEventEnd,
    transferSize: entry.transferSize,
    decodedBodySize: entry.decodedBodySize
  }
}
