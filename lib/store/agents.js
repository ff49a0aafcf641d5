// Agent identities. A token is bound to one location; only its sha256 is
// stored, so a database dump does not let anyone impersonate an agent.
import { createHash, randomBytes } from 'node:crypto'
import { NotFoundError, ValidationError } from '../runtime/errors.js'
import { oneLineName } from '../runtime/text.js'
import { getLocation } from './locations.js'

// An agent counts as alive when it was seen within this many seconds; agents
// poll for work every few seconds, so three missed polls is a real outage.
export const AGENT_ALIVE_S = 60

/**
 * SQL that an agent (table alias `a`) is running: seen within the seconds
 * of the parameter `param` ($n), or holding a round's lease. A WebPageTest
 * agent asks nothing while its test runs (a minute or more on a slow
 * page), and is busy, not gone.
 * @param {string} param the placeholder of AGENT_ALIVE_S, such as '$2'
 */
export function agentRunningSql (param) {
  return `(a.last_seen_at > now() - make_interval(secs => ${param}) OR EXISTS (SELECT 1 FROM jobs lj WHERE lj.state = 'leased' AND lj.lease_owner = a.id AND lj.lease_expires_at > now()))`
}
// An agent with an infrastructure fault this recent is shown as faulty.
export const AGENT_FAULT_RECENT_S = 3600
const TOUCH_RESOLUTION_S = 5

/** @param {string} token */
export function hashToken (token) {
  return createHash('sha256').update(token).digest('hex')
}

/**
 * @param {import('pg').Pool} db
 * @param {{ location: string, name?: string }} opts
 * @returns {Promise<{ agent: { id: number, location_id: string, name: string, created_at: Date }, token: string }>}
 */
export async function createAgentToken (db, { location, name }) {
  const loc = await getLocation(db, location)
  if (!loc) throw new ValidationError(`unknown location "${location}"`, 'location')
  // A WebPageTest location's agents are wptagents, which hold a key, not a token.
  if (loc.kind === 'wpt') throw new ValidationError(`location "${location}" is of kind wpt: its agents are WebPageTest agents, which use a key (h3lens agents wpt-key --location ${location})`, 'location')
  const token = 'h3a_' + randomBytes(24).toString('base64url')
  const { rows } = await db.query(
    `INSERT INTO agents (location_id, name, token_hash) VALUES ($1, $2, $3)
     RETURNING id, location_id, name, created_at`,
    // An empty or blank name is no name: the agent gets the default one.
    [location, name?.trim() ? oneLineName(name, { field: 'name', what: 'an agent\'s name', example: 'frankfurt-1' }) : `${location}-agent`, hashToken(token)])
  return { agent: rows[0], token }
}

/**
 * @param {import('pg').Pool} db
 * @param {string} token
 * @returns {Promise<{ id: number, location_id: string, name: string } | null>}
 */
export async function authenticateAgent (db, token) {
  // Named (planned once per connection): it runs on every agent request.
  const { rows } = await db.query({
    name: 'authenticate-agent',
    text: 'SELECT id, location_id, name FROM agents WHERE token_hash = $1 AND revoked_at IS NULL',
    values: [hashToken(token)]
  })
  return rows[0] ?? null
}

/**
 * @param {import('pg').Pool} db
 * @param {number} agentId
 * @param {{ version?: string, browser_version?: string, browsers?: string[] }} info browsers: the
 *   browsers the agent has, as it says when it claims; its location then has them too
 */
export async function touchAgent (db, agentId, { version, browser_version: browserVersion, browsers } = {}) {
  // Agents call every second or two; liveness is judged over 60 s. Writing
  // only when the last mark is older than TOUCH_RESOLUTION_S (or a version
  // changed) turns most calls into a read: no dead row, no WAL flush. With
  // 200 agents this halves the commits per claim (bench/load.js).
  await db.query({
    name: 'touch-agent',
    text: `UPDATE agents SET last_seen_at = now(), version = coalesce($2, version),
       browser_version = coalesce($3, browser_version)
     WHERE id = $1 AND (last_seen_at IS NULL OR last_seen_at < now() - make_interval(secs => $4)
       OR version IS DISTINCT FROM coalesce($2, version) OR browser_version IS DISTINCT FROM coalesce($3, browser_version))`,
    values: [agentId, version ?? null, browserVersion ?? null, TOUCH_RESOLUTION_S]
  })
  if (browsers?.length) await recordBrowsers(db, agentId, browsers)
}

/**
 * The browsers an agent has: it claims rounds of those only, and its
 * location gets rounds of those (lib/store/jobs.js). A location keeps a
 * browser it once had: its rounds wait for an agent that has it, as rounds
 * wait for any agent.
 * @param {import('pg').Pool} db
 * @param {number} agentId
 * @param {string[]} browsers
 */
async function recordBrowsers (db, agentId, browsers) {
  const sorted = [...new Set(browsers)].sort()
  await db.query({
    name: 'agent-browsers',
    text: `WITH a AS (UPDATE agents SET browsers = $2::text[] WHERE id = $1 AND browsers IS DISTINCT FROM $2::text[] RETURNING location_id)
      UPDATE locations l SET browsers = ARRAY(SELECT DISTINCT b FROM unnest(l.browsers || $2::text[]) b ORDER BY b), updated_at = now()
        FROM a WHERE l.id = a.location_id AND NOT l.browsers @> $2::text[]`,
    values: [agentId, sorted]
  })
}

/** @param {import('pg').Pool} db */
export async function listAgents (db) {
  const { rows } = await db.query(
    `SELECT id, location_id, name, kind, version, browser_version, browsers, last_seen_at, last_result_at, created_at, revoked_at,
            (revoked_at IS NULL AND ${agentRunningSql('$1')}) AS alive,
            faults, last_fault_at, last_fault, coalesce(last_fault_at > now() - make_interval(secs => $2), false) AS faulty
       FROM agents a ORDER BY location_id, id`, [AGENT_ALIVE_S, AGENT_FAULT_RECENT_S])
  return rows
}

/**
 * Stop an agent's token at once: its next call is a 401, and the agent
 * stops. Rounds leased to it run again elsewhere when their lease runs out.
 * A WebPageTest agent has no token of its own (its location's key admits
 * it: lib/store/wpt-keys.js revokeWptKeys).
 * @param {import('pg').Pool} db
 * @param {number} id
 * @returns {Promise<{ id: number, location_id: string, name: string }>}
 */
export async function revokeAgent (db, id) {
  const { rows } = await db.query(
    "UPDATE agents SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL AND kind <> 'wpt' RETURNING id, location_id, name", [id])
  if (rows[0]) return rows[0]
  const { rows: [agent] } = await db.query('SELECT location_id, name, kind, revoked_at FROM agents WHERE id = $1', [id])
  if (!agent) throw new NotFoundError(`agent ${id} does not exist; see h3lens agents list`)
  if (agent.kind === 'wpt') {
    throw new ValidationError(`agent ${id} is a WebPageTest agent (${agent.name} at ${agent.location_id}): it signs in with its location's key, not a token of its own; ` +
      `revoke the key with "h3lens agents wpt-key --location ${agent.location_id} --revoke"`, 'id')
  }
  throw new ValidationError(`agent ${id} was already revoked on ${agent.revoked_at.toISOString()}`, 'id')
}
