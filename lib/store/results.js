// SQL for the results table: one row per measured load, keyed by
// (job, mode, view, probe).
import { ValidationError } from '../runtime/errors.js'
import { isPostgresTimestamp } from '../runtime/date-time.js'

import { RESULT_FIELDS } from '../measurement/result.js'
import { normalizeProtocol } from '../measurement/protocol.js'
import { browserOf } from './round-summaries.js'

/** Columns an insert writes: the round's keys, then the result's own fields (lib/measurement/result.js). */
export const INSERT_COLUMNS = Object.freeze([
  'time', 'measured_at', 'job_id', 'monitor_id', 'location_id', 'browser', 'agent_id', ...RESULT_FIELDS
])

export const RESULT_COLUMNS = ['id', ...INSERT_COLUMNS]

/**
 * Insert a job's results; rows already present (a resubmission) are skipped.
 * @param {import('pg').PoolClient | import('pg').Pool} db
 * @param {{ job: { id: number, monitor_id: number, location_id: string, due_at: Date, browser?: string }, agentId: number | null, agentVersion?: string, results: Record<string, any>[] }} opts
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
 * present (a resubmission) are skipped. The agents' single and batched
 * routes, the WPT path and the import all store results here; a trigger
 * (migration 013) folds the new rows into their rounds' summaries in the
 * same statement. agentId is null for imported rounds.
 * @param {import('pg').PoolClient | import('pg').Pool} db
 * @param {{ rounds: { job: { id: number, monitor_id: number, location_id: string, due_at: Date, browser?: string }, results: Record<string, any>[] }[],
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
    // The round's browser (a round is one browser's); jobs from before browsers were chosen are Chromium's.
    browser: job.browser ?? 'chromium',
    agent_id: agentId,
    agent_version: r.agent_version ?? agentVersion ?? null,
    view: r.view ?? 'first',
    probe: r.probe ?? 'page',
    // One spelling (lib/measurement/protocol.js): the H3 shares count 'h3', whatever an import or an agent wrote.
    observed_protocol: normalizeProtocol(r.observed_protocol),
    details: r.details ?? {},
    // jsonb from a JS array needs JSON text: node-postgres would send a Postgres array.
    notes: r.notes ? JSON.stringify(r.notes) : null
  })))
  const inserted = []
  for (let i = 0; i < all.length; i += ROWS_PER_INSERT) {
    /** @type {unknown[]} */
    const values = []
    const tuples = all.slice(i, i + ROWS_PER_INSERT).map((row) => {
      const placeholders = INSERT_COLUMNS.map((c) => {
        values.push(/** @type {Record<string, unknown>} */ (row)[c] ?? null)
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
 * @typedef {{ monitorId: number, location?: string, browser?: string, mode?: string, probe?: string, view?: string, status?: string,
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
  /** @type {unknown[]} */
  const values = []
  const add = (/** @type {string} */ sql, /** @type {unknown} */ v) => { values.push(v); where.push(sql.replace('?', `$${values.length}`)) }
  if (f.monitorId !== undefined) add('monitor_id = ?', f.monitorId)
  if (f.location) add('location_id = ?', f.location)
  if (f.browser) add('browser = ?', f.browser)
  if (f.mode) add('mode = ?', f.mode)
  if (f.probe) add('probe = ?', f.probe)
  if (f.view) add('view = ?', f.view)
  if (f.status) add('status = ?', f.status)
  if (f.from) add('time >= ?', f.from)
  if (f.to) add('time < ?', f.to)
  return { where, values }
}

/**
 * @param {string} time the row's time as Postgres text
 * @param {number} id
 */
function encodeCursor (time, id) {
  return Buffer.from(`${time}|${id}`).toString('base64url')
}

/**
 * A cursor is the client's text to send back: one made by hand (a date that
 * does not exist, an offset or an id PostgreSQL refuses) gets a 400 and
 * never reaches the query.
 * @param {string} cursor
 */
function decodeCursor (cursor) {
  const [time, id, ...rest] = Buffer.from(cursor, 'base64url').toString().split('|')
  if (rest.length || !isPostgresTimestamp(time ?? '') || !/^\d{1,16}$/.test(id ?? '') || !Number.isSafeInteger(Number(id))) {
    throw new ValidationError('cursor is not valid; use the next_cursor value from a previous page', 'cursor')
  }
  return { time, id: Number(id) }
}

/**
 * Result rows oldest first, in batches of `batchRows`, with keyset
 * pagination on (time, id). Each batch is its own query, so no connection or
 * snapshot is held while a slow client drains the previous one. Rows inserted
 * behind the cursor during an export are not included; every row that exists
 * for the whole export is delivered exactly once.
 * @param {import('pg').Pool} db
 * @param {ResultFilter} filter
 * @param {{ columns: readonly string[], batchRows: number }} opts
 * @returns {AsyncGenerator<Record<string, any>[]>}
 */
export async function* resultBatches (db, filter, { columns, batchRows }) {
  let after = null
  for (;;) {
    const { where, values } = resultWhere(filter)
    if (after) {
      values.push(after.time, after.id)
      // The plain `time >=` is implied by the row comparison, but only it can
      // start the (monitor_id, time) index scan at the cursor; without it
      // every batch rescans the monitor's rows from the first one, which
      // makes a long export quadratic.
      where.push(`time >= $${values.length - 1}`, `(time, id) > ($${values.length - 1}, $${values.length})`)
    }
    values.push(batchRows)
    // The cursor's time is read as text: a JS Date keeps milliseconds, and a
    // microsecond timestamp cut to milliseconds would put rows of the same
    // time with a smaller id after the cursor again, sending them twice.
    const { rows } = await db.query(
      `SELECT ${columns.join(', ')}, time::text AS cursor_time FROM results WHERE ${where.join(' AND ')}
        ORDER BY time, id LIMIT $${values.length}`, values)
    if (!rows.length) return
    const last = rows.at(-1)
    after = { time: last.cursor_time, id: last.id }
    yield rows.map(({ cursor_time: _, ...row }) => row)
    if (rows.length < batchRows) return
  }
}

/**
 * Rows matching a filter oldest first, at most `limit`.
 * @param {import('pg').Pool} db
 * @param {ResultFilter} filter
 * @param {{ columns: readonly string[], limit: number }} opts
 */
export async function resultRows (db, filter, { columns, limit }) {
  const { where, values } = resultWhere(filter)
  values.push(limit)
  const { rows } = await db.query(
    `SELECT ${columns.join(', ')} FROM results WHERE ${where.join(' AND ')}
      ORDER BY time, id LIMIT $${values.length}`, values)
  return rows
}

/**
 * p50 and p95 of TTFB and load per monitor, location and mode over the
 * window, first-view page loads whose protocol was verified (the same runs
 * the comparisons use), most recently measured first.
 *
 * Exact percentiles over raw rows rather than merged rollup sketches: the
 * rollup helpers answer one monitor and metric per call (a snapshot
 * transaction each), while this is one statement for every monitor. The
 * join drives a (monitor_id, time) index scan per monitor, so the cost
 * follows the rows of the last hour, not the table: 200 monitors and 1M
 * results over 30 days (1,400 in the last hour, 600 series) take ~5 ms.
 * Chromium's runs only: the metric's labels name no browser.
 * @param {import('pg').Pool} db
 * @param {{ windowS: number, maxSeries: number }} opts
 * @returns {Promise<{ series: { monitor_id: number, location_id: string, mode: string, ttfb_ms: (number|null)[]|null, load_ms: (number|null)[]|null }[], total: number }>}
 */
export async function latestLatency (db, { windowS, maxSeries }) {
  // count(*) OVER () runs after GROUP BY and before LIMIT: it is the number
  // of series there would be without the cap.
  const { rows } = await db.query(
    `SELECT r.monitor_id, r.location_id, r.mode,
            percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY r.ttfb_ms) AS ttfb_ms,
            percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY r.load_ms) AS load_ms,
            count(*) OVER ()::int AS total
       FROM results r JOIN monitors m ON m.id = r.monitor_id AND m.deleted_at IS NULL
      WHERE r.time >= now() - make_interval(secs => $1)
        AND r.status = 'ok' AND r.protocol_ok AND r.probe = 'page' AND r.view = 'first' AND r.browser = 'chromium'
      GROUP BY r.monitor_id, r.location_id, r.mode
      ORDER BY max(r.time) DESC, r.monitor_id, r.location_id, r.mode
      LIMIT $2`, [windowS, maxSeries])
  return { series: rows, total: rows[0]?.total ?? 0 }
}

/**
 * Per location: rounds that were due between 2·windowS and windowS ago (not
 * cancelled), how many of them have a result, and the newest round with a
 * result since 2·windowS ago. What a location_silent alert rule observes.
 * A result's time is its round's due time, so whether a round was answered
 * is asked of the round itself: the newest result of the last windowS alone
 * missed every round of a monitor whose interval is longer than that.
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, now: Date, windowS: number, locations: string[] }} q
 * @returns {Promise<{ location_id: string, due: number, answered: number, last_result: Date | null }[]>}
 */
export async function dueAndLastResult (db, { monitorId, now, windowS, locations }) {
  const { rows } = await db.query(
    `SELECT l.id AS location_id, coalesce(d.due, 0) AS due, coalesce(d.answered, 0) AS answered,
            (SELECT max(r.time) FROM results r WHERE r.monitor_id = $1 AND r.location_id = l.id
               AND r.time > $2::timestamptz - make_interval(secs => 2 * $3)) AS last_result
       FROM unnest($4::text[]) AS l(id)
       LEFT JOIN LATERAL (
         SELECT count(*)::int AS due, count(*) FILTER (WHERE EXISTS (SELECT 1 FROM results r WHERE r.job_id = j.id))::int AS answered
           FROM jobs j WHERE j.monitor_id = $1 AND j.location_id = l.id AND j.state <> 'cancelled'
            AND j.due_at > $2::timestamptz - make_interval(secs => 2 * $3) AND j.due_at <= $2::timestamptz - make_interval(secs => $3)) d ON true`,
    [monitorId, now, windowS, locations])
  return rows
}

/**
 * The job of each round (location, due time) of a monitor that already has
 * results, whether or not the job row still exists (jobs retention).
 * @param {import('pg').PoolClient} client
 * @param {{ monitorId: number, locations: string[], browsers: string[], times: Date[] }} q
 * @returns {Promise<{ location_id: string, browser: string, due_at: Date, id: number }[]>}
 */
export async function jobsOfStoredRounds (client, { monitorId, locations, browsers, times }) {
  const { rows } = await client.query(
    `SELECT DISTINCT ON (r.location_id, r.browser, r.time) r.location_id, r.browser, r.time AS due_at, r.job_id AS id
       FROM results r JOIN unnest($2::text[], $3::text[], $4::timestamptz[]) AS u(location_id, browser, due_at)
         ON r.location_id = u.location_id AND r.browser = u.browser AND r.time = u.due_at
      WHERE r.monitor_id = $1`, [monitorId, locations, browsers, times])
  return rows
}

/**
 * What the auto arm's visits got, per location and view (first,
 * returning, repeat) of one monitor's window: how many ran and loaded, how
 * many loaded over H3, the byte share's sums (for a ratio estimate and its
 * interval: n, Σx, Σy, Σx², Σy², Σxy with x = bytes and y = bytes over H3),
 * and how many gave each protocol reason (details.protocol_reason) and each
 * alternateProtocolUsage of the document. Either part can be left out (an
 * empty list): the reasons are read from each result's details, most of
 * the cost (about 300 of 380 ms for the 34,560 visits of 30 days of
 * dev/demo-auto-arm.js's seeding, on the 2 shared cores).
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, from: Date, to: Date, browser?: string, totals?: boolean, reasons?: boolean }} w
 */
export async function autoVisitOutcomes (db, { monitorId, from, to, browser, totals: withTotals = true, reasons: withReasons = true }) {
  const series = `monitor_id = $1 AND mode = 'auto' AND probe = 'page' AND browser = '${browserOf({ browser })}' AND time >= $2 AND time < $3`
  const none = { rows: [] }
  const [{ rows: totals }, { rows: reasons }] = await Promise.all([
    !withTotals ? none : db.query(
      `SELECT location_id, view, count(*)::int AS runs, count(*) FILTER (WHERE status = 'ok')::int AS loaded,
              count(*) FILTER (WHERE status = 'ok' AND observed_protocol = 'h3')::int AS h3,
              count(b.x)::int AS byte_n, coalesce(sum(b.x), 0)::float8 AS sx, coalesce(sum(b.y), 0)::float8 AS sy,
              coalesce(sum(b.x * b.x), 0)::float8 AS sxx, coalesce(sum(b.y * b.y), 0)::float8 AS syy, coalesce(sum(b.x * b.y), 0)::float8 AS sxy
         FROM results
         LEFT JOIN LATERAL (SELECT bytes::float8 AS x, bytes * h3_byte_share AS y
                              WHERE status = 'ok' AND bytes > 0 AND h3_byte_share IS NOT NULL) b ON true
        WHERE ${series} GROUP BY 1, 2`, [monitorId, from, to]),
    !withReasons ? none : db.query(
      `SELECT location_id, view, status = 'ok' AS loaded, coalesce(details->'protocol_reason'->>'code', 'unknown') AS code,
              coalesce(details->'protocol_reason'->>'alternate_protocol_usage', 'none') AS usage, count(*)::int AS n
         FROM results WHERE ${series} GROUP BY 1, 2, 3, 4, 5`, [monitorId, from, to])
  ])
  return { totals, reasons }
}

/**
 * Per location: the auto arm's returning visits in the window [from, to)
 * and in the location's baseline [baseline_from, baseline_to), each as how
 * many ran, how many loaded and how many of those loaded over H3, with the
 * location's kind, Chromium's visits only. What an h3_share_drop alert rule
 * observes (lib/analysis/alert-h3-share.js). Each count is an index-only
 * range scan of results_auto_returning (migrations 022 and 024), which holds
 * just these visits.
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, from: Date, to: Date, baselines: { location_id: string, from: Date, to: Date }[] }} q
 * @returns {Promise<{ location_id: string, kind: string | null, part: 'window' | 'baseline', visits: number, loaded: number, h3: number }[]>}
 */
export async function returningVisitCounts (db, { monitorId, from, to, baselines }) {
  const { rows } = await db.query(
    `SELECT l.id AS location_id, loc.kind, w.part, c.visits, c.loaded, c.h3
       FROM unnest($2::text[], $3::timestamptz[], $4::timestamptz[]) AS l(id, baseline_from, baseline_to)
       LEFT JOIN locations loc ON loc.id = l.id
      CROSS JOIN LATERAL (VALUES ('window', $5::timestamptz, $6::timestamptz), ('baseline', l.baseline_from, l.baseline_to)) AS w(part, t0, t1)
      CROSS JOIN LATERAL (
        SELECT count(*)::int AS visits, count(*) FILTER (WHERE r.status = 'ok')::int AS loaded,
               count(*) FILTER (WHERE r.status = 'ok' AND r.observed_protocol = 'h3')::int AS h3
          FROM results r
         WHERE r.monitor_id = $1 AND r.location_id = l.id AND r.mode = 'auto' AND r.probe = 'page' AND r.view = 'returning'
           AND r.browser = 'chromium' AND r.time >= w.t0 AND r.time < w.t1) AS c`,
    [monitorId, baselines.map((b) => b.location_id), baselines.map((b) => b.from), baselines.map((b) => b.to), from, to])
  return rows
}
