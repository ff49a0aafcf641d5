// Storage path: TimescaleDB (results as a hypertable with compression and
// retention policies) when the extension is there, plain PostgreSQL otherwise.
import { applyRoundSummaryRetention } from './round-summaries.js'

/**
 * @param {import('pg').Pool} db
 * @returns {Promise<boolean>} whether results is a TimescaleDB hypertable
 */
export async function isHypertable (db) {
  const { rows } = await db.query(`SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb') AS ext`)
  if (!rows[0].ext) return false
  const { rows: h } = await db.query(`SELECT count(*)::int AS n FROM timescaledb_information.hypertables WHERE hypertable_name = 'results'`)
  return h[0].n > 0
}

/**
 * Apply (or change) compression and retention of raw results and of their
 * round summaries. Rollups are kept: trends outlive the raw rows they were
 * built from.
 * @param {import('pg').Pool} db
 * @param {{ compressAfterDays: number, retentionDays: number, rumRetentionDays?: number, log: import('pino').Logger }} opts (0 = never, for all)
 * @returns {Promise<string>} a one-line description of the storage path, for the start-up log
 */
export async function applyStoragePolicies (db, { compressAfterDays, retentionDays, rumRetentionDays = 90, log }) {
  if (!(await isHypertable(db))) {
    const text = 'plain PostgreSQL (TimescaleDB not installed): results in a regular table, rollups by h3lens'
    log.info(text)
    return text
  }
  await db.query(`ALTER TABLE results SET (timescaledb.compress, timescaledb.compress_segmentby = 'monitor_id, location_id, mode',
    timescaledb.compress_orderby = 'time DESC')`)
  await db.query(`SELECT remove_compression_policy('results', if_exists => true)`)
  if (compressAfterDays > 0) await db.query(`SELECT add_compression_policy('results', make_interval(days => $1))`, [compressAfterDays])
  await db.query(`SELECT remove_retention_policy('results', if_exists => true)`)
  if (retentionDays > 0) await db.query(`SELECT add_retention_policy('results', make_interval(days => $1))`, [retentionDays])
  // Round summaries go with the raw rows they summarise (migration 013).
  await applyRoundSummaryRetention(db, { retentionDays })
  // Real users' beacons: whole chunks dropped past their own retention (the
  // scheduler deletes stragglers, and does it all on plain PostgreSQL).
  const { rows: rum } = await db.query("SELECT count(*)::int AS n FROM timescaledb_information.hypertables WHERE hypertable_name = 'rum_beacons'")
  if (rum[0].n) {
    await db.query(`SELECT remove_retention_policy('rum_beacons', if_exists => true)`)
    if (rumRetentionDays > 0) await db.query(`SELECT add_retention_policy('rum_beacons', make_interval(days => $1))`, [rumRetentionDays])
  }
  const text = `TimescaleDB: results is a hypertable, compressed after ${compressAfterDays || 'never'} days, raw rows kept ${retentionDays ? `${retentionDays} days` : 'forever'}`
  log.info(text)
  return text
}
