// What a measurement is, as the server's catalogue says (GET
// /api/v1/catalogue, from lib/measurement/): the metrics the dashboard can
// compare, every metric a result carries (the runs table's columns, the
// run detail's timings), their labels, the probes, and the words for why a
// run came over its protocol. Loaded once before the first view renders;
// the arrays and maps are filled in place so every module sees them.
import { api } from './api.js'

/**
 * @typedef {{ id: string, alias: string | null, column: string | null, label: string, long: string, description: string,
 *   comparable: boolean, timeline: 'span' | 'mark' | null, summary: boolean, rttFloor: { h3: number, tcp: number } | null, browsers: string[] }} Metric
 */

/** @type {Metric[]} the page metrics that can be compared: the metric menus */
export const METRICS = []
/** @type {(Metric & { column: string })[]} every metric with a results column, in catalogue order */
export const PAGE_METRICS = []
/** @type {{ id: string, label: string, hint: string }[]} */
export const PROBES = []
/** @type {Map<string, string>} deprecated alias (ttfb) → id (ttfb_ms), so old links keep working */
const ALIASES = new Map()
/** @type {Map<string, string>} every metric's id → its label (a samples metric too: a journey step's step_ms) */
const LABELS = new Map()
export const catalogue = { defaultMetric: 'ttfb_ms' }
/** @type {Map<string, string>} protocol reason code (details.protocol_reason.code) → its words */
export const REASONS = new Map()
/** @type {Map<string, { label: string, text: string }>} Chromium's alternateProtocolUsage value → a short label and what it means */
export const USAGE = new Map()

/** @type {Map<string, string>} a browser's id (chromium) → its name (Chromium) */
const BROWSER_NAMES = new Map()

/** @type {Promise<void> | null} */
let loading = null

/** Loads the catalogue once; a failed load is tried again on the next call. */
export function loadCatalogue () {
  loading ??= api.catalogue().then((c) => {
    // The dashboard's metric menus show the page timings that can be compared;
    // per-request samples (request_ms, upload_ms) belong to their probe's view.
    METRICS.splice(0, METRICS.length, ...c.metrics.filter((m) => m.comparable && m.column))
    PAGE_METRICS.splice(0, PAGE_METRICS.length, ...c.metrics.filter((m) => m.column))
    PROBES.splice(0, PROBES.length, ...c.probes)
    for (const m of c.metrics) if (m.alias) ALIASES.set(m.alias, m.id)
    for (const m of c.metrics) LABELS.set(m.id, m.label)
    catalogue.defaultMetric = c.default_metric
    for (const r of c.protocol_reasons ?? []) REASONS.set(r.code, r.text)
    for (const u of c.alternate_protocol_usage ?? []) USAGE.set(u.value, { label: u.label, text: u.text })
    for (const b of c.browsers ?? []) BROWSER_NAMES.set(b.id, b.label)
  }, (err) => {
    loading = null
    throw err
  })
  return loading
}

/**
 * The id of a metric named by id or deprecated alias, or null.
 * @param {string | null} name
 */
export function metricId (name) {
  if (name === null) return null
  const id = ALIASES.get(name) ?? name
  return METRICS.some((m) => m.id === id) ? id : null
}

/** @param {string} id */
export const metricLabel = (id) => LABELS.get(ALIASES.get(id) ?? id) ?? id

/**
 * A protocol reason in words: the catalogue's, else the code.
 * @param {string} code
 */
export const reasonText = (code) => REASONS.get(code) ?? code

/**
 * A run's stored reason in today's words: the catalogue's text for its code
 * (a run stored, or measured by an agent, before a wording changed keeps
 * its old text), else the text it was stored with.
 * @param {{ code?: string, text?: string } | null | undefined} reason
 * @returns {string | null}
 */
export const storedReasonText = (reason) => (reason ? (reason.code && REASONS.get(reason.code)) || reason.text || null : null)

/**
 * An alternateProtocolUsage value's short label and meaning; an unknown
 * value is shown as Chromium names it.
 * @param {string} value
 */
export const usageOf = (value) => USAGE.get(value) ?? { label: value, text: `Chromium reported ${value}` }

/**
 * A browser's name as the catalogue writes it (Chromium for a run that
 * names none, as a run from before browsers); an unknown id as it is.
 * @param {string | null | undefined} id
 */
export const browserName = (id) => BROWSER_NAMES.get(id ?? 'chromium') ?? id ?? 'Chromium'

/**
 * Whether the catalogue knows a browser of this id.
 * @param {string | null} id
 */
export const isBrowser = (id) => id !== null && BROWSER_NAMES.has(id)

/**
 * Of `ids`, the catalogue's browsers, in the catalogue's order.
 * @param {Iterable<string | null>} ids
 */
export const browsersInOrder = (ids) => {
  const wanted = new Set(ids)
  return [...BROWSER_NAMES.keys()].filter((b) => wanted.has(b))
}
