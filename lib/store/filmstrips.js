// SQL for filmstrip_frames: the frames of a page load (JPEG, about 400 px
// wide, at most one per 100 ms), keyed like its result, and their retention
// (docs/FILMSTRIPS.md).
import { ConflictError, NotFoundError, ValidationError } from '../runtime/errors.js'
import { withTransaction } from './transaction.js'
import { FILMSTRIP_MAX_BYTES, FILMSTRIP_MAX_FRAMES, FRAME_STEP_MS } from '../measurement/visual.js'

/**
 * @typedef {{ t_ms: number, jpeg: Buffer }} Frame
 * @typedef {{ job_id: number, mode: string, view: string, probe: string }} ResultKey
 */

/**
 * Checks a run's frames against the limits: JPEG, times ascending and at
 * least FRAME_STEP_MS apart (half a step of slack for the clock), at most
 * FILMSTRIP_MAX_FRAMES and FILMSTRIP_MAX_BYTES. Throws a ValidationError
 * naming the field.
 * @param {Frame[]} frames
 */
export function checkFrames (frames) {
  if (!frames.length) throw new ValidationError('a filmstrip needs at least one frame', 'frames')
  if (frames.length > FILMSTRIP_MAX_FRAMES) throw new ValidationError(`at most ${FILMSTRIP_MAX_FRAMES} frames per run (got ${frames.length})`, 'frames')
  const bytes = frames.reduce((sum, f) => sum + f.jpeg.length, 0)
  if (bytes > FILMSTRIP_MAX_BYTES) throw new ValidationError(`a run's frames are at most ${FILMSTRIP_MAX_BYTES} bytes of JPEG (got ${bytes})`, 'frames')
  frames.forEach((f, i) => {
    if (f.jpeg.length < 3 || f.jpeg[0] !== 0xff || f.jpeg[1] !== 0xd8 || f.jpeg[2] !== 0xff) throw new ValidationError('not a JPEG image', `frames[${i}].jpeg`)
    if (i > 0 && f.t_ms - frames[i - 1].t_ms < FRAME_STEP_MS / 2) {
      throw new ValidationError(`frames are at most one per ${FRAME_STEP_MS} ms, in time order (${frames[i - 1].t_ms} then ${f.t_ms})`, `frames[${i}].t_ms`)
    }
  })
  return bytes
}

/**
 * Store the frames of one result-to-be, replacing any stored for its key.
 * The job must be this agent's (held or finished by it).
 * @param {import('pg').Pool} db
 * @param {{ jobId: number, agent: { id: number, location_id: string }, mode: string, view: string, probe: string, frames: Frame[] }} f
 */
export async function storeFilmstrip (db, { jobId, agent, mode, view, probe, frames }) {
  const bytes = checkFrames(frames)
  const { rows } = await db.query('SELECT monitor_id, location_id, lease_owner FROM jobs WHERE id = $1', [jobId])
  const job = rows[0]
  if (!job) throw new NotFoundError(`job ${jobId} does not exist`)
  if (job.location_id !== agent.location_id || job.lease_owner !== agent.id) {
    throw new ConflictError(`job ${jobId} is not this agent's; its filmstrip was not stored`, 'lease_lost')
  }
  await withTransaction(db, async (client) => {
    await client.query('DELETE FROM filmstrip_frames WHERE job_id = $1 AND mode = $2 AND view = $3 AND probe = $4', [jobId, mode, view, probe])
    await client.query(
      `INSERT INTO filmstrip_frames (job_id, mode, view, probe, seq, t_ms, jpeg, monitor_id, location_id)
       SELECT $1, $2, $3, $4, f.seq - 1, f.t_ms, f.jpeg, $5, $6
         FROM unnest($7::double precision[], $8::bytea[]) WITH ORDINALITY AS f(t_ms, jpeg, seq)`,
      [jobId, mode, view, probe, job.monitor_id, job.location_id, frames.map((f) => f.t_ms), frames.map((f) => f.jpeg)])
  })
  return { stored: true, frames: frames.length, bytes }
}

/**
 * The frames of a result, without their images: [{ seq, t_ms, bytes }].
 * @param {import('pg').Pool} db
 * @param {ResultKey} result
 * @returns {Promise<{ seq: number, t_ms: number, bytes: number }[]>}
 */
export async function filmstripFrames (db, result) {
  const { rows } = await db.query(
    `SELECT seq, t_ms, octet_length(jpeg) AS bytes FROM filmstrip_frames
      WHERE job_id = $1 AND mode = $2 AND view = $3 AND probe = $4 ORDER BY seq`, [result.job_id, result.mode, result.view, result.probe])
  return rows
}

/**
 * One frame's JPEG, or null.
 * @param {import('pg').Pool} db
 * @param {ResultKey} result
 * @param {number} seq
 * @returns {Promise<Buffer | null>}
 */
export async function filmstripFrame (db, result, seq) {
  const { rows } = await db.query(
    'SELECT jpeg FROM filmstrip_frames WHERE job_id = $1 AND mode = $2 AND view = $3 AND probe = $4 AND seq = $5',
    [result.job_id, result.mode, result.view, result.probe, seq])
  return rows[0]?.jpeg ?? null
}

/**
 * Delete frames stored more than `retentionDays` ago, at most `batch` rows
 * per call (the scheduler calls again while a call fills its batch).
 * @param {import('pg').Pool} db
 * @param {{ retentionDays: number, batch?: number }} opts
 * @returns {Promise<number>} rows deleted
 */
export async function pruneFilmstrips (db, { retentionDays, batch = 5000 }) {
  const { rowCount } = await db.query(
    `DELETE FROM filmstrip_frames WHERE ctid = ANY (ARRAY(
       SELECT ctid FROM filmstrip_frames WHERE created_at < now() - make_interval(days => $1) LIMIT $2))`,
    [retentionDays, batch])
  return rowCount ?? 0
}

/**
 * The Chromium rounds (frames are Chromium's) of one monitor and location in [from, to) whose first-view
 * page loads are ok in both forced arms with a value of `column`, oldest
 * first, at most `limit` (the most recent ones): for picking the round
 * shown side by side (lib/analysis/side-by-side.js). Each says whether
 * both arms have frames.
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, locationId: string, column: string, from: Date, to: Date, limit?: number }} q
 * @returns {Promise<{ job_id: number, time: Date, h2: number, h3: number, framed: boolean }[]>}
 */
export async function matchedRounds (db, { monitorId, locationId, column, from, to, limit = 20000 }) {
  if (!/^[a-z0-9_]+$/.test(column)) throw new TypeError(`not a column: ${column}`)
  const { rows } = await db.query(
    `SELECT s.job_id::float8 AS job_id, s.time, s.h2_${column} AS h2, s.h3_${column} AS h3,
            (SELECT count(DISTINCT f.mode) = 2 FROM filmstrip_frames f
              WHERE f.job_id = s.job_id AND f.probe = 'page' AND f.view = 'first' AND f.mode IN ('h2', 'h3') AND f.seq = 0) AS framed
       FROM round_summaries s
      WHERE s.monitor_id = $1 AND s.location_id = $2 AND s.probe = 'page' AND s.view = 'first' AND s.browser = 'chromium' AND s.time >= $3 AND s.time < $4
        AND s.h2_state = 'ok' AND s.h3_state = 'ok' AND s.h2_${column} IS NOT NULL AND s.h3_${column} IS NOT NULL
      ORDER BY s.time DESC LIMIT $5`, [monitorId, locationId, from, to, limit])
  return rows.reverse()
}

/**
 * The first-view page results of a round's forced arms, by mode.
 * @param {import('pg').Pool} db
 * @param {number} jobId
 * @returns {Promise<Record<string, Record<string, any>>>}
 */
export async function roundArms (db, jobId) {
  const { rows } = await db.query(
    `SELECT * FROM results WHERE job_id = $1 AND probe = 'page' AND view = 'first' AND mode IN ('h2', 'h3')`, [jobId])
  return Object.fromEntries(rows.map((r) => [r.mode, r]))
}

/**
 * The screenshot a WebPageTest agent took at the end of a load, as a
 * one-frame filmstrip of its result (lib/store/wpt-tests.js, in its
 * transaction). It replaces whatever an earlier attempt of the round left
 * for that arm, and with no screenshot (null) that is removed: the frames
 * shown are always those of the run whose result is stored.
 * @param {import('pg').PoolClient} client
 * @param {{ jobId: number, mode: string, view: string, monitorId: number, locationId: string, tMs: number, jpeg: Buffer | null }} f
 */
export async function replaceWptScreen (client, { jobId, mode, view, monitorId, locationId, tMs, jpeg }) {
  await client.query("DELETE FROM filmstrip_frames WHERE job_id = $1 AND mode = $2 AND view = $3 AND probe = 'page'", [jobId, mode, view])
  if (!jpeg) return
  await client.query(
    `INSERT INTO filmstrip_frames (job_id, mode, view, probe, seq, t_ms, jpeg, monitor_id, location_id)
     VALUES ($1, $2, $3, 'page', 0, $4, $5, $6, $7)`,
    [jobId, mode, view, tMs, jpeg, monitorId, locationId])
}
