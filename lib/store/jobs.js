// The job queue: one job is one round of one monitor at one location.
// States live in one frozen object; every transition is one SQL statement.
import { ConflictError, NotFoundError } from '../runtime/errors.js'
import { checkAsked } from '../measurement/checks.js'
import { insertResults, insertRoundResults } from './results.js'
import { enqueueForRollup } from './rollups.js'
import { recordCapabilities } from './monitor-origins.js'
import { AGENT_ALIVE_S, agentRunningSql } from './agents.js'
import { withTransaction } from './transaction.js'
import { recordRoundOutcomes } from './round-backoffs.js'

export const JOB_STATES = Object.freeze({
  queued: 'queued',
  leased: 'leased',
  done: 'done',
  failed: 'failed',
  cancelled: 'cancelled',
  // Not run: the previous round of its monitor at its location was still
  // pending when it came due (scheduleDueJobs).
  skipped: 'skipped'
})

// A round that no agent picked up within this many intervals (and at least
// this many seconds) is marked failed instead of piling up: the user sees
// "not claimed" rather than a silent gap, and a returning agent measures the
// present, not a backlog.
const STALE_INTERVALS = 3
const STALE_MIN_S = 300

// Half the shortest interval a monitor may have (10 s, migration 001): the
// look-ahead stays well short of any interval, so a new monitor's first
// round, due at once, is never passed over for its second.
const MAX_LOOK_AHEAD_MS = 5000

// The longest a round waits, past its due time, for its monitor's previous
// round to finish running (scheduleDueJobs); a quarter of the interval
// when that is shorter, so the wait always ends well before the next round.
const RUNNING_GRACE_S = 15

// Rounds a stopped scheduler missed are recorded one by one, the last this
// many per monitor and location (the reason of each says how many there
// were): a day's outage of a 10 s lab monitor would be 8,640 rows.
const MAX_MISSED_ROUNDS = 100

// A clock step back that delays a monitor's next round by more than this,
// or by more than a quarter of its interval when that is longer, moves its
// grid (scheduleDueJobs, "Clock steps back"); a smaller one only delays the
// next round by as much: the rounds the clock went past were the latest,
// so none is due again.
const CLOCK_STEP_S = 60

/**
 * Each pool's view of the database clock: its value at the pool's last
 * tick, and whether the clock went back since. @type {WeakMap<import('pg').Pool, { at: number, back: boolean }>}
 */
const clocks = new WeakMap()

/**
 * Insert the current round of every active monitor at each of its locations.
 * Rounds fall on anchor_at + k * interval_s. ON CONFLICT makes this safe to
 * run from several scheduler replicas at once: the unique key
 * (monitor_id, location_id, browser, due_at) lets exactly one insert win.
 * A round is one browser's (migration 024): a monitor gets a round per
 * browser it chose that the location's agents have (locations.browsers).
 *
 * Only monitors whose next_due_at has come are read (the monitors_next_due
 * index, migration 014), each locked so that one replica takes it and the
 * others skip it; their next_due_at moves to their next round. At
 * 10,000 monitors × 5 locations this reads the ~170 rounds that come due a
 * second instead of all 50,000 monitor-locations (bench/scheduler.js).
 *
 * Look-ahead: a round due within `lookAheadMs` (at most MAX_LOOK_AHEAD_MS)
 * is created now, with its exact due_at and run_after = due_at, so no agent
 * can claim it before it is due (claimJobs) and it is claimable the moment
 * it is, whatever the phase of the next tick. A round whose monitor still has a round pending at its
 * location is not created ahead: back-pressure decides at the due time.
 *
 * Back-pressure: at most one round per monitor and location is pending
 * (queued or leased). When a round comes due and the previous one is still
 * queued, the previous one could not start in time: it becomes skipped and
 * the new one takes its place, so the queue holds the present, not a
 * backlog. When the previous one is still running (leased), the new round
 * waits for it up to a grace of a quarter of the interval (at most
 * RUNNING_GRACE_S): a round that started late, behind a slow neighbour,
 * usually ends moments after its successor is due, and skipping the
 * successor then would lose the present round for a second's overlap. If
 * the previous one is still running when the grace ends, the new round is
 * skipped. Either way the skipped round is a jobs row saying why, which the
 * Locations page and /metrics count. A location with no live agent keeps its
 * queued round for failStaleJobs to fail as "no agent is running"; its new
 * rounds are skipped with that reason, not as "location busy".
 *
 * Back-off: a monitor backed off at a location (its rounds there kept
 * timing out, lib/store/round-backoffs.js) has its rounds due before the
 * back-off's end skipped with that reason, each created when it is due.
 *
 * Missed rounds: rounds that came due while no scheduler ran (stopped, or
 * the database frozen) are not run late (the queue holds the present), but
 * each is recorded as skipped with the reason, so a gap in the data is
 * explained rather than silent. A clock stepped forward looks the same, and
 * its reason says that too.
 *
 * Clock steps back: the rounds of the times the clock goes through again
 * exist already (due_at is the round's key), and the monitor's next_due_at
 * lies as far ahead as the step, so it would get no round until the clock
 * caught up. On a pool's first tick, and on the tick after one that saw the
 * database clock go back by more than CLOCK_STEP_S, the monitors are looked
 * at (followClockStep): one whose next round is that much later than its
 * interval allows has its grid moved back by as many whole intervals and
 * half an interval more, so its next round is due at once at a time off
 * the grid its rounds were on; one whose grid starts more than an interval
 * and CLOCK_STEP_S ahead (made or given a new interval while the clock was
 * ahead) starts again now.
 * @param {import('pg').Pool} db
 * @param {{ maxAttempts: number, lookAheadMs?: number }} opts
 * @returns {Promise<number>} rounds created (queued or skipped)
 */
export async function scheduleDueJobs (db, { maxAttempts, lookAheadMs = 0 }) {
  const clock = clocks.get(db)
  if (!clock || clock.back) await followClockStep(db)
  const { rows: [{ created, now }] } = await db.query(
    `WITH picked AS (
       -- k: the monitor's last round due by the horizon (now + look-ahead);
       -- none yet while anchor_at is later. owed_from: the first round not
       -- looked at yet (next_due_at), so rounds k' with owed_from <= k' < k
       -- came due while no scheduler ran. NO KEY UPDATE does not block the
       -- foreign-key checks of rows that reference the monitor.
       SELECT m.id, m.interval_s, m.locations, m.browsers, m.anchor_at, m.anchor_at <= h.horizon AS started,
              floor(extract(epoch FROM h.horizon - m.anchor_at) / m.interval_s)::bigint AS k,
              greatest(0, ceil(extract(epoch FROM m.next_due_at - m.anchor_at) / m.interval_s))::bigint AS owed_from
         FROM monitors m, (SELECT now() + make_interval(secs => $3::float8 / 1000) AS horizon) h
        WHERE m.next_due_at <= h.horizon AND m.deleted_at IS NULL AND NOT m.paused
          FOR NO KEY UPDATE OF m SKIP LOCKED),
     -- A round per browser of the monitor that the location's agents have:
     -- a location without a browser never gets its rounds.
     round_keys AS (
       SELECT p.id AS monitor_id, l.id AS location_id, br AS browser
         FROM picked p CROSS JOIN LATERAL unnest(p.locations) AS loc
         JOIN locations l ON l.id = loc
         CROSS JOIN LATERAL unnest(p.browsers) AS br
        WHERE p.started AND br = ANY (l.browsers)),
     due AS (
       SELECT p.id AS monitor_id, rk.location_id, rk.browser, p.anchor_at + make_interval(secs => p.k * p.interval_s) AS due_at, p.interval_s
         FROM picked p JOIN round_keys rk ON rk.monitor_id = p.id),
     fresh AS (
       -- Skip rounds that exist already so the id sequence is not burnt;
       -- ON CONFLICT still settles races with a replica on an older snapshot.
       SELECT d.*, p.id AS pending_id, p.state AS pending_state, p.due_at AS pending_due,
              b.timeouts AS backoff_timeouts, b.until AS backoff_until, coalesce(d.due_at < b.until, false) AS off,
              (d.due_at > now() AND (p.id IS NOT NULL OR coalesce(d.due_at < b.until, false)))
                OR (p.id IS NOT NULL AND p.state = 'leased' AND NOT coalesce(d.due_at < b.until, false)
                    AND now() < d.due_at + make_interval(secs => least(d.interval_s / 4.0, $5))) AS deferred,
              EXISTS (SELECT 1 FROM agents a WHERE a.location_id = d.location_id AND a.revoked_at IS NULL
                        AND d.browser = ANY (a.browsers)
                        AND ${agentRunningSql('$2')}) AS served
         FROM due d
         LEFT JOIN LATERAL (SELECT j.id, j.state, j.due_at FROM jobs j
                 WHERE j.monitor_id = d.monitor_id AND j.location_id = d.location_id AND j.browser = d.browser
                   AND j.state IN ('queued', 'leased') AND j.due_at <> d.due_at
                 ORDER BY j.due_at DESC LIMIT 1) p ON true
         LEFT JOIN round_backoffs b ON b.monitor_id = d.monitor_id AND b.location_id = d.location_id AND b.until IS NOT NULL
        WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.monitor_id = d.monitor_id
                            AND j.location_id = d.location_id AND j.browser = d.browser AND j.due_at = d.due_at)),
     ready AS (SELECT * FROM fresh WHERE NOT deferred),
     advanced AS (
       -- A deferred round brings its monitor back at its due time (at every
       -- tick once that has passed, while it waits for a running round).
       UPDATE monitors m SET next_due_at = CASE
                WHEN NOT p.started THEN p.anchor_at
                WHEN EXISTS (SELECT 1 FROM fresh f WHERE f.monitor_id = p.id AND f.deferred)
                  THEN p.anchor_at + make_interval(secs => p.k * p.interval_s)
                ELSE p.anchor_at + make_interval(secs => (p.k + 1) * p.interval_s) END
         FROM picked p
        WHERE m.id = p.id),
     superseded AS (
       -- state = 'queued' is checked again on the locked row: a round an
       -- agent claimed meanwhile is running, and the new round is skipped.
       -- A backed-off round takes no one's place. A round that ran before
       -- and waits to run again (its lease expired, its attempt failed)
       -- keeps what happened to it.
       UPDATE jobs j SET state = 'skipped', finished_at = now(), updated_at = now(),
              last_error = CASE WHEN j.attempts > 0 AND j.last_error IS NOT NULL
                  THEN 'skipped: not run again before the next round was due at '
                    || to_char(f.due_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || '; its attempt ' || j.attempts || ': ' || j.last_error
                  ELSE 'skipped: location busy (not started before the next round was due at '
                    || to_char(f.due_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ')' END
         FROM ready f
        WHERE j.id = f.pending_id AND j.state = 'queued' AND f.served AND NOT f.off
       RETURNING j.id),
     missed AS (
       -- Rounds owed from before the current one: their due time passed
       -- while no scheduler created rounds (none running, or the database
       -- not answering). Each is kept as a skipped round that says so, the
       -- last MAX_MISSED_ROUNDS of them when there are more.
       INSERT INTO jobs (monitor_id, location_id, browser, due_at, run_after, max_attempts, state, finished_at, last_error)
       SELECT p.id, rk.location_id, rk.browser, p.anchor_at + make_interval(secs => i * p.interval_s), now(), $1, 'skipped', now(),
              'skipped: not scheduled: ' || (p.k - p.owed_from) || ' round' || CASE WHEN p.k - p.owed_from = 1 THEN '' ELSE 's' END
                || ' of this monitor came due from '
                || to_char((p.anchor_at + make_interval(secs => p.owed_from * p.interval_s)) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                || ' to ' || to_char((p.anchor_at + make_interval(secs => (p.k - 1) * p.interval_s)) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                || ' while no scheduler could create rounds (none was running, the database did not answer, or the clock stepped forward)'
         FROM picked p JOIN round_keys rk ON rk.monitor_id = p.id
         CROSS JOIN LATERAL generate_series(greatest(p.owed_from, p.k - $4), p.k - 1) AS i
        WHERE p.started
       ON CONFLICT (monitor_id, location_id, browser, due_at) DO NOTHING
       RETURNING 1),
     inserted AS (
       INSERT INTO jobs (monitor_id, location_id, browser, due_at, run_after, max_attempts, state, finished_at, last_error)
       SELECT f.monitor_id, f.location_id, f.browser, f.due_at, greatest(f.due_at, now()), $1, v.state,
              CASE WHEN v.state = 'skipped' THEN now() END,
              CASE WHEN v.state = 'queued' THEN NULL
                   WHEN f.off THEN 'skipped: backed off: the last ' || f.backoff_timeouts || ' rounds timed out (its next round runs at '
                     || to_char(f.backoff_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ')'
                   WHEN NOT f.served THEN 'skipped: no agent is running for location ' || f.location_id
                     || ' (the round due at ' || to_char(f.pending_due AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ' is still waiting)'
                   ELSE 'skipped: location busy (the round due at '
                     || to_char(f.pending_due AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ' was still running)' END
         FROM ready f
         CROSS JOIN LATERAL (SELECT CASE WHEN f.off THEN 'skipped'
                                         WHEN f.pending_id IS NULL OR f.pending_id IN (SELECT id FROM superseded) THEN 'queued'
                                         ELSE 'skipped' END AS state) v
       ON CONFLICT (monitor_id, location_id, browser, due_at) DO NOTHING
       RETURNING 1)
     SELECT (SELECT count(*) FROM inserted)::int + (SELECT count(*) FROM missed)::int AS created, now() AS now`,
    [maxAttempts, AGENT_ALIVE_S, Math.min(Math.max(0, lookAheadMs ?? 0), MAX_LOOK_AHEAD_MS), MAX_MISSED_ROUNDS, RUNNING_GRACE_S])
  clocks.set(db, { at: +now, back: clock !== undefined && +now < clock.at - CLOCK_STEP_S * 1000 })
  return created
}

/**
 * Move the grid of each monitor a clock step back left scheduled far ahead
 * (scheduleDueJobs, "Clock steps back"), paused ones included: resumed,
 * they would find their rounds taken. A scan of the monitors (3–5 ms of
 * PostgreSQL at 10,000), made when a step may have happened only.
 * @param {import('pg').Pool} db
 */
async function followClockStep (db) {
  await db.query(
    `UPDATE monitors
        SET anchor_at = CASE WHEN anchor_at > now() THEN now()
                        ELSE anchor_at - make_interval(secs => (ceil(extract(epoch FROM next_due_at - now()) / interval_s) + 0.5) * interval_s) END
      WHERE deleted_at IS NULL
        AND (next_due_at > now() + make_interval(secs => interval_s + $1::float8 / 1000 + greatest($2, interval_s / 4.0))
             OR anchor_at > now() + make_interval(secs => interval_s + $2))`,
    [MAX_LOOK_AHEAD_MS, CLOCK_STEP_S])
}

/**
 * Lease up to `limit` queued jobs of one location. SKIP LOCKED lets many
 * agents claim at once without waiting on each other or taking the same row.
 * The order is run_after alone, which the jobs_claimable index returns as
 * is: a tiebreak on id makes PostgreSQL sort every queued job of the
 * location that shares its run_after (all rounds one scheduler tick makes),
 * 2.8 ms per claim with 3,000 queued against 0.2 ms without (bench/load.js
 * and EXPLAIN ANALYZE of this statement; docs/BENCHMARKS.md, "Load").
 * An agent claims only rounds of the browsers it has (agents.browsers, as
 * it said when it claimed: lib/store/agents.js touchAgent).
 *
 * `instance` names the agent's process, `holding` the rounds it holds. A
 * round leased to that instance that it does not hold was leased by a claim
 * whose answer it never got (lost on the way, or given up on by its
 * timeout): it is handed back first, in the same attempt and with a fresh
 * lease, rather than left leased to no one until the lease runs out and
 * then run as a second attempt. An agent that does not name its instance
 * (an older one) gets nothing handed back.
 * @param {import('pg').Pool} db
 * @param {{ agentId: number, locationId: string, limit: number, leaseSeconds: number, instance?: string | null, holding?: number[] }} opts
 */
export async function claimJobs (db, { agentId, locationId, limit, leaseSeconds, instance = null, holding = [] }) {
  // Named: each connection plans it once. Planning this statement costs as
  // much as running it (0.35 ms each, EXPLAIN ANALYZE), and every agent
  // sends it every second or two.
  // backed_off_timeouts: the monitor is backed off at this location (the
  // last n rounds timed out, lib/store/round-backoffs.js); the agent gives
  // the round one page timeout instead of two.
  const { rows } = await db.query({
    name: 'claim-jobs',
    text: `WITH held AS (
       -- The rounds the agent holds, measuring them or with their results
       -- in its spool: their leases go on while it claims, so a round whose
       -- results wait for the API is not handed out and measured again. One
       -- whose lease ran out all the same (queued again) is picked below
       -- like any, and leased to it again: the agent does not measure it
       -- twice (agents/agent.js).
       UPDATE jobs SET lease_expires_at = now() + make_interval(secs => $4), updated_at = now()
        WHERE id = ANY ($6::bigint[]) AND state = 'leased' AND lease_owner = $3 AND location_id = $1),
     unheard AS (
       SELECT j.id FROM jobs j
        WHERE $5::text IS NOT NULL AND j.state = 'leased' AND j.lease_owner = $3 AND j.lease_instance = $5
          AND j.location_id = $1 AND NOT (j.id = ANY ($6::bigint[]))
        ORDER BY j.run_after
        LIMIT $2
        FOR UPDATE SKIP LOCKED),
     picked AS (
       SELECT j.id FROM jobs j JOIN monitors m ON m.id = j.monitor_id
        WHERE j.state = 'queued' AND j.location_id = $1 AND j.run_after <= now()
          AND j.browser = ANY ((SELECT a.browsers FROM agents a WHERE a.id = $3)::text[])
          AND m.deleted_at IS NULL AND NOT m.paused
        ORDER BY j.run_after
        LIMIT greatest($2 - (SELECT count(*) FROM unheard), 0)
        FOR UPDATE OF j SKIP LOCKED),
     granted AS (SELECT id, false AS again FROM picked UNION ALL SELECT id, true FROM unheard)
     UPDATE jobs j SET state = 'leased', attempts = CASE WHEN g.again THEN j.attempts ELSE j.attempts + 1 END, lease_owner = $3,
            lease_instance = $5, started_at = CASE WHEN g.again THEN j.started_at ELSE now() END,
            lease_expires_at = now() + make_interval(secs => $4), updated_at = now(),
            -- What this answer asks the agent to measure (a round's results are checked against it).
            asked = jsonb_build_object('modes', m.modes, 'probes', m.probes, 'repeat_view', m.repeat_view,
              'steps', CASE WHEN 'journey' = ANY (m.probes) THEN jsonb_path_query_array(m.journey, '$.steps[*].name') END)
       FROM granted g, monitors m
      WHERE j.id = g.id AND m.id = j.monitor_id
     RETURNING j.id, j.monitor_id, j.location_id, j.browser, j.due_at, j.attempts, j.lease_expires_at,
               m.url, m.modes, m.probes, m.repeat_view, m.options, m.aa_protocol,
               -- The journey and its sealed secrets, opened for the agent by the claim route.
               CASE WHEN 'journey' = ANY (m.probes) THEN m.journey END AS journey,
               CASE WHEN 'journey' = ANY (m.probes) THEN m.journey_secrets END AS journey_secrets,
               (SELECT b.timeouts FROM round_backoffs b WHERE b.monitor_id = j.monitor_id AND b.location_id = j.location_id
                   AND b.until IS NOT NULL) AS backed_off_timeouts`,
    values: [locationId, limit, agentId, leaseSeconds, instance, holding]
  })
  return rows
}

/**
 * Extend the lease of a job the agent still holds.
 * @param {import('pg').Pool} db
 * @param {{ jobId: number, agentId: number, locationId?: string, leaseSeconds: number }} opts
 */
export async function heartbeatJob (db, { jobId, agentId, locationId, leaseSeconds }) {
  const { rows } = await db.query(
    `UPDATE jobs SET lease_expires_at = now() + make_interval(secs => $3), updated_at = now()
      WHERE id = $1 AND lease_owner = $2 AND state = 'leased' RETURNING lease_expires_at`,
    [jobId, agentId, leaseSeconds])
  if (!rows[0]) await explainNotLeased(db, jobId, agentId, locationId)
  return rows[0]
}

/**
 * Store a job's results and mark it done, atomically. Submitting the same
 * results again is harmless: the unique key on results absorbs them and the
 * answer says how many were new. A result its round's claim did not ask for
 * (a mode, probe, step or view: jobs.asked) refuses the round, 422
 * not_asked.
 * @param {import('pg').Pool} db
 * @param {{ jobId: number, agent: { id: number, location_id: string }, results: object[], agentVersion?: string }} opts
 * @returns {Promise<{ stored: number, duplicates: number }>}
 */
export async function submitJobResults (db, { jobId, agent, results, agentVersion }) {
  return withTransaction(db, async (client) => {
    const { rows } = await client.query({
      name: 'lock-job',
      text: 'SELECT id, monitor_id, location_id, browser, due_at, state, lease_owner, asked FROM jobs WHERE id = $1 FOR UPDATE',
      values: [jobId]
    })
    const job = rows[0]
    if (!job) throw new NotFoundError(`job ${jobId} does not exist`)
    if (job.location_id !== agent.location_id) throw new ConflictError(`job ${jobId} belongs to location ${job.location_id}, not ${agent.location_id}`, 'wrong_location')
    if (job.lease_owner !== agent.id) {
      throw new ConflictError(`job ${jobId} is leased to another agent (its lease expired and it was re-run); these results were not stored`, 'lease_lost')
    }
    // The lease holder's results are accepted even when its lease ran out and
    // nobody else took the job yet: they are real measurements, and storing
    // them is better than measuring the same round again.
    if (job.state === JOB_STATES.cancelled) {
      throw new ConflictError(`job ${jobId} was cancelled (its monitor was deleted); results were not stored`, 'cancelled')
    }
    const late = await resultsAfterDone(client, job, results)
    if (late) throw late
    const unasked = checkAsked(results, job.asked)
    if (unasked) throw unasked
    const inserted = await insertResults(client, { job, agentId: agent.id, agentVersion, results })
    await recordCapabilities(client, { monitorId: job.monitor_id, locationId: job.location_id, rows: inserted })
    // A round done already was submitted before: its outcome is counted.
    if (job.state !== JOB_STATES.done) await recordRoundOutcomes(client, [{ job, results }])
    // Only rows actually inserted are queued: a resubmission never counts twice.
    await enqueueForRollup(client, inserted.map((r) => r.id))
    await client.query({ name: 'agent-last-result', text: 'UPDATE agents SET last_result_at = now() WHERE id = $1', values: [agent.id] })
    await client.query({
      name: 'finish-job',
      text: `UPDATE jobs SET state = 'done', finished_at = coalesce(finished_at, now()), lease_expires_at = NULL,
              updated_at = now() WHERE id = $1`,
      values: [jobId]
    })
    return { stored: inserted.length, duplicates: results.length - inserted.length }
  })
}

/**
 * A round is stored whole: an agent sends all its arms and views together,
 * and the analysis relies on it (a round lacking an arm is an imported one).
 * A job that is done takes its own results again (a resend after a lost
 * answer, each a duplicate) but no new one: a ConflictError (409
 * round_done) when any result is not among those stored, else null.
 * @param {import('pg').PoolClient} client
 * @param {{ id: number, due_at: Date, state: string }} job
 * @param {Record<string, any>[]} results
 */
async function resultsAfterDone (client, job, results) {
  if (job.state !== JOB_STATES.done) return null
  const { rows } = await client.query('SELECT mode, view, probe FROM results WHERE job_id = $1 AND time = $2', [job.id, job.due_at])
  const stored = new Set(rows.map((r) => `${r.mode}|${r.view}|${r.probe}`))
  const fresh = results.filter((r) => !stored.has(`${r.mode}|${r.view ?? 'first'}|${r.probe ?? 'page'}`))
  if (!fresh.length) return null
  const what = fresh.map((r) => `${r.mode}/${r.view ?? 'first'}/${r.probe ?? 'page'}`).join(', ')
  return new ConflictError(`job ${job.id} is done: its round's results were stored already, and a round's results are sent together; ${what} ${fresh.length === 1 ? 'was' : 'were'} not stored`, 'round_done')
}

/**
 * Store many jobs' results in one transaction (the agents' batched route and
 * spool). Each round gets the same checks as submitJobResults, and its own
 * answer: { stored, duplicates } when accepted, { error } with the status
 * and code the single-round route would give (404, 409 wrong_location,
 * lease_lost, cancelled, round_done; 422 not_asked) when refused; a refused round stores nothing and
 * does not stop the others. Jobs are locked in id order, so two batches
 * sharing jobs never deadlock.
 * @param {import('pg').Pool} db
 * @param {{ agent: { id: number, location_id: string }, rounds: { job_id: number, results: object[] }[], agentVersion?: string }} opts
 * @returns {Promise<({ job_id: number, stored: number, duplicates: number } | { job_id: number, error: { statusCode: number, code?: string, message: string } })[]>}
 */
export async function submitRoundsResults (db, { agent, rounds, agentVersion }) {
  const ids = [...new Set(rounds.map((r) => r.job_id))].sort((a, b) => a - b)
  return withTransaction(db, async (client) => {
    const { rows } = await client.query(
      `SELECT id, monitor_id, location_id, browser, due_at, state, lease_owner, asked FROM jobs
        WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`, [ids])
    const jobs = new Map(rows.map((j) => [Number(j.id), j]))
    /** @type {Map<number, any>} */
    const answers = new Map()
    /** @type {{ job: { id: number, monitor_id: number, location_id: string, due_at: Date, state: string }, results: Record<string, any>[] }[]} */
    const accepted = []
    for (const round of rounds) {
      const job = jobs.get(Number(round.job_id))
      const refusal = (!job
        ? new NotFoundError(`job ${round.job_id} does not exist`)
        : job.location_id !== agent.location_id
          ? new ConflictError(`job ${job.id} belongs to location ${job.location_id}, not ${agent.location_id}`, 'wrong_location')
          : job.lease_owner !== agent.id
            ? new ConflictError(`job ${job.id} is leased to another agent (its lease expired and it was re-run); these results were not stored`, 'lease_lost')
            : job.state === JOB_STATES.cancelled
              ? new ConflictError(`job ${job.id} was cancelled (its monitor was deleted); results were not stored`, 'cancelled')
              : null) ?? await resultsAfterDone(client, /** @type {any} */ (job), round.results) ?? checkAsked(round.results, /** @type {any} */ (job).asked)
      const id = Number(round.job_id)
      if (refusal) answers.set(id, { job_id: id, error: { statusCode: refusal.statusCode, code: 'code' in refusal ? refusal.code : undefined, message: refusal.message } })
      else if (!accepted.some((a) => a.job === job)) accepted.push({ job, results: round.results })
    }
    const inserted = await insertRoundResults(client, { rounds: accepted, agentId: agent.id, agentVersion })
    const byJob = new Map()
    for (const r of inserted) byJob.set(Number(r.job_id), [...(byJob.get(Number(r.job_id)) ?? []), r])
    for (const { job, results } of accepted) {
      const rowsOfJob = byJob.get(Number(job.id)) ?? []
      await recordCapabilities(client, { monitorId: job.monitor_id, locationId: job.location_id, rows: rowsOfJob })
      answers.set(Number(job.id), { job_id: Number(job.id), stored: rowsOfJob.length, duplicates: results.length - rowsOfJob.length })
    }
    await enqueueForRollup(client, inserted.map((r) => r.id))
    await recordRoundOutcomes(client, accepted.filter((a) => a.job.state !== JOB_STATES.done))
    if (accepted.length) {
      await client.query({ name: 'agent-last-result', text: 'UPDATE agents SET last_result_at = now() WHERE id = $1', values: [agent.id] })
      await client.query(
        `UPDATE jobs SET state = 'done', finished_at = coalesce(finished_at, now()), lease_expires_at = NULL, updated_at = now()
          WHERE id = ANY($1::bigint[])`, [accepted.map((a) => a.job.id)])
    }
    return rounds.map((r) => answers.get(Number(r.job_id)))
  })
}

/**
 * The agent could not run the job (an infrastructure fault: its browser did
 * not start or went away, agents/faults.js): nothing of the attempt is
 * stored. Retry with exponential back-off until attempts run out; the job
 * keeps the cause in last_error, saying which attempt it ended, or that the
 * round was given up. The agent's fault count and last fault (its health,
 * GET /agents) go up with it, unless the server itself would not send the
 * job (agentFault false: a WPT location that cannot reach the target).
 * @param {import('pg').Pool} db
 * @param {{ jobId: number, agentId: number, locationId?: string, error: string, agentFault?: boolean }} opts
 */
export async function failJob (db, { jobId, agentId, locationId, error, agentFault = true }) {
  const { rows } = await db.query(
    `WITH failed AS (
       UPDATE jobs SET
          state = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'queued' END,
          finished_at = CASE WHEN attempts >= max_attempts THEN now() END,
          run_after = now() + make_interval(secs => least(300, 5 * power(2, attempts - 1))),
          lease_owner = CASE WHEN attempts >= max_attempts THEN lease_owner END,
          lease_expires_at = NULL, updated_at = now(),
          last_error = CASE WHEN attempts >= max_attempts
                            THEN 'given up after ' || attempts || ' attempt' || CASE WHEN attempts = 1 THEN '' ELSE 's' END || '; the last failed: ' || $3
                            ELSE 'attempt ' || attempts || ' of ' || max_attempts || ' failed and runs again: ' || $3 END
        WHERE id = $1 AND lease_owner = $2 AND state = 'leased' RETURNING state),
     agent AS (
       UPDATE agents SET faults = faults + 1, last_fault_at = now(), last_fault = $3
        WHERE id = $2 AND $4 AND EXISTS (SELECT 1 FROM failed))
     SELECT state FROM failed`,
    [jobId, agentId, String(error).slice(0, 2000), agentFault])
  if (!rows[0]) await explainNotLeased(db, jobId, agentId, locationId)
  return rows[0].state
}

/**
 * A round its location cannot run, recorded as skipped with why (as a round
 * skipped for a busy location is), rather than run as something else: a
 * journey at a WebPageTest location (lib/store/wpt-tests.js).
 * @param {import('pg').Pool | import('pg').PoolClient} db
 * @param {{ jobId: number, agentId: number, reason: string }} opts
 */
export async function skipJob (db, { jobId, agentId, reason }) {
  await db.query(
    `UPDATE jobs SET state = 'skipped', finished_at = now(), updated_at = now(), lease_expires_at = NULL,
            last_error = 'skipped: ' || $3
      WHERE id = $1 AND lease_owner = $2 AND state = 'leased'`,
    [jobId, agentId, String(reason).slice(0, 2000)])
}

/**
 * Give a job back without using up an attempt (graceful agent shutdown).
 * Only the lease holder may: anyone else gets the same 409 (wrong_location,
 * lease_lost) or 404 as for a heartbeat.
 * @param {import('pg').Pool} db
 * @param {{ jobId: number, agentId: number, locationId?: string }} opts
 * @returns {Promise<true>}
 */
export async function releaseJob (db, { jobId, agentId, locationId }) {
  const { rowCount } = await db.query(
    `UPDATE jobs SET state = 'queued', attempts = greatest(attempts - 1, 0), lease_owner = NULL,
            lease_expires_at = NULL, updated_at = now()
      WHERE id = $1 AND lease_owner = $2 AND state = 'leased'`, [jobId, agentId])
  if (!rowCount) await explainNotLeased(db, jobId, agentId, locationId)
  return true
}

/**
 * Leases that ran out (agent killed, machine gone) go back to the queue, or
 * to failed when no attempts remain; either way an infrastructure fault of
 * the agent that held them.
 * @param {import('pg').Pool} db
 * @returns {Promise<{ requeued: number, failed: number }>}
 */
export async function expireLeases (db) {
  const { rows } = await db.query(
    `WITH expired AS (
       UPDATE jobs SET
          state = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'queued' END,
          finished_at = CASE WHEN attempts >= max_attempts THEN now() END,
          last_error = CASE WHEN attempts >= max_attempts THEN 'given up after ' || attempts || ' attempt' || CASE WHEN attempts = 1 THEN '' ELSE 's' END || '; the last failed: ' ELSE '' END
            || 'lease expired after attempt ' || attempts || ' (agent stopped or lost)',
          lease_expires_at = NULL, updated_at = now()
        WHERE state = 'leased' AND lease_expires_at < now()
       RETURNING state, lease_owner, attempts),
     agent AS (
       UPDATE agents a SET faults = a.faults + e.n, last_fault_at = now(),
              last_fault = 'lease expired after attempt ' || e.attempts || ' (agent stopped or lost)'
         FROM (SELECT lease_owner, count(*)::int AS n, max(attempts) AS attempts FROM expired WHERE lease_owner IS NOT NULL GROUP BY lease_owner) e
        WHERE a.id = e.lease_owner)
     SELECT state FROM expired`)
  return {
    requeued: rows.filter((r) => r.state === 'queued').length,
    failed: rows.filter((r) => r.state === 'failed').length
  }
}

/**
 * Queued rounds nobody claimed in time become failed with the reason: the
 * monitor paused before an agent took the round (agents claim no paused
 * monitor's rounds), the location's agents busy, none of its running
 * agents runs the round's browser, or none runs at all.
 * @param {import('pg').Pool} db
 */
export async function failStaleJobs (db) {
  const { rowCount } = await db.query(
    `UPDATE jobs j SET state = 'failed', finished_at = now(), updated_at = now(),
            -- A round handed back (its attempt failed, or its lease ran
            -- out) that waits as long is given up too, keeping why.
            last_error = CASE WHEN j.attempts > 0 THEN 'attempt ' || j.attempts || ' failed (' ||
                coalesce(regexp_replace(j.last_error, '^attempt \\d+ of \\d+ failed and runs again: ', ''), 'no cause kept') || '), and the next was ' ELSE '' END ||
              CASE WHEN m.paused THEN 'not claimed in time: its monitor was paused before an agent took the round'
              -- Whether a running agent of the location runs the round's browser: null when none runs.
              ELSE CASE (SELECT bool_or(j.browser = ANY (a.browsers)) FROM agents a
                          WHERE a.location_id = j.location_id AND a.revoked_at IS NULL AND ${agentRunningSql('$3')})
                WHEN true THEN 'not claimed in time: the agents of location ' || j.location_id || ' were busy with other rounds'
                WHEN false THEN 'not claimed in time: no running agent of location ' || j.location_id || ' runs ' || j.browser
                ELSE 'not claimed in time: no agent is running for location ' || j.location_id END END
       FROM monitors m
      -- Stale from when it was due; a retry, from when its back-off let it be claimed.
      WHERE m.id = j.monitor_id AND j.state = 'queued'
        AND CASE WHEN j.attempts = 0 THEN j.due_at ELSE greatest(j.due_at, j.run_after) END < now() - make_interval(secs => greatest($1, $2 * m.interval_s))`,
    [STALE_MIN_S, STALE_INTERVALS, AGENT_ALIVE_S])
  return rowCount
}

// The states a job ends in. Finished jobs are pruned after the retention
// period; the live ones (queued, leased) stay until they finish.
export const FINISHED_STATES = Object.freeze([JOB_STATES.done, JOB_STATES.failed, JOB_STATES.cancelled, JOB_STATES.skipped])

// /metrics counts finished jobs over this window, read through the
// jobs_finished index (migration 010), never the whole table.
export const FINISHED_WINDOW_S = 3600

export const COUNT_JOBS_SQL =
  `SELECT 'live' AS kind, 'queued' AS state, (SELECT count(*) FROM jobs WHERE state = 'queued')::int AS n
   UNION ALL SELECT 'live', 'leased', (SELECT count(*) FROM jobs WHERE state = 'leased')::int
   UNION ALL SELECT 'finished', state, count(*)::int FROM jobs
    WHERE state IN ('done', 'failed', 'cancelled', 'skipped') AND finished_at > now() - make_interval(secs => $1)
    GROUP BY state`

/**
 * Live jobs by state, counted exactly through the partial indexes of the
 * queue (jobs_claimable, jobs_leased or jobs_pending, as the planner
 * chooses), and finished jobs by state over the last
 * FINISHED_WINDOW_S through jobs_finished: a scrape reads the queue and the
 * last hour, not the retained history.
 * @param {import('pg').Pool} db
 * @returns {Promise<{ live: Record<string, number>, finished: Record<string, number> }>}
 */
export async function countJobsByState (db) {
  const { rows } = await db.query(COUNT_JOBS_SQL, [FINISHED_WINDOW_S])
  const pick = (/** @type {string} */ kind, /** @type {readonly string[]} */ states) => Object.fromEntries(states.map((s) => [s, rows.find((r) => r.kind === kind && r.state === s)?.n ?? 0]))
  return { live: pick('live', [JOB_STATES.queued, JOB_STATES.leased]), finished: pick('finished', FINISHED_STATES) }
}

/**
 * Delete finished jobs older than the retention period, at most `batch` per
 * call, oldest first (the jobs_finished index). Results are kept: they carry
 * job_id, monitor, location and the round's time, which is all any view or
 * the comparison uses; the round still current for its monitor is kept
 * whatever its age, so the scheduler never creates it again. A WebPageTest
 * round's tests and uploads go with it (their results are stored). SKIP
 * LOCKED lets replicas prune side by side without waiting on each other.
 * @param {import('pg').Pool} db
 * @param {{ retentionDays: number, batch?: number }} opts
 * @returns {Promise<number>} jobs deleted
 */
export async function pruneFinishedJobs (db, { retentionDays, batch = 1000 }) {
  return withTransaction(db, async (client) => {
    const { rows } = await client.query(
      `SELECT j.id FROM jobs j JOIN monitors m ON m.id = j.monitor_id
        WHERE j.state IN ('done', 'failed', 'cancelled', 'skipped') AND j.finished_at < now() - make_interval(days => $1)
          AND j.due_at + make_interval(secs => m.interval_s) <= now()
        ORDER BY j.finished_at LIMIT $2
        FOR UPDATE OF j SKIP LOCKED`, [retentionDays, batch])
    const ids = rows.map((r) => r.id)
    if (ids.length) {
      await client.query('DELETE FROM wpt_runs WHERE test_id IN (SELECT test_id FROM wpt_tests WHERE job_id = ANY($1::bigint[]))', [ids])
      await client.query('DELETE FROM wpt_tests WHERE job_id = ANY($1::bigint[])', [ids])
      await client.query('DELETE FROM jobs WHERE id = ANY($1::bigint[])', [ids])
    }
    return ids.length
  })
}

/**
 * @param {import('pg').Pool | import('pg').PoolClient} db
 * @param {number} jobId
 * @param {number} agentId
 * @param {string} [locationId] the agent's location, when the caller knows it
 */
async function explainNotLeased (db, jobId, agentId, locationId) {
  const { rows } = await db.query('SELECT state, lease_owner, location_id FROM jobs WHERE id = $1', [jobId])
  if (!rows[0]) throw new NotFoundError(`job ${jobId} does not exist`)
  if (locationId !== undefined && rows[0].location_id !== locationId) {
    throw new ConflictError(`job ${jobId} belongs to location ${rows[0].location_id}, not ${locationId}`, 'wrong_location')
  }
  if (rows[0].lease_owner !== agentId) throw new ConflictError(`job ${jobId} is not leased to this agent`, 'lease_lost')
  throw new ConflictError(`job ${jobId} is ${rows[0].state}, not leased`, 'not_leased')
}

/**
 * The A/A protocol of each job (the job's own, else its monitor's), for
 * the server's protocol check of submitted results. Only the jobs of the
 * agent's location: another location's job is refused by the submission
 * (409 wrong_location), and its check must not tell its monitor's arms.
 * @param {import('pg').Pool} db
 * @param {number[]} jobIds
 * @param {string} locationId the submitting agent's location
 * @returns {Promise<Map<number, { aa_protocol?: string | null }>>}
 */
export async function protocolsOfJobs (db, jobIds, locationId) {
  const { rows } = await db.query({
    name: 'job-protocols',
    text: `SELECT j.id, to_jsonb(j)->>'aa_protocol' AS job_aa, to_jsonb(m)->>'aa_protocol' AS monitor_aa
             FROM jobs j JOIN monitors m ON m.id = j.monitor_id WHERE j.id = ANY($1::bigint[]) AND j.location_id = $2`,
    values: [jobIds, locationId]
  })
  return new Map(rows.map((r) => [r.id, { aa_protocol: r.job_aa ?? r.monitor_aa ?? undefined }]))
}

/**
 * Done jobs for rounds measured elsewhere (the results import): created
 * done, or the existing job of the round, with its state (a round the
 * scheduler made may still be queued or leased). The existing jobs are
 * locked until the transaction ends, so none is claimed meanwhile.
 * @param {import('pg').PoolClient} client
 * @param {{ monitorId: number, locations: string[], browsers: string[], times: Date[] }} q
 * @returns {Promise<{ id: number, location_id: string, browser: string, due_at: Date, state: string }[]>}
 */
export async function doneJobsFor (client, { monitorId, locations, browsers, times }) {
  await client.query(
    `INSERT INTO jobs (monitor_id, location_id, browser, due_at, state, finished_at)
     SELECT $1, u.location_id, u.browser, u.due_at, 'done', now() FROM unnest($2::text[], $3::text[], $4::timestamptz[]) AS u(location_id, browser, due_at)
     ON CONFLICT (monitor_id, location_id, browser, due_at) DO NOTHING`, [monitorId, locations, browsers, times])
  const { rows } = await client.query(
    `SELECT j.id, j.location_id, j.browser, j.due_at, j.state FROM jobs j JOIN unnest($2::text[], $3::text[], $4::timestamptz[]) AS u(location_id, browser, due_at)
        ON j.location_id = u.location_id AND j.browser = u.browser AND j.due_at = u.due_at
      WHERE j.monitor_id = $1
        FOR SHARE OF j`, [monitorId, locations, browsers, times])
  return rows
}
