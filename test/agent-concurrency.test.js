// H3LENS_AGENT_CONCURRENCY: one agent measures up to that many rounds at
// once, never more, and a stop releases every round still running. The real
// API and database; measurements without a browser (what they measure is not
// the point here, how many run at once is). A round is measured once, and
// one measured is never given back.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import os from 'node:os'
import path from 'node:path'
import { createTestDatabase } from './helpers/db.js'
import { eventually } from './helpers/eventually.js'
import { freePort } from '../dev/free-port.js'
import { startApi } from '../api/server.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { createMonitor } from '../lib/store/monitors.js'
import { createAgentToken } from '../lib/store/agents.js'
import { expireLeases } from '../lib/store/jobs.js'
import { LAB_HOSTNAME } from '../lib/runtime/lab-host.js'
import { createAgent } from '../agents/agent.js'
import { createApiClient } from '../agents/api-client.js'
import { createSpool } from '../agents/spool.js'

const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })

/**
 * Measurements that wait until `gather` of them are running at once (or
 * until `open` is called), recording the most that ever ran together.
 * @param {number} gather
 */
function gatheringRunJob (gather) {
  let running = 0
  let most = 0
  /** @type {(() => void)[]} */
  const waiting = []
  let opened = false
  const open = () => { opened = true; for (const go of waiting.splice(0)) go() }
  /** @param {any} job */
  const runJob = async (job) => {
    running++
    most = Math.max(most, running)
    if (running >= gather) open()
    if (!opened) await new Promise((resolve) => waiting.push(() => resolve(undefined)))
    // Rounds started together overlap here even when they need not wait.
    await new Promise((resolve) => setImmediate(resolve))
    running--
    return ['h2', 'h3'].map((mode) => ({
      mode, status: 'ok', protocol_ok: true, observed_protocol: mode, ttfb_ms: 12, dcl_ms: 20, load_ms: 30, measured_at: new Date().toISOString()
    }))
  }
  return { runJob, open, get most () { return most }, get running () { return running } }
}

async function setup (rounds) {
  const database = await createTestDatabase()
  const db = database.pool
  const api = await startApi({ db, config: loadConfig({ PORT: String(await freePort()), LOG_LEVEL: 'silent' }), log })
  const m = await createMonitor(db, { url: `https://${LAB_HOSTNAME}:8443/page-15k.html`, interval_s: 3600, locations: ['local'], paused: true })
  await db.query('UPDATE monitors SET paused = false WHERE id = $1', [m.id])
  await db.query(`INSERT INTO jobs (monitor_id, location_id, due_at)
    SELECT $1, 'local', now() - make_interval(secs => g) FROM generate_series(1, $2) g`, [m.id, rounds])
  const { token } = await createAgentToken(db, { location: 'local' })
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-concurrency-'))
  const agent = (runJob, { clientWrap = (c) => c, ...opts }) => createAgent({
    client: clientWrap(createApiClient({ apiUrl: api.url, token })), spool: createSpool(path.join(dataDir, 'spool')), runJob, log, version: 'test', idlePollMs: 100, ...opts
  })
  const jobStates = async () => (await db.query('SELECT state, attempts, count(*)::int AS n FROM jobs WHERE monitor_id = $1 GROUP BY state, attempts ORDER BY state', [m.id])).rows
  return {
    db, agent, jobStates, monitorId: m.id, spoolDir: path.join(dataDir, 'spool'),
    async close () {
      await api.close()
      await database.drop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

test('an agent with concurrency 3 measures three rounds at once, never more, and each round is stored once', async () => {
  const s = await setup(7)
  const measure = gatheringRunJob(3)
  const agent = s.agent(measure.runJob, { concurrency: 3 })
  try {
    agent.start()
    await eventually(async () => (await s.jobStates()).every((j) => j.state === 'done'), { intervalMs: 50, what: 'every round done' })
    assert.equal(measure.most, 3)
    assert.deepEqual(await s.jobStates(), [{ state: 'done', attempts: 1, n: 7 }])
    const { rows } = await s.db.query('SELECT count(*)::int AS results, count(DISTINCT job_id)::int AS rounds FROM results WHERE monitor_id = $1', [s.monitorId])
    assert.deepEqual(rows[0], { results: 14, rounds: 7 })
  } finally {
    await agent.stop()
    await s.close()
  }
})

test('with the default of 1, rounds are measured one at a time', async () => {
  const s = await setup(3)
  // Gathering two would never happen: each round waits only for itself.
  const measure = gatheringRunJob(1)
  const agent = s.agent(measure.runJob, {})
  try {
    agent.start()
    await eventually(async () => (await s.jobStates()).every((j) => j.state === 'done'), { intervalMs: 50, what: 'every round done' })
    assert.equal(measure.most, 1)
  } finally {
    await agent.stop()
    await s.close()
  }
})

test('stopping an agent gives back every round it is still measuring, without costing an attempt', async () => {
  const s = await setup(2)
  // Never opens: both rounds are mid-measurement when the agent stops.
  const measure = gatheringRunJob(99)
  const agent = s.agent(measure.runJob, { concurrency: 2, stopTimeoutMs: 200 })
  try {
    agent.start()
    await eventually(async () => measure.running === 2, { intervalMs: 20, what: 'two rounds running' })
    await agent.stop()
    assert.deepEqual(await s.jobStates(), [{ state: 'queued', attempts: 0, n: 2 }])
  } finally {
    measure.open()
    await s.close()
  }
})

test('a round whose lease ran out while it was being measured, claimed again by the same agent, is not measured twice', async () => {
  const s = await setup(1)
  const measure = gatheringRunJob(99)
  const agent = s.agent(measure.runJob, { concurrency: 2 })
  try {
    agent.start()
    await eventually(async () => measure.running === 1, { intervalMs: 20, what: 'the round running' })
    // Its heartbeats did not get through: the lease runs out and the round is queued again.
    await s.db.query("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE monitor_id = $1", [s.monitorId])
    assert.deepEqual(await expireLeases(s.db), { requeued: 1, failed: 0 })
    await eventually(async () => (await s.jobStates()).some((j) => j.state === 'leased' && j.attempts === 2), { intervalMs: 20, what: 'the round claimed again' })
    // A few more claims, each with a place free beside the running round.
    await sleep(400)
    assert.equal(measure.most, 1, 'one measurement of the round at a time')
    measure.open()
    await eventually(async () => (await s.jobStates()).every((j) => j.state === 'done'), { intervalMs: 50, what: 'the round done' })
    const { rows } = await s.db.query('SELECT count(*)::int AS results FROM results WHERE monitor_id = $1', [s.monitorId])
    assert.equal(rows[0].results, 2)
  } finally {
    measure.open()
    await agent.stop()
    await s.close()
  }
})

test('a round measured and on its way to the API when the stop timeout fires is kept, not given back, and stored once the API takes it', async () => {
  const s = await setup(1)
  const measure = gatheringRunJob(1)
  /** @type {() => void} */
  let letThrough = () => {}
  const through = new Promise((resolve) => { letThrough = () => resolve(undefined) })
  let submitting = false
  const agent = s.agent(measure.runJob, {
    stopTimeoutMs: 200,
    // The API's answer to the submission is slow (a slow link): it arrives after the stop timeout.
    clientWrap: (/** @type {any} */ client) => ({ ...client, submit: async (/** @type {any[]} */ ...args) => { submitting = true; await through; return client.submit(...args) } })
  })
  try {
    agent.start()
    await eventually(async () => submitting, { intervalMs: 20, what: 'the results on their way' })
    await agent.stop()
    assert.deepEqual(await s.jobStates(), [{ state: 'leased', attempts: 1, n: 1 }], 'not given back: another agent would measure it again and these results be refused')
    assert.equal(fs.readdirSync(s.spoolDir).length, 1, 'still in the spool, for the next start')
    letThrough()
    await eventually(async () => (await s.jobStates()).every((j) => j.state === 'done'), { intervalMs: 50, what: 'the round stored' })
    assert.deepEqual(await s.jobStates(), [{ state: 'done', attempts: 1, n: 1 }])
    const { rows } = await s.db.query('SELECT count(*)::int AS results FROM results WHERE monitor_id = $1', [s.monitorId])
    assert.equal(rows[0].results, 2)
  } finally {
    letThrough()
    await s.close()
  }
})
