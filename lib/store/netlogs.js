// SQL for netlogs (Chromium net logs, gzip) and the outlier thresholds that
// tell an agent when a run deserves one.
import { ConflictError, NotFoundError } from '../runtime/errors.js'
import { PROBES } from '../measurement/probes/index.js'

/** Outliers are judged against this many recent ok runs of a series... */
export const OUTLIER_WINDOW = 100
/** ...and only once a series has this many: a p99 of 10 runs is their maximum. */
export const OUTLIER_MIN_RUNS = 30
export const OUTLIER_PERCENTILE = 0.99

// The value each probe is judged by, in SQL: its outlier rule in the probe
// catalogue (lib/measurement/probes/) says which.
const OUTLIER_SQL = {
  column: (/** @type {string} */ column) => `r.${column}`,
  max_sample: () => `(SELECT max(x::double precision) FROM jsonb_array_elements_text(
               CASE WHEN jsonb_typeof(r.details->'samples') = 'array' THEN r.details->'samples' ELSE '[]'::jsonb END) x)`,
  first_sample: () => "(r.details->'samples'->>0)::double precision"
}
const OUTLIER_VALUE = Object.fromEntries(PROBES.map((p) => [p.id, OUTLIER_SQL[p.outlier.rule](/** @type {string} */ (p.outlier.column))]))

/**
 * p99 of the last OUTLIER_WINDOW ok first-view runs per (probe, mode) of a
 * monitor at a location, keyed "probe/mode", Chromium's only (net logs are
 * Chromium's, and Firefox's timings are its own); series with too few runs are
 * left out (no outlier capture yet). Each series is an index range scan of
 * at most OUTLIER_WINDOW rows (results_series_time).
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, locationId: string, probes: string[], modes: string[] }} q
 * @returns {Promise<Record<string, number>>}
 */
export async function outlierThresholds (db, { monitorId, locationId, probes, modes }) {
  /** @type {Record<string, number>} */
  const out = {}
  const wanted = probes.filter((p) => OUTLIER_VALUE[p])
  if (!wanted.length) return out
  const { rows } = await db.query(
    `SELECT s.probe, s.mode, count(s.v)::int AS n, percentile_cont($5::float8) WITHIN GROUP (ORDER BY s.v) AS p
       FROM unnest($3::text[]) AS p(probe) CROSS JOIN unnest($4::text[]) AS m(mode)
       CROSS JOIN LATERAL (
         SELECT p.probe, m.mode, CASE p.probe ${wanted.map((p) => `WHEN '${p}' THEN ${OUTLIER_VALUE[p]}`).join(' ')} END AS v
           FROM results r
          WHERE r.monitor_id = $1 AND r.location_id = $2 AND r.browser = 'chromium' AND r.mode = m.mode AND r.probe = p.probe AND r.view = 'first'
            AND r.status = 'ok' AND r.protocol_ok
          ORDER BY r.time DESC LIMIT $6) s
      WHERE s.v IS NOT NULL
      GROUP BY s.probe, s.mode`,
    [monitorId, locationId, wanted, modes, OUTLIER_PERCENTILE, OUTLIER_WINDOW])
  for (const r of rows) if (r.n >= OUTLIER_MIN_RUNS) out[`${r.probe}/${r.mode}`] = Math.round(r.p * 10) / 10
  return out
}

/**
 * Store the net log of one result-to-be. The job must be this agent's (held
 * or finished by it); a second upload for the same key replaces the first.
 * @param {import('pg').Pool} db
 * @param {{ jobId: number, agent: { id: number, location_id: string }, mode: string, view: string, probe: string,
 *   kind: 'run' | 'rerun', rawBytes: number | null, gzip: Buffer }} n
 */
export async function storeNetlog (db, { jobId, agent, mode, view, probe, kind, rawBytes, gzip }) {
  const { rows } = await db.query('SELECT monitor_id, location_id, lease_owner FROM jobs WHERE id = $1', [jobId])
  const job = rows[0]
  if (!job) throw new NotFoundError(`job ${jobId} does not exist`)
  if (job.location_id !== agent.location_id || job.lease_owner !== agent.id) {
    throw new ConflictError(`job ${jobId} is not this agent's; its net log was not stored`, 'lease_lost')
  }
  await db.query(
    `INSERT INTO netlogs (job_id, mode, view, probe, monitor_id, location_id, agent_id, kind, raw_bytes, gzip)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (job_id, mode, view, probe) DO UPDATE SET kind = EXCLUDED.kind, raw_bytes = EXCLUDED.raw_bytes,
       gzip = EXCLUDED.gzip, agent_id = EXCLUDED.agent_id, created_at = now()`,
    [jobId, mode, view, probe, job.monitor_id, job.location_id, agent.id, kind, rawBytes, gzip])
  return { stored: true, gzip_bytes: gzip.length }
}

/**
 * The net log a WebPageTest agent uploaded with a page load (lib/store/wpt-tests.js,
 * in its transaction). As replaceWptScreen does for its screenshot, it
 * replaces what an earlier attempt of the round left for that arm, and
 * with no net log (null, or none kept: lib/measurement/wpt/netlog.js) that is removed.
 * @param {import('pg').PoolClient} client
 * @param {{ jobId: number, mode: string, view: string, monitorId: number, locationId: string, agentId: number,
 *   netlog: { rawBytes: number | null, gzip: Buffer | null } | null }} n
 */
export async function replaceWptNetlog (client, { jobId, mode, view, monitorId, locationId, agentId, netlog }) {
  await client.query("DELETE FROM netlogs WHERE job_id = $1 AND mode = $2 AND view = $3 AND probe = 'page'", [jobId, mode, view])
  if (!netlog?.gzip) return
  await client.query(
    `INSERT INTO netlogs (job_id, mode, view, probe, monitor_id, location_id, agent_id, kind, raw_bytes, gzip)
     VALUES ($1, $2, $3, 'page', $4, $5, $6, 'run', $7, $8)`,
    [jobId, mode, view, monitorId, locationId, agentId, netlog.rawBytes, netlog.gzip])
}

/**
 * The net log of a result, or null.
 * @param {import('pg').Pool} db
 * @param {{ job_id: number, mode: string, view: string, probe: string }} result
 * @returns {Promise<{ kind: string, raw_bytes: number | null, gzip: Buffer, created_at: Date } | null>}
 */
export async function getNetlog (db, result) {
  const { rows } = await db.query(
    `SELECT kind, raw_bytes::float8 AS raw_bytes, gzip, created_at FROM netlogs
      WHERE job_id = $1 AND mode = $2 AND view = $3 AND probe = $4`, [result.job_id, result.mode, result.view, result.probe])
  return rows[0] ?? null
}
