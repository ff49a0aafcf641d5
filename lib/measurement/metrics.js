// The metric catalogue: every metric h3lens measures is one entry here, and
// every list of metrics elsewhere (API request and response schemas, the
// results columns, the agents' submission, rollups, result checks, the
// export and the dashboard through GET /api/v1/catalogue) is derived from it.
//
// Adding a metric takes three files: an entry here, the in-page script that
// measures it (agents/page-metrics.js for a page timing), and a migration
// that adds its results column and, with a rollup, its rollups column.

/**
 * @typedef {object} Metric
 * @property {string} id API name, with its unit, as the column is named (`ttfb_ms`)
 * @property {string} alias the API name before units were added (`ttfb`); accepted for one version, deprecated since 2026-11-22
 * @property {string | null} column results column holding one value per result, or null when the values are samples in details.samples
 * @property {string | null} samplesOf the probe whose results carry this metric as details.samples (one value per request or upload)
 * @property {'ms'} unit
 * @property {string} label short name for tables and charts
 * @property {string} long one-line name
 * @property {string} description how it is measured
 * @property {string | null} rollup the rollups column (a sketch per bucket), or null without a rollup
 * @property {boolean} comparable whether the comparison, trends, distribution and alerts accept it
 * @property {boolean} lowerIsBetter
 */

/**
 * @param {Partial<Metric> & { id: string, alias: string, label: string, long: string, description: string }} m
 * @returns {Readonly<Metric>}
 */
function metric (m) {
  return Object.freeze({
    column: m.samplesOf ? null : m.id,
    samplesOf: null,
    unit: 'ms',
    rollup: m.alias,
    comparable: false,
    lowerIsBetter: true,
    ...m
  })
}

/** Every metric, in the order tables and menus show them. */
export const METRICS = Object.freeze([
  metric({ id: 'ttfb_ms', alias: 'ttfb', label: 'TTFB', long: 'Time to first byte', description: 'responseStart, relative to navigation start', comparable: true }),
  metric({ id: 'load_ms', alias: 'load', label: 'Load', long: 'Page load (loadEventEnd)', description: 'loadEventEnd', comparable: true }),
  metric({ id: 'fcp_ms', alias: 'fcp', label: 'FCP', long: 'First contentful paint', description: 'first-contentful-paint', comparable: true }),
  metric({ id: 'lcp_ms', alias: 'lcp', label: 'LCP', long: 'Largest contentful paint', description: 'largest-contentful-paint', comparable: true }),
  metric({ id: 'connect_ms', alias: 'connect', label: 'Connect', long: 'Connection setup', description: 'connectEnd - connectStart; for QUIC includes the crypto handshake', comparable: true }),
  metric({ id: 'dcl_ms', alias: 'dcl', label: 'DCL', long: 'DOMContentLoaded', description: 'domContentLoadedEventEnd' }),
  metric({ id: 'dns_ms', alias: 'dns', label: 'DNS', long: 'DNS lookup', description: 'domainLookupEnd - domainLookupStart' }),
  metric({ id: 'tls_ms', alias: 'tls', label: 'TLS', long: 'TLS handshake', description: 'connectEnd - secureConnectionStart' }),
  metric({ id: 'request_ms', alias: 'request', samplesOf: 'parallel', label: 'Request', long: 'One parallel request', description: 'one request of the parallel probe, sent at once with the others after a warm-up navigation', comparable: true }),
  metric({ id: 'upload_ms', alias: 'upload', samplesOf: 'upload', label: 'Upload', long: 'Upload (POST)', description: 'one POST of the upload probe, request start to response end', comparable: true }),
  metric({ id: 'step_ms', alias: 'step', samplesOf: 'journey', label: 'Step', long: 'Journey step (or the whole journey)', description: 'a journey step\'s duration, from its first action to the end of its last (a navigation\'s load event), or the whole journey\'s', comparable: true })
])

const BY_NAME = new Map(METRICS.flatMap((m) => [[m.id, m], [m.alias, m]]))

/** Metrics with a results column of their own, in catalogue order. */
export const COLUMN_METRICS = Object.freeze(METRICS.filter((m) => m.column))
/** Their results columns (milliseconds). */
export const TIMING_COLUMNS = Object.freeze(COLUMN_METRICS.map((m) => /** @type {string} */ (m.column)))
/** Metrics with a rollup column, and the columns. */
export const ROLLUP_METRICS = Object.freeze(METRICS.filter((m) => m.rollup))
export const ROLLUP_COLUMNS = Object.freeze(ROLLUP_METRICS.map((m) => /** @type {string} */ (m.rollup)))
/** Names the comparison, trends, distribution and alert rules accept: every id, then the deprecated aliases. */
const COMPARABLE = METRICS.filter((m) => m.comparable)
export const COMPARABLE_METRICS = Object.freeze(COMPARABLE.map((m) => m.id))
export const METRIC_ALIASES = Object.freeze(Object.fromEntries(METRICS.map((m) => [m.alias, m.id])))
export const ACCEPTED_METRIC_NAMES = Object.freeze([...COMPARABLE_METRICS, ...COMPARABLE.map((m) => m.alias)])
export const DEFAULT_METRIC = 'ttfb_ms'

export const DEFAULT_PERCENTILES = Object.freeze([25, 50, 75, 90, 95, 99])

/**
 * The catalogue entry of a metric by id or deprecated alias.
 * @param {string} name
 * @returns {Readonly<Metric>}
 */
export function metricOf (name) {
  const m = BY_NAME.get(name)
  if (!m) throw new TypeError(`unknown metric ${JSON.stringify(name)}`)
  return m
}

/**
 * The id of a metric named by id or deprecated alias (`ttfb` → `ttfb_ms`);
 * names the catalogue does not know are returned as they are.
 * @param {string} name
 */
export function canonicalMetric (name) {
  return BY_NAME.get(name)?.id ?? name
}

/**
 * The probe a metric must be read from, when only one probe has it.
 * @param {string} name metric id or alias
 * @returns {string | null}
 */
export function probeOfMetric (name) {
  return BY_NAME.get(name)?.samplesOf ?? null
}

/**
 * The values one result contributes to each rollup column. A page load
 * contributes one value per timing; probes with several samples per result
 * (parallel requests) contribute each sample.
 * @param {Record<string, any>} r a results row
 * @returns {[string, number[]][]} rollup column → values
 */
export function metricSamples (r) {
  /** @type {[string, number[]][]} */
  const out = []
  const usable = (/** @type {any} */ v) => v !== null && v !== undefined && Number.isFinite(v) && v >= 0
  for (const m of ROLLUP_METRICS) {
    const rollup = /** @type {string} */ (m.rollup)
    if (m.column) {
      const v = r[m.column]
      if (usable(v)) out.push([rollup, [v]])
    } else if (probeFamily(r.probe) === m.samplesOf && Array.isArray(r.details?.samples)) {
      const values = r.details.samples.filter(usable)
      if (values.length) out.push([rollup, values])
    }
  }
  return out
}

/**
 * The catalogue probe a stored probe value belongs to: a journey step's
 * results ('journey:login') are the journey probe's (lib/measurement/probes/journey.js).
 * @param {string | undefined} probe
 */
function probeFamily (probe) {
  const p = probe ?? 'page'
  const i = p.indexOf(':')
  return i < 0 ? p : p.slice(0, i)
}
