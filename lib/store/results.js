// SQL for the results table: one row per measured load, keyed by
// (job, mode, view, probe).
import { ValidationError } from '../runtime/errors.js'

/** Metric columns, each in milliseconds. One definition, used everywhere. */
export const TIMING_COLUMNS = ['ttfb_ms', 'load_ms', 'dns_ms', 'connect_ms', 'tls_ms', 'fcp_ms', 'lcp_ms', 'dcl_ms']

export const INSERT_COLUMNS = [
  'time', 'measured_at', 'job_id', 'monitor_id', 'location_id', 'agent_id', 'mode', 'view', 'probe', 'status', 'error',
  'observed_protocol', 'protocol_ok', ...TIMING_COLUMNS, 'bytes', 'requests', 'h3_request_share', 'h3_byte_share',
  'rtt_ms', 'connect_rtt', 'ttfb_rtt', 'upload_mbps', 'notes', 'browser_version', 'agent_version', 'flags', 'details'
]

export const RESULT_COLUMNS = ['id', ...INSERT_COLUMNS]

/**
 * Insert a job's results; rows already present (a resubmission) are skipped.
 * @param {import('pg').PoolClient | import('pg').Pool} db
 * @param {{ job: { id: number, monitor_id: number, location_id: string, due_at: Date }, agentId: number | null, agentVersion?: string, results: Record<string, any>[] }} opts
 * @returns {Promise<Record<string, any>[]>} the rows actually inserted
 */
export async function insertResults (db, { job, agentId, agentVersion, results }) {
  return insertRoundResults(db, { rounds: [{ job, results }], agentId, agentVersion })
}

// Rows per INSERT: 1,000 × 36 columns stays under PostgreSQL's 65,535
// parameters per statement.
const ROWS_PER_INSERT = 1000

/**
 * Insert the results of several jobs in multi-row INSERTs; rows already
 * present (a resubmission) are skipped.
 * @param {import('pg').PoolClient | import('pg').Pool} db
 * @param {{ rounds: { job: { id: number, monitor_id: number, location_id: string, due_at: Date }, results: Record<string, any>[] }[],
 *   agentId: number | null, agentVersion?: string }} opts (agentId null: results of no agent, as test fixtures)
 * @returns {Promise<Record<string, any>[]>} the rows actually inserted
 */
export async function insertRoundResults (db, { rounds, agentId, agentVersion }) {
  const all = rounds.flatMap(({ job, results }) => results.map((r) => ({
    ...r,
    time: job.due_at,
    measured_at: r.measured_at ?? new Date(),
    job_id: job.id,
    monitor_id: job.monitor_id,
    location_id: job.location_id,
    agent_id: agentId,
    agent_version: r.agent_version ?? agentVersion ?? null,
    view: r.view ?? 'first',
    probe: r.probe ?? 'page',
    details: r.details ?? {},
    // jsonb from a JS array needs JSON text: node-postgres would send a Postgres array.
    notes: r.notes ? JSON.stringify(r.notes) : null
  })))
  const inserted = []
  for (let i = 0; i < all.length; i += ROWS_PER_INSERT) {
    const values = []
    const tuples = all.slice(i, i + ROWS_PER_INSERT).map((row) => {
      const placeholders = INSERT_COLUMNS.map((c) => {
        values.push(row[c] ?? null)
        return `$${values.length}`
      })
      return `(${placeholders.join(', ')})`
    })
    const { rows } = await db.query(
      `INSERT INTO results (${INSERT_COLUMNS.join(', ')}) VALUES ${tuples.join(', ')}
       ON CONFLICT (job_id, mode, view, probe, time) DO NOTHING
       RETURNING ${RESULT_COLUMNS.join(', ')}`, values)
    inserted.push(...rows)
  }
  return inserted
}

/**
 * @typedef {{ monitorId: number, location?: string, mode?: string, probe?: string, view?: string, status?: string,
 *   from?: string, to?: string, limit?: number, cursor?: string }} ResultFilter
 */

/**
 * Newest first, keyset-paginated on (time, id).
 * @param {import('pg').Pool} db
 * @param {ResultFilter} filter
 * @returns {Promise<{ items: Record<string, any>[], next_cursor: string|null }>}
 */
export async function listResults (db, filter) {
  const { where, values } = resultWhere(filter)
  if (filter.cursor) {
    const { time, id } = decodeCursor(filter.cursor)
    values.push(time, id)
    where.push(`(time, id) < ($${values.length - 1}, $${values.length})`)
  }
  const limit = filter.limit ?? 100
  values.push(limit + 1)
  const { rows } = await db.query(
    `SELECT ${RESULT_COLUMNS.join(', ')}, time::text AS cursor_time FROM results WHERE ${where.join(' AND ')}
      ORDER BY time DESC, id DESC LIMIT $${values.length}`, values)
  const more = rows.length > limit
  const items = more ? rows.slice(0, limit) : rows
  const last = items.at(-1)
  // The cursor keeps the time as PostgreSQL prints it: a JS Date would cut
  // microseconds and make the next page skip or repeat rows.
  const next = more ? encodeCursor(last.cursor_time, last.id) : null
  for (const item of items) delete item.cursor_time
  return { items, next_cursor: next }
}

/**
 * @param {import('pg').Pool} db
 * @param {number} id
 */
export async function getResult (db, id) {
  const { rows } = await db.query(`SELECT ${RESULT_COLUMNS.join(', ')} FROM results WHERE id = $1`, [id])
  return rows[0] ?? null
}

/**
 * WHERE clause shared by listing and export.
 * @param {Partial<ResultFilter>} f
 */
export function resultWhere (f) {
  const where = ['true']
  const values = []
  const add = (sql, v) => { values.push(v); where.push(sql.replace('?', `$${values.length}`)) }
  if (f.monitorId !== undefined) add('monitor_id = ?', f.monitorId)
  if (f.location) add('location_id = ?', f.location)
  if (f.mode) add('mode = ?', f.mode)
  if (f.probe) add('probe = ?', f.probe)
  if (f.view) add('view = ?', f.view)
  if (f.status) add('status = ?', f.status)
  if (f.from) add('time >= ?', f.from)
  if (f.to) add('time < ?', f.to)
  return { where, values }
}

function encodeCursor (time, id) {
  return Buffer.from(`${time}|${id}`).toString('base64url')
}

function decodeCursor (cursor) {
  const [time, id] = Buffer.from(cursor, 'base64url').toString().split('|')
  if (!/^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d{1,6})?([+-]\d\d(:?\d\d)?|Z)?$/.test(time ?? '') || !/^\d+$/.test(id ?? '')) {
    throw new ValidationError('cursor is not valid; use the next_cursor value from a previous page', 'cursor')
  }
  return { time, id: Number(id) }
}
