// The job queue against real PostgreSQL: scheduling, claiming, leases,
// idempotent results, all through the agent API where a user would see it.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from './helpers/app.js'
import { createTestDatabase } from './helpers/db.js'
import { eventually } from './helpers/eventually.js'
import { createLogger, repeatedFailures } from '../lib/runtime/log.js'
import { createScheduler } from '../scheduler/scheduler.js'
import { createPool } from '../lib/runtime/db.js'
import { scheduleDueJobs, expireLeases } from '../lib/store/jobs.js'
import { upsertLocation } from '../lib/store/locations.js'

let t
before(async () => { t = await createTestApp({ H3LENS_LEASE_S: '10' }) })
after(async () => { await t.close() })

const auth = (token) => ({ authorization: `Bearer ${token}` })
const claim = (token, limit = 10) => t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: auth(token), payload: { limit, version: 'test' } })
const result = (mode, extra = {}) => ({ mode, status: 'ok', protocol_ok: true, observed_protocol: mode, ttfb_ms: 10, load_ms: 20, ...extra })

async function freshMonitor (locations = ['local']) {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload: { url: 'https://lab.h3lens.test:8443/page-15k.html', interval_s: 10, locations } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

async function clearQueue () {
  await t.db.query("UPDATE jobs SET state = 'cancelled' WHERE state IN ('queued', 'leased')")
  await t.db.query('UPDATE monitors SET paused = true')
}

test('two schedulers ticking at once create each round exactly once', async () => {
  await clearQueue()
  await upsertLocation(t.db, { id: 'lab-eu', name: 'EU', region: 'Europe', kind: 'lab' })
  const m = await freshMonitor(['local', 'lab-eu'])
  const other = createPool(t.db.options.connectionString)
  const a = createScheduler({ db: t.db, config: { schedulerTickMs: 1000, maxAttempts: 3 }, log: t.log })
  const b = createScheduler({ db: other, config: { schedulerTickMs: 1000, maxAttempts: 3 }, log: t.log })
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).tick()))
  await other.end()
  assert.equal(results.reduce((n, r) => n + r.created, 0), 2)
  const { rows } = await t.db.query('SELECT location_id, count(*)::int AS n FROM jobs WHERE monitor_id = $1 GROUP BY 1 ORDER BY 1', [m.id])
  assert.deepEqual(rows, [{ location_id: 'lab-eu', n: 1 }, { location_id: 'local', n: 1 }])
})

test('a database down for minutes: each scheduler loop warns once, then once a minute with the count, and says when it works again', async () => {
  const database = await createTestDatabase({ later: true })
  /** @type {any[]} */
  const lines = []
  const log = createLogger({ logLevel: 'info', destination: { write: (/** @type {string} */ l) => { lines.push(JSON.parse(l)) } } })
  let clock = Date.parse('2026-01-01T00:00:00Z')
  const scheduler = createScheduler({ db: database.pool, config: { schedulerTickMs: 20, maxAttempts: 3 }, log, now: () => new Date(clock) })
  const warnings = () => lines.filter((l) => l.level === 40).map((l) => l.msg).sort()
  scheduler.start()
  try {
    // Dozens of ticks of each loop, every one failing to connect (fewer on
    // a busy machine, where each failed connect takes longer).
    await new Promise((resolve) => setTimeout(resolve, 1000))
    await eventually(async () => warnings().length >= 2, { timeoutMs: 5000, what: 'a warning from each loop' })
    assert.deepEqual(warnings(), ['scheduler rounds failed; retrying next tick', 'scheduler upkeep failed; retrying next tick'])
    assert.match(lines.find((l) => l.level === 40).err, /database "h3lens_t_\w+" does not exist/)
    clock += 60_000
    await eventually(async () => warnings().length === 4, { timeoutMs: 5000, what: 'a line a minute' })
    for (const loop of ['rounds', 'upkeep']) {
      const still = lines.find((l) => l.msg.startsWith(`scheduler ${loop} still failing`))
      assert.match(still.msg, new RegExp(`^scheduler ${loop} still failing: \\d+ times since 2026-01-01T00:00:00.000Z; retrying next tick$`))
      assert.ok(still.failures > 2, `the failures counted, not only the first: ${still.msg}`)
    }
    await database.create()
    await eventually(async () => ['rounds', 'upkeep'].every((loop) => lines.some((l) => l.level === 30 && l.msg === `scheduler ${loop} works again`)), { timeoutMs: 10_000, what: 'both loops back' })
    assert.equal(warnings().length, 4, 'no warning once the database is back')
  } finally {
    await scheduler.stop()
    await database.drop()
  }
})

test('work that fails now and then warns at most once a minute, and says it works again only after a warning', () => {
  /** @type {any[]} */
  const lines = []
  const log = createLogger({ logLevel: 'info', destination: { write: (/** @type {string} */ l) => { lines.push(JSON.parse(l)) } } })
  let clock = Date.parse('2026-01-01T00:00:00Z')
  const work = repeatedFailures(log, 'alert evaluation', { now: () => clock })
  const oops = new Error('out of memory')
  work.failed(oops)
  work.succeeded()
  // Failing and working by turns within the minute: no more lines.
  for (let i = 0; i < 20; i++) {
    clock += 1000
    work.failed(oops)
    work.succeeded()
  }
  clock += 41_000
  work.failed(oops)
  work.succeeded()
  work.succeeded()
  assert.deepEqual(lines.map((l) => l.msg), [
    'alert evaluation failed; retrying next tick',
    'alert evaluation works again',
    'alert evaluation failed again: 21 times since 2026-01-01T00:00:01.000Z; retrying next tick',
    'alert evaluation works again'
  ])
  // A clock stepped back an hour is time gone by, not a minute still to wait.
  clock -= 3_600_000
  work.failed(oops)
  assert.equal(lines.at(-1).msg, 'alert evaluation failed; retrying next tick')
})

test('two agents claiming at once never lease the same job, and only their own location', async () => {
  await clearQueue()
  await upsertLocation(t.db, { id: 'lab-asia', name: 'Asia', region: 'Asia', kind: 'lab' })
  // 40 rounds in the past for local, 5 for another location.
  const m = await freshMonitor(['local', 'lab-asia'])
  await t.db.query(`INSERT INTO jobs (monitor_id, location_id, due_at)
    SELECT $1, loc, now() - make_interval(secs => g * 10) FROM generate_series(1, 40) g, unnest($2::text[]) loc
    WHERE loc = 'local' OR g <= 5`, [m.id, ['local', 'lab-asia']])
  const [tokA, tokB] = [await t.agentToken('local'), await t.agentToken('local')]
  const claimed = []
  await Promise.all([tokA, tokB].map(async (tok) => {
    for (let i = 0; i < 10; i++) claimed.push(...(await claim(tok, 3)).json().jobs)
  }))
  const ids = claimed.map((j) => j.id)
  assert.equal(ids.length, 40, 'every local job claimed')
  assert.equal(new Set(ids).size, ids.length, 'no job leased twice')
  assert.ok(claimed.every((j) => j.location_id === 'local'))
  assert.equal(claimed[0].url, m.url)
})

test('a claim whose answer the agent never got: its next claim gets the same rounds back, in the same attempt; another process or an older agent does not', async () => {
  await clearQueue()
  const m = await freshMonitor()
  await t.db.query(`INSERT INTO jobs (monitor_id, location_id, due_at)
    SELECT $1, 'local', now() - make_interval(secs => g * 10) FROM generate_series(1, 4) g`, [m.id])
  const token = await t.agentToken('local')
  const claimAs = async (/** @type {Record<string, any>} */ body) => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: auth(token), payload: { limit: 2, version: 'test', ...body } })
    assert.equal(res.statusCode, 200, res.body)
    return res.json().jobs.map((/** @type {any} */ j) => ({ id: j.id, attempts: j.attempts, lease: j.lease_expires_at }))
  }
  // Its answer lost on the way: the agent holds nothing.
  const lost = await claimAs({ instance: 'process-one', holding: [] })
  assert.equal(lost.length, 2)
  const again = await claimAs({ instance: 'process-one', holding: [] })
  assert.deepEqual(again.map((j) => j.id), lost.map((j) => j.id), 'the same rounds, handed back')
  assert.deepEqual(again.map((j) => j.attempts), [1, 1], 'in the same attempt')
  assert.ok(again.every((j, i) => j.lease >= lost[i].lease), 'with a lease from now')
  // Holding one of them and asking for two: the one it does not hold, and a new round.
  const next = await claimAs({ instance: 'process-one', holding: [lost[0].id] })
  assert.equal(next.length, 2)
  assert.ok(next.some((j) => j.id === lost[1].id) && !next.some((j) => j.id === lost[0].id), JSON.stringify(next))
  // Another process of the same agent, and an agent that names no instance, are given only new rounds.
  const other = await claimAs({ instance: 'process-two', holding: [] })
  assert.ok(other.every((j) => ![...lost, ...next].some((k) => k.id === j.id)), JSON.stringify(other))
  const { rows: [left] } = await t.db.query("SELECT count(*)::int AS n FROM jobs WHERE monitor_id = $1 AND state = 'queued'", [m.id])
  const older = await claimAs({})
  assert.equal(older.length, left.n, 'an older agent gets what is queued, nothing handed back')
  const { rows } = await t.db.query('SELECT max(attempts)::int AS most FROM jobs WHERE monitor_id = $1', [m.id])
  assert.equal(rows[0].most, 1, 'no round was leased a second time')
})

test('results are stored once, however often they are posted', async () => {
  await clearQueue()
  const m = await freshMonitor()
  await scheduleDueJobs(t.db, { maxAttempts: 3 })
  const token = await t.agentToken('local')
  const [job] = (await claim(token, 1)).json().jobs
  assert.equal(job.monitor_id, m.id)
  const payload = { agent_version: 'test', results: [result('h2'), result('h3')] }
  const first = await t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${job.id}/results`, headers: auth(token), payload })
  assert.equal(first.statusCode, 200, first.body)
  assert.deepEqual(first.json(), { stored: 2, duplicates: 0 })
  const again = await t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${job.id}/results`, headers: auth(token), payload })
  assert.deepEqual(again.json(), { stored: 0, duplicates: 2 })

  const list = (await t.app.inject({ url: `/api/v1/monitors/${m.id}/results` })).json().items
  assert.equal(list.length, 2)
  assert.deepEqual(list.map((r) => r.mode).sort(), ['h2', 'h3'])
  assert.equal(list[0].location_id, 'local')
  const h3only = (await t.app.inject({ url: `/api/v1/monitors/${m.id}/results?mode=h3` })).json().items
  assert.equal(h3only.length, 1)
  const { rows } = await t.db.query('SELECT state FROM jobs WHERE id = $1', [job.id])
  assert.equal(rows[0].state, 'done')
})

test('an agent cannot post results for a job leased to another agent', async () => {
  await clearQueue()
  await freshMonitor()
  await scheduleDueJobs(t.db, { maxAttempts: 3 })
  const owner = await t.agentToken('local')
  const stranger = await t.agentToken('local')
  const [job] = (await claim(owner, 1)).json().jobs
  const res = await t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${job.id}/results`, headers: auth(stranger), payload: { results: [result('h2')] } })
  assert.equal(res.statusCode, 409)
  assert.match(res.json().message, /leased to another agent/)
  const none = await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', payload: {} })
  assert.equal(none.statusCode, 401)
  const bad = await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: auth('h3a_nope'), payload: {} })
  assert.equal(bad.statusCode, 401)
})

test('an expired lease returns the job to the queue; after the last attempt it fails with the reason', async () => {
  await clearQueue()
  await freshMonitor()
  await t.db.query('UPDATE jobs SET max_attempts = 2')
  await scheduleDueJobs(t.db, { maxAttempts: 2 })
  const token = await t.agentToken('local')
  const [job] = (await claim(token, 1)).json().jobs
  await t.db.query("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1", [job.id])
  assert.deepEqual(await expireLeases(t.db), { requeued: 1, failed: 0 })
  const [again] = (await claim(token, 1)).json().jobs
  assert.equal(again.id, job.id)
  assert.equal(again.attempts, 2)
  await t.db.query("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1", [job.id])
  assert.deepEqual(await expireLeases(t.db), { requeued: 0, failed: 1 })
  const { rows } = await t.db.query('SELECT state, last_error FROM jobs WHERE id = $1', [job.id])
  assert.equal(rows[0].state, 'failed')
  assert.match(rows[0].last_error, /lease expired after attempt 2/)
})

test('a second agent re-runs an expired job; the first agent\'s late results are refused', async () => {
  await clearQueue()
  await freshMonitor()
  await scheduleDueJobs(t.db, { maxAttempts: 3 })
  const first = await t.agentToken('local')
  const second = await t.agentToken('local')
  const [job] = (await claim(first, 1)).json().jobs
  await t.db.query("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1", [job.id])
  await expireLeases(t.db)
  const [rerun] = (await claim(second, 1)).json().jobs
  assert.equal(rerun.id, job.id)
  const ok = await t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${job.id}/results`, headers: auth(second), payload: { results: [result('h2'), result('h3')] } })
  assert.equal(ok.statusCode, 200)
  const late = await t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${job.id}/results`, headers: auth(first), payload: { results: [result('h2', { ttfb_ms: 19 })] } })
  assert.equal(late.statusCode, 409)
  assert.equal(late.json().code, 'lease_lost')
  const { rows } = await t.db.query('SELECT count(*)::int AS n, max(ttfb_ms) AS ttfb FROM results WHERE job_id = $1', [job.id])
  assert.deepEqual(rows[0], { n: 2, ttfb: 10 }, 'the late ttfb of 19 ms was not stored')
})

test('a job the agent cannot run is retried with back-off, then given up with its cause; the agent\'s health shows the faults', async () => {
  await clearQueue()
  await freshMonitor()
  await scheduleDueJobs(t.db, { maxAttempts: 2 })
  const token = await t.agentToken('local')
  const fail = (id, error) => t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${id}/fail`, headers: auth(token), payload: { error } })
  const [job] = (await claim(token, 1)).json().jobs
  assert.equal((await fail(job.id, 'infrastructure fault: h2 arm: browser disconnected')).json().state, 'queued')
  const { rows: [retry] } = await t.db.query('SELECT state, last_error, run_after > now() AS later FROM jobs WHERE id = $1', [job.id])
  assert.deepEqual(retry, { state: 'queued', last_error: 'attempt 1 of 2 failed and runs again: infrastructure fault: h2 arm: browser disconnected', later: true })
  assert.deepEqual((await claim(token, 1)).json().jobs, [], 'not before its back-off')
  await t.db.query('UPDATE jobs SET run_after = now() WHERE id = $1', [job.id])
  const [again] = (await claim(token, 1)).json().jobs
  assert.deepEqual([again.id, again.attempts], [job.id, 2])
  assert.equal((await fail(job.id, 'chromium did not start: spawn ENOENT')).json().state, 'failed')
  const { rows: [given] } = await t.db.query('SELECT state, last_error FROM jobs WHERE id = $1', [job.id])
  assert.deepEqual(given, { state: 'failed', last_error: 'given up after 2 attempts; the last failed: chromium did not start: spawn ENOENT' })
  const { rows: stored } = await t.db.query('SELECT 1 FROM results WHERE job_id = $1', [job.id])
  assert.equal(stored.length, 0, 'nothing of it stored as the page\'s')

  const agents = (await t.app.inject({ url: '/api/v1/agents' })).json().items
  const health = agents.find((a) => a.last_fault === 'chromium did not start: spawn ENOENT')
  assert.deepEqual({ faults: health?.faults, faulty: health?.faulty }, { faults: 2, faulty: true }, JSON.stringify(agents))
  assert.ok(Date.parse(health.last_fault_at) > Date.now() - 60_000)
})

test('a monitor whose rounds time out twice in a row is backed off where they did: its interval there doubles, the rounds between are skipped with the reason, and its first round that loads ends it', async () => {
  await clearQueue()
  const token = await t.agentToken('local')
  const m = await freshMonitor()
  const timedOut = [{ ...result('h2'), status: 'timeout', protocol_ok: false, observed_protocol: null, ttfb_ms: null, load_ms: null, error: 'load did not finish within 30000 ms' },
    { ...result('h3'), status: 'timeout', protocol_ok: false, observed_protocol: null, ttfb_ms: null, load_ms: null, error: 'not run: the round\'s time budget was spent' }]
  const submit = (id, results) => t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${id}/results`, headers: auth(token), payload: { results } })
  /** A round of the monitor due `ago` seconds ago, claimed by this agent. */
  const leasedRound = async (ago) => {
    await t.db.query(`INSERT INTO jobs (monitor_id, location_id, due_at, run_after) VALUES ($1, 'local', now() - make_interval(secs => $2), now() - interval '1 hour')`, [m.id, ago])
    const [job] = (await claim(token, 1)).json().jobs
    assert.equal(job.monitor_id, m.id)
    return job
  }
  const backedOff = async () => (await t.app.inject({ url: `/api/v1/monitors/${m.id}` })).json().backed_off

  const first = await leasedRound(25)
  assert.equal(first.backed_off_timeouts, null)
  assert.equal((await submit(first.id, timedOut)).statusCode, 200)
  assert.equal((await submit(first.id, timedOut)).statusCode, 200, 'a resubmission counts once')
  assert.deepEqual(await backedOff(), [], 'one timed-out round is not enough')
  const late = await leasedRound(20) // its results come last, from a spool
  const second = await leasedRound(15)
  await submit(second.id, timedOut)
  const [off] = await backedOff()
  assert.deepEqual({ ...off, until: undefined }, { location_id: 'local', timeouts: 2, interval_s: 20, until: undefined }, 'the 10 s interval doubled')
  assert.equal(Date.parse(off.until), Date.parse(second.due_at) + 20_000)
  const listed = (await t.app.inject({ url: '/api/v1/monitors' })).json().items.find((x) => x.id === m.id)
  assert.deepEqual(listed.backed_off, [off])

  // The round due now falls before the back-off's end: skipped, saying why.
  await t.db.query("UPDATE monitors SET anchor_at = now() - interval '1 second' WHERE id = $1", [m.id])
  await scheduleDueJobs(t.db, { maxAttempts: 3 })
  const { rows: [skipped] } = await t.db.query('SELECT state, last_error FROM jobs WHERE monitor_id = $1 ORDER BY due_at DESC LIMIT 1', [m.id])
  assert.equal(skipped.state, 'skipped')
  assert.equal(skipped.last_error, `skipped: backed off: the last 2 rounds timed out (its next round runs at ${new Date(off.until).toISOString().replace(/\.\d+Z$/, 'Z')})`)

  // A round it runs meanwhile gets the hint (one page timeout); a third timeout stretches it further.
  const third = await leasedRound(5)
  assert.equal(third.backed_off_timeouts, 2)
  await submit(third.id, timedOut)
  assert.deepEqual((await backedOff()).map((b) => [b.timeouts, b.interval_s]), [[3, 40]])

  // Its first round that loads ends the back-off; the hint goes with it.
  const fourth = await leasedRound(2)
  assert.equal(fourth.backed_off_timeouts, 3)
  assert.equal((await submit(fourth.id, [result('h2'), { ...timedOut[1] }])).statusCode, 200)
  assert.deepEqual(await backedOff(), [])
  const fifth = await leasedRound(1)
  assert.equal(fifth.backed_off_timeouts, null)
  // An older timed-out round that arrives late counts for nothing; the next
  // timeout is the first of a new run.
  assert.equal((await submit(late.id, timedOut)).statusCode, 200)
  await submit(fifth.id, timedOut)
  assert.deepEqual(await backedOff(), [], 'one timeout since the round that loaded')
})

test('a round coming due within the look-ahead is created ahead with its own due time, and no agent can claim it before then', async () => {
  await clearQueue()
  const due = await freshMonitor()
  const soon = await freshMonitor()
  // The first round of `soon` falls 4 s from now.
  await t.db.query("UPDATE monitors SET anchor_at = now() + interval '4 seconds' WHERE id = $1", [soon.id])
  assert.equal(await scheduleDueJobs(t.db, { maxAttempts: 3 }), 1, 'without look-ahead, only the round due now')
  assert.equal(await scheduleDueJobs(t.db, { maxAttempts: 3, lookAheadMs: 5000 }), 1, 'with it, the round due in 4 s as well')
  const { rows: [ahead] } = await t.db.query(
    'SELECT j.due_at, j.run_after, m.anchor_at FROM jobs j JOIN monitors m ON m.id = j.monitor_id WHERE j.monitor_id = $1', [soon.id])
  assert.equal(+ahead.due_at, +ahead.anchor_at, 'due when its round falls, not when it was created')
  assert.equal(+ahead.run_after, +ahead.due_at)
  const claimed = (await claim(await t.agentToken('local'), 10)).json().jobs
  assert.deepEqual(claimed.map((j) => j.monitor_id), [due.id], 'only the round already due is handed out')
  assert.equal(await scheduleDueJobs(t.db, { maxAttempts: 3, lookAheadMs: 5000 }), 0, 'and no round is created twice')
})

test('a location added, a new interval or an unpaused monitor gets its current round at the next tick; rounds that exist are not created again', async () => {
  await clearQueue()
  await upsertLocation(t.db, { id: 'lab-us', name: 'US', region: 'America', kind: 'lab' })
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload: { url: 'https://lab.h3lens.test:8443/page-15k.html', interval_s: 3600, locations: ['local'] } })
  const m = res.json()
  const patch = async (payload) => assert.equal((await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload })).statusCode, 200)
  const rounds = async () => (await t.db.query(
    'SELECT location_id, due_at, state FROM jobs WHERE monitor_id = $1 ORDER BY due_at, location_id', [m.id])).rows
  const schedule = () => scheduleDueJobs(t.db, { maxAttempts: 3, lookAheadMs: 1000 })

  assert.equal(await schedule(), 1)
  const [first] = await rounds()
  await patch({ locations: ['local', 'lab-us'] })
  assert.equal(await schedule(), 1, 'the new location\'s round only')
  assert.deepEqual((await rounds()).map((r) => [r.location_id, +r.due_at]), [['lab-us', +first.due_at], ['local', +first.due_at]])
  assert.equal(await schedule(), 0)

  await t.db.query("UPDATE jobs SET state = 'done', finished_at = now() WHERE monitor_id = $1", [m.id])
  await patch({ paused: true, interval_s: 1800 })
  assert.equal(await schedule(), 0, 'paused')
  await patch({ paused: false })
  assert.equal(await schedule(), 2, 'unpaused: a round at each location on the new interval\'s grid, which starts now')
  const now = (await rounds()).filter((r) => r.state === 'queued')
  assert.equal(now.length, 2)
  assert.ok(now.every((r) => +r.due_at > +first.due_at && +r.due_at === +now[0].due_at), JSON.stringify(now))
})

test('a scheduler starting after the clock stepped back an hour: monitors get their next round at once, at a time none of their rounds has; a paused one when resumed; one made while the clock was ahead starts now', async () => {
  await clearQueue()
  const make = async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload: { url: 'https://lab.h3lens.test:8443/page-15k.html', interval_s: 60, locations: ['local'] } })
    assert.equal(res.statusCode, 201, res.body)
    return res.json()
  }
  const [running, paused, madeAhead] = [await make(), await make(), await make()]
  // What a clock an hour ahead left: the monitors' rounds on their grid of
  // whole minutes up to that clock's present, their next rounds due an hour
  // from the true now, and a monitor made then, its grid starting then.
  for (const m of [running, paused]) {
    await t.db.query("UPDATE monitors SET anchor_at = date_trunc('minute', now()) - interval '2 hours' WHERE id = $1", [m.id])
    await t.db.query(
      `INSERT INTO jobs (monitor_id, location_id, browser, due_at, run_after, max_attempts, state, finished_at)
       SELECT $1, 'local', 'chromium', d, d, 3, 'done', d + interval '5 seconds'
         FROM generate_series(date_trunc('minute', now()) - interval '10 minutes', date_trunc('minute', now()) + interval '60 minutes', interval '1 minute') AS d`, [m.id])
    await t.db.query("UPDATE monitors SET next_due_at = date_trunc('minute', now()) + interval '61 minutes' WHERE id = $1", [m.id])
  }
  // Paused while the clock was ahead: its next_due_at is that clock's present (the pause's trigger).
  await t.db.query('UPDATE monitors SET paused = true WHERE id = $1', [paused.id])
  await t.db.query("UPDATE monitors SET next_due_at = now() + interval '50 minutes' WHERE id = $1", [paused.id])
  await t.db.query("UPDATE monitors SET anchor_at = now() + interval '1 hour', next_due_at = now() + interval '1 hour', paused = false WHERE id = $1", [madeAhead.id])

  // A scheduler's first tick looks for the clock's step (a new pool: as a
  // scheduler started after it).
  const scheduler = createPool(t.db.options.connectionString)
  try {
    const schedule = () => scheduleDueJobs(scheduler, { maxAttempts: 3, lookAheadMs: 1000 })
    assert.equal(await schedule(), 2, 'a round now for the running monitor and the one made ahead, not in an hour')
    const queued = async (m) => (await t.db.query("SELECT due_at, now() AS now FROM jobs WHERE monitor_id = $1 AND state = 'queued'", [m.id])).rows
    const [round] = await queued(running)
    assert.ok(round, 'the running monitor\'s round is queued to run')
    assert.ok(+round.due_at <= +round.now + 1000 && +round.due_at > +round.now - 60_000, `due within the last interval: ${round.due_at.toISOString()} at ${round.now.toISOString()}`)
    assert.equal(round.due_at.getUTCSeconds(), 30, 'half an interval off the grid its earlier rounds are on')
    const { rows: [next] } = await t.db.query('SELECT extract(epoch FROM next_due_at - $2::timestamptz)::float8 AS gap FROM monitors WHERE id = $1', [running.id, round.due_at])
    assert.equal(next.gap, 60, 'the next one an interval later')
    assert.equal((await queued(madeAhead)).length, 1, 'the monitor made while the clock was ahead starts now')
    assert.equal(await schedule(), 0, 'and no round twice')

    const resume = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${paused.id}`, payload: { paused: false } })
    assert.equal(resume.statusCode, 200, resume.body)
    assert.equal(await schedule(), 1, 'the paused monitor, resumed, gets its round at once')
    const [resumed] = await queued(paused)
    assert.ok(resumed && +resumed.due_at > +resumed.now - 60_000 && resumed.due_at.getUTCSeconds() === 30, JSON.stringify(resumed))
  } finally {
    await scheduler.end()
  }
})
