// What an agent needs to know about a job beyond the monitor itself, from
// earlier results: which origins to force onto QUIC when the monitor asks for
// every H3-capable origin, and above which values a run counts as an outlier
// that deserves a net log.
import { effectiveOptions } from '../measurement/probes/index.js'
import { h3Origins } from './monitor-origins.js'
import { outlierThresholds } from './netlogs.js'

/**
 * @param {import('pg').Pool} db
 * @param {{ monitor_id: number, location_id: string, url: string, modes: string[], probes: string[], options?: Record<string, any> }} job
 * @returns {Promise<{ force_quic_origins: string[], netlog_thresholds: Record<string, number> }>}
 */
export async function measurementHints (db, job) {
  const options = effectiveOptions(job.url, job.options ?? {})
  const key = { monitorId: job.monitor_id, locationId: job.location_id }
  const [origins, thresholds] = await Promise.all([
    options.force_quic === 'all' ? h3Origins(db, key) : [],
    options.netlog === 'outliers' ? cachedThresholds(db, { ...key, probes: job.probes, modes: job.modes }) : {}
  ])
  return { force_quic_origins: origins, netlog_thresholds: thresholds }
}

// Outlier thresholds (p99 of the last 100 runs) move slowly, and computing
// them on every claim is a third of all statement time under 200 agents
// (0.7 ms of PostgreSQL per claim; bench/load.js, docs/BENCHMARKS.md
// "Load"): keep each for a minute per process.
const THRESHOLD_TTL_MS = 60_000
/** @type {Map<string, { at: number, value: Promise<Record<string, number>> }>} */
const thresholdCache = new Map()

/**
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, locationId: string, probes: string[], modes: string[] }} q
 */
function cachedThresholds (db, q) {
  const k = JSON.stringify([q.monitorId, q.locationId, q.probes, q.modes])
  const hit = thresholdCache.get(k)
  if (hit && Date.now() - hit.at < THRESHOLD_TTL_MS) return hit.value
  const value = outlierThresholds(db, q)
  // A failed lookup is not cached: the next claim tries again.
  value.catch(() => thresholdCache.delete(k))
  if (thresholdCache.size > 10_000) thresholdCache.clear()
  thresholdCache.set(k, { at: Date.now(), value })
  return value
}
