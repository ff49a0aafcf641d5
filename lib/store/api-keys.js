// API keys for people and scripts. A key has a role: `read` may call every
// GET of the REST API, `write` may also change things. Only the key's sha256
// is stored: keys are 192 random bits, so a fast hash is enough (there is
// nothing to brute-force that a slow hash would protect), and a database dump
// does not let anyone in.
import fs from 'node:fs/promises'
import path from 'node:path'
import { randomBytes } from 'node:crypto'
import { hashToken } from './agents.js'
import { ValidationError, NotFoundError } from '../runtime/errors.js'
import { oneLineName } from '../runtime/text.js'

export const API_KEY_ROLES = Object.freeze(['read', 'write'])
export const ADMIN_KEY_FILE = 'admin-key'
const KEY_PREFIX = 'h3k_'

// last_used_at is written at most this often per key: the column answers
// "is this key still in use?", and a write per request would double the cost
// of every read.
const LAST_USED_RESOLUTION_S = 60

/**
 * @param {import('pg').Pool} db
 * @param {{ name: string, role: string }} opts
 * @returns {Promise<{ key: { id: number, name: string, role: string, key_prefix: string, created_at: Date }, secret: string }>}
 */
export async function createApiKey (db, { name, role }) {
  if (!API_KEY_ROLES.includes(role)) throw new ValidationError(`role must be one of ${API_KEY_ROLES.join(', ')}, not "${role}"`, 'role')
  const label = oneLineName(name, { field: 'name', what: 'a key\'s name', example: 'grafana' })
  const secret = KEY_PREFIX + randomBytes(24).toString('base64url')
  const { rows } = await db.query(
    `INSERT INTO api_keys (name, role, key_hash, key_prefix) VALUES ($1, $2, $3, $4)
     RETURNING id, name, role, key_prefix, created_at`,
    [label, role, hashToken(secret), secret.slice(0, KEY_PREFIX.length + 4)])
  return { key: rows[0], secret }
}

/**
 * @param {import('pg').Pool} db
 * @param {string} secret
 * @returns {Promise<{ id: number, name: string, role: 'read' | 'write' } | null>} null for unknown or revoked keys
 */
export async function authenticateApiKey (db, secret) {
  if (!secret.startsWith(KEY_PREFIX)) return null
  const { rows } = await db.query(
    `SELECT id, name, role, last_used_at < now() - make_interval(secs => $2) OR last_used_at IS NULL AS stale
       FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`, [hashToken(secret), LAST_USED_RESOLUTION_S])
  const key = rows[0]
  if (!key) return null
  if (key.stale) await db.query('UPDATE api_keys SET last_used_at = now() WHERE id = $1', [key.id])
  return { id: key.id, name: key.name, role: key.role }
}

/** @param {import('pg').Pool} db */
export async function listApiKeys (db) {
  const { rows } = await db.query(
    'SELECT id, name, role, key_prefix, created_at, last_used_at, revoked_at FROM api_keys ORDER BY id')
  return rows
}

/**
 * @param {import('pg').Pool} db
 * @param {number} id
 */
export async function revokeApiKey (db, id) {
  const { rowCount } = await db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL', [id])
  if (rowCount) return
  const { rows } = await db.query('SELECT revoked_at FROM api_keys WHERE id = $1', [id])
  if (!rows[0]) throw new NotFoundError(`API key ${id} does not exist; see h3lens keys list`)
  throw new ValidationError(`API key ${id} was already revoked on ${rows[0].revoked_at.toISOString()}`, 'id')
}

/**
 * The first start of a deployment creates an admin (write) key and leaves it
 * in `<data dir>/admin-key` (mode 0600), so the dashboard and API can be used
 * at once without the key ever reaching a log. Later starts reuse the file.
 * When the file is gone or its key was revoked, a new admin key is made only
 * if no other write key exists: revoking keys must not be undone by a
 * restart, and a database shared by several deployments may have its own.
 * @param {import('pg').Pool} db
 * @param {string} dataDir
 * @returns {Promise<{ file: string, created: boolean } | { file: null, created: false, reason: string }>}
 */
export async function ensureAdminKey (db, dataDir) {
  const file = path.join(dataDir, ADMIN_KEY_FILE)
  const existing = await fs.readFile(file, 'utf8').then((s) => s.trim(), () => null)
  if (existing) {
    const key = await authenticateApiKey(db, existing)
    if (key?.role === 'write') return { file, created: false }
  }
  const { rows } = await db.query("SELECT count(*)::int AS n FROM api_keys WHERE role = 'write' AND revoked_at IS NULL")
  if (rows[0].n > 0) {
    return {
      file: null,
      created: false,
      reason: existing
        ? `${file} holds a key that is no longer valid; other write keys exist, so none was created (h3lens keys create --role write makes one)`
        : 'write keys exist already; h3lens keys create --role write makes another'
    }
  }
  const { secret } = await createApiKey(db, { name: 'admin', role: 'write' })
  await fs.mkdir(dataDir, { recursive: true })
  // Written to a temp file with the final mode first, then renamed: the key
  // is never readable by others, not even for a moment.
  const tmp = `${file}.${process.pid}.tmp`
  await fs.writeFile(tmp, secret + '\n', { mode: 0o600 })
  await fs.chmod(tmp, 0o600)
  await fs.rename(tmp, file)
  return { file, created: true }
}
