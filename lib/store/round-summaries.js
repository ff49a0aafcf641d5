// SQL for the round_summaries table (migrations/013_round_summaries.sql):
// one row per round, probe and view, with each arm's state and values,
// kept current by a trigger on results in the results' own transaction. The
// comparison (lib/comparison.js) reads its rounds here instead of grouping
// the window's results into rounds.
import { TIMING_METRICS } from '../metrics-def.js'

/**
 * @typedef {{ kind: 'count', location_id: string, h2: string, h3: string, n: number }
 *   | { kind: 'used', location_id: string, h2: string, h3: string, n: number, job_id: string, k: string, h2_v: number[] | null, h3_v: number[] | null }} RoundWindowRow
 */

/**
 * A window's rounds of one series, in one index range scan: how many rounds
 * at each location fell into each pair of arm states for this metric, and
 * the rounds the analysis uses with their values, evenly subsampled to
 * `cap` per location (every k-th usable round by time).
 *
 * States per metric: an ok arm without this metric's value is no_value; an
 * arm with no result is missing.
 * @param {import('pg').Pool | import('pg').PoolClient} db
 * @param {{ monitorId: number, metric: string, probe: string, view: string, from: Date, to: Date, analysis: string, cap: number }} w
 * @returns {Promise<RoundWindowRow[]>}
 */
export async function readRoundWindow (db, w) {
  const value = (arm) => TIMING_METRICS[w.metric]
    ? `CASE WHEN s.${arm}_${TIMING_METRICS[w.metric]} IS NOT NULL THEN ARRAY[s.${arm}_${TIMING_METRICS[w.metric]}] END`
    : `s.${arm}_samples`
  const state = (arm) => `CASE WHEN s.${arm}_state = 'ok' AND ${value(arm)} IS NULL THEN 'no_value' ELSE s.${arm}_state END`
  const usable = w.analysis === 'itt'
    ? "h2 IN ('ok', 'failed', 'fallback', 'unsupported') AND h3 IN ('ok', 'failed', 'fallback', 'unsupported')"
    : "h2 = 'ok' AND h3 = 'ok'"
  const { rows } = await db.query(
    `WITH round AS MATERIALIZED (
       SELECT s.location_id, s.job_id, s.time, ${state('h2')} AS h2, ${state('h3')} AS h3
         FROM round_summaries s
        WHERE s.monitor_id = $1 AND s.probe = $2 AND s.view = $3 AND s.time >= $4 AND s.time < $5),
     used AS (
       SELECT location_id, job_id, time, h2, h3, row_number() OVER (PARTITION BY location_id ORDER BY time, job_id) - 1 AS k,
              count(*) OVER (PARTITION BY location_id) AS n
         FROM round WHERE ${usable}),
     picked AS (
       SELECT * FROM used WHERE n <= $6 OR (k * $6) / n <> ((k + 1) * $6) / n)
     SELECT 'count' AS kind, location_id, coalesce(h2, 'missing') AS h2, coalesce(h3, 'missing') AS h3, count(*)::int AS n,
            NULL::bigint AS job_id, NULL::bigint AS k, NULL::double precision[] AS h2_v, NULL::double precision[] AS h3_v
       FROM round GROUP BY 2, 3, 4
     UNION ALL
     SELECT 'used', p.location_id, p.h2, p.h3, p.n::int, p.job_id, p.k, ${value('h2')}, ${value('h3')}
       FROM picked p JOIN round_summaries s
         ON s.monitor_id = $1 AND s.probe = $2 AND s.view = $3 AND s.location_id = p.location_id AND s.time = p.time AND s.job_id = p.job_id`,
    [w.monitorId, w.probe, w.view, w.from, w.to, w.cap])
  return rows
}

/**
 * Rebuild the summaries of one monitor (or of all) from its results, in
 * steps of 100,000 results. For data written before the trigger existed or
 * with it disabled (bulk loads, benchmarks).
 * @param {import('pg').Pool} db
 * @param {{ monitorId?: number }} [opts]
 * @returns {Promise<number>} summaries written
 */
export async function rebuildRoundSummaries (db, { monitorId } = {}) {
  const only = monitorId === undefined ? 'true' : 'monitor_id = $1'
  const args = monitorId === undefined ? [] : [monitorId]
  await db.query(`DELETE FROM round_summaries WHERE ${only}`, args)
  const { rows: [{ lo, hi }] } = await db.query(`SELECT min(id)::float8 AS lo, max(id)::float8 AS hi FROM results WHERE ${only}`, args)
  for (let from = lo; from !== null && from <= hi; from += 100000) {
    await db.query(
      `SELECT round_summaries_fold(ARRAY(SELECT r FROM results r WHERE ${only.replace('monitor_id', 'r.monitor_id')}
         AND r.id >= $${args.length + 1} AND r.id < $${args.length + 2}))`, [...args, from, from + 100000])
  }
  const { rows: [{ n }] } = await db.query(`SELECT count(*)::int AS n FROM round_summaries WHERE ${only}`, args)
  return n
}

/**
 * TimescaleDB: drop summaries with the raw results they summarise (the
 * results' retention policy, H3LENS_RETENTION_DAYS). On plain PostgreSQL
 * nothing drops results, so nothing drops summaries either.
 * @param {import('pg').Pool} db
 * @param {{ retentionDays?: number }} opts
 */
export async function applyRoundSummaryRetention (db, { retentionDays }) {
  await db.query(`SELECT remove_retention_policy('round_summaries', if_exists => true)`)
  if (retentionDays > 0) await db.query(`SELECT add_retention_policy('round_summaries', make_interval(days => $1))`, [retentionDays])
}
