// SQL for the locations table.

const COLUMNS = 'id, name, region, kind, profile, created_at, updated_at'

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
