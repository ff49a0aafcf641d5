// Location keys and the wptagent nodes they admit. A key is bound to one
// location of kind wpt; each `pc` that polls with it becomes an agent row of
// kind wpt, so leases, results and net logs name it like any agent.
import { randomBytes } from 'node:crypto'
import { hashToken, touchAgent } from './agents.js'
import { getLocation } from './locations.js'
import { ValidationError } from '../runtime/errors.js'

/**
 * A new key for a wpt location; only its hash is stored.
 * @param {import('pg').Pool} db
 * @param {{ location: string }} opts
 * @returns {Promise<{ key: string, id: number }>}
 */
export async function createWptKey (db, { location }) {
  const loc = await getLocation(db, location)
  if (!loc) throw new ValidationError(`unknown location "${location}"; give --region to create it`, 'location')
  if (loc.kind !== 'wpt') throw new ValidationError(`location "${location}" is of kind ${loc.kind}; WebPageTest agents need a location of kind wpt (choose a new id)`, 'location')
  // Letters and digits only: the key travels in a query string and on a command line.
  const key = randomBytes(24).toString('hex')
  const { rows } = await db.query('INSERT INTO wpt_keys (location_id, key_hash) VALUES ($1, $2) RETURNING id', [location, hashToken(key)])
  return { key, id: rows[0].id }
}

/**
 * Stop every key of a wpt location at once: its agents' next call for work
 * is refused. Make a new key (createWptKey) for the agents still trusted.
 * @param {import('pg').Pool} db
 * @param {{ location: string }} opts
 * @returns {Promise<number>} the keys revoked
 */
export async function revokeWptKeys (db, { location }) {
  const loc = await getLocation(db, location)
  if (!loc) throw new ValidationError(`unknown location "${location}"`, 'location')
  if (loc.kind !== 'wpt') throw new ValidationError(`location "${location}" is of kind ${loc.kind}, not wpt: it has no WebPageTest keys`, 'location')
  const { rowCount } = await db.query('UPDATE wpt_keys SET revoked_at = now() WHERE location_id = $1 AND revoked_at IS NULL', [location])
  return rowCount ?? 0
}

/**
 * Whether `key` admits agents to `location`.
 * @param {import('pg').Pool} db
 * @param {{ location: string, key: string }} q
 */
export async function wptKeyValid (db, { location, key }) {
  const { rows } = await db.query({
    name: 'wpt-key-valid',
    text: `SELECT 1 FROM wpt_keys k JOIN locations l ON l.id = k.location_id
            WHERE k.location_id = $1 AND k.key_hash = $2 AND k.revoked_at IS NULL AND l.kind = 'wpt'`,
    values: [location, hashToken(key)]
  })
  return rows.length > 0
}

/**
 * The wptagent nodes a location may have. A node is named by its `pc`,
 * which its key's holder chooses; past this, a new name is refused rather
 * than made a row, so a key cannot fill the agents table and the
 * Locations page with names. Nodes already known go on.
 */
export const MAX_WPT_AGENTS_PER_LOCATION = 500

/**
 * The agent row of one wptagent (`pc`) at a location, created on its first
 * call for work or heartbeat, marked seen (its heartbeat) with the version it reports.
 * @param {import('pg').Pool} db
 * @param {{ location: string, pc: string, version?: string | null, create?: boolean }} q create: false for a call that
 *   only a known agent makes (an upload)
 * @returns {Promise<{ id: number, location_id: string, name: string }>}
 * @throws {ValidationError} (pc) for a new name at a location with MAX_WPT_AGENTS_PER_LOCATION nodes, or not asking for work
 */
export async function wptAgent (db, { location, pc, version = null, create = true }) {
  // Looked up first: an INSERT that meets a conflict still uses up an id,
  // and agents poll every 5 s.
  const find = () => db.query({
    name: 'wpt-agent-find',
    text: "SELECT id, location_id, name FROM agents WHERE location_id = $1 AND name = $2 AND kind = 'wpt'",
    values: [location, pc]
  })
  const { rows: [known] } = await find()
  if (known) {
    await touchAgent(db, known.id, { version: version ?? undefined })
    return known
  }
  // Asking for work (or a heartbeat) makes an agent: an upload from a name
  // that never did is refused without listing it.
  if (!create) {
    throw new ValidationError(`pc: no WebPageTest agent "${String(pc).slice(0, 100)}" of location ${location} has asked for work (getwork.php); ` +
      'a test is uploaded by the agent it was given to', 'pc')
  }
  const { rows: [{ n }] } = await db.query("SELECT count(*)::int AS n FROM agents WHERE location_id = $1 AND kind = 'wpt'", [location])
  if (n >= MAX_WPT_AGENTS_PER_LOCATION) {
    throw new ValidationError(`pc: location ${location} has ${n} WebPageTest agents, the most it may have; "${String(pc).slice(0, 100)}" is not one of them (each pc= name becomes an agent of the location)`, 'pc')
  }
  const { rows: [created] } = await db.query(
    `INSERT INTO agents (location_id, name, kind, version, last_seen_at) VALUES ($1, $2, 'wpt', $3, now())
     ON CONFLICT (location_id, name) WHERE kind = 'wpt' DO NOTHING
     RETURNING id, location_id, name`, [location, pc, version])
  return created ?? (await find()).rows[0]
}
