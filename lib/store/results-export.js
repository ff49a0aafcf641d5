// Raw result export: pages through the results table in keyset order and
// turns rows into CSV or NDJSON chunks, so an export of any range runs in
// constant memory (bench/export-memory.js measures it).
import { Readable } from 'node:stream'
import { stringify } from 'csv-stringify/sync'
import { RESULT_COLUMNS, resultBatches, resultRows } from './results.js'
export { assertMonitorExists } from './monitors.js'
import { ValidationError } from '../runtime/errors.js'

export const EXPORT_FORMATS = ['csv', 'ndjson', 'json']

/**
 * The parts of a result's details the export keeps: what the analyses read
 * besides the columns (why a run failed, why its page came over its
 * protocol, an A/A arm's protocol, a journey's steps, a WebPageTest run's
 * checks) and what says how a run was measured, so that a monitor restored
 * from its NDJSON export gives the same answers. Left out is the evidence,
 * which can run to MBs a run: per request and per origin (also a probe's
 * warm-up load's and a repeat view's), the net log's and the frames'
 * records (served by their own routes), and the samples, which have a
 * column of their own.
 */
export const DETAILS_KEPT = Object.freeze(['failure_kind', 'protocol_reason', 'arm_protocol', 'forced_origins', 'journey', 'step', 'wpt',
  'rtt_source', 'wall_ms', 'upload_bytes', 'target_url'])

/**
 * Every result column, with `details` as far as DETAILS_KEPT; then
 * `samples`, a multi-sample probe's values (the parallel probe's requests,
 * the upload probe's POSTs, a journey step's duration), which its
 * comparison rests on; the import takes both back. Then filmstrip_url,
 * where the result's frames are listed with their URLs
 * (GET /api/v1/results/{id}/filmstrip), null without frames. The import
 * ignores it: frames are never imported.
 */
export const EXPORT_COLUMNS = [...RESULT_COLUMNS, 'samples', 'filmstrip_url']
/** The export's columns as SQL. */
export const EXPORT_SELECT = EXPORT_COLUMNS.map((c) => ({
  details: `(SELECT coalesce(jsonb_object_agg(key, value), '{}') FROM jsonb_each(details) WHERE key IN (${DETAILS_KEPT.map((k) => `'${k}'`).join(', ')})) AS details`,
  samples: "details->'samples' AS samples",
  filmstrip_url: `CASE WHEN details->'filmstrip'->>'uploaded' = 'true' THEN '/api/v1/results/' || id || '/filmstrip' END AS filmstrip_url`
})[c] ?? c)

// One query per 1,000 rows: a batch query runs in ~1 ms on the index
// (EXPLAIN ANALYZE, 200k rows of one monitor), so round trips cost little,
// and a batch is ~0.3 MB of CSV (~0.75 MB of NDJSON) whatever the range.
export const EXPORT_BATCH_ROWS = 1000

// `format=json` builds the whole answer in memory, so it is capped; the
// streaming formats have no cap.
export const JSON_MAX_DAYS = 7
export const JSON_MAX_ROWS = 10000

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
 * Export rows (EXPORT_COLUMNS) oldest first, in batches (lib/store/results.js resultBatches).
 * @param {import('pg').Pool} db
 * @param {import('./results.js').ResultFilter} filter
 * @param {{ batchRows?: number }} [opts]
 */
export function exportBatches (db, filter, { batchRows = EXPORT_BATCH_ROWS } = {}) {
  return resultBatches(db, filter, { columns: EXPORT_SELECT, batchRows })
}

/**
 * At most `maxRows` export rows for a non-streaming answer; more is a 400 naming `format`.
 * @param {import('pg').Pool} db
 * @param {import('./results.js').ResultFilter} filter
 * @param {{ maxRows?: number }} [opts]
 */
export async function exportRowsCapped (db, filter, { maxRows = JSON_MAX_ROWS } = {}) {
  const rows = await resultRows(db, filter, { columns: EXPORT_SELECT, limit: maxRows + 1 })
  if (rows.length > maxRows) {
    throw new ValidationError(`more than ${maxRows} results match; narrow the range or filters, ` +
      'or use format=csv or format=ndjson, which stream any number of rows', 'format')
  }
  return rows
}

// Both encoders write one chunk per batch, not per row: every write is a
// chunked-encoding frame and a syscall, 200 of them for 200k rows instead of
// 200k. The streams are in byte mode, so they stop pulling batches while
// 16 KB wait unread: about one batch is in memory however slow the client
// is (bench/export-memory.js).

// A spreadsheet runs a cell that begins with =, +, -, @, a tab or a
// carriage return as a formula, so a text an agent, a WebPageTest upload or
// an import wrote (an error, a label, Chromium's flags "--enable-quic …")
// could compute, or fetch an address, in the reader's spreadsheet. Such a
// text is written after an apostrophe, which spreadsheets show as text and
// do not display. A number written as text ("-12.5", NUMERIC columns come
// from PostgreSQL as strings) is left as it is. NDJSON and JSON carry every
// value unchanged.
const FORMULA_START = /^[=+\-@\t\r]/
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i

/**
 * A text for a CSV cell, defused where a spreadsheet would run it as a formula.
 * @param {string} text
 */
export function csvText (text) {
  return FORMULA_START.test(text) && !NUMBER.test(text) ? `'${text}` : text
}

/** csv-stringify's casts for every CSV h3lens writes. */
export const CSV_CAST = {
  string: csvText,
  date: (/** @type {Date} */ d) => d.toISOString(),
  // csv-stringify's default writes true as "1" and false as "".
  boolean: (/** @type {boolean} */ b) => String(b),
  // Structured columns (notes, details, samples) as JSON text, which begins
  // with { or [ and is never a formula; flags are flattened before.
  object: (/** @type {object} */ o) => JSON.stringify(o)
}

const CSV_OPTIONS = { columns: EXPORT_COLUMNS, cast: CSV_CAST }

/**
 * CSV with a header row of EXPORT_COLUMNS: dates ISO-8601, flags joined with
 * a space, notes and details as JSON text, booleans true/false, NULL empty, a text a
 * spreadsheet would run as a formula after an apostrophe (csvText). A database
 * error mid-way destroys the stream, so the client sees a broken download,
 * never a short file that looks complete.
 * @param {AsyncIterable<Record<string, any>[]>} batches
 * @returns {import('node:stream').Readable}
 */
export function csvStream (batches) {
  return Readable.from(csvChunks(batches), { objectMode: false })
}

/**
 * One JSON object per line, with the same fields and order as the CSV.
 * @param {AsyncIterable<Record<string, any>[]>} batches
 * @returns {import('node:stream').Readable}
 */
export function ndjsonStream (batches) {
  return Readable.from(ndjsonChunks(batches), { objectMode: false })
}

/**
 * `h3lens-results-<monitor>-<from>-<to>.<ext>`, with compact UTC stamps
 * (no ":"), "start" for an open lower bound and the export time for `to`.
 * @param {{ monitor: number, from?: string, to?: string }} q
 * @param {string} ext
 */
export function exportFilename (q, ext) {
  const stamp = (/** @type {string} */ iso) => new Date(iso).toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/[-:]/g, '')
  const from = q.from ? stamp(q.from) : 'start'
  const to = stamp(q.to ?? new Date().toISOString())
  return `h3lens-results-${q.monitor}-${from}-${to}.${ext}`
}

/** @param {AsyncIterable<Record<string, any>[]>} batches */
async function* csvChunks (batches) {
  yield stringify([], { ...CSV_OPTIONS, header: true })
  for await (const rows of batches) {
    yield stringify(rows.map((r) => (r.flags ? { ...r, flags: r.flags.join(' ') } : r)), CSV_OPTIONS)
  }
}

/** @param {AsyncIterable<Record<string, any>[]>} batches */
async function* ndjsonChunks (batches) {
  for await (const rows of batches) yield rows.map((r) => JSON.stringify(r) + '\n').join('')
}
