// Percentiles over time and whole distributions, from the rollups.
import { bucketSeries, mergedSeries, TIERS } from './rollups.js'
import { sketchQuantile, sketchCount, encodedQuantiles } from './stats/index.js'

// A chart or CSV with more buckets per series than this is unreadable and
// slow; the API asks for a wider bucket instead.
export const MAX_POINTS = 2000

/** @param {number} p percentile 0..100 */
const key = (p) => `p${String(p).replace('.', '_')}`

/**
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, metric: string, bucket: '5m'|'1h'|'1d', from: Date, to: Date, percentiles: number[], probe: string, view: string, browser?: string }} q
 */
export async function trends (db, { monitorId, metric, bucket, from, to, percentiles, probe, view, browser = 'chromium' }) {
  const rows = await bucketSeries(db, { monitorId, metric, probe, view, browser, tier: bucket, from, to })
  const series = new Map()
  for (const r of rows) {
    const k = `${r.location_id}|${r.mode}`
    if (!series.has(k)) series.set(k, { location_id: r.location_id, mode: r.mode, points: [] })
    /** @type {Record<string, string | number | null>} */
    const point = { t: r.bucket.toISOString(), count: r.count, runs: r.runs, errors: r.errors, fallbacks: r.fallbacks }
    const values = r.read
      ? encodedQuantiles(r.read, percentiles.map((p) => p / 100))
      : percentiles.map((p) => (r.sketch ? sketchQuantile(r.sketch, p / 100) : null))
    percentiles.forEach((p, i) => { point[key(p)] = round(values[i]) })
    series.get(k).points.push(point)
  }
  return {
    monitor_id: monitorId,
    metric,
    bucket,
    probe,
    view,
    browser,
    from: from.toISOString(),
    to: to.toISOString(),
    percentiles,
    series: [...series.values()].sort((a, b) => (a.location_id + a.mode).localeCompare(b.location_id + b.mode))
  }
}

/** Stable CSV columns for trends: one row per (bucket, location, mode). */
/** @param {number[]} percentiles */
export function trendColumns (percentiles) {
  return ['bucket_start', 'location_id', 'mode', 'metric', 'count', 'runs', 'errors', 'fallbacks', ...percentiles.map((p) => `${key(p)}_ms`)]
}

/** @param {Awaited<ReturnType<typeof trends>>} t */
export function* trendRows (t) {
  for (const s of t.series) {
    for (const p of s.points) {
      yield [p.t, s.location_id, s.mode, t.metric, p.count, p.runs, p.errors, p.fallbacks, ...t.percentiles.map((q) => p[key(q)])]
    }
  }
}

/**
 * Quantiles 0..1 of each (location, mode) over the window, for CDF charts.
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, metric: string, from: Date, to: Date, probe: string, view: string, browser?: string }} q
 */
export async function distribution (db, { monitorId, metric, from, to, probe, view, browser = 'chromium' }) {
  const merged = await mergedSeries(db, { monitorId, metric, probe, view, browser, from, to })
  const qs = Array.from({ length: 101 }, (_, i) => i / 100)
  const series = [...merged.values()].filter((s) => s.sketch).map((s) => ({
    location_id: s.location_id,
    mode: s.mode,
    count: sketchCount(s.sketch),
    points: qs.map((q) => ({ q, ms: round(sketchQuantile(s.sketch, q)) }))
  }))
  return { monitor_id: monitorId, metric, probe, view, browser, from: from.toISOString(), to: to.toISOString(), series }
}

/**
 * Number of buckets of width `bucket` in [from, to).
 * @param {keyof typeof TIERS} bucket
 * @param {Date | number} from
 * @param {Date | number} to
 */
export function bucketCount (bucket, from, to) {
  return Math.ceil((+to - +from) / TIERS[bucket])
}

/** @param {number | null | undefined} v */
function round (v) {
  return v === null || v === undefined ? null : Math.round(v * 100) / 100
}
