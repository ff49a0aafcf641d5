// SQL for monitor_origins: per monitor and location, every origin the page
// used, whether it advertises HTTP/3 (Alt-Svc) and over which protocols it
// was really served. Fed from the `origins` evidence the agent attaches to
// each result (details.origins), when the results are stored.
import { MAX_KEPT_ALT_SVC, MAX_KEPT_ORIGINS, MAX_REQUESTS } from '../measurement/result.js'

/**
 * @typedef {{ origin: string, alt_svc: string | null, h3_advertised: boolean, requests: { h3?: number, h2?: number, other?: number } }} OriginEvidence
 */

/**
 * @typedef {{ altSvc: string | null, advertised: boolean | null, advertisedAt: Date | null, h3: number, h2: number, other: number,
 *   h3At: Date | null, seenAt: Date }} OriginSeen
 */

/**
 * Fold the origins seen in freshly stored results into monitor_origins.
 * Called in the transaction that stores the results, with the rows actually
 * inserted, so a resubmission never counts twice.
 * @param {import('pg').PoolClient | import('pg').Pool} db
 * @param {{ monitorId: number, locationId: string, rows: Record<string, any>[] }} opts
 */
export async function recordCapabilities (db, { monitorId, locationId, rows }) {
  /** @type {Map<string, OriginSeen>} */
  const byOrigin = new Map()
  for (const row of rows) {
    const origins = Array.isArray(row.details?.origins) ? row.details.origins.slice(0, MAX_KEPT_ORIGINS) : []
    // An agent's clock ahead of this server's (results may say up to a day
    // ahead) must not date an origin in the future, where no later result
    // could replace what it saw: the server's clock caps it.
    const seenAt = new Date(Math.min(new Date(row.measured_at ?? Date.now()).getTime(), Date.now()))
    for (const o of origins) {
      if (typeof o?.origin !== 'string' || !/^https?:\/\/[^/\s]+$/.test(o.origin) || o.origin.length > 300) continue
      let agg = byOrigin.get(o.origin)
      if (!agg) byOrigin.set(o.origin, (agg = { altSvc: null, advertised: null, advertisedAt: null, h3: 0, h2: 0, other: 0, h3At: null, seenAt }))
      // v: a count from the result's details (JSON); one no page makes
      // (more than a load's MAX_REQUESTS) counts nothing.
      const n = (/** @type {any} */ v) => (Number.isInteger(v) && v > 0 && v <= MAX_REQUESTS ? v : 0)
      agg.h3 += n(o.requests?.h3)
      agg.h2 += n(o.requests?.h2)
      agg.other += n(o.requests?.other)
      if (n(o.requests?.h3) && (!agg.h3At || seenAt > agg.h3At)) agg.h3At = seenAt
      if (seenAt > agg.seenAt) agg.seenAt = seenAt
      // Only a response that carried an Alt-Svc header says anything about
      // the advertisement: responses over h3 usually carry none.
      if (typeof o.alt_svc === 'string') {
        agg.altSvc = o.alt_svc.slice(0, MAX_KEPT_ALT_SVC)
        agg.advertised = Boolean(o.h3_advertised)
        if (agg.advertised && (!agg.advertisedAt || seenAt > agg.advertisedAt)) agg.advertisedAt = seenAt
      }
    }
  }
  if (!byOrigin.size) return
  const list = [...byOrigin.entries()].sort(([a], [b]) => (a < b ? -1 : 1)) // fixed lock order
  const col = (/** @type {(origin: string, a: OriginSeen) => unknown} */ f) => list.map(([origin, a]) => f(origin, a))
  await db.query(
    `INSERT INTO monitor_origins AS m (monitor_id, location_id, origin, alt_svc, h3_advertised, first_advertised_at, last_advertised_at,
            h3_requests, h2_requests, other_requests, last_h3_at, first_seen_at, last_seen_at)
     SELECT $1, $2, u.origin, u.alt_svc, coalesce(u.advertised, false), u.advertised_at, u.advertised_at,
            u.h3, u.h2, u.other, u.h3_at, u.seen_at, u.seen_at
       FROM unnest($3::text[], $4::text[], $5::boolean[], $6::timestamptz[], $7::bigint[], $8::bigint[], $9::bigint[], $10::timestamptz[], $11::timestamptz[])
            AS u(origin, alt_svc, advertised, advertised_at, h3, h2, other, h3_at, seen_at)
     ON CONFLICT (monitor_id, location_id, origin) DO UPDATE SET
       alt_svc = CASE WHEN EXCLUDED.alt_svc IS NOT NULL AND EXCLUDED.last_seen_at >= m.last_seen_at THEN EXCLUDED.alt_svc ELSE m.alt_svc END,
       h3_advertised = CASE WHEN EXCLUDED.alt_svc IS NOT NULL AND EXCLUDED.last_seen_at >= m.last_seen_at THEN EXCLUDED.h3_advertised ELSE m.h3_advertised END,
       first_advertised_at = coalesce(m.first_advertised_at, EXCLUDED.first_advertised_at),
       last_advertised_at = greatest(m.last_advertised_at, EXCLUDED.last_advertised_at),
       h3_requests = m.h3_requests + EXCLUDED.h3_requests,
       h2_requests = m.h2_requests + EXCLUDED.h2_requests,
       other_requests = m.other_requests + EXCLUDED.other_requests,
       last_h3_at = greatest(m.last_h3_at, EXCLUDED.last_h3_at),
       last_seen_at = greatest(m.last_seen_at, EXCLUDED.last_seen_at)`,
    [monitorId, locationId, col((o) => o), col((_, a) => a.altSvc), col((_, a) => a.advertised), col((_, a) => a.advertisedAt),
      col((_, a) => a.h3), col((_, a) => a.h2), col((_, a) => a.other), col((_, a) => a.h3At), col((_, a) => a.seenAt)])
}

/**
 * The H3 capability matrix of a monitor: one row per origin, one cell per
 * location where the origin was seen.
 * @param {import('pg').Pool} db
 * @param {number} monitorId
 */
export async function capabilityMatrix (db, monitorId) {
  const { rows } = await db.query(
    `SELECT origin, location_id, alt_svc, h3_advertised, first_advertised_at, last_advertised_at,
            h3_requests::int AS h3_requests, h2_requests::int AS h2_requests, other_requests::int AS other_requests,
            last_h3_at, first_seen_at, last_seen_at
       FROM monitor_origins WHERE monitor_id = $1 ORDER BY origin, location_id`, [monitorId])
  const origins = new Map()
  for (const r of rows) {
    let o = origins.get(r.origin)
    if (!o) origins.set(r.origin, (o = { origin: r.origin, h3_advertised: false, served_h3: false, locations: [] }))
    const cell = { ...r, served_h3: r.h3_requests > 0 }
    delete cell.origin
    o.locations.push(cell)
    o.h3_advertised ||= r.h3_advertised
    o.served_h3 ||= r.h3_requests > 0
  }
  return {
    monitor_id: monitorId,
    locations: [...new Set(rows.map((r) => r.location_id))].sort(),
    origins: [...origins.values()]
  }
}

/**
 * Origins to force onto QUIC when a monitor asks for every H3-capable origin:
 * those seen advertising h3, or already served over h3, from this location.
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, locationId: string }} key
 * @returns {Promise<string[]>}
 */
export async function h3Origins (db, { monitorId, locationId }) {
  const { rows } = await db.query(
    `SELECT origin FROM monitor_origins
      WHERE monitor_id = $1 AND location_id = $2 AND (h3_advertised OR h3_requests > 0)
      ORDER BY origin LIMIT 50`, [monitorId, locationId])
  return rows.map((r) => r.origin)
}
