// Prometheus metrics of one API process. Each call to createMetrics builds its
// own Registry, so several apps (tests) never share or clash over series.
// Database-backed gauges are read at scrape time, not kept up to date on the
// side: a scrape costs four queries, and a value can never be stale.
import { Registry, Counter, Gauge, Histogram, collectDefaultMetrics } from 'prom-client'
import { countJobsByState, FINISHED_WINDOW_S } from '../lib/store/jobs.js'
import { listAgents, AGENT_ALIVE_S } from '../lib/store/agents.js'
import { firingAlerts } from '../lib/store/alert-states.js'
import { locationCapacity } from '../lib/store/location-capacity.js'
import { latestLatency } from '../lib/store/results.js'

// Latency gauges carry one series per monitor × location × mode (× 2
// quantiles × 2 metrics). 500 keeps a scrape under ~2,000 latency samples,
// which Prometheus stores without strain; a deployment with more series
// exports only the 500 most recently measured and reports how many it left
// out in h3lens_metric_series_dropped, rather than growing without bound.
export const MAX_LATENCY_SERIES = 500

// "Latest" latency = percentiles over the last hour of ok results: at the
// 60 s minimum interval that is 60 runs per series, enough for a stable p95.
export const LATENCY_WINDOW_S = 3600

// Seconds. API calls take ~1-50 ms; exports of months of results stream for
// tens of seconds, hence the long tail.
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/** @typedef {Awaited<ReturnType<typeof locationCapacity>> extends Map<string, infer C> ? C : never} LocationCapacity */

/**
 * Live agents per location, for every location that has a registered,
 * unrevoked agent: 0 there means "agents exist but none is polling".
 * @param {import('pg').Pool} db
 * @returns {Promise<Map<string, number>>}
 */
export async function agentsAliveByLocation (db) {
  const out = new Map()
  for (const a of await listAgents(db)) {
    if (a.revoked_at) continue
    out.set(a.location_id, (out.get(a.location_id) ?? 0) + (a.alive ? 1 : 0))
  }
  return out
}

/**
 * Stored results per status for one submission. The API answers only
 * {stored, duplicates}; when both are non-zero (a resubmission that adds
 * results), which ones were new is known only if they all share a status,
 * otherwise they are counted as status "unknown" so the total stays right.
 * @param {{ status: string }[]} results as submitted
 * @param {{ stored: number, duplicates: number }} ack
 * @returns {Map<string, number>}
 */
export function ingestedByStatus (results, { stored, duplicates }) {
  const counts = new Map()
  if (stored === 0) return counts
  if (duplicates === 0) {
    for (const r of results) counts.set(r.status, (counts.get(r.status) ?? 0) + 1)
    return counts
  }
  const statuses = new Set(results.map((r) => r.status))
  counts.set(statuses.size === 1 ? results[0].status : 'unknown', stored)
  return counts
}

/**
 * @param {{ db: import('pg').Pool, log: Pick<import('pino').BaseLogger, 'warn'>, maxSeries?: number }} deps
 */
export function createMetrics ({ db, log, maxSeries = MAX_LATENCY_SERIES }) {
  const registry = new Registry()
  const registers = [registry]
  collectDefaultMetrics({ register: registry })

  // Every database-backed gauge collects from the same snapshot: prom-client
  // calls all collect functions at once per scrape, and sharing the
  // in-flight promise makes that four queries per scrape, not one per gauge.
  /** @type {Promise<Awaited<ReturnType<typeof readSnapshot>> | null> | null} */
  let inflight = null
  const snapshot = () => (inflight ??= readSnapshot().finally(() => { inflight = null }))
  async function readSnapshot () {
    try {
      const [jobs, agents, latency, firing, capacity] = await Promise.all([
        countJobsByState(db), agentsAliveByLocation(db), latestLatency(db, { windowS: LATENCY_WINDOW_S, maxSeries }), firingAlerts(db), locationCapacity(db)
      ])
      return { jobs, agents, latency, firing, capacity }
    } catch (/** @type {any} */ err) {
      // The scrape still answers (process metrics, counters) so Prometheus
      // does not lose everything when the database is down; the gap in the
      // database-backed series and h3lens_database_up show it.
      log.warn({ err: err.message }, 'metrics: database gauges not collected')
      return null
    }
  }

  new Gauge({
    name: 'h3lens_database_up',
    help: '1 when this scrape could read the database-backed metrics, 0 otherwise',
    registers,
    async collect () { this.set((await snapshot()) ? 1 : 0) }
  })

  new Gauge({
    name: 'h3lens_jobs',
    help: 'Live jobs (rounds of one monitor at one location) by state: queued or leased',
    labelNames: ['state'],
    registers,
    async collect () {
      const s = await snapshot()
      this.reset()
      for (const [state, n] of Object.entries(s?.jobs.live ?? {})) this.set({ state }, n)
    }
  })

  new Gauge({
    name: 'h3lens_jobs_finished_last_hour',
    help: `Jobs that finished in the last ${FINISHED_WINDOW_S / 60} minutes by state: done, failed, cancelled or skipped (not run: the previous round of its monitor at its location was still pending)`,
    labelNames: ['state'],
    registers,
    async collect () {
      const s = await snapshot()
      this.reset()
      for (const [state, n] of Object.entries(s?.jobs.finished ?? {})) this.set({ state }, n)
    }
  })

  new Gauge({
    name: 'h3lens_agents_alive',
    help: `Agents seen within the last ${AGENT_ALIVE_S} s, per location that has a registered, unrevoked agent`,
    labelNames: ['location'],
    registers,
    async collect () {
      const s = await snapshot()
      this.reset()
      for (const [location, n] of s?.agents ?? []) this.set({ location }, n)
    }
  })

  /**
   * A gauge per location read from its capacity (lib/store/location-capacity.js locationCapacity).
   * @param {string} name
   * @param {string} help
   * @param {(c: LocationCapacity) => number | null} value
   */
  const capacityGauge = (name, help, value) => new Gauge({
    name,
    help,
    labelNames: ['location'],
    registers,
    async collect () {
      const s = await snapshot()
      this.reset()
      for (const [location, c] of s?.capacity ?? []) {
        const v = value(c)
        if (v !== null) this.set({ location }, v)
      }
    }
  })
  capacityGauge('h3lens_location_demand_rounds_per_hour', 'Rounds per hour a location is asked for by its active monitors\' intervals', (c) => c.demand_per_hour)
  capacityGauge('h3lens_location_capacity_rounds_per_hour',
    'Rounds per hour a location can take: live agents x 3600 / mean seconds per round over the last hour (absent while none was measured)', (c) => c.capacity_per_hour)
  capacityGauge('h3lens_location_over_capacity', '1 when a location is asked for more rounds per hour than it can take', (c) => (c.over_capacity ? 1 : 0))
  capacityGauge('h3lens_location_rounds_skipped_busy_last_hour',
    'Rounds skipped over the last hour because the previous round of their monitor at the location was still pending', (c) => c.skipped_busy)

  const latencyLabels = ['monitor_id', 'location', 'mode', 'quantile']
  /**
   * @param {string} name
   * @param {'ttfb_ms' | 'load_ms'} column
   * @param {string} what
   */
  const latencyGauge = (name, column, what) => new Gauge({
    name,
    help: `${what} of ok first-view page loads over the last hour (quantile 0.5 and 0.95), per monitor, location and mode; ` +
      `at most ${maxSeries} series, the most recently measured`,
    labelNames: latencyLabels,
    registers,
    async collect () {
      const s = await snapshot()
      this.reset()
      for (const row of s?.latency.series ?? []) {
        const [p50, p95] = row[column] ?? []
        const labels = { monitor_id: String(row.monitor_id), location: row.location_id, mode: row.mode }
        if (p50 != null) this.set({ ...labels, quantile: '0.5' }, p50)
        if (p95 != null) this.set({ ...labels, quantile: '0.95' }, p95)
      }
    }
  })
  latencyGauge('h3lens_ttfb_ms', 'ttfb_ms', 'Time to first byte in ms')
  latencyGauge('h3lens_load_ms', 'load_ms', 'Page load (loadEventEnd) in ms')

  new Gauge({
    name: 'h3lens_metric_series_dropped',
    help: `Monitor × location × mode series measured in the last hour but left out of h3lens_ttfb_ms and h3lens_load_ms (cap ${maxSeries})`,
    registers,
    async collect () {
      const s = await snapshot()
      this.set(s ? Math.max(0, s.latency.total - s.latency.series.length) : 0)
    }
  })

  new Gauge({
    name: 'h3lens_alerts_firing',
    help: 'Alerts firing now: 1 per (alert rule id, monitor id, location); route them with Alertmanager instead of webhooks if you like',
    labelNames: ['rule', 'monitor', 'location'],
    registers,
    async collect () {
      const s = await snapshot()
      this.reset()
      for (const a of s?.firing ?? []) this.set({ rule: String(a.rule_id), monitor: String(a.monitor_id), location: a.location_id }, 1)
    }
  })

  const resultsIngested = new Counter({
    name: 'h3lens_results_ingested_total',
    help: 'Results stored from agents (duplicates of stored results not counted); status "unknown" for a resubmission with mixed statuses',
    labelNames: ['location', 'status'],
    registers
  })

  const rumBeacons = new Counter({
    name: 'h3lens_rum_beacons_total',
    help: 'Real-user beacons sent to POST /rum/v1/beacon by outcome: stored, duplicate (a replay, stored once), ' +
      'or why it was refused (invalid, too_large, bad_json, unsupported_type, unknown_site, wrong_origin, implausible, ' +
      'rate_limited_address, rate_limited_site; overloaded and failed: not stored for the server\'s sake)',
    labelNames: ['outcome'],
    registers
  })

  const httpRequestDuration = new Histogram({
    name: 'h3lens_http_request_duration_seconds',
    help: 'API response time by route pattern (never the raw URL, which would be unbounded)',
    labelNames: ['method', 'route', 'status_code'],
    buckets: HTTP_BUCKETS,
    registers
  })

  return {
    registry,
    resultsIngested,
    rumBeacons,
    httpRequestDuration,
    /**
     * Count a submission's stored results.
     * @param {string} location
     * @param {{ status: string }[]} results
     * @param {{ stored: number, duplicates: number }} ack
     */
    countIngested (location, results, ack) {
      for (const [status, n] of ingestedByStatus(results, ack)) resultsIngested.inc({ location, status }, n)
    }
  }
}
