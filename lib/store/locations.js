// SQL for the locations table.
import { AGENT_ALIVE_S } from './agents.js'
import { NotFoundError, ValidationError } from '../runtime/errors.js'

const COLUMNS = 'id, name, region, kind, profile, countries, last_refusal, created_at, updated_at'

/** @param {import('pg').Pool} db */
export async function listLocations (db) {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM locations ORDER BY kind, id`)
  return rows
}

/** @param {import('pg').Pool} db @param {string} id */
export async function getLocation (db, id) {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM locations WHERE id = $1`, [id])
  return rows[0] ?? null
}

/**
 * Create or update a location; lab start-up uses this to publish profiles.
 * @param {import('pg').Pool} db
 * @param {{ id: string, name: string, region: string, kind: 'lab'|'real'|'wpt', profile?: object }} loc
 */
export async function upsertLocation (db, { id, name, region, kind, profile = {} }) {
  const { rows } = await db.query(
    `INSERT INTO locations (id, name, region, kind, profile) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (id) DO UPDATE SET name = $2, region = $3, kind = $4, profile = $5, updated_at = now()
     RETURNING ${COLUMNS}`,
    [id, name, region, kind, profile])
  return rows[0]
}

/**
 * The countries a location stands for (ISO 3166-1 alpha-2), so real users
 * from them are shown under it; an empty list clears it. A country may
 * stand under one location only.
 * @param {import('pg').Pool} db
 * @param {string} id
 * @param {string[]} countries
 */
export async function setLocationCountries (db, id, countries) {
  const codes = [...new Set(countries.map((c) => String(c).trim().toUpperCase()))]
  codes.forEach((c, i) => {
    if (!/^[A-Z]{2}$/.test(c)) throw new ValidationError(`countries.${i}: "${c}" is not a two-letter country code (ISO 3166-1 alpha-2) such as US or DE`, `countries.${i}`)
  })
  const { rows: taken } = await db.query(
    'SELECT id, c FROM locations, unnest(countries) AS c WHERE id <> $1 AND c = ANY ($2::text[]) ORDER BY c', [id, codes])
  if (taken.length) throw new ValidationError(`countries: ${taken.map((t) => `${t.c} stands under ${t.id} already`).join(', ')}; a country belongs to one location`, 'countries')
  const { rows } = await db.query(
    `UPDATE locations SET countries = $2, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`, [id, codes.length ? codes : null])
  if (!rows[0]) throw new NotFoundError(`location ${id} does not exist`)
  return rows[0]
}

/**
 * Keep what was refused last at a location (its WebPageTest agents'
 * uploads): shown on its page, so a user sees why its rounds are missing.
 * @param {import('pg').Pool | import('pg').PoolClient} db
 * @param {string} locationId
 * @param {{ agent: string | null, test_id: string | null, status: number, reason: string }} refusal
 *   status: the HTTP status answered (200 when the upload was stored as an error result)
 */
export async function recordRefusal (db, locationId, { agent, test_id: testId, status, reason }) {
  await db.query(
    "UPDATE locations SET last_refusal = jsonb_build_object('at', now(), 'agent', $2::text, 'test_id', $3::text, 'status', $4::int, 'reason', $5::text) WHERE id = $1",
    [locationId, agent, testId, status, reason.slice(0, 2000)])
}

// A location's capacity is estimated from the rounds its agents finished in
// this window; skipped rounds are counted over it too.
export const CAPACITY_WINDOW_S = 3600

/**
 * Rounds per hour each location is asked for (its active monitors'
 * intervals) against what it can take: live agents (each runs one round at
 * a time) × 3600 / the mean time a round took from claim to results over the
 * last hour. capacity_per_hour is null while no round was measured in the
 * window; over_capacity says demand exceeds it (or nothing serves a
 * location that has demand). skipped_busy counts the rounds skipped in the
 * window because the previous one was still pending (scheduleDueJobs).
 * Each part reads an index range (jobs_finished over the last hour, the
 * monitors and agents tables), never the retained job history.
 * @param {import('pg').Pool} db
 * @returns {Promise<Map<string, { demand_per_hour: number, capacity_per_hour: number | null, round_s: number | null,
 *   agents_alive: number, skipped_busy: number, skipped: number, over_capacity: boolean }>>}
 */
export async function locationCapacity (db) {
  const { rows } = await db.query(
    `WITH demand AS (
       SELECT loc AS location_id, sum(3600.0 / m.interval_s) AS per_hour
         FROM monitors m CROSS JOIN LATERAL unnest(m.locations) AS loc
        WHERE m.deleted_at IS NULL AND NOT m.paused GROUP BY loc),
     finished AS (
       SELECT location_id,
              avg(extract(epoch FROM finished_at - started_at)) FILTER (WHERE state = 'done' AND started_at IS NOT NULL) AS round_s,
              count(*) FILTER (WHERE state = 'skipped' AND last_error LIKE 'skipped: location busy%') AS skipped_busy,
              count(*) FILTER (WHERE state = 'skipped') AS skipped
         FROM jobs
        WHERE state IN ('done', 'failed', 'cancelled', 'skipped') AND finished_at > now() - make_interval(secs => $1)
        GROUP BY location_id),
     alive AS (
       SELECT location_id, count(*) AS n FROM agents
        WHERE revoked_at IS NULL AND last_seen_at > now() - make_interval(secs => $2) GROUP BY location_id)
     SELECT l.id, coalesce(d.per_hour, 0)::float8 AS demand_per_hour, f.round_s::float8 AS round_s,
            coalesce(a.n, 0)::int AS agents_alive, coalesce(f.skipped_busy, 0)::int AS skipped_busy,
            coalesce(f.skipped, 0)::int AS skipped
       FROM locations l LEFT JOIN demand d ON d.location_id = l.id
       LEFT JOIN finished f ON f.location_id = l.id LEFT JOIN alive a ON a.location_id = l.id`,
    [CAPACITY_WINDOW_S, AGENT_ALIVE_S])
  const out = new Map()
  for (const r of rows) {
    const capacity = r.agents_alive === 0 ? 0 : r.round_s > 0 ? r.agents_alive * 3600 / r.round_s : null
    out.set(r.id, {
      demand_per_hour: round1(r.demand_per_hour),
      capacity_per_hour: capacity === null ? null : round1(capacity),
      round_s: r.round_s === null ? null : Math.round(r.round_s * 1000) / 1000,
      agents_alive: r.agents_alive,
      skipped_busy: r.skipped_busy,
      skipped: r.skipped,
      over_capacity: capacity !== null && r.demand_per_hour > capacity
    })
  }
  return out
}

const round1 = (/** @type {number} */ v) => Math.round(v * 10) / 10
