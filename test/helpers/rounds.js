// Running rounds of a monitor at a lab location in a test, as its agents do.
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Queue `n` rounds of a monitor at a location (due a second apart, in the
 * past) and wait until its agents have done them all; fail at once on a
 * round that failed.
 *
 * Rounds finish one after another, other monitors' at the location among
 * them, so the wait gives up only when no round at the location has
 * finished for `stallMs`, not after a time per round: a round of four
 * browsers, each slow to start on a machine busy with other tests, took
 * over 20 s, and a journey's round whose step waits out its timeout in each
 * arm over 30 s. A round that hangs holds its agent for good.
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, n: number, location: string, stallMs?: number }} o
 */
export async function runRounds (db, { monitorId, n, location, stallMs = 90_000 }) {
  const { rows } = await db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at)
     SELECT $1, $3, date_trunc('second', now()) - make_interval(secs => g) FROM generate_series(1, $2) g RETURNING id`, [monitorId, n, location])
  const ids = rows.map((r) => r.id)
  const finishedAt = async () => (await db.query("SELECT count(*)::int AS n FROM jobs WHERE location_id = $1 AND state NOT IN ('queued', 'leased')", [location])).rows[0].n
  let finished = await finishedAt()
  let until = Date.now() + stallMs
  for (;;) {
    const { rows: states } = await db.query('SELECT state, last_error FROM jobs WHERE id = ANY($1)', [ids])
    const failed = states.find((s) => s.state === 'failed')
    assert.ok(!failed, `a round failed: ${failed?.last_error}`)
    if (states.every((s) => s.state === 'done')) return
    const now = await finishedAt()
    if (now > finished) [finished, until] = [now, Date.now() + stallMs]
    assert.ok(Date.now() < until, `no round at ${location} finished for ${stallMs / 1000} s: ${states.map((s) => s.state).join(', ')}`)
    await sleep(250)
  }
}
