// Faults a deployment meets sooner or later, each ending with every round's
// results stored exactly once: an agent killed mid-job, PostgreSQL stopped
// while agents submit, the API restarted while agents claim, claims whose
// answers never reach the agent, an agent stopped or restarted with work in
// hand.
// run-tests: side — it waits through outages, restarts and kills; its processes are found by its own data dir, and it times no page load
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { createTestDatabase } from './helpers/db.js'
import { runH3lens, eventually, processesMatching } from './helpers/process.js'
import { freePort } from '../dev/free-port.js'
import { startApi } from '../api/server.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { createPool, startEmbeddedPostgres } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { createMonitor } from '../lib/store/monitors.js'
import { createAgentToken } from '../lib/store/agents.js'
import { createScheduler } from '../scheduler/scheduler.js'
import { LAB_HOSTNAME } from '../lib/runtime/lab-host.js'
import { startOrigin } from '../lab/origin.js'
import { createAgent } from '../agents/agent.js'
import { createApiClient, ApiError } from '../agents/api-client.js'
import { createSpool } from '../agents/spool.js'

const quiet = () => createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })
const tmpDir = (name) => fs.mkdtempSync(path.join(os.tmpdir(), `h3lens-${name}-`))

/** A plausible measurement of both modes, without a browser. */
function fakeRunJob ({ ms = 100, runs = new Map(), hold = async () => {} } = {}) {
  const runJob = async (job) => {
    runs.set(job.id, (runs.get(job.id) ?? 0) + 1)
    // Unreferenced: a measurement abandoned by a stopped agent must not keep the test alive.
    await sleep(ms, undefined, { ref: false })
    await hold()
    return ['h2', 'h3'].map((mode) => ({
      mode, status: 'ok', protocol_ok: true, observed_protocol: mode, ttfb_ms: 12, dcl_ms: 20, load_ms: 30, measured_at: new Date().toISOString()
    }))
  }
  return { runJob, runs }
}

/** Submissions as the agent saw them: status per attempt (0 = no answer). */
function recordingClient (client, statuses) {
  return {
    ...client,
    async submit (jobId, body) {
      try {
        const ack = await client.submit(jobId, body)
        statuses.push(200)
        return ack
      } catch (err) {
        statuses.push(err instanceof ApiError ? err.status : -1)
        throw err
      }
    }
  }
}

/** `count` queued rounds of a lab monitor at `location`, due now. */
async function queueRounds (db, count, location = 'local') {
  const m = await createMonitor(db, { url: `https://${LAB_HOSTNAME}:8443/page-15k.html`, interval_s: 3600, locations: [location], paused: true })
  await db.query('UPDATE monitors SET paused = false WHERE id = $1', [m.id])
  const { rows } = await db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at) SELECT $1, $2, now() - make_interval(secs => g) FROM generate_series(1, $3) g RETURNING id`,
    [m.id, location, count])
  return { monitor: m, jobIds: rows.map((r) => r.id) }
}

/** Each round done, with exactly one h2 and one h3 result. */
async function assertExactlyOnce (db, monitorId, count) {
  const { rows: jobs } = await db.query('SELECT state, count(*)::int AS n FROM jobs WHERE monitor_id = $1 GROUP BY state', [monitorId])
  assert.deepEqual(jobs, [{ state: 'done', n: count }])
  const { rows } = await db.query(
    `SELECT count(*)::int AS results, count(DISTINCT (job_id, mode))::int AS distinct_results, count(DISTINCT job_id)::int AS jobs
       FROM results WHERE monitor_id = $1`, [monitorId])
  assert.deepEqual(rows[0], { results: 2 * count, distinct_results: 2 * count, jobs: count })
}

// The faults are independent (each has its own database, data dir, ports
// and processes) and mostly wait: on outages, leases and restarts. They run
// at once.
describe('faults', { concurrency: true }, () => {
  it('PostgreSQL stopped for 10 s while agents submit: the API answers 503, agents spool, every result lands once', async () => {
    const dataDir = tmpDir('faults-pg')
    const pgPort = await freePort()
    const log = quiet()
    let pg = await startEmbeddedPostgres({ dataDir, port: pgPort, log })
    const pool = createPool(pg.url, { max: 10 })
    const agents = []
    let api
    try {
      await migrate(pool)
      api = await startApi({ db: pool, config: loadConfig({ PORT: String(await freePort()), LOG_LEVEL: 'silent', H3LENS_LEASE_S: '120' }), log })
      const { monitor, jobIds } = await queueRounds(pool, 60)
      const statuses = []
      const spoolDirs = []
      // From the eleventh measurement on, measurements do not finish until
      // the database is gone: the agents are mid-job when it goes away, and
      // submit only once it is gone, however fast the first ten went.
      let measured = 0
      let holding = false
      let outage = false
      const hold = async () => {
        if (++measured > 10 && !outage) holding = true
        while (holding) await sleep(50)
      }
      for (let i = 0; i < 3; i++) {
        const { token } = await createAgentToken(pool, { location: 'local' })
        const spool = createSpool(path.join(dataDir, `spool-${i}`))
        spoolDirs.push(spool)
        const agent = createAgent({
          client: recordingClient(createApiClient({ apiUrl: api.url, token, timeoutMs: 5000 }), statuses),
          spool,
          runJob: fakeRunJob({ ms: 150, hold }).runJob,
          log,
          version: 'test',
          idlePollMs: 200,
          // Back to the API within a second of the database's return, rather
          // than up to 16 s later on the doubling wait (1, 2, 4, 8, 16 s)
          // that the 10 s outage reaches: the outage is what is tested.
          maxBackoffMs: 1000
        })
        agent.start()
        agents.push(agent)
      }
      const done = async () => (await pool.query("SELECT count(*)::int AS n FROM jobs WHERE monitor_id = $1 AND state = 'done'", [monitor.id])).rows[0].n
      await eventually(async () => (await done()) >= 10, { timeoutMs: 30000, what: 'ten rounds before the outage' })

      // Every agent has a measurement in hand.
      await eventually(async () => measured >= 13, { timeoutMs: 30000, intervalMs: 50, what: 'each agent mid-job' })
      await pg.stop()
      const outageStarted = Date.now()
      outage = true
      holding = false
      const claim = await fetch(`${api.url}/api/v1/agent/claim`, { method: 'POST', headers: { authorization: 'Bearer h3a_any', 'content-type': 'application/json' }, body: '{}' })
      assert.equal(claim.status, 503, 'the API says "retry", not "bug"')
      assert.equal(claim.headers.get('retry-after'), '5')
      assert.match((await claim.json()).message, /database is unreachable; retry in 5 s/)
      assert.equal((await fetch(`${api.url}/healthz`)).status, 503)
      let spooled = 0
      while (Date.now() - outageStarted < 10000) {
        for (const s of spoolDirs) spooled = Math.max(spooled, (await s.list()).length)
        await sleep(250)
      }
      pg = await startEmbeddedPostgres({ dataDir, port: pgPort, log })

      await eventually(async () => (await done()) === jobIds.length, { timeoutMs: 60000, what: 'every round done after the outage' })
      for (const a of agents) await a.stop()
      agents.length = 0
      await assertExactlyOnce(pool, monitor.id, jobIds.length)
      assert.ok(statuses.filter((s) => s === 503).length >= 3, `every agent's submission met the outage: ${statuses}`)
      assert.ok(spooled >= 1, 'results waited in a spool during the outage')
      assert.ok(!statuses.some((s) => s >= 500 && s !== 503), `no 5xx but 503: ${statuses}`)
      for (const s of spoolDirs) assert.deepEqual(await s.list(), [], 'spools are empty')
    } finally {
      for (const a of agents) await a.stop().catch(() => {})
      await api?.close()
      await pool.end()
      await pg.stop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it('the API restarted while agents claim: no round lost, none leased or run twice', async () => {
    const database = await createTestDatabase()
    const config = loadConfig({ PORT: String(await freePort()), LOG_LEVEL: 'silent' })
    const log = quiet()
    const dataDir = tmpDir('faults-api')
    let api = await startApi({ db: database.pool, config, log })
    const agents = []
    try {
      const { monitor, jobIds } = await queueRounds(database.pool, 80)
      const runs = new Map()
      for (let i = 0; i < 4; i++) {
        const { token } = await createAgentToken(database.pool, { location: 'local' })
        const agent = createAgent({
          client: createApiClient({ apiUrl: api.url, token, timeoutMs: 5000 }),
          spool: createSpool(path.join(dataDir, `spool-${i}`)),
          runJob: fakeRunJob({ ms: 50, runs }).runJob,
          log,
          version: 'test',
          idlePollMs: 100
        })
        agent.start()
        agents.push(agent)
      }
      const done = async () => (await database.pool.query("SELECT count(*)::int AS n FROM jobs WHERE monitor_id = $1 AND state = 'done'", [monitor.id])).rows[0].n
      for (let restart = 0; restart < 3; restart++) {
        const before = await done()
        await eventually(async () => (await done()) >= before + 8, { timeoutMs: 30000, intervalMs: 50, what: 'rounds between restarts' })
        await api.close()
        await sleep(300)
        api = await startApi({ db: database.pool, config, log })
      }
      await eventually(async () => (await done()) === jobIds.length, { timeoutMs: 90000, what: 'every round done' })
      for (const a of agents) await a.stop()
      agents.length = 0
      await assertExactlyOnce(database.pool, monitor.id, jobIds.length)
      const { rows } = await database.pool.query('SELECT max(attempts)::int AS most FROM jobs WHERE monitor_id = $1', [monitor.id])
      assert.equal(rows[0].most, 1, 'no round was leased twice')
      assert.equal(runs.size, jobIds.length)
      assert.ok([...runs.values()].every((n) => n === 1), 'no round was measured twice')
    } finally {
      for (const a of agents) await a.stop().catch(() => {})
      await api.close()
      await database.drop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it('claims answered into the void (the agent gave up waiting): their rounds come back at the next claim, each run once, in one attempt', async () => {
    const database = await createTestDatabase()
    // A lease far longer than the test: a round left leased to no one would never run again within it.
    const api = await startApi({ db: database.pool, config: loadConfig({ PORT: String(await freePort()), LOG_LEVEL: 'silent', H3LENS_LEASE_S: '600' }), log: quiet() })
    const dataDir = tmpDir('faults-void')
    let agent
    try {
      const { monitor, jobIds } = await queueRounds(database.pool, 12)
      const { token } = await createAgentToken(database.pool, { location: 'local' })
      const real = createApiClient({ apiUrl: api.url, token })
      // Every third claim is leased by the API, and its answer never reaches the agent.
      let claims = 0
      const client = {
        ...real,
        async claim (/** @type {any} */ body) {
          const answer = await real.claim(body)
          if (++claims % 3 === 1) throw new ApiError('the request timed out (the answer came too late)', 0)
          return answer
        }
      }
      const { runJob, runs } = fakeRunJob({ ms: 20 })
      agent = createAgent({ client, spool: createSpool(path.join(dataDir, 'spool')), runJob, log: quiet(), version: 'test', idlePollMs: 100, maxBackoffMs: 100, concurrency: 2 })
      agent.start()
      const done = async () => (await database.pool.query("SELECT count(*)::int AS n FROM jobs WHERE monitor_id = $1 AND state = 'done'", [monitor.id])).rows[0].n
      // 5–9 s alone; beside the other faults and the rest of the suite on
      // a machine with slow cores, 9 of the 12 in 30 s. A round left leased
      // to no one would still wait out its 600 s lease.
      await eventually(async () => (await done()) === jobIds.length, { timeoutMs: 180_000, what: 'every round done' })
      await agent.stop()
      agent = null
      assert.ok(claims >= 3, `claims were lost on the way (${claims} claims)`)
      await assertExactlyOnce(database.pool, monitor.id, jobIds.length)
      const { rows } = await database.pool.query('SELECT max(attempts)::int AS most FROM jobs WHERE monitor_id = $1', [monitor.id])
      assert.equal(rows[0].most, 1, 'no round was leased a second time')
      assert.ok([...runs.values()].every((n) => n === 1), 'no round was measured twice')
    } finally {
      await agent?.stop().catch(() => {})
      await api.close()
      await database.drop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it('an agent stopped mid-job gives the job back at once; a restarted agent submits what the old one spooled', async () => {
    const database = await createTestDatabase()
    const db = database.pool
    const lines = []
    const log = createLogger({ logLevel: 'info', destination: new Writable({ write (c, _e, done) { lines.push(String(c)); done() } }) })
    const api = await startApi({ db, config: loadConfig({ PORT: String(await freePort()), LOG_LEVEL: 'silent' }), log: quiet() })
    const dataDir = tmpDir('faults-stop')
    try {
      const { monitor, jobIds } = await queueRounds(db, 3)
      const { token } = await createAgentToken(db, { location: 'local' })
      const client = createApiClient({ apiUrl: api.url, token })
      const spool = createSpool(path.join(dataDir, 'spool'))

      // A measurement that outlasts the stop timeout is released, not left to
      // its lease, and costs no attempt.
      const slow = createAgent({ client, spool, runJob: fakeRunJob({ ms: 30000 }).runJob, log, version: 'test', stopTimeoutMs: 300, idlePollMs: 100 })
      slow.start()
      await eventually(async () => (await db.query("SELECT 1 FROM jobs WHERE monitor_id = $1 AND state = 'leased'", [monitor.id])).rowCount, { what: 'a leased job', intervalMs: 50 })
      const stopStarted = Date.now()
      await slow.stop()
      assert.ok(Date.now() - stopStarted < 5000, 'stop did not wait for the measurement')
      const { rows: afterStop } = await db.query('SELECT state, attempts, lease_owner FROM jobs WHERE monitor_id = $1', [monitor.id])
      assert.deepEqual(afterStop, jobIds.map(() => ({ state: 'queued', attempts: 0, lease_owner: null })))
      assert.match(lines.join(''), /job released; another agent may run it now/)

      // The old process measured two rounds and died before submitting: one
      // still leased to it, one re-run by someone else since.
      const claim = async (tok) => (await fetch(`${api.url}/api/v1/agent/claim`, { method: 'POST', headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' }, body: '{"limit":1}' })).json()
      const [mine] = (await claim(token)).jobs
      const [lost] = (await claim(token)).jobs
      const { agent: other } = await createAgentToken(db, { location: 'local' })
      await db.query('UPDATE jobs SET lease_owner = $1 WHERE id = $2', [other.id, lost.id])
      const results = (await fakeRunJob({ ms: 0 }).runJob(mine))
      await spool.put(mine.id, { agent_version: 'test', results })
      await spool.put(lost.id, { agent_version: 'test', results })

      const restarted = createAgent({ client, spool, runJob: fakeRunJob({ ms: 10 }).runJob, log, version: 'test', idlePollMs: 100 })
      restarted.start()
      await eventually(async () => (await spool.list()).length === 0, { what: 'the old spool flushed', intervalMs: 50 })
      await eventually(async () => (await db.query("SELECT 1 FROM jobs WHERE monitor_id = $1 AND state <> 'done' AND id <> $2", [monitor.id, lost.id])).rowCount === 0, { what: 'the rest measured', intervalMs: 50 })
      await restarted.stop()
      const { rows } = await db.query('SELECT job_id, count(*)::int AS n FROM results WHERE monitor_id = $1 GROUP BY job_id ORDER BY job_id', [monitor.id])
      assert.deepEqual(rows.find((r) => r.job_id === mine.id), { job_id: mine.id, n: 2 }, 'the spooled results were submitted')
      assert.equal(rows.find((r) => r.job_id === lost.id), undefined, 'results for a job someone else holds were refused')
      assert.match(lines.join(''), new RegExp(`"job":${lost.id},"status":409,"code":"lease_lost".*results refused; removed from spool`))
    } finally {
      await api.close()
      await database.drop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it('kill -9 of an agent in the middle of a job: the job runs again and one set of results exists', async () => {
    const database = await createTestDatabase()
    const db = database.pool
    const dataDir = tmpDir('faults-kill')
    const log = quiet()
    const origin = await startOrigin({ dataDir, port: await freePort(), log })
    // What `h3lens lab` leaves for standalone agents.
    fs.writeFileSync(path.join(dataDir, 'lab', 'state.json'), JSON.stringify({ hostname: LAB_HOSTNAME, port: origin.port, spki: origin.spki, locations: { local: { address: '127.0.0.1', netns: null } } }))
    const config = loadConfig({ PORT: String(await freePort()), LOG_LEVEL: 'silent', H3LENS_LEASE_S: '10' })
    const api = await startApi({ db, config, log })
    const scheduler = createScheduler({ db, config: { schedulerTickMs: 500, maxAttempts: 3 }, log })
    const { token } = await createAgentToken(db, { location: 'local' })
    const agentEnv = { H3LENS_API_URL: api.url, H3LENS_AGENT_TOKEN: token, H3LENS_LOCATION: 'local', H3LENS_DATA_DIR: dataDir, LOG_LEVEL: 'info', DATABASE_URL: '' }
    let second
    try {
      const monitor = await createMonitor(db, { url: `${origin.baseUrl}/page-1m.html`, interval_s: 3600, locations: ['local'], modes: ['h2', 'h3'] })
      scheduler.start()
      const first = runH3lens(['agent'], agentEnv)
      const job = await eventually(async () => (await db.query("SELECT id FROM jobs WHERE monitor_id = $1 AND state = 'leased'", [monitor.id])).rows[0], { intervalMs: 20, what: 'the job leased' })
      process.kill(/** @type {number} */ (first.child.pid), 'SIGKILL')
      await first.exited
      const { rows: [mid] } = await db.query('SELECT count(*)::int AS n FROM results WHERE job_id = $1', [job.id])
      assert.equal(mid.n, 0, 'killed before it submitted anything')

      // The lease runs out, the scheduler puts the job back, and a new agent
      // process (the same identity, as after a restart) runs it.
      second = runH3lens(['agent'], agentEnv)
      await eventually(async () => (await db.query("SELECT 1 FROM jobs WHERE id = $1 AND state = 'done'", [job.id])).rowCount, { timeoutMs: 90000, what: 'the job done by the second agent' })
      const { rows: [j] } = await db.query('SELECT attempts FROM jobs WHERE id = $1', [job.id])
      assert.equal(j.attempts, 2)
      const { rows } = await db.query('SELECT mode, status FROM results WHERE job_id = $1 ORDER BY mode', [job.id])
      assert.deepEqual(rows.map((r) => r.mode), ['h2', 'h3'], 'exactly one set of results')
      assert.ok(rows.every((r) => r.status === 'ok'), JSON.stringify(rows))
      second.child.kill('SIGTERM')
      const { code } = await second.exited
      assert.equal(code, 0, second.output.slice(-2000))
    } finally {
      if (second?.child.exitCode === null) second.child.kill('SIGKILL')
      await scheduler.stop()
      await api.close()
      await origin.stop()
      // Chromium of the killed agent exits when its pipe closes; anything
      // left under this data dir is ours to end.
      await eventually(async () => processesMatching(dataDir).length === 0, { timeoutMs: 10000, what: 'no process left' }).catch(() => {
        for (const line of processesMatching(dataDir)) process.kill(Number(line.split(' ')[0]), 'SIGKILL')
      })
      await database.drop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
    assert.deepEqual(processesMatching(dataDir), [])
  })

  it('kill -9 of the agent\'s Chromium in the middle of a load: the round runs again, no error is stored, and the cause is in the log, the job and the agent\'s health', async () => {
    const database = await createTestDatabase()
    const db = database.pool
    const dataDir = tmpDir('faults-browser')
    const log = quiet()
    const origin = await startOrigin({ dataDir, port: await freePort(), log })
    fs.writeFileSync(path.join(dataDir, 'lab', 'state.json'), JSON.stringify({ hostname: LAB_HOSTNAME, port: origin.port, spki: origin.spki, locations: { local: { address: '127.0.0.1', netns: null } } }))
    const config = loadConfig({ PORT: String(await freePort()), LOG_LEVEL: 'silent', H3LENS_PUBLIC_READ: 'true' })
    const api = await startApi({ db, config, log })
    const scheduler = createScheduler({ db, config: { schedulerTickMs: 500, maxAttempts: 3 }, log })
    const { token, agent: identity } = await createAgentToken(db, { location: 'local' })
    const agent = runH3lens(['agent'], { H3LENS_API_URL: api.url, H3LENS_AGENT_TOKEN: token, H3LENS_LOCATION: 'local', H3LENS_DATA_DIR: dataDir, LOG_LEVEL: 'info', DATABASE_URL: '' })
    const logLines = () => agent.output.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
    try {
      // The page answers after 4 s: the H3 arm's load is surely in flight
      // 1.5 s after its browser started.
      const monitor = await createMonitor(db, { url: `${origin.baseUrl}/slow?ms=4000`, interval_s: 3600, locations: ['local'], modes: ['h2', 'h3'] })
      scheduler.start()
      const h3Browser = await eventually(() => logLines().find((l) => l.msg === 'browser launched' && l.flags.includes('--enable-quic')),
        { timeoutMs: 60000, intervalMs: 50, what: 'the H3 arm\'s browser launched' })
      await sleep(1500)
      const { rows: [during] } = await db.query('SELECT id, state, attempts FROM jobs WHERE monitor_id = $1', [monitor.id])
      assert.deepEqual([during.state, during.attempts], ['leased', 1], 'killed during the first attempt')
      process.kill(h3Browser.browserPid, 'SIGKILL')

      await eventually(async () => (await db.query("SELECT 1 FROM jobs WHERE id = $1 AND state = 'done'", [during.id])).rowCount,
        { timeoutMs: 120000, what: 'the round done on its second attempt' })
      const { rows: [job] } = await db.query('SELECT attempts, last_error FROM jobs WHERE id = $1', [during.id])
      assert.equal(job.attempts, 2)
      assert.match(job.last_error, /^attempt 1 of 3 failed and runs again: infrastructure fault: h3 arm: browser disconnected \(pid \d+ killed by SIGKILL\) during the run: /)
      const { rows } = await db.query('SELECT mode, status, error FROM results WHERE job_id = $1 ORDER BY mode', [during.id])
      assert.deepEqual(rows.map((r) => [r.mode, r.status]), [['h2', 'ok'], ['h3', 'ok']], JSON.stringify(rows))

      const fault = logLines().find((l) => l.msg?.startsWith('infrastructure fault'))
      assert.ok(fault, agent.output.slice(-3000))
      assert.equal(fault.job, Number(during.id))
      assert.match(fault.err, /^h3 arm: browser disconnected \(pid \d+ killed by SIGKILL\)/)
      assert.ok(logLines().some((l) => l.msg === 'browser disconnected; it will be replaced on next use' && l.browserPid === h3Browser.browserPid))

      const agents = (await (await fetch(`${api.url}/api/v1/agents`)).json()).items
      const health = agents.find((a) => a.id === Number(identity.id))
      assert.equal(health.faults, 1)
      assert.equal(health.faulty, true)
      assert.match(health.last_fault, /^infrastructure fault: h3 arm: browser disconnected/)
      assert.ok(Date.parse(health.last_fault_at) > Date.now() - 120000)
    } finally {
      agent.child.kill('SIGTERM')
      await agent.exited
      await scheduler.stop()
      await api.close()
      await origin.stop()
      await eventually(async () => processesMatching(dataDir).length === 0, { timeoutMs: 10000, what: 'no process left' }).catch(() => {
        for (const line of processesMatching(dataDir)) process.kill(Number(line.split(' ')[0]), 'SIGKILL')
      })
      await database.drop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
