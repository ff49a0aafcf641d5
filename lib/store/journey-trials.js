// "Try it" runs of a journey (docs/JOURNEYS.md): the editor asks one
// location's agent to run a journey once in the H2 arm; the agent finds the
// trial in its next claim, runs it, and sends back each step's outcome and a
// screenshot of the last frame. A trial is never a result: it lives in this
// table until it expires, and no comparison, trend or export reads it.
import { NotFoundError, ValidationError } from '../runtime/errors.js'
import { checkJourney } from '../measurement/journey/steps.js'
import { journeyOrigins, openJourney, sealJourney } from '../measurement/journey/secrets.js'
import { checkJourneyTargets, getMonitor, journeySecrets, validatePageUrl } from './monitors.js'
import { AGENT_ALIVE_S } from './agents.js'

/** How long a trial and its outcome are kept. */
export const TRIAL_TTL_S = 15 * 60
/** A trial an agent took but did not answer within this is done, as timed out. */
const RUNNING_LIMIT_S = 5 * 60
const COLUMNS = 'id, location_id, monitor_id, url, journey, state, agent_id, outcome, created_at, claimed_at, finished_at, expires_at'

/**
 * Queue a trial: the journey checked as a monitor's would be (against the
 * monitor URL, its navigate URLs through the private-target guard), its new
 * secrets sealed; a monitor's stored secrets may be referred to.
 * @param {import('pg').Pool} db
 * @param {{ location_id?: unknown, monitor_id?: unknown, url?: unknown, journey?: unknown }} input
 * @param {import('./monitors.js').MonitorPolicy & { secrets: import('../runtime/secret-box.js').SecretBox }} policy
 */
export async function createTrial (db, input, policy) {
  const monitor = input.monitor_id !== undefined && input.monitor_id !== null ? await getMonitor(db, Number(input.monitor_id)) : null
  if (input.url === undefined && !monitor) throw new ValidationError('url: required without monitor_id (navigate URLs are relative to it)', 'url')
  // A url given is checked as a monitor's would be; it wins over the monitor's.
  const url = input.url !== undefined ? validatePageUrl(input.url) : /** @type {{ url: string }} */ (monitor).url
  if (typeof input.location_id !== 'string' || !input.location_id) throw new ValidationError('location_id: required, the location whose agent runs the journey', 'location_id')
  const { rows: [loc] } = await db.query(
    "SELECT id, EXISTS (SELECT 1 FROM agents a WHERE a.location_id = l.id AND a.kind = 'puppeteer' AND a.revoked_at IS NULL AND a.last_seen_at > now() - make_interval(secs => $2)) AS staffed FROM locations l WHERE id = $1", [input.location_id, AGENT_ALIVE_S])
  if (!loc) throw new ValidationError(`location_id: there is no location ${input.location_id}`, 'location_id')
  // Nothing would take the trial: it would wait, queued, until it expires.
  // Only a running h3lens agent takes a trial; a WebPageTest agent never asks for one.
  if (!loc.staffed) throw new ValidationError(`location_id: location ${loc.id} has no agent running to take the trial (none seen in the last ${AGENT_ALIVE_S} s); start one, or choose a location with one (the Locations page shows them)`, 'location_id')
  const checked = checkJourney(input.journey, { url })
  if (!policy.allowPrivateTargets) await checkJourneyTargets(db, url, checked, [loc.id], policy)
  const stored = monitor ? await journeySecrets(db, monitor.id) : null
  const origins = monitor ? new Set(journeyOrigins(monitor.journey, monitor.url)) : undefined
  const { journey, secrets } = sealJourney(checked, { box: policy.secrets, stored, origins, storedIn: monitor?.journey ?? null, url })
  const { rows } = await db.query(
    `INSERT INTO journey_trials (location_id, monitor_id, url, journey, journey_secrets, expires_at)
     VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6)) RETURNING ${COLUMNS}`,
    [loc.id, monitor?.id ?? null, url, journey, secrets, TRIAL_TTL_S])
  return present(rows[0])
}

/**
 * @param {import('pg').Pool} db
 * @param {number} id
 */
export async function getTrial (db, id) {
  const { rows } = await db.query(`SELECT ${COLUMNS}, encode(screenshot, 'base64') AS screenshot FROM journey_trials WHERE id = $1 AND expires_at > now()`, [id])
  if (!rows.length) throw new NotFoundError(`there is no trial ${id} (a trial is kept ${TRIAL_TTL_S / 60} minutes)`)
  return present(rows[0])
}

/**
 * The trials an agent of a location takes now (at most `limit`), each with
 * its secrets opened for that agent; expired trials go first.
 * @param {import('pg').Pool} db
 * @param {{ agentId: number, locationId: string, limit: number, box: import('../runtime/secret-box.js').SecretBox }} o
 */
export async function claimTrials (db, { agentId, locationId, limit, box }) {
  await db.query('DELETE FROM journey_trials WHERE expires_at <= now()')
  await db.query(
    `UPDATE journey_trials SET state = 'done', finished_at = now(), outcome = $1
      WHERE state = 'running' AND claimed_at < now() - make_interval(secs => $2)`,
    [{ status: 'timeout', error: 'the agent that took this trial did not answer', steps: [] }, RUNNING_LIMIT_S])
  const { rows } = await db.query(
    `UPDATE journey_trials t SET state = 'running', agent_id = $2, claimed_at = now()
      WHERE t.id IN (SELECT id FROM journey_trials WHERE location_id = $1 AND state = 'queued'
                      ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED)
     RETURNING t.id, t.url, t.journey, t.journey_secrets`,
    [locationId, agentId, limit])
  const out = []
  for (const t of rows) {
    try {
      out.push({ id: Number(t.id), url: t.url, journey: openJourney(t.journey, t.journey_secrets, box) })
    } catch (/** @type {any} */ err) {
      await finishTrial(db, { id: Number(t.id), agentId, outcome: { status: 'error', error: `the journey's secrets cannot be opened: ${err.message}`, steps: [] }, screenshot: null })
    }
  }
  return out
}

/**
 * An agent's answer: each step's outcome and the last frame (base64 JPEG).
 * @param {import('pg').Pool} db
 * @param {{ id: number, agentId: number, outcome: Record<string, any>, screenshot: Buffer | null }} o
 */
export async function finishTrial (db, { id, agentId, outcome, screenshot }) {
  const { rowCount } = await db.query(
    `UPDATE journey_trials SET state = 'done', finished_at = now(), outcome = $3,
            screenshot = $4
      WHERE id = $1 AND agent_id = $2 AND state = 'running'`,
    [id, agentId, outcome, screenshot])
  if (!rowCount) throw new NotFoundError(`trial ${id} is not running on this agent`)
}

/** @param {Record<string, any>} row */
function present (row) {
  return { ...row, id: Number(row.id), monitor_id: row.monitor_id === null ? null : Number(row.monitor_id), agent_id: row.agent_id === null ? null : Number(row.agent_id), screenshot: row.screenshot ? String(row.screenshot).replace(/\s+/g, '') : null }
}
