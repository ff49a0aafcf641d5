// A monitor whose rounds keep timing out is backed off where they do, so
// that with one agent at a location (what `h3lens start` gives) a hanging
// page never starves the monitors beside it: real agent, real Chromium, lab
// origin, PostgreSQL.
// run-tests: side — it waits for page timeouts and intervals; its origin is on a free loopback port, and it times no page load
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createTestDatabase } from './helpers/db.js'
import { eventually } from './helpers/process.js'
import { freePort } from '../dev/free-port.js'
import { createScheduler } from '../scheduler/scheduler.js'
import { createMonitor } from '../lib/store/monitors.js'
import { createAgentToken } from '../lib/store/agents.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { startOrigin } from '../lab/origin.js'
import { startApi } from '../api/server.js'
import { startAgent } from '../agents/main.js'

test('one agent, a hanging monitor and two fast ones: after the hanging one\'s second timeout it is backed off, and the fast ones lose no round', async () => {
  // The setting of a real deployment (60 s intervals, 30 s page timeout,
  // one agent) scaled to 15 s and 4 s. A hanging round costs the redirect
  // discovery and a page timeout an arm (12 s of the agent's 15 s,
  // agents/round-budget.js) until it is backed off: claimed
  // before the fast rounds, it leaves them 3 s of the interval, and on a
  // busy machine some are skipped as "location busy". Backed off, it runs
  // every 30 s, then 60 s, on one page timeout: 4 s, after which the two
  // fast rounds still start before their next round is due. Their pages
  // load in one arm each (H2): on a machine with slow cores, busy with
  // other tests, a backed-off round took 7 s with the agent's own work and
  // a round of both arms 3–6 s, and three such rounds after it did not fit
  // in the 15 s; one arm, two monitors, do with room. A hanging round that
  // was not backed off (12 s and that work) would still leave them none.
  const intervalS = 15
  const timeoutMs = 4000
  const fastCount = 2
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-backoff-'))
  const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })
  const database = await createTestDatabase()
  const db = database.pool
  const stops = []
  try {
    const origin = await startOrigin({ dataDir, port: await freePort(), log })
    stops.push(() => origin.stop())
    const config = loadConfig({ PORT: String(await freePort()), H3LENS_DATA_DIR: dataDir, LOG_LEVEL: 'silent', H3LENS_PUBLIC_READ: 'true', H3LENS_PAGE_TIMEOUT_MS: String(timeoutMs), H3LENS_SCHEDULER_TICK_MS: '250' })
    const api = await startApi({ db, config, log })
    stops.push(() => api.close())
    const hanging = await createMonitor(db, { url: `${origin.baseUrl}/hang`, interval_s: intervalS, locations: ['local'], modes: ['h2', 'h3'], paused: true })
    const fast = []
    for (let i = 1; i <= fastCount; i++) fast.push(await createMonitor(db, { url: `${origin.baseUrl}/page-15k.html?m=${i}`, interval_s: intervalS, locations: ['local'], modes: ['h2'], paused: true }))
    const { token } = await createAgentToken(db, { location: 'local' })
    const agent = await startAgent({ config: { ...config, apiUrl: api.url }, log, token, location: 'local', lab: { spki: origin.spki, address: '127.0.0.1', netns: null } })
    stops.push(() => agent.stop())
    await eventually(async () => (await db.query("SELECT 1 FROM agents WHERE location_id = 'local' AND last_seen_at IS NOT NULL")).rowCount === 1, { intervalMs: 50, what: 'the agent polled once and counts as live' })
    const scheduler = createScheduler({ db, config, log })
    // The hanging monitor's rounds fall due a second before the others, so
    // the agent takes them first: the worst case for the others.
    await db.query("UPDATE monitors SET paused = false, anchor_at = now() + CASE WHEN id = $2 THEN interval '0 s' ELSE interval '1 s' END WHERE id = ANY($1)",
      [[hanging.id, ...fast.map((m) => m.id)], hanging.id])
    scheduler.start()
    stops.push(() => scheduler.stop())

    const jobsOf = async (ids) => (await db.query(
      `SELECT monitor_id, due_at, state, last_error, finished_at, extract(epoch FROM finished_at - started_at)::float8 AS took_s
         FROM jobs WHERE monitor_id = ANY($1) ORDER BY due_at`, [ids])).rows
    // The fast rounds due after the hanging monitor's second timeout that
    // have had a whole interval to run.
    let secondTimeout
    const fastSince = async (at) => (await jobsOf(fast.map((m) => m.id))).filter((j) => j.due_at > secondTimeout.finished_at && +j.due_at < at - intervalS * 1000)
    // The hanging monitor's second timed-out round, then its first round
    // run backed off, then two intervals of the fast ones after the second
    // timeout, each of them over: the second holds the backed-off run.
    secondTimeout = await eventually(async () => (await jobsOf([hanging.id])).filter((j) => j.state === 'done')[1], { timeoutMs: 120_000, what: 'the hanging monitor\'s second timeout' })
    const backedOffRun = await eventually(async () => (await jobsOf([hanging.id])).filter((j) => j.state === 'done')[2], { timeoutMs: 120_000, what: 'a round run backed off' })
    await eventually(async () => (await fastSince(Date.now())).length >= fastCount * 2, { timeoutMs: 120_000, what: 'two intervals of the fast monitors after the second timeout' })
    const monitors = (await (await fetch(`${api.url}/api/v1/monitors`)).json()).items
    const end = Date.now()
    // A round the agent is still running when the machine is slow is not
    // lost: wait until each counted round has an outcome (with the monitors
    // still running, so a queued round can still be claimed or skipped).
    await eventually(async () => (await fastSince(end)).every((j) => !['queued', 'leased'].includes(j.state)), { timeoutMs: 60_000, what: 'an outcome for each fast round counted' })
    await db.query('UPDATE monitors SET paused = true')

    const hangRounds = await jobsOf([hanging.id])
    const afterSecond = hangRounds.filter((j) => j.due_at > secondTimeout.due_at)
    assert.ok(afterSecond.some((j) => j.state === 'skipped' && /^skipped: backed off: the last \d rounds timed out \(its next round runs at /.test(j.last_error)), JSON.stringify(hangRounds))
    assert.equal(+backedOffRun.due_at, +secondTimeout.due_at + 2 * intervalS * 1000, 'its interval doubled')
    // Backed off, a round gets one page timeout (4 s) for everything, where
    // the round before it had three (the discovery's and one an arm, 12 s):
    // it is shorter by at least a page timeout, whatever the agent's own
    // work around the loads costs on this machine (it is in both).
    assert.ok(backedOffRun.took_s < secondTimeout.took_s - timeoutMs / 1000,
      `backed off, a round gets one page timeout: it took ${backedOffRun.took_s} s, the round before it ${secondTimeout.took_s} s`)
    const { rows: hangResults } = await db.query('SELECT mode, status, error FROM results WHERE monitor_id = $1', [hanging.id])
    assert.deepEqual([...new Set(hangResults.map((r) => r.status))], ['timeout'], JSON.stringify(hangResults))
    const shown = monitors.find((m) => m.id === Number(hanging.id)).backed_off
    assert.deepEqual(shown.map((b) => [b.location_id, b.timeouts, b.interval_s]), [['local', 3, 4 * intervalS]], JSON.stringify(hangRounds))
    assert.ok(monitors.filter((m) => m.id !== Number(hanging.id)).every((m) => m.backed_off.length === 0))

    // Every fast round due after the second timeout, and finished by now,
    // was run; none skipped.
    const fastRounds = await fastSince(end)
    assert.ok(fastRounds.length >= fastCount * 2, `at least two intervals of the fast ones: ${fastRounds.length}`)
    const lost = fastRounds.filter((j) => j.state !== 'done')
    assert.deepEqual(lost, [], `fast rounds lost after the hanging monitor's second timeout: ${JSON.stringify(lost)}`)
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {})
    await database.drop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
})
