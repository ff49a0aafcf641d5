// The metric catalogue: every metric h3lens measures is one entry here, and
// every list of metrics elsewhere is derived from it: the API's request and
// response schemas, the results columns, the agents' submission, the result
// checks (`atLeast`), rollups, the import and export, the WebPageTest
// mapping (`wpt`), alert rules, and the dashboard (metric menus, the runs
// table, the run detail's timings) through GET /api/v1/catalogue.
//
// Adding a column metric takes three files (docs/ARCHITECTURE.md, "Where to
// make the usual changes"; test/extension.test.js adds one that way):
//   1. an entry here;
//   2. the code that measures it: with `pageScript`, a script run in the
//      loaded page, agents/page/metrics/<id>.js (its default export returns
//      ms since the navigation's start, or null); otherwise the agent code
//      that sets the result's <id>;
//   3. a migration that adds columns only: results.<id>, round_summaries'
//      <arm>_<id> for every arm (h2, h3, auto), rollups.<rollup> when it has
//      a rollup, and ends with `SELECT round_summaries_define_fold();`
//      (migrations/021_auto_arm.sql), which rebuilds the round-summary fold
//      from those columns.

import { BROWSERS } from './browsers/index.js'
import { journey } from './probes/journey.js'

/**
 * @typedef {object} Metric
 * @property {string} id API name, with its unit, as the column is named (`ttfb_ms`)
 * @property {string | null} alias a deprecated API name (`ttfb`, the name before units were added, deprecated since
 *   2026-11-22), accepted where the id is; null for a metric that never had another name
 * @property {string | null} column results column holding one value per result, or null when the values are samples in details.samples
 * @property {string | null} samplesOf the probe whose results carry this metric as details.samples (one value per request or upload)
 * @property {'ms'} unit
 * @property {string} label short name for tables and charts
 * @property {string} long one-line name
 * @property {string} description how it is measured
 * @property {string | null} rollup the rollups column (a sketch per bucket; default: the id), or null without a rollup
 * @property {boolean} comparable whether the comparison, trends, distribution and alerts accept it
 * @property {boolean} lowerIsBetter
 * @property {readonly string[]} atLeast page metrics it is never below in one page load: the result checks refuse a
 *   page result that says otherwise (lib/measurement/checks.js)
 * @property {'span' | 'mark' | null} timeline how the run detail draws it: a duration (`span`), a time since the
 *   navigation's start (`mark`, the default for a column metric), or not at all (null, samples)
 * @property {boolean} summary a column of the runs table and a tile of the run detail
 * @property {Readonly<{ h3: number, tcp: number }> | null} rttFloor its least value in round trips on a fresh
 *   connection without loss, over QUIC and over TCP + TLS 1.3 (lib/measurement/rtt.js); the result carries it in
 *   RTT as <name>_rtt
 * @property {Readonly<{ pageData: string, agentClock?: true } | { navigation: true }> | null} wpt where a WebPageTest result
 *   has it: a pageData field of the agent's devtools file (0 read as not measured), or the navigation's own phases read
 *   from the base page's request (lib/measurement/wpt/navigation.js); null: WPT results leave it null. agentClock: the
 *   field counts from the agent's own zero, before the navigation began, and is moved to the navigation's start
 *   (lib/measurement/wpt/devtools.js)
 * @property {boolean} pageScript measured by its own script in the loaded page, agents/page/metrics/<id>.js
 * @property {readonly string[]} browsers the browsers that give it (lib/measurement/browsers/index.js); a result of
 *   another browser leaves it null, never zero
 */

/**
 * @param {Partial<Metric> & { id: string, label: string, long: string, description: string }} m
 * @returns {Readonly<Metric>}
 */
function metric ({ id, ...m }) {
  const column = m.samplesOf ? null : id
  /** @type {Metric} */
  const full = {
    id,
    alias: null,
    column,
    samplesOf: null,
    unit: 'ms',
    rollup: id,
    comparable: false,
    lowerIsBetter: true,
    atLeast: Object.freeze([]),
    timeline: column ? 'mark' : null,
    summary: false,
    rttFloor: null,
    wpt: null,
    pageScript: false,
    browsers: BROWSERS,
    ...m
  }
  return Object.freeze({
    ...full,
    atLeast: Object.freeze([...full.atLeast]),
    browsers: Object.freeze([...full.browsers]),
    rttFloor: full.rttFloor && Object.freeze({ ...full.rttFloor }),
    wpt: full.wpt && Object.freeze({ ...full.wpt })
  })
}

// Filmstrips come from Chromium's DevTools screencast (agents/filmstrip.js):
// the visual metrics are Chromium's only.
const FILMED_IN = Object.freeze(['chromium'])

/** Every metric, in the order tables and menus show them. */
export const METRICS = Object.freeze([
  metric({
    id: 'ttfb_ms', alias: 'ttfb', rollup: 'ttfb', label: 'TTFB', long: 'Time to first byte', description: 'responseStart, relative to navigation start',
    comparable: true, atLeast: ['dns_ms', 'connect_ms'], summary: true, rttFloor: { h3: 2, tcp: 3 }, wpt: { navigation: true }
  }),
  metric({
    id: 'load_ms', alias: 'load', rollup: 'load', label: 'Load', long: 'Page load (loadEventEnd)', description: 'loadEventEnd',
    comparable: true, atLeast: ['ttfb_ms', 'dcl_ms'], summary: true, wpt: { pageData: 'loadEventEnd' }
  }),
  metric({
    id: 'fcp_ms', alias: 'fcp', rollup: 'fcp', label: 'FCP', long: 'First contentful paint', description: 'first-contentful-paint',
    comparable: true, atLeast: ['ttfb_ms'], summary: true, wpt: { pageData: 'firstContentfulPaint', agentClock: true }, pageScript: true
  }),
  metric({
    id: 'lcp_ms', alias: 'lcp', rollup: 'lcp', label: 'LCP', long: 'Largest contentful paint', description: 'largest-contentful-paint',
    comparable: true, atLeast: ['ttfb_ms'], wpt: { pageData: 'chromeUserTiming.LargestContentfulPaint', agentClock: true }
  }),
  metric({
    id: 'connect_ms', alias: 'connect', rollup: 'connect', label: 'Connect', long: 'Connection setup', description: 'connectEnd - connectStart; for QUIC includes the crypto handshake',
    comparable: true, atLeast: ['tls_ms'], timeline: 'span', summary: true, rttFloor: { h3: 1, tcp: 2 }, wpt: { navigation: true }
  }),
  metric({
    id: 'dcl_ms', alias: 'dcl', rollup: 'dcl', label: 'DCL', long: 'DOMContentLoaded', description: 'domContentLoadedEventEnd',
    atLeast: ['ttfb_ms'], wpt: { pageData: 'domContentLoadedEventStart' }
  }),
  metric({
    id: 'dns_ms', alias: 'dns', rollup: 'dns', label: 'DNS', long: 'DNS lookup', description: 'domainLookupEnd - domainLookupStart',
    timeline: 'span', wpt: { navigation: true }
  }),
  metric({
    id: 'tls_ms', alias: 'tls', rollup: 'tls', label: 'TLS', long: 'TLS handshake', description: 'connectEnd - secureConnectionStart',
    timeline: 'span', wpt: { navigation: true }
  }),
  metric({
    id: 'first_visual_change_ms', label: 'First change', long: 'First visual change',
    description: 'the first frame of the filmstrip that differs from the blank page (options.filmstrip; docs/FILMSTRIPS.md)',
    comparable: true, wpt: { pageData: 'render', agentClock: true }, browsers: FILMED_IN
  }),
  metric({
    id: 'speed_index_ms', label: 'Speed Index', long: 'Speed Index',
    description: 'the area above the visual progress curve, ∫ (1 − progress) dt, from the filmstrip with speedline-core as Lighthouse computes it',
    comparable: true, atLeast: ['first_visual_change_ms'], summary: true, wpt: { pageData: 'SpeedIndex', agentClock: true }, browsers: FILMED_IN
  }),
  metric({
    id: 'visually_complete_85_ms', label: 'VC 85%', long: 'Visually complete 85%',
    description: 'the first frame whose visual progress reaches 85 %',
    comparable: true, atLeast: ['first_visual_change_ms'], wpt: { pageData: 'visualComplete85', agentClock: true }, browsers: FILMED_IN
  }),
  metric({
    id: 'visually_complete_ms', label: 'VC 100%', long: 'Visually complete',
    description: 'the first frame whose visual progress reaches 100 %',
    comparable: true, atLeast: ['visually_complete_85_ms'], wpt: { pageData: 'visualComplete', agentClock: true }, browsers: FILMED_IN
  }),
  metric({
    id: 'last_visual_change_ms', label: 'Last change', long: 'Last visual change',
    description: 'the last frame that differs from the one before it, until capture stopped (load plus a quiet second)',
    comparable: true, atLeast: ['first_visual_change_ms'], wpt: { pageData: 'lastVisualChange', agentClock: true }, browsers: FILMED_IN
  }),
  metric({
    id: 'request_ms', alias: 'request', rollup: 'request', samplesOf: 'parallel', label: 'Request', long: 'One parallel request',
    description: 'one request of the parallel probe, sent at once with the others after a warm-up navigation', comparable: true
  }),
  metric({
    id: 'upload_ms', alias: 'upload', rollup: 'upload', samplesOf: 'upload', label: 'Upload', long: 'Upload (POST)',
    description: 'one POST of the upload probe, request start to response end', comparable: true
  }),
  metric({
    id: 'step_ms', samplesOf: 'journey', label: 'Step', long: 'Journey step (or the whole journey)',
    description: 'a journey step\'s duration, from its first action to the end of its last (a navigation\'s load event), or the whole journey\'s', comparable: true,
    browsers: journey.browsers
  })
])

/** @type {Map<string, Readonly<Metric>>} */
const BY_NAME = new Map(METRICS.flatMap((m) => (m.alias ? [m.id, m.alias] : [m.id]).map((name) => /** @type {const} */ ([name, m]))))

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
/** Deprecated alias → id, for the metrics that have one. */
export const METRIC_ALIASES = Object.freeze(Object.fromEntries(METRICS.filter((m) => m.alias).map((m) => [m.alias, m.id])))
export const ACCEPTED_METRIC_NAMES = Object.freeze([...COMPARABLE_METRICS, ...COMPARABLE.flatMap((m) => (m.alias ? [m.alias] : []))])
export const DEFAULT_METRIC = 'ttfb_ms'

export const DEFAULT_PERCENTILES = Object.freeze([25, 50, 75, 90, 95, 99])

export const MIN_ROUNDS = 10
// A percentile needs enough rounds beyond it to be estimated: at least
// TAIL_ROUNDS expected rounds above (below) it, so p50 needs 20, p90 100,
// p95 200 and p99 1,000 (bench/calibration.js shows why fewer gave false cells).
export const TAIL_ROUNDS = 10

/** The rounds a percentile needs before it is tested. @param {number} percentile */
export function minRoundsFor (percentile) {
  const q = percentile / 100
  // Relative slack for binary fractions: 1 − 0.999 is a hair above 0.001, and 10 / it a hair above 10,000.
  return Math.max(2 * MIN_ROUNDS, Math.ceil(TAIL_ROUNDS / Math.min(q, 1 - q) * (1 - 1e-9)))
}

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
 * The probe a metric is read from when `asked` is asked for: a samples
 * metric's own probe, unless the asked probe is one of its steps (step_ms
 * of 'journey:login'); any other metric, the asked one.
 * @param {string} metric id or alias
 * @param {string} asked
 */
export function probeFor (metric, asked) {
  const own = probeOfMetric(metric)
  if (!own) return asked
  return probeFamily(asked) === own ? asked : own
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
