// Raw result export: pages through the results table in keyset order and
// turns rows into CSV or NDJSON chunks, so an export of any range runs in
// constant memory (bench/export-memory.js measures it).
import { Readable, pipeline } from 'node:stream'
import { stringify } from 'csv-stringify'
import { RESULT_COLUMNS, resultWhere } from './results.js'
import { NotFoundError, ValidationError } from './errors.js'

export const EXPORT_FORMATS = ['csv', 'ndjson', 'json']

/** Every result column except the per-request evidence, which has no flat form. */
export const EXPORT_COLUMNS = RESULT_COLUMNS.filter((c) => c !== 'details')

// One query per 1,000 rows: big enough that round trips do not dominate
// (~1 ms each on loopback against ~5 ms to fetch and encode the rows), small
// enough that a batch in flight is a few hundred KB whatever the range.
export const EXPORT_BATCH_ROWS = 1000

// `format=json` builds the whole answer in memory, so it is capped; the
// streaming formats have no cap.
export const JSON_MAX_DAYS = 7
export const JSON_MAX_ROWS = 10000

/**
 * A monitor's results stay exportable after the monitor is deleted (DELETE
 * keeps them), so "unknown" means never created, not "deleted".
 * @param {import('pg').Pool} db
 * @param {number} monitorId
 */
export async function assertMonitorExists (db, monitorId) {
  const { rows } = await db.query('SELECT 1 FROM monitors WHERE id = $1', [monitorId])
  if (!rows[0]) throw new NotFoundError(`monitor ${monitorId} does not exist`)
}

/**
 * Checks the range and, for `json`, the 7-day cap. `to` defaults to now.
 * @param {{ format: string, from?: string, to?: string }} q
 */
export function checkExportRange (q) {
  const from = q.from ? Date.parse(q.from) : undefined
  const to = q.to ? Date.parse(q.to) : Date.now()
  if (from !== undefined && from > to) throw new ValidationError('from must not be after to', 'from')
  if (q.format === 'json' && (from === undefined || to - from > JSON_MAX_DAYS * 86400_000)) {
    throw new ValidationError(`format=json is limited to ranges of at most ${JSON_MAX_DAYS} days (set from and to); ` +
      'use format=csv or format=ndjson, which stream any range', q.from ? 'to' : 'from')
  }
}

/**
 * Result rows oldest first, fetched `batchRows` at a time with keyset
 * pagination on (time, id). Each batch is its own query, so no connection or
 * snapshot is held while a slow client drains the previous one. Rows inserted
 * behind the cursor during an export are not included; every row that exists
 * for the whole export is delivered exactly once.
 * @param {import('pg').Pool} db
 * @param {import('./results.js').ResultFilter} filter
 * @param {{ batchRows?: number }} [opts]
 * @returns {AsyncGenerator<Record<string, any>>}
 */
export async function* exportRows (db, filter, { batchRows = EXPORT_BATCH_ROWS } = {}) {
  let after = null
  for (;;) {
    const { where, values } = resultWhere(filter)
    if (after) {
      values.push(after.time, after.id)
      where.push(`(time, id) > ($${values.length - 1}, $${values.length})`)
    }
    values.push(batchRows)
    const { rows } = await db.query(
      `SELECT ${EXPORT_COLUMNS.join(', ')} FROM results WHERE ${where.join(' AND ')}
        ORDER BY time, id LIMIT $${values.length}`, values)
    yield* rows
    if (rows.length < batchRows) return
    after = rows.at(-1)
  }
}

/**
 * At most `maxRows` rows for a non-streaming answer.
 * @param {import('pg').Pool} db
 * @param {import('./results.js').ResultFilter} filter
 * @param {{ maxRows?: number }} [opts]
 */
export async function exportRowsCapped (db, filter, { maxRows = JSON_MAX_ROWS } = {}) {
  const { where, values } = resultWhere(filter)
  values.push(maxRows + 1)
  const { rows } = await db.query(
    `SELECT ${EXPORT_COLUMNS.join(', ')} FROM results WHERE ${where.join(' AND ')}
      ORDER BY time, id LIMIT $${values.length}`, values)
  if (rows.length > maxRows) {
    throw new ValidationError(`more than ${maxRows} results match; narrow the range or filters, ` +
      'or use format=csv or format=ndjson, which stream any number of rows', 'format')
  }
  return rows
}

/**
 * CSV with a header row of EXPORT_COLUMNS: dates ISO-8601, flags joined with
 * a space, booleans true/false, NULL empty. A database error mid-way destroys
 * the returned stream, so the client sees a broken download, never a short
 * file that looks complete.
 * @param {AsyncIterable<Record<string, any>>} rows
 * @returns {import('node:stream').Readable}
 */
export function csvStream (rows) {
  const csv = stringify({
    header: true,
    columns: EXPORT_COLUMNS,
    cast: {
      date: (d) => d.toISOString(),
      // csv-stringify's default writes true as "1" and false as "".
      boolean: (b) => String(b)
    }
  })
  pipeline(Readable.from(flatRows(rows)), csv, () => {})
  return csv
}

/**
 * One JSON object per line, with the same fields and order as the CSV.
 * @param {AsyncIterable<Record<string, any>>} rows
 * @returns {import('node:stream').Readable}
 */
export function ndjsonStream (rows) {
  // Byte mode (objectMode off): the stream buffers at most highWaterMark
  // bytes (16 KB) before it stops pulling rows from the database.
  return Readable.from(ndjsonLines(rows), { objectMode: false })
}

/**
 * `h3lens-results-<monitor>-<from>-<to>.<ext>`, with compact UTC stamps
 * (no ":"), "start" for an open lower bound and the export time for `to`.
 * @param {{ monitor: number, from?: string, to?: string }} q
 * @param {string} ext
 */
export function exportFilename (q, ext) {
  const stamp = (iso) => new Date(iso).toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/[-:]/g, '')
  const from = q.from ? stamp(q.from) : 'start'
  const to = stamp(q.to ?? new Date().toISOString())
  return `h3lens-results-${q.monitor}-${from}-${to}.${ext}`
}

async function* flatRows (rows) {
  for await (const row of rows) {
    yield row.flags ? { ...row, flags: row.flags.join(' ') } : row
  }
}

async function* ndjsonLines (rows) {
  for await (const row of rows) yield JSON.stringify(row) + '\n'
}
