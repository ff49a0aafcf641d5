// Back-off of a monitor whose rounds keep timing out at a location
// (migration 019). A page that hangs costs its round the whole time budget
// (a page timeout per load, agents/round-budget.js), and with one agent at a location every other
// monitor's round waits behind it and loses rounds to back-pressure. So
// after BACKOFF_AFTER_TIMEOUTS rounds in a row that timed out, its interval
// at that location is stretched, doubling with each further timeout, up to
// BACKOFF_MAX_S (or the monitor's own interval when that is longer); the
// rounds in between are recorded as skipped, with the reason
// (lib/store/jobs.js scheduleDueJobs), and a round it does run gets one page
// timeout for all its loads (agents/round-budget.js). The first round that does
// not time out ends it (the count goes back to 0): the next round is on the
// monitor's own interval.
// docs/OPERATIONS.md explains the numbers.

// Two timed-out rounds in a row: one can be a passing outage of the site
// or the path, two in a row at the same location rarely are.
export const BACKOFF_AFTER_TIMEOUTS = 2
// The longest a stretched interval gets: a page that hangs for a day is
// still tried every hour, and its first answer is seen within the hour.
export const BACKOFF_MAX_S = 3600

/**
 * A round timed out when at least one of its loads ran into its timeout
 * and none loaded (ok, or over the wrong protocol). A round whose loads all
 * failed at once (refused, an HTTP error) did not: it cost its agent
 * little, and it is the site's answer, not a hang.
 * @param {{ status: string }[]} results
 */
export function timedOut (results) {
  return results.some((r) => r.status === 'timeout') && !results.some((r) => r.status === 'ok' || r.status === 'protocol_mismatch')
}

/**
 * After new rounds were stored: rounds that timed out add to their
 * monitor's count at their location (and back it off once the count
 * reaches BACKOFF_AFTER_TIMEOUTS), and a round that did not time out
 * clears it. Only the rounds a submission finished (not resubmissions).
 * Rounds are taken in due order per monitor and location, and a round
 * older than the last one counted changes nothing.
 * @param {import('pg').PoolClient} client in the submission's transaction
 * @param {{ job: { monitor_id: number, location_id: string, due_at: Date }, results: any[] }[]} rounds results as submitted
 */
export async function recordRoundOutcomes (client, rounds) {
  /** @type {Map<string, { monitorId: number, locationId: string, clearedAt: Date | null, timeouts: Date[] }>} */
  const byPair = new Map()
  for (const { job, results } of [...rounds].sort((a, b) => +a.job.due_at - +b.job.due_at)) {
    const key = `${job.monitor_id}/${job.location_id}`
    const pair = byPair.get(key) ?? { monitorId: Number(job.monitor_id), locationId: job.location_id, clearedAt: null, timeouts: [] }
    byPair.set(key, pair)
    if (timedOut(results)) {
      pair.timeouts.push(job.due_at)
    } else {
      pair.clearedAt = job.due_at
      pair.timeouts = []
    }
  }
  const cleared = [...byPair.values()].filter((p) => p.clearedAt)
  if (cleared.length) {
    // Only a pair that has a row: most never timed out, and their rounds
    // cost no write here.
    await client.query(
      `UPDATE round_backoffs b SET timeouts = 0, until = NULL, last_due_at = u.due_at
         FROM unnest($1::bigint[], $2::text[], $3::timestamptz[]) AS u(monitor_id, location_id, due_at)
        WHERE b.monitor_id = u.monitor_id AND b.location_id = u.location_id AND b.last_due_at < u.due_at`,
      [cleared.map((p) => p.monitorId), cleared.map((p) => p.locationId), cleared.map((p) => p.clearedAt)])
  }
  const counted = [...byPair.values()].filter((p) => p.timeouts.length)
  if (!counted.length) return
  // n timeouts in a row stretch the interval to interval × 2^(n−1), from
  // the due time of the last of them.
  await client.query(
    `WITH u AS (
       SELECT u.*, m.interval_s FROM unnest($1::bigint[], $2::text[], $3::int[], $4::timestamptz[]) AS u(monitor_id, location_id, n, due_at)
         JOIN monitors m ON m.id = u.monitor_id)
     INSERT INTO round_backoffs AS b (monitor_id, location_id, timeouts, last_due_at, until)
     SELECT u.monitor_id, u.location_id, u.n, u.due_at,
            CASE WHEN u.n >= $5 THEN u.due_at + make_interval(secs => least(u.interval_s * power(2, u.n - 1), greatest(u.interval_s, $6))) END
       FROM u
     ON CONFLICT (monitor_id, location_id) DO UPDATE SET
       timeouts = b.timeouts + EXCLUDED.timeouts,
       last_due_at = EXCLUDED.last_due_at,
       until = CASE WHEN b.timeouts + EXCLUDED.timeouts >= $5
                    THEN EXCLUDED.last_due_at + make_interval(secs => least(
                      (SELECT interval_s FROM monitors WHERE id = b.monitor_id) * power(2, b.timeouts + EXCLUDED.timeouts - 1),
                      greatest((SELECT interval_s FROM monitors WHERE id = b.monitor_id), $6))) END
     WHERE b.last_due_at < EXCLUDED.last_due_at`,
    [counted.map((p) => p.monitorId), counted.map((p) => p.locationId), counted.map((p) => p.timeouts.length),
      counted.map((p) => p.timeouts[p.timeouts.length - 1]), BACKOFF_AFTER_TIMEOUTS, BACKOFF_MAX_S])
}

/**
 * Where each monitor is backed off: the locations, how many rounds in a row
 * timed out there, the stretched interval and when its next round runs.
 * @param {import('pg').Pool} db
 * @param {number[]} monitorIds
 * @returns {Promise<Map<number, { location_id: string, timeouts: number, interval_s: number, until: Date }[]>>}
 */
export async function backoffsOf (db, monitorIds) {
  const { rows } = await db.query(
    `SELECT b.monitor_id, b.location_id, b.timeouts, b.until,
            extract(epoch FROM b.until - b.last_due_at)::int AS interval_s
       FROM round_backoffs b WHERE b.monitor_id = ANY($1::bigint[]) AND b.until IS NOT NULL
      ORDER BY b.monitor_id, b.location_id`, [monitorIds])
  /** @type {Map<number, { location_id: string, timeouts: number, interval_s: number, until: Date }[]>} */
  const out = new Map()
  for (const r of rows) {
    const id = Number(r.monitor_id)
    out.set(id, [...(out.get(id) ?? []), { location_id: r.location_id, timeouts: r.timeouts, interval_s: r.interval_s, until: r.until }])
  }
  return out
}
