// Every metric has one definition: its API name, its column, its unit.

/** API metric name → results column (milliseconds). */
export const TIMING_METRICS = Object.freeze({
  ttfb: 'ttfb_ms',
  load: 'load_ms',
  fcp: 'fcp_ms',
  lcp: 'lcp_ms',
  connect: 'connect_ms',
  dcl: 'dcl_ms',
  dns: 'dns_ms',
  tls: 'tls_ms'
})

/** Metrics that have rollups. */
export const ROLLUP_METRICS = Object.freeze(Object.keys(TIMING_METRICS))

/** Metrics the comparison and trends endpoints accept. */
export const COMPARABLE_METRICS = Object.freeze(['ttfb', 'load', 'fcp', 'lcp', 'connect'])

export const DEFAULT_PERCENTILES = Object.freeze([25, 50, 75, 90, 95, 99])

/**
 * The values one result contributes to each metric's sketch. A page load
 * contributes one value per timing; probes with several samples per result
 * (parallel requests) contribute each sample.
 * @param {Record<string, any>} r a results row
 * @returns {[string, number[]][]}
 */
export function metricSamples (r) {
  /** @type {[string, number[]][]} */
  const out = []
  for (const [metric, column] of Object.entries(TIMING_METRICS)) {
    const v = r[column]
    if (v !== null && v !== undefined && Number.isFinite(v) && v >= 0) out.push([metric, [v]])
  }
  return out
}
