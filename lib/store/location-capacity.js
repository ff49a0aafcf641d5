// Each location's demand (its monitors' rounds per hour) against its
// capacity (its live agents and how long its rounds take): a read over the
// monitors, jobs and agents tables, shown on the Locations page and exported
// as Prometheus gauges.
import { AGENT_ALIVE_S, agentRunningSql } from './agents.js'

// A location's capacity is estimated from the rounds its agents finished in
// this window; skipped rounds are counted over it too.
export const CAPACITY_WINDOW_S = 3600

/**
 * Rounds per hour each location is asked for (its active monitors'
 * intervals) against what it can take: live agents (each runs one round at
 * a time) × 3600 / the mean time a round took from claim to results over the
 * last hour. capacity_per_hour is null while no round was measured in the
 * window; over_capacity says demand exceeds it (or nothing serves a
 * location that has demand). skipped_busy counts the rounds skipped in the
 * window because the previous one was still pending (scheduleDueJobs).
 * Each part reads an index range (jobs_finished over the last hour, the
 * monitors and agents tables), never the retained job history.
 * @param {import('pg').Pool} db
 * @returns {Promise<Map<string, { demand_per_hour: number, capacity_per_hour: number | null, round_s: number | null,
 *   agents_alive: number, skipped_busy: number, skipped: number, over_capacity: boolean }>>}
 */
export async function locationCapacity (db) {
  const { rows } = await db.query(
    `WITH demand AS (
       SELECT loc AS location_id, sum(3600.0 / m.interval_s) AS per_hour
         FROM monitors m CROSS JOIN LATERAL unnest(m.locations) AS loc
        WHERE m.deleted_at IS NULL AND NOT m.paused GROUP BY loc),
     finished AS (
       SELECT location_id,
              avg(extract(epoch FROM finished_at - started_at)) FILTER (WHERE state = 'done' AND started_at IS NOT NULL) AS round_s,
              count(*) FILTER (WHERE state = 'skipped' AND last_error LIKE 'skipped: location busy%') AS skipped_busy,
              count(*) FILTER (WHERE state = 'skipped') AS skipped
         FROM jobs
        WHERE state IN ('done', 'failed', 'cancelled', 'skipped') AND finished_at > now() - make_interval(secs => $1)
        GROUP BY location_id),
     alive AS (
       SELECT location_id, count(*) AS n FROM agents a
        WHERE revoked_at IS NULL AND ${agentRunningSql('$2')} GROUP BY location_id)
     SELECT l.id, coalesce(d.per_hour, 0)::float8 AS demand_per_hour, f.round_s::float8 AS round_s,
            coalesce(a.n, 0)::int AS agents_alive, coalesce(f.skipped_busy, 0)::int AS skipped_busy,
            coalesce(f.skipped, 0)::int AS skipped
       FROM locations l LEFT JOIN demand d ON d.location_id = l.id
       LEFT JOIN finished f ON f.location_id = l.id LEFT JOIN alive a ON a.location_id = l.id`,
    [CAPACITY_WINDOW_S, AGENT_ALIVE_S])
  const out = new Map()
  for (const r of rows) {
    const capacity = r.agents_alive === 0 ? 0 : r.round_s > 0 ? r.agents_alive * 3600 / r.round_s : null
    out.set(r.id, {
      demand_per_hour: round1(r.demand_per_hour),
      capacity_per_hour: capacity === null ? null : round1(capacity),
      round_s: r.round_s === null ? null : Math.round(r.round_s * 1000) / 1000,
      agents_alive: r.agents_alive,
      skipped_busy: r.skipped_busy,
      skipped: r.skipped,
      over_capacity: capacity !== null && r.demand_per_hour > capacity
    })
  }
  return out
}

const round1 = (/** @type {number} */ v) => Math.round(v * 10) / 10
