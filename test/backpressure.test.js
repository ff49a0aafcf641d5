// A location never drowns: at most one pending round per monitor and
// location, skipped rounds counted with their reason, the location's capacity
// against its demand on the API and /metrics, and, with real agents and a
// lab page that never answers, a fast monitor kept on time beside it.
// run-tests: side — it waits for intervals, timeouts and a frozen database; its origin is on a free loopback port, and it times no page load
import { describe, it, test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'
import { createTestApp } from './helpers/app.js'
import { createTestDatabase } from './helpers/db.js'
import { eventually } from './helpers/process.js'
import { freePort } from '../dev/free-port.js'
import { createScheduler } from '../scheduler/scheduler.js'
import { createMonitor } from '../lib/store/monitors.js'
import { expireLeases, failStaleJobs, scheduleDueJobs } from '../lib/store/jobs.js'
import { createAgentToken, touchAgent } from '../lib/store/agents.js'
import { upsertLocation } from '../lib/store/locations.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { startOrigin } from '../lab/origin.js'
import { startApi } from '../api/server.js'
import { startAgent } from '../agents/main.js'

const parsePrometheusTextFormat = createRequire(import.meta.url)('parse-prometheus-text-format')

let t
before(async () => { t = await createTestApp() })
after(async () => { await t.close() })

const tick = () => createScheduler({ db: t.db, config: t.config, log: t.log }).tick()

/** A monitor whose current round is due now and whose previous round was due an interval ago. */
async function monitorAt (location) {
  const m = await createMonitor(t.db, { url: 'https://example.com/', interval_s: 3600, locations: [location] }, { allowPrivateTargets: true })
  const { rows: [{ due }] } = await t.db.query(
    `SELECT anchor_at + make_interval(secs => floor(extract(epoch FROM now() - anchor_at) / interval_s) * interval_s) AS due
       FROM monitors WHERE id = $1`, [m.id])
  return { m, due, previous: new Date(due.getTime() - 3600e3) }
}

/**
 * A lab location with a live agent, a monitor there, and the round before
 * the current one leased by that agent.
 * @param {string} id the location
 * @param {{ leaseLeft?: string, startedAgo?: string }} [opts] PostgreSQL intervals: how long the lease has left (negative: expired), how long ago the round started
 */
async function leasedRoundAt (id, { leaseLeft = '1 minute', startedAgo = '0' } = {}) {
  await upsertLocation(t.db, { id, name: id, region: 'Test', kind: 'lab' })
  const { agent } = await createAgentToken(t.db, { location: id })
  await touchAgent(t.db, agent.id)
  const at = await monitorAt(id)
  await t.db.query(`INSERT INTO jobs (monitor_id, location_id, due_at, state, attempts, lease_owner, lease_expires_at, started_at)
    VALUES ($1, $2, $3, 'leased', 1, $4, now() + $5::interval, now() - $6::interval)`, [at.m.id, id, at.previous, agent.id, leaseLeft, startedAgo])
  return at
}

const roundsOf = async (monitorId) =>
  (await t.db.query('SELECT due_at, state, last_error FROM jobs WHERE monitor_id = $1 ORDER BY due_at', [monitorId])).rows

test('a round still running when the next comes due: the next waits for it a grace, then is skipped as "location busy", not queued', async () => {
  const { m, due, previous } = await leasedRoundAt('bp-busy')
  await tick()
  assert.deepEqual((await roundsOf(m.id)).map((r) => [+r.due_at, r.state]), [[+previous, 'leased']], 'within the grace, the new round waits')
  // The grace (a quarter of the interval, at most 15 s) is over: the round due now fell 16 s ago.
  await t.db.query("UPDATE monitors SET anchor_at = anchor_at - interval '16 seconds' WHERE id = $1", [m.id])
  await tick()
  await tick()
  const rounds = await roundsOf(m.id)
  assert.deepEqual(rounds.map((r) => [+r.due_at, r.state]), [[+previous, 'leased'], [+due - 16_000, 'skipped']])
  assert.match(rounds[1].last_error, /^skipped: location busy \(the round due at .* was still running\)$/)
})

test('a round that ends within the grace after the next came due lets the next one run, late, instead of losing it', async () => {
  const { m, due, previous } = await leasedRoundAt('bp-grace')
  await tick()
  assert.deepEqual((await roundsOf(m.id)).map((r) => r.state), ['leased'])
  await t.db.query("UPDATE jobs SET state = 'done', finished_at = now() WHERE monitor_id = $1", [m.id])
  await tick()
  const { rows } = await t.db.query('SELECT due_at, state, run_after <= now() AS claimable FROM jobs WHERE monitor_id = $1 ORDER BY due_at', [m.id])
  assert.deepEqual(rows.map((r) => [+r.due_at, r.state, r.claimable]), [[+previous, 'done', true], [+due, 'queued', true]])
})

test('a round not started when the next comes due is skipped, and the next takes its place', async () => {
  await upsertLocation(t.db, { id: 'bp-late', name: 'Late', region: 'Test', kind: 'lab' })
  const { agent } = await createAgentToken(t.db, { location: 'bp-late' })
  await touchAgent(t.db, agent.id)
  const { m, due, previous } = await monitorAt('bp-late')
  await t.db.query("INSERT INTO jobs (monitor_id, location_id, due_at) VALUES ($1, 'bp-late', $2)", [m.id, previous])
  await tick()
  const rounds = await roundsOf(m.id)
  assert.deepEqual(rounds.map((r) => [+r.due_at, r.state]), [[+previous, 'skipped'], [+due, 'queued']])
  assert.match(rounds[0].last_error, /^skipped: location busy \(not started before the next round was due/)
  const { rows: [pending] } = await t.db.query("SELECT count(*)::int AS n FROM jobs WHERE monitor_id = $1 AND state IN ('queued', 'leased')", [m.id])
  assert.equal(pending.n, 1, 'one pending round')
})

test('a round waiting to run again when the next comes due is skipped, keeping why its attempt ended', async () => {
  // Its agent was killed: the lease expired and the round went back to the queue.
  const { m, due, previous } = await leasedRoundAt('bp-lost', { leaseLeft: '-1 second', startedAgo: '2 minutes' })
  assert.deepEqual(await expireLeases(t.db), { requeued: 1, failed: 0 })
  await tick()
  const rounds = await roundsOf(m.id)
  assert.deepEqual(rounds.map((r) => [+r.due_at, r.state]), [[+previous, 'skipped'], [+due, 'queued']])
  assert.match(rounds[0].last_error, /^skipped: not run again before the next round was due at \S+Z; its attempt 1: lease expired after attempt 1 \(agent stopped or lost\)$/)
})

test('with no agent running, the waiting round stays for "no agent is running" and new ones say so', async () => {
  await upsertLocation(t.db, { id: 'bp-empty', name: 'Empty', region: 'Test', kind: 'lab' })
  const { m, due, previous } = await monitorAt('bp-empty')
  await t.db.query("INSERT INTO jobs (monitor_id, location_id, due_at) VALUES ($1, 'bp-empty', $2)", [m.id, previous])
  await tick()
  const rounds = await roundsOf(m.id)
  assert.deepEqual(rounds.map((r) => [+r.due_at, r.state]), [[+previous, 'queued'], [+due, 'skipped']])
  assert.match(rounds[1].last_error, /^skipped: no agent is running for location bp-empty/)
})

test('an agent holding a round\'s lease is running though it has asked nothing for minutes (a WebPageTest agent during its test): the next round waits for a busy location, not for "no agent"', async () => {
  const { m, due, previous } = await leasedRoundAt('bp-quiet', { leaseLeft: '2 minutes', startedAgo: '2 minutes' })
  await t.db.query("UPDATE agents SET last_seen_at = now() - interval '5 minutes' WHERE location_id = 'bp-quiet'")
  // Past the grace a round due waits for the one running.
  await t.db.query("UPDATE monitors SET anchor_at = anchor_at - interval '16 seconds' WHERE id = $1", [m.id])
  await tick()
  await tick()
  const rounds = await roundsOf(m.id)
  assert.deepEqual(rounds.map((r) => [+r.due_at, r.state]), [[+previous, 'leased'], [+due - 16_000, 'skipped']])
  assert.match(rounds[1].last_error, /^skipped: location busy \(the round due at \S+Z was still running\)$/)
  const agents = (await t.app.inject({ url: '/api/v1/locations' })).json().items.find((/** @type {any} */ l) => l.id === 'bp-quiet')
  assert.equal(agents.capacity.agents_alive, 1, JSON.stringify(agents.capacity))
})

test('a round nobody claimed in time fails saying why: its monitor paused, no agent running, none running its browser, or its agents busy', async () => {
  await upsertLocation(t.db, { id: 'bp-stale', name: 'Stale', region: 'Test', kind: 'lab' })
  await upsertLocation(t.db, { id: 'bp-chromium', name: 'Chromium only', region: 'Test', kind: 'lab' })
  const { agent } = await createAgentToken(t.db, { location: 'bp-chromium' })
  await touchAgent(t.db, agent.id)
  await t.db.query("UPDATE agents SET browsers = ARRAY['chromium'] WHERE id = $1", [agent.id])
  const monitor = async (/** @type {string} */ location, /** @type {Record<string, any>} */ extra = {}) =>
    createMonitor(t.db, { url: 'https://example.com/', interval_s: 3600, locations: [location], ...extra }, { allowPrivateTargets: true })
  const paused = await monitor('bp-chromium')
  const unstaffed = await monitor('bp-stale')
  const firefox = await monitor('bp-chromium')
  const busy = await monitor('bp-chromium')
  const stale = async (/** @type {number} */ monitorId, /** @type {string} */ location, browser = 'chromium') =>
    (await t.db.query("INSERT INTO jobs (monitor_id, location_id, browser, due_at) VALUES ($1, $2, $3, now() - interval '1 day') RETURNING id", [monitorId, location, browser])).rows[0].id
  const ids = [await stale(paused.id, 'bp-chromium'), await stale(unstaffed.id, 'bp-stale'), await stale(firefox.id, 'bp-chromium', 'firefox'), await stale(busy.id, 'bp-chromium')]
  await t.db.query('UPDATE monitors SET paused = true WHERE id = $1', [paused.id])
  assert.ok(Number(await failStaleJobs(t.db)) >= 4)
  const { rows } = await t.db.query('SELECT id, state, last_error FROM jobs WHERE id = ANY($1::bigint[]) ORDER BY id', [ids])
  assert.deepEqual(rows.map((r) => [r.state, r.last_error]), [
    ['failed', 'not claimed in time: its monitor was paused before an agent took the round'],
    ['failed', 'not claimed in time: no agent is running for location bp-stale'],
    ['failed', 'not claimed in time: no running agent of location bp-chromium runs firefox'],
    ['failed', 'not claimed in time: the agents of location bp-chromium were busy with other rounds']
  ])
  // The other tests schedule every monitor's rounds: these have had theirs.
  await t.db.query('UPDATE monitors SET paused = true WHERE id = ANY($1::bigint[])', [[unstaffed.id, firefox.id, busy.id]])
})

test('back-pressure is decided when a round comes due, not when it is created ahead: a round that finishes in time lets the next one run', async () => {
  await upsertLocation(t.db, { id: 'bp-ahead', name: 'Ahead', region: 'Test', kind: 'lab' })
  const { agent } = await createAgentToken(t.db, { location: 'bp-ahead' })
  await touchAgent(t.db, agent.id)
  const m = await createMonitor(t.db, { url: 'https://example.com/', interval_s: 3600, locations: ['bp-ahead'] }, { allowPrivateTargets: true })
  // The previous round is running, and the next falls 4 s from now.
  const { rows: [{ previous }] } = await t.db.query(
    "UPDATE monitors SET anchor_at = now() + interval '4 seconds' - interval '1 hour' WHERE id = $1 RETURNING anchor_at AS previous", [m.id])
  await t.db.query(`INSERT INTO jobs (monitor_id, location_id, due_at, state, attempts, lease_owner, lease_expires_at, started_at)
    VALUES ($1, 'bp-ahead', $2, 'leased', 1, $3, now() + interval '1 minute', now())`, [m.id, previous, agent.id])
  const schedule = () => scheduleDueJobs(t.db, { maxAttempts: 3, lookAheadMs: 5000 })
  assert.equal(await schedule(), 0)
  assert.deepEqual((await roundsOf(m.id)).map((r) => r.state), ['leased'], 'the next round is neither skipped nor queued ahead')
  await t.db.query("UPDATE jobs SET state = 'done', finished_at = now() WHERE monitor_id = $1", [m.id])
  assert.equal(await schedule(), 1)
  const rounds = await roundsOf(m.id)
  assert.deepEqual(rounds.map((r) => [+r.due_at, r.state]), [[+previous, 'done'], [+previous + 3600e3, 'queued']])
})

test('the Locations API and /metrics show capacity against demand, with a warning when demand exceeds it', async () => {
  await upsertLocation(t.db, { id: 'bp-cap', name: 'Cap', region: 'Test', kind: 'lab' })
  const { agent } = await createAgentToken(t.db, { location: 'bp-cap' })
  await touchAgent(t.db, agent.id)
  // 2 monitors at 60 s and 30 s ask for 60 + 120 = 180 rounds an hour; the
  // one agent took 40 s per round over the last hour, so it takes 90.
  const a = await createMonitor(t.db, { url: 'https://lab.h3lens.test:8443/page-15k.html', interval_s: 60, locations: ['bp-cap'], paused: true })
  await createMonitor(t.db, { url: 'https://lab.h3lens.test:8443/page-1m.html', interval_s: 30, locations: ['bp-cap'], paused: true })
  await t.db.query("UPDATE monitors SET paused = false WHERE 'bp-cap' = ANY(locations)")
  await t.db.query(`INSERT INTO jobs (monitor_id, location_id, due_at, state, started_at, finished_at, last_error)
    SELECT $1, 'bp-cap', now() - make_interval(mins => g), CASE WHEN g <= 3 THEN 'skipped' ELSE 'done' END,
           now() - make_interval(mins => g, secs => 40), now() - make_interval(mins => g),
           CASE WHEN g <= 3 THEN 'skipped: location busy (test)' END
      FROM generate_series(1, 10) g`, [a.id])

  const res = await t.app.inject({ url: '/api/v1/locations' })
  assert.equal(res.statusCode, 200, res.body)
  const cap = res.json().items.find((l) => l.id === 'bp-cap').capacity
  assert.deepEqual(cap, { demand_per_hour: 180, capacity_per_hour: 90, round_s: 40, agents_alive: 1, skipped_busy: 3, skipped: 3, over_capacity: true })
  const local = res.json().items.find((l) => l.id === 'local').capacity
  assert.equal(local.over_capacity, false)

  const scrape = await t.app.inject({ url: '/metrics' })
  const families = new Map(parsePrometheusTextFormat(scrape.body).map((f) => [f.name, f]))
  const value = (name) => Number(families.get(name).metrics.find((s) => s.labels.location === 'bp-cap').value)
  assert.equal(value('h3lens_location_demand_rounds_per_hour'), 180)
  assert.equal(value('h3lens_location_capacity_rounds_per_hour'), 90)
  assert.equal(value('h3lens_location_over_capacity'), 1)
  assert.equal(value('h3lens_location_rounds_skipped_busy_last_hour'), 3)
  await t.db.query("UPDATE monitors SET paused = true WHERE 'bp-cap' = ANY(locations)")
})

// The two slow cases (real agents beside a hanging page; a database frozen
// for 25 s) have a database each and only wait: they run at once.
describe('with real agents, and with a frozen database', { concurrency: true }, () => {
  it('a hanging monitor beside a fast one at the same location: the fast one stays on time, the hanging one\'s extra rounds are skipped', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-backpressure-'))
    const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })
    const database = await createTestDatabase()
    const db = database.pool
    const stops = []
    try {
      const origin = await startOrigin({ dataDir, port: await freePort(), log })
      stops.push(() => origin.stop())
      // A round of the hanging page takes a page timeout (15 s) for each of
      // its two arms, three times its 10 s interval: without back-pressure its rounds would queue
      // and take both agents, and the fast monitor's rounds would wait behind them.
      const config = loadConfig({ PORT: String(await freePort()), H3LENS_DATA_DIR: dataDir, LOG_LEVEL: 'silent', H3LENS_PUBLIC_READ: 'true', H3LENS_PAGE_TIMEOUT_MS: '15000', H3LENS_SCHEDULER_TICK_MS: '250' })
      const api = await startApi({ db, config, log })
      stops.push(() => api.close())
      // The two forced arms only: what is measured does not matter here, and
      // the auto arm's visits would start two browsers a round.
      const hanging = await createMonitor(db, { url: `${origin.baseUrl}/hang`, interval_s: 10, locations: ['local'], modes: ['h2', 'h3'], paused: true })
      const fast = await createMonitor(db, { url: `${origin.baseUrl}/page-15k.html`, interval_s: 10, locations: ['local'], modes: ['h2', 'h3'], paused: true })
      // Two agents, one round at a time each: enough for both monitors when
      // the hanging one holds at most one of them.
      for (const name of ['a', 'b']) {
        const { token } = await createAgentToken(db, { location: 'local' })
        const agent = await startAgent({ config: { ...config, apiUrl: api.url, dataDir: path.join(dataDir, name) }, log, token, location: 'local', lab: { spki: origin.spki, address: '127.0.0.1', netns: null } })
        stops.push(() => agent.stop())
      }
      // The agents poll once and count as live.
      await eventually(async () => (await db.query("SELECT 1 FROM agents WHERE location_id = 'local' AND last_seen_at IS NOT NULL")).rowCount === 2, { intervalMs: 50, what: 'both agents polled' })
      const scheduler = createScheduler({ db, config, log })
      await db.query('UPDATE monitors SET paused = false, anchor_at = now() WHERE id = ANY($1)', [[hanging.id, fast.id]])
      scheduler.start()
      stops.push(() => scheduler.stop())

      // Six of the fast monitor's rounds, and at least two of the hanging one's skipped.
      const deadline = Date.now() + 180_000
      let fastDone = 0
      let skipped = 0
      let maxPending = 0
      while (Date.now() < deadline && (fastDone < 6 || skipped < 2)) {
        const { rows } = await db.query(
          `SELECT monitor_id, count(*) FILTER (WHERE state = 'done')::int AS done,
                  count(*) FILTER (WHERE state = 'skipped')::int AS skipped,
                  count(*) FILTER (WHERE state IN ('queued', 'leased'))::int AS pending
             FROM jobs GROUP BY monitor_id`)
        const of = (id) => rows.find((r) => Number(r.monitor_id) === id) ?? { done: 0, skipped: 0, pending: 0 }
        fastDone = of(fast.id).done
        skipped = of(hanging.id).skipped
        maxPending = Math.max(maxPending, of(hanging.id).pending, of(fast.id).pending)
        await sleep(250)
      }
      await db.query('UPDATE monitors SET paused = true')
      assert.ok(fastDone >= 6 && skipped >= 2, `fast rounds done ${fastDone}, hanging rounds skipped ${skipped}`)
      assert.equal(maxPending, 1, 'never more than one pending round per monitor and location')

      // Every fast round that came due was run, each starting before the next
      // was due. One exception: the first round starts its agent's browsers,
      // which on a loaded machine once took it past the next round's grace;
      // that next round may then be skipped for the first one still running,
      // and for nothing else.
      const { rows: fastRounds } = await db.query(
        `SELECT due_at, finished_at, state, last_error, extract(epoch FROM started_at - due_at)::float8 AS late_s,
                extract(epoch FROM finished_at - started_at)::float8 AS took_s FROM jobs
          WHERE monitor_id = $1 AND due_at < now() - interval '20 seconds' ORDER BY due_at`, [fast.id])
      assert.ok(fastRounds.length >= 4)
      const [first] = fastRounds
      const iso = (/** @type {Date} */ d) => d.toISOString().replace(/\.\d+Z$/, 'Z')
      for (const r of fastRounds) {
        if (r !== first && r.state === 'skipped' && +r.due_at < +first.finished_at) {
          assert.equal(r.last_error, `skipped: location busy (the round due at ${iso(first.due_at)} was still running)`, JSON.stringify(fastRounds))
          continue
        }
        assert.equal(r.state, 'done', JSON.stringify(fastRounds))
        assert.ok(r.late_s < 10, `a fast round started ${r.late_s} s after it was due: ${JSON.stringify(fastRounds)}`)
      }
      const { rows: okResults } = await db.query("SELECT count(*)::int AS n FROM results WHERE monitor_id = $1 AND status = 'ok'", [fast.id])
      assert.ok(okResults[0].n >= 2 * 4, 'the fast rounds measured both arms')

      // The hanging monitor: each run round cost its budget at most, and its
      // extra rounds were skipped as "location busy", not queued. A round
      // takes its budget (the redirect discovery's 10 s and a page timeout
      // of 15 s for each arm, agents/round-budget.js: 40 s) and the agent's
      // own work around its loads (starting the arms' browsers, ending the
      // last load, sending the results), and no more. That work is what a
      // round of the fast page costs beside it, on the same machine: 0.2 s
      // alone, 5 s and 10 s on loaded machines. A round that took a page
      // timeout more than both would have overrun its budget.
      const { rows: hangRounds } = await db.query(
        `SELECT state, last_error, extract(epoch FROM finished_at - started_at)::float8 AS took_s FROM jobs
          WHERE monitor_id = $1 AND state IN ('done', 'skipped') ORDER BY due_at`, [hanging.id])
      const fastTook = Math.max(...fastRounds.filter((r) => r.state === 'done').map((r) => r.took_s))
      for (const r of hangRounds.filter((x) => x.state === 'done')) {
        assert.ok(r.took_s < 10 + 2 * 15 + fastTook + 4, `a hanging round took ${r.took_s} s; a round of the fast page at most ${fastTook} s`)
      }
      assert.ok(hangRounds.filter((r) => r.state === 'skipped').every((r) => /^skipped: location busy/.test(r.last_error)), JSON.stringify(hangRounds))
      const { rows: hangResults } = await db.query('SELECT DISTINCT status FROM results WHERE monitor_id = $1', [hanging.id])
      assert.deepEqual(hangResults.map((r) => r.status), ['timeout'])

      const res = await fetch(`${api.url}/api/v1/locations`)
      const local = (await res.json()).items.find((l) => l.id === 'local').capacity
      assert.ok(local.skipped_busy >= 2, JSON.stringify(local))
      assert.equal(local.agents_alive, 2)
      assert.equal(local.demand_per_hour, 0, 'both monitors paused now')
    } finally {
      for (const stop of stops.reverse()) await stop().catch(() => {})
      await database.drop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it('rounds that came due while the database was frozen are recorded as skipped, saying why; none is silently lost', async () => {
    const database = await createTestDatabase()
    const db = database.pool
    const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })
    const scheduler = createScheduler({ db, config: { schedulerTickMs: 250, maxAttempts: 3 }, log })
    let frozen = null
    try {
      const m = await createMonitor(db, { url: 'https://lab.h3lens.test:8443/page-15k.html', interval_s: 10, locations: ['local'] })
      scheduler.start()
      const rounds = async () => (await db.query('SELECT due_at, state, last_error FROM jobs WHERE monitor_id = $1 ORDER BY due_at', [m.id])).rows
      await eventually(async () => (await rounds()).length === 1, { intervalMs: 100, what: 'the first round' })
      // The scheduler's statements wait on the lock, as on a database that does not answer.
      frozen = await db.connect()
      await frozen.query('BEGIN')
      await frozen.query('LOCK TABLE monitors IN ACCESS EXCLUSIVE MODE')
      const from = Date.now()
      await sleep(25_000)
      await frozen.query('COMMIT')
      frozen.release()
      frozen = null
      const thawed = Date.now()
      await eventually(async () => (await rounds()).some((r) => +r.due_at > thawed - 10_000), { intervalMs: 100, what: 'the round due now' })
      await scheduler.stop()

      const all = await rounds()
      for (let i = 1; i < all.length; i++) assert.equal(all[i].due_at - all[i - 1].due_at, 10_000, `no round missing: ${JSON.stringify(all)}`)
      // Two or three rounds fell due in the 25 s; the last of them is the
      // present, and is created (late) to run; the ones before it are skipped.
      const missed = all.filter((r) => r.last_error?.startsWith('skipped: not scheduled'))
      assert.ok(missed.length >= 1 && missed.length <= 2, JSON.stringify(all))
      const iso = (d) => d.toISOString().replace(/\.\d+Z$/, 'Z')
      for (const r of missed) {
        assert.equal(r.state, 'skipped')
        assert.ok(+r.due_at > from - 1000 && +r.due_at < thawed, JSON.stringify(r))
        assert.equal(r.last_error, `skipped: not scheduled: ${missed.length} round${missed.length === 1 ? '' : 's'} of this monitor came due from ${iso(missed[0].due_at)} ` +
          `to ${iso(missed[missed.length - 1].due_at)} while no scheduler could create rounds (none was running, the database did not answer, or the clock stepped forward)`)
      }
      const present = all.find((r) => +r.due_at === +missed[missed.length - 1].due_at + 10_000)
      assert.ok(present && !present.last_error?.startsWith('skipped: not scheduled'), JSON.stringify(all))
    } finally {
      if (frozen) { await frozen.query('ROLLBACK').catch(() => {}); frozen.release() }
      await scheduler.stop()
      await database.drop()
    }
  })
})
