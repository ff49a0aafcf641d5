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

/**
 * Metrics that have rollups: each is a bytea column of the rollups table
 * (migrations/002_rollups.sql). `request` holds per-request durations of the
 * parallel probe, `upload` upload durations.
 */
export const ROLLUP_METRICS = Object.freeze([...Object.keys(TIMING_METRICS), 'request', 'upload'])

/**
 * API metric name → the probe whose results carry it as samples in
 * details.samples (milliseconds): one per parallel request, one per upload.
 * Lower is better for both, like every timing.
 */
export const SAMPLE_METRICS = Object.freeze({
  request: 'parallel',
  upload: 'upload'
})

/** Metrics the comparison and trends endpoints accept. */
export const COMPARABLE_METRICS = Object.freeze(['ttfb', 'load', 'fcp', 'lcp', 'connect', 'request', 'upload'])

/**
 * The probe a metric must be read from, when only one probe has it.
 * @param {string} metric
 * @returns {string | null}
 */
export function probeOfMetric (metric) {
  return SAMPLE_METRICS[metric] ?? null
}

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
  const usable = (v) => v !== null && v !== undefined && Number.isFinite(v) && v >= 0
  for (const [metric, column] of Object.entries(TIMING_METRICS)) {
    const v = r[column]
    if (usable(v)) out.push([metric, [v]])
  }
  for (const [metric, probe] of Object.entries(SAMPLE_METRICS)) {
    if (r.probe !== probe || !Array.isArray(r.details?.samples)) continue
    const values = r.details.samples.filter(usable)
    if (values.length) out.push([metric, values])
  }
  return out
}
