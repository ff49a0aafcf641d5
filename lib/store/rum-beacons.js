// SQL for rum_beacons: one row per real-user page view (migrations/023_rum.sql,
// every column defined in lib/measurement/rum/beacon.js).
import { BEACON_COLUMNS, NETWORK_NAVIGATIONS } from '../measurement/rum/beacon.js'
import { withTransaction } from './transaction.js'

// Rows per INSERT, as for results (lib/store/results.js): 1,000 rows × 35
// columns stays under PostgreSQL's 65,535 parameters per statement.
const ROWS_PER_INSERT = 1000

/** The identity of a stored beacon: its site, view id and start time (ms), the table's unique key. */
export const beaconKey = (/** @type {{ site_id: number | string, view_id: string, time: Date }} */ row) => `${row.site_id}|${row.view_id}|${+row.time}`

/**
 * Insert beacons in multi-row INSERTs in one transaction, the way agents'
 * results are batched; a beacon already stored (a replay) is skipped.
 * @param {import('pg').Pool} db
 * @param {Record<string, any>[]} rows from lib/measurement/rum/beacon.js storedBeacon
 * @returns {Promise<Set<string>>} beaconKey of each row actually inserted
 */
export async function insertBeacons (db, rows) {
  const inserted = new Set()
  if (!rows.length) return inserted
  const insert = async (/** @type {import('pg').Pool | import('pg').PoolClient} */ client, /** @type {Record<string, any>[]} */ part) => {
    /** @type {unknown[]} */
    const values = []
    const tuples = part.map((row) => `(${BEACON_COLUMNS.map((c) => {
      values.push(row[c] ?? null)
      return `$${values.length}`
    }).join(', ')})`)
    const { rows: done } = await client.query(
      `INSERT INTO rum_beacons (${BEACON_COLUMNS.join(', ')}) VALUES ${tuples.join(', ')}
       ON CONFLICT (site_id, view_id, time) DO NOTHING RETURNING site_id, view_id, time`, values)
    for (const r of done) inserted.add(beaconKey(r))
  }
  // One statement is a transaction of its own: no BEGIN and COMMIT round
  // trips for the usual batch.
  if (rows.length <= ROWS_PER_INSERT) await insert(db, rows)
  else await withTransaction(db, async (client) => { for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) await insert(client, rows.slice(i, i + ROWS_PER_INSERT)) })
  return inserted
}

/**
 * What the H3 share and the page-view counts of a window rest on: beacons
 * per country, browser, protocol and kind of view. `kind` is `network` for
 * a navigation that fetched the document (the views whose protocol is the
 * page's), or the reason it did not: `cached` (the document from the
 * browser's cache), `prerender`, `back-forward-cache`, `restore`.
 * @param {import('pg').Pool} db
 * @param {{ siteId: number, from: Date, to: Date }} w
 * @returns {Promise<{ country: string | null, browser: string, protocol: string, kind: string, n: number }[]>}
 */
export async function beaconCounts (db, { siteId, from, to }) {
  const { rows } = await db.query(
    `SELECT country, browser, protocol, ${KIND} AS kind, count(*)::int AS n
       FROM rum_beacons WHERE site_id = $1 AND time >= $2 AND time < $3 GROUP BY 1, 2, 3, 4`, [siteId, from, to, NETWORK_NAVIGATIONS])
  return rows
}

const KIND = "CASE WHEN NOT (nav = ANY ($4::text[])) THEN nav WHEN coalesce(doc_cached, false) THEN 'cached' ELSE 'network' END"

/**
 * The values the comparison uses: TTFB and LCP of network navigations over
 * H2 or H3 whose connection and visit are known, per country, browser,
 * protocol, connection and visit. Above `cap` beacons a cell keeps an evenly
 * spaced `cap` of them by time (n says how many there were).
 * @param {import('pg').Pool} db
 * @param {{ siteId: number, from: Date, to: Date, cap: number }} w
 * @returns {Promise<{ country: string | null, browser: string, protocol: string, connection: string, visit: string, n: number,
 *   ttfb: number[] | null, lcp: number[] | null }[]>}
 */
export async function comparableBeacons (db, { siteId, from, to, cap }) {
  const cell = 'country, browser, protocol, connection, visit'
  const { rows } = await db.query(
    `WITH b AS (
       SELECT ${cell}, ttfb_ms, lcp_ms, row_number() OVER w AS k, count(*) OVER (PARTITION BY ${cell}) AS n
         FROM rum_beacons
        WHERE site_id = $1 AND time >= $2 AND time < $3 AND nav = ANY ($4::text[]) AND NOT coalesce(doc_cached, false)
          AND protocol IN ('h2', 'h3') AND connection IS NOT NULL AND visit IS NOT NULL
       WINDOW w AS (PARTITION BY ${cell} ORDER BY time, view_id))
     SELECT ${cell}, max(n)::int AS n,
            array_agg(ttfb_ms ORDER BY k) FILTER (WHERE ttfb_ms IS NOT NULL) AS ttfb,
            array_agg(lcp_ms ORDER BY k) FILTER (WHERE lcp_ms IS NOT NULL) AS lcp
       FROM b WHERE n <= $5 OR floor((k - 1) * $5::float8 / n) <> floor(k * $5::float8 / n)
      GROUP BY ${cell}`, [siteId, from, to, NETWORK_NAVIGATIONS, cap])
  return rows
}

/**
 * Network navigations per time bucket, country and protocol: the H3 share
 * over time.
 * @param {import('pg').Pool} db
 * @param {{ siteId: number, from: Date, to: Date, bucketS: number }} w
 * @returns {Promise<{ t: Date, country: string | null, protocol: string, n: number }[]>}
 */
export async function protocolTrend (db, { siteId, from, to, bucketS }) {
  const { rows } = await db.query(
    `SELECT date_bin(make_interval(secs => $5), time, $2::timestamptz) AS t, country, protocol, count(*)::int AS n
       FROM rum_beacons
      WHERE site_id = $1 AND time >= $2 AND time < $3 AND nav = ANY ($4::text[]) AND NOT coalesce(doc_cached, false)
      GROUP BY 1, 2, 3 ORDER BY 1`, [siteId, from, to, NETWORK_NAVIGATIONS, bucketS])
  return rows
}

/**
 * Beacons of a window oldest first, in batches, keyset-paginated on
 * (time, view_id); each batch its own query, as results export does.
 * @param {import('pg').Pool} db
 * @param {{ siteId: number, from: Date, to: Date, batchRows: number }} w
 * @returns {AsyncGenerator<Record<string, any>[]>}
 */
export async function* beaconBatches (db, { siteId, from, to, batchRows }) {
  const columns = ['received_at', ...BEACON_COLUMNS]
  let after = null
  for (;;) {
    const values = [siteId, from, to, batchRows]
    let where = 'site_id = $1 AND time >= $2 AND time < $3'
    if (after) {
      values.push(after.time, after.view_id)
      where += ' AND time >= $5 AND (time, view_id) > ($5, $6)'
    }
    // The cursor's time as text: a JS Date would cut microseconds.
    const { rows } = await db.query(
      `SELECT ${columns.join(', ')}, time::text AS cursor_time FROM rum_beacons WHERE ${where} ORDER BY time, view_id LIMIT $4`, values)
    if (!rows.length) return
    const last = rows.at(-1)
    after = { time: last.cursor_time, view_id: last.view_id }
    yield rows.map(({ cursor_time: _, ...row }) => row)
    if (rows.length < batchRows) return
  }
}

/**
 * Delete beacons whose page view began more than `retentionDays` ago, at
 * most `batch` of them (the oldest).
 * @param {import('pg').Pool} db
 * @param {{ retentionDays: number, batch?: number }} opts
 * @returns {Promise<number>}
 */
export async function pruneBeacons (db, { retentionDays, batch = 5000 }) {
  const { rowCount } = await db.query(
    `DELETE FROM rum_beacons WHERE (site_id, view_id, time) IN (
       SELECT site_id, view_id, time FROM rum_beacons WHERE time < now() - make_interval(days => $1) ORDER BY time LIMIT $2)`,
    [retentionDays, batch])
  return rowCount ?? 0
}
