// SQL for rum_sites: the sites whose visitors' browsers send beacons
// (docs/RUM.md). A site key is public (it is in the install tag of every
// page), so it is stored as it is; what keeps strangers' beacons out is the
// Origin header, which must be one of the site's origins, and the rate
// limits of the beacon route.
import { randomBytes } from 'node:crypto'
import { ValidationError, NotFoundError } from '../runtime/errors.js'

export const SITE_KEY_PREFIX = 'h3s_'
export const MAX_ORIGINS = 20
const COLUMNS = 'id, key, name, origins, sample_rate, created_at, updated_at, revoked_at'

/**
 * An origin as browsers send it in the Origin header: scheme, host and
 * port (the default one left out), nothing else.
 * @param {string} value
 * @param {string} field
 */
export function normaliseOrigin (value, field = 'origins') {
  let u
  try { u = new URL(String(value).trim()) } catch { throw new ValidationError(`${field}: "${value}" is not an origin such as https://www.example.com`, field) }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new ValidationError(`${field}: "${value}" must start with https:// (or http://)`, field)
  if ((u.pathname !== '/' && u.pathname !== '') || u.search || u.hash || u.username || u.password) {
    throw new ValidationError(`${field}: "${value}" must be an origin only (scheme, host and port), such as ${u.origin}`, field)
  }
  // A browser's Origin names one host: a pattern such as *.example.com would
  // match no beacon, and every one of its sites' would be refused.
  if (!/^(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*)$/.test(u.hostname)) {
    throw new ValidationError(`${field}: "${value}" must name one host (no wildcard): list each origin of the site`, field)
  }
  return u.origin
}

/**
 * @param {{ name?: unknown, origins?: unknown, sample_rate?: unknown }} input
 * @param {{ partial?: boolean }} [opts]
 */
function checked (input, { partial = false } = {}) {
  /** @type {{ name?: string, origins?: string[], sample_rate?: number }} */
  const out = {}
  if (input.name !== undefined || !partial) {
    const name = String(input.name ?? '').trim()
    if (!name || name.length > 100) throw new ValidationError('name: a site needs a name of 1 to 100 characters', 'name')
    out.name = name
  }
  if (input.origins !== undefined || !partial) {
    const list = Array.isArray(input.origins) ? input.origins : []
    if (!list.length || list.length > MAX_ORIGINS) throw new ValidationError(`origins: give 1 to ${MAX_ORIGINS} origins the pages are served from, such as https://www.example.com`, 'origins')
    out.origins = [...new Set(list.map((o, i) => normaliseOrigin(/** @type {string} */ (o), `origins.${i}`)))]
  }
  if (input.sample_rate !== undefined) {
    const rate = Number(input.sample_rate)
    if (!(rate > 0 && rate <= 1)) throw new ValidationError('sample_rate: must be above 0 and at most 1 (the share of page views that send a beacon)', 'sample_rate')
    out.sample_rate = rate
  }
  return out
}

/**
 * @param {import('pg').Pool} db
 * @param {{ name: string, origins: string[], sample_rate?: number }} input
 */
export async function createSite (db, input) {
  const site = checked(input)
  const key = SITE_KEY_PREFIX + randomBytes(24).toString('base64url')
  const { rows } = await db.query(
    `INSERT INTO rum_sites (key, name, origins, sample_rate) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
    [key, site.name, site.origins, site.sample_rate ?? 1])
  return rows[0]
}

/** @param {import('pg').Pool} db @param {{ includeRevoked?: boolean }} [opts] */
export async function listSites (db, { includeRevoked = false } = {}) {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM rum_sites ${includeRevoked ? '' : 'WHERE revoked_at IS NULL'} ORDER BY id`)
  return rows
}

/** @param {import('pg').Pool} db @param {number} id */
export async function getSite (db, id) {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM rum_sites WHERE id = $1`, [id])
  if (!rows[0]) throw new NotFoundError(`site ${id} does not exist`)
  return rows[0]
}

/**
 * The live site of a key, or null (unknown or revoked).
 * @param {import('pg').Pool} db
 * @param {string} key
 * @returns {Promise<{ id: number, origins: string[], sample_rate: number } | null>}
 */
export async function siteOfKey (db, key) {
  const { rows } = await db.query('SELECT id, origins, sample_rate FROM rum_sites WHERE key = $1 AND revoked_at IS NULL', [key])
  return rows[0] ?? null
}

/**
 * The live sites one of whose origins is `origin` (a monitor's page is
 * shown beside its real users).
 * @param {import('pg').Pool} db
 * @param {string} origin
 */
export async function sitesOfOrigin (db, origin) {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM rum_sites WHERE $1 = ANY (origins) AND revoked_at IS NULL ORDER BY id`, [origin])
  return rows
}

/**
 * @param {import('pg').Pool} db
 * @param {number} id
 * @param {{ name?: string, origins?: string[], sample_rate?: number }} input
 */
export async function updateSite (db, id, input) {
  const change = checked(input, { partial: true })
  const { rows } = await db.query(
    `UPDATE rum_sites SET name = coalesce($2, name), origins = coalesce($3, origins), sample_rate = coalesce($4, sample_rate), updated_at = now()
      WHERE id = $1 AND revoked_at IS NULL RETURNING ${COLUMNS}`,
    [id, change.name ?? null, change.origins ?? null, change.sample_rate ?? null])
  if (!rows[0]) await getSite(db, id).then(() => { throw new ValidationError(`site ${id} is revoked; create a new one`, 'id') })
  return rows[0]
}

/**
 * Stop a site's beacons at once; the ones stored are kept until retention.
 * @param {import('pg').Pool} db
 * @param {number} id
 */
export async function revokeSite (db, id) {
  const { rows } = await db.query(`UPDATE rum_sites SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING ${COLUMNS}`, [id])
  if (rows[0]) return rows[0]
  const site = await getSite(db, id)
  throw new ValidationError(`site ${id} was already revoked on ${site.revoked_at.toISOString()}`, 'id')
}
