// SQL for rollups (a sketch per metric and outcome counts per series, tier
// and bucket) and rollup_pending (results stored but not yet folded in).
// What goes into a rollup and how rollups are read back as series is
// lib/analysis/rollups.js.
import { ROLLUP_COLUMNS, TIMING_COLUMNS } from '../measurement/metrics.js'

// One worker at a time folds pending rows (a scheduler replica that does not
// get the lock just skips); `rollups rebuild` holds it for its whole run, so
// a rebuild never races an incremental fold.
const ROLLUP_LOCK = 0x68337275

/** The results fields a fold reads. */
const RESULT_FIELDS = `id, time, monitor_id, location_id, browser, mode, view, probe, status, protocol_ok,
  ${TIMING_COLUMNS.join(', ')}, details`

// A series is one browser's (migration 024): browser last, so the key's
// other positions are as they were before browsers.
const KEY_COLUMNS = ['monitor_id', 'tier', 'probe', 'view', 'location_id', 'mode', 'bucket', 'browser']
const KEY_TYPES = ['bigint', 'text', 'text', 'text', 'text', 'text', 'timestamptz', 'text']

/**
 * Merge aggregated deltas into the rollups table. Rows are created empty
 * first and then locked in key order, so concurrent writers serialise on the
 * row instead of overwriting each other.
 * @param {import('pg').PoolClient} client
 * @param {{ key: any[], runs: number, errors: number, fallbacks: number, sketches: Map<string, any> }[]} entries one per rollup row
 * @param {(cur: Record<string, any> | undefined, entry: any) => { runs: number, errors: number, fallbacks: number, sketches: (Buffer | null)[] }} merge
 *   the row after adding an entry (sketches in ROLLUP_COLUMNS order)
 */
export async function upsertRollups (client, entries, merge) {
  if (!entries.length) return
  const cols = KEY_COLUMNS.map((_, i) => entries.map((e) => e.key[i]))
  const keyArgs = KEY_TYPES.map((t, i) => `$${i + 1}::${t}[]`).join(', ')
  const keyList = KEY_COLUMNS.join(', ')
  await client.query(`INSERT INTO rollups (${keyList}) SELECT * FROM unnest(${keyArgs}) ON CONFLICT DO NOTHING`, cols)
  const { rows } = await client.query(
    `SELECT r.${KEY_COLUMNS.join(', r.')}, r.runs, r.errors, r.fallbacks, r.${ROLLUP_COLUMNS.join(', r.')}
       FROM rollups r JOIN unnest(${keyArgs}) AS k(${keyList}) USING (${keyList})
      ORDER BY ${KEY_COLUMNS.map((c) => `r.${c}`).join(', ')} FOR UPDATE OF r`, cols)
  const keyOf = (/** @type {any[]} */ k) => k.map((v) => (v instanceof Date ? +v : v)).join('|')
  const current = new Map(rows.map((r) => [keyOf(KEY_COLUMNS.map((c) => r[c])), r]))
  const merged = entries.map((e) => merge(current.get(keyOf(e.key)), e))
  const n = KEY_COLUMNS.length
  await client.query(
    `UPDATE rollups r SET runs = u.runs, errors = u.errors, fallbacks = u.fallbacks,
            ${ROLLUP_COLUMNS.map((m) => `${m} = u.${m}`).join(', ')}
       FROM unnest(${keyArgs}, $${n + 1}::int[], $${n + 2}::int[], $${n + 3}::int[], ${ROLLUP_COLUMNS.map((_, i) => `$${n + 4 + i}::bytea[]`).join(', ')})
            AS u(${keyList}, runs, errors, fallbacks, ${ROLLUP_COLUMNS.join(', ')})
      WHERE ${KEY_COLUMNS.map((c) => `r.${c} = u.${c}`).join(' AND ')}`,
    [...cols, merged.map((m) => m.runs), merged.map((m) => m.errors), merged.map((m) => m.fallbacks),
      ...ROLLUP_COLUMNS.map((_, i) => merged.map((m) => m.sketches[i]))])
}

/**
 * Queue freshly stored results for the rollups (same transaction as the insert).
 * @param {import('pg').PoolClient | import('pg').Pool} db
 * @param {number[]} resultIds
 */
export async function enqueueForRollup (db, resultIds) {
  if (!resultIds.length) return
  await db.query('INSERT INTO rollup_pending (result_id) SELECT unnest($1::bigint[]) ON CONFLICT DO NOTHING', [resultIds])
}

/**
 * Takes up to `batch` results off the pending queue, inside the caller's
 * transaction; null when another worker holds the fold lock.
 * @param {import('pg').PoolClient} client
 * @param {number} batch
 * @returns {Promise<Record<string, any>[] | null>}
 */
export async function takePendingResults (client, batch) {
  const { rows: [{ locked }] } = await client.query('SELECT pg_try_advisory_xact_lock($1) AS locked', [ROLLUP_LOCK])
  if (!locked) return null
  const { rows: done } = await client.query(
    `DELETE FROM rollup_pending WHERE result_id IN (
       SELECT result_id FROM rollup_pending ORDER BY result_id LIMIT $1) RETURNING result_id`, [batch])
  if (!done.length) return []
  const { rows } = await client.query(`SELECT ${RESULT_FIELDS} FROM results WHERE id = ANY($1)`, [done.map((d) => d.result_id)])
  return rows
}

/**
 * Waits for the fold lock, then removes the rollups and queue entries of
 * one monitor (or all), inside the caller's transaction: a rebuild's start.
 * @param {import('pg').PoolClient} client
 * @param {number} [monitorId]
 */
export async function clearRollups (client, monitorId) {
  await client.query('SELECT pg_advisory_xact_lock($1)', [ROLLUP_LOCK])
  const only = monitorId === undefined ? '' : 'WHERE monitor_id = $1'
  const args = monitorId === undefined ? [] : [monitorId]
  await client.query(`DELETE FROM rollups ${only}`, args)
  await client.query(`DELETE FROM rollup_pending WHERE result_id IN (SELECT id FROM results ${only})`, args)
}

/**
 * Results in id order after `after`, of one monitor or all, for a rebuild.
 * @param {import('pg').PoolClient} client
 * @param {{ after: number, monitorId?: number, limit: number }} q
 */
export async function resultsForRollups (client, { after, monitorId, limit }) {
  const args = monitorId === undefined ? [] : [monitorId]
  const { rows } = await client.query(
    `SELECT ${RESULT_FIELDS} FROM results WHERE id > $1 ${monitorId === undefined ? '' : 'AND monitor_id = $3'}
      ORDER BY id LIMIT $2`, [after, limit, ...args])
  return rows
}

/**
 * Rollup rows of one series' rollup column over covering ranges.
 * One index range scan per range (the primary key leads with monitor, tier,
 * probe, view, bucket), each range a branch with its own parameters so the
 * planner sees the bounds. A join against unnest()ed ranges hides them, and
 * PostgreSQL then scans the monitor's whole rollups: 128 ms rather than
 * ~3 ms for 30 days over 94k rollup rows (bench/query.js).
 * @param {import('pg').PoolClient} client
 * @param {{ monitorId: number, probe: string, view: string, browser?: string, column: string, ranges: { tier: string, from: number, to: number }[] }} q
 *   column must come from ROLLUP_COLUMNS
 */
export async function rollupsInRanges (client, { monitorId, probe, view, browser = 'chromium', column, ranges }) {
  if (!ranges.length) return []
  checkColumn(column)
  /** @type {any[]} */
  const params = [monitorId, probe, view, browser]
  const branches = ranges.map((r) => {
    params.push(r.tier, new Date(r.from), new Date(r.to))
    const n = params.length
    return `SELECT location_id, mode, runs, errors, fallbacks, ${column} AS sketch FROM rollups
             WHERE monitor_id = $1 AND probe = $2 AND view = $3 AND browser = $4 AND tier = $${n - 2} AND bucket >= $${n - 1} AND bucket < $${n}`
  })
  const { rows } = await client.query(branches.join('\n UNION ALL \n'), params)
  return rows
}

/**
 * Rollup rows of one tier, bucket by bucket, for trends.
 * @param {import('pg').PoolClient} client
 * @param {{ monitorId: number, probe: string, view: string, browser?: string, column: string, tier: string, from: Date, to: Date }} q
 */
export async function rollupBuckets (client, { monitorId, probe, view, browser = 'chromium', column, tier, from, to }) {
  checkColumn(column)
  const { rows } = await client.query(
    `SELECT location_id, mode, bucket, runs, errors, fallbacks, ${column} AS sketch FROM rollups
      WHERE monitor_id = $1 AND probe = $2 AND view = $3 AND tier = $4 AND bucket >= $5 AND bucket < $6 AND browser = $7`,
    [monitorId, probe, view, tier, from, to, browser])
  return rows
}

/**
 * Results of a window still on the pending queue.
 * @param {import('pg').PoolClient} client
 * @param {{ monitorId: number, probe: string, view: string, browser?: string, from: Date, to: Date }} q
 */
export async function pendingResults (client, { monitorId, probe, view, browser = 'chromium', from, to }) {
  const { rows } = await client.query(
    `SELECT ${RESULT_FIELDS.split(',').map((c) => `r.${c.trim()}`).join(', ')}
       FROM rollup_pending p JOIN results r ON r.id = p.result_id
      WHERE r.monitor_id = $1 AND r.probe = $2 AND r.view = $3 AND r.time >= $4 AND r.time < $5 AND r.browser = $6`,
    [monitorId, probe, view, from, to, browser])
  return rows
}

/** Only rollup column names reach SQL. @param {string} column */
function checkColumn (column) {
  if (!ROLLUP_COLUMNS.includes(column)) throw new Error(`"${column}" is not a rollup column`)
}
