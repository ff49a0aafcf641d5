// Results the API refuses, through the real API over HTTP and the agent's
// own client and spool (measurements without a browser: what the API
// answers is the point): a journey trial's outcome refused is answered
// again with why; a round refused for good is reported failed with
// the API's words, runs again as a new attempt and ends failed with that
// cause, rather than being handed back to the agent and measured again and
// again; the other rounds of the location go on. A heavy page's round, MBs
// of request lists, is stored. An `h3lens agent` whose token is refused, or
// another location's, stops saying so.
// run-tests: concurrent — its processes are `h3lens agent`s refused at their first claim, before any browser starts
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createTestDatabase } from './helpers/db.js'
import { eventually } from './helpers/eventually.js'
import { freePort } from '../dev/free-port.js'
import { startApi } from '../api/server.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { createMonitor } from '../lib/store/monitors.js'
import { createAgentToken, revokeAgent } from '../lib/store/agents.js'
import { createApiKey } from '../lib/store/api-keys.js'
import { claimJobs, expireLeases, failJob, failStaleJobs } from '../lib/store/jobs.js'
import { LAB_HOSTNAME } from '../lib/runtime/lab-host.js'
import { createAgent } from '../agents/agent.js'
import { createApiClient } from '../agents/api-client.js'
import { createSpool } from '../agents/spool.js'

const ROOT = path.join(path.dirname(new URL(import.meta.url).pathname), '..')
const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })

/** @param {string} measuredAt @param {object} [extra] */
const round = (measuredAt, extra = {}) => ['h2', 'h3'].map((mode) => ({
  mode, status: 'ok', protocol_ok: true, observed_protocol: mode, ttfb_ms: 12, dcl_ms: 20, load_ms: 30, measured_at: measuredAt, ...extra
}))

/** @param {Record<string, string>} [env] the API's settings */
async function setup (env = {}) {
  const database = await createTestDatabase()
  const db = database.pool
  const api = await startApi({ db, config: loadConfig({ PORT: String(await freePort()), LOG_LEVEL: 'silent', ...env }), log })
  const monitor = async (page) => {
    const m = await createMonitor(db, { url: `https://${LAB_HOSTNAME}:8443/${page}`, interval_s: 3600, locations: ['local'] })
    const { rows: [job] } = await db.query("INSERT INTO jobs (monitor_id, location_id, due_at, max_attempts) VALUES ($1, 'local', now() - interval '1 minute', 2) RETURNING id", [m.id])
    return { monitorId: m.id, jobId: job.id }
  }
  const { token, agent: agentRow } = await createAgentToken(db, { location: 'local' })
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-refusals-'))
  const agent = (/** @type {(job: any) => Promise<any[]>} */ runJob, /** @type {object} */ extra = {}) => createAgent({
    client: createApiClient({ apiUrl: api.url, token }), spool: createSpool(path.join(dataDir, 'spool')), runJob, log, version: 'test', idlePollMs: 100, maxBackoffMs: 200, ...extra
  })
  const job = async (/** @type {number} */ id) => (await db.query('SELECT state, attempts, last_error FROM jobs WHERE id = $1', [id])).rows[0]
  /** The job once its round was reported with a reason. @param {number} id @param {string} what */
  const reported = (id, what) => eventually(async () => {
    const j = await job(id)
    return j.last_error && j
  }, { timeoutMs: 10_000, what })
  return {
    db, monitor, agent, job, reported, dataDir, apiUrl: api.url, token, agentRow,
    async close () {
      await api.close()
      await database.drop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

/**
 * PostgreSQL refusing results (of one round, or all) with an error of the
 * given SQLSTATE, as a full disk does; the function returned mends it.
 * @param {import('pg').Pool} db
 * @param {{ jobId?: number, errcode?: string }} o errcode: raise_exception (P0001) unless given
 */
async function refuseResults (db, { jobId, errcode = 'raise_exception' }) {
  await db.query(`CREATE FUNCTION refuse_results () RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'could not extend file "base/1/2": No space left on device' USING ERRCODE = '${errcode}'; END $$`)
  await db.query(`CREATE TRIGGER refuse_results BEFORE INSERT ON results FOR EACH ROW ${jobId ? `WHEN (NEW.job_id = ${Number(jobId)}) ` : ''}EXECUTE FUNCTION refuse_results()`)
  return async () => { await db.query('DROP TRIGGER refuse_results ON results') }
}

test('a round refused for good (the agent\'s clock a day ahead) fails with the API\'s words, runs again once, then ends failed; the location\'s other round is stored', async () => {
  const s = await setup()
  const skewed = await s.monitor('skewed')
  const fine = await s.monitor('fine')
  /** @type {Map<number, number>} */
  const runs = new Map()
  const agent = s.agent(async (job) => {
    runs.set(job.id, (runs.get(job.id) ?? 0) + 1)
    return round(new Date(Date.now() + (job.id === skewed.jobId ? 2 * 86400e3 : 0)).toISOString())
  })
  agent.start()
  try {
    const first = await s.reported(skewed.jobId, 'the refused round reported')
    assert.equal(first.state, 'queued', 'the refused round is handed back as a new attempt, not kept leased')
    assert.equal(first.attempts, 1)
    assert.match(first.last_error, /^attempt 1 of 2 failed and runs again: the API refused the round's results \(HTTP 422\): .*measured_at .* is not a plausible measurement time \(is the agent's clock right\?\)/)
    await eventually(async () => (await s.job(fine.jobId)).state === 'done', { timeoutMs: 10_000, what: 'the other round stored' })
    const { rows: [{ n }] } = await s.db.query('SELECT count(*)::int AS n FROM results WHERE job_id = $1', [fine.jobId])
    assert.equal(n, 2)
    // Its back-off waived, the round runs once more and is given up.
    await s.db.query('UPDATE jobs SET run_after = now() WHERE id = $1', [skewed.jobId])
    const given = await eventually(async () => {
      const j = await s.job(skewed.jobId)
      return j.state === 'failed' && j
    }, { timeoutMs: 10_000, what: 'the refused round given up' })
    assert.match(given.last_error, /^given up after 2 attempts; the last failed: the API refused the round's results \(HTTP 422\)/)
    await new Promise((resolve) => setTimeout(resolve, 500))
    assert.equal(runs.get(skewed.jobId), 2, 'the refused round was measured once per attempt')
    const { rows: [health] } = await s.db.query("SELECT faults, last_fault FROM agents WHERE location_id = 'local'")
    assert.equal(health.faults, 2)
    assert.match(health.last_fault, /measured_at/)
  } finally {
    await agent.stop()
    await s.close()
  }
})

test('while the API fails on a round\'s results (500), the round waits in the spool, its lease kept, and is not measured again; stored once the API takes it', async () => {
  // The shortest lease, and the scheduler's lease upkeep every half second.
  const s = await setup({ H3LENS_LEASE_S: '10' })
  const failing = await s.monitor('failing')
  // A real fault of the API's: PostgreSQL refuses this round's results.
  const mended = await refuseResults(s.db, { jobId: failing.jobId })
  let runs = 0
  /** @type {{ jobId: number } | null} */
  let slow = null
  const agent = s.agent(async (job) => {
    // A round that takes longer than the lease, in the agent's one slot.
    if (job.id === slow?.jobId) await new Promise((resolve) => setTimeout(resolve, 15_000))
    else runs++
    return round(new Date().toISOString())
  })
  const upkeep = setInterval(() => { expireLeases(s.db).catch(() => {}) }, 500)
  agent.start()
  try {
    await eventually(async () => fs.existsSync(path.join(s.dataDir, 'spool', `job-${failing.jobId}.json`)) && runs > 0, { timeoutMs: 10_000, what: 'the round measured and spooled' })
    // Claims every 100 ms and a flush before each: a round handed back at
    // each claim would be measured dozens of times; one whose lease ran out
    // would be measured again as a new attempt, charged to the agent. Then
    // a round longer than the lease, during which the agent claims nothing.
    slow = await s.monitor('slow')
    await eventually(async () => (await s.job(/** @type {any} */ (slow).jobId)).state === 'done', { timeoutMs: 30_000, what: 'the slow round stored' })
    assert.equal(runs, 1, 'measured once while its results wait')
    const waiting = await s.job(failing.jobId)
    assert.equal(waiting.state, 'leased', 'its lease went on past the lease time')
    assert.equal(waiting.attempts, 1)
    await mended()
    await eventually(async () => (await s.job(failing.jobId)).state === 'done', { timeoutMs: 10_000, what: 'the spooled results stored' })
    const { rows: [{ n }] } = await s.db.query('SELECT count(*)::int AS n FROM results WHERE job_id = $1', [failing.jobId])
    assert.equal(n, 2)
    assert.equal(runs, 1)
    const { rows: [health] } = await s.db.query('SELECT faults FROM agents WHERE id = $1', [s.agentRow.id])
    assert.equal(health.faults, 0, 'nothing charged to the agent')
  } finally {
    clearInterval(upkeep)
    await agent.stop()
    await s.close()
  }
})

test('an agent whose token is revoked while its round\'s results wait in the spool stops saying so, and keeps them', async () => {
  const s = await setup()
  const j = await s.monitor('revoked')
  /** @type {(v?: any) => void} */
  let release = () => {}
  const measured = new Promise((resolve) => { release = resolve })
  let runs = 0
  /** @type {Error | null} */
  let fatal = null
  const agent = s.agent(async () => {
    runs++
    await measured
    return round(new Date().toISOString())
  }, { onFatal: (/** @type {Error} */ err) => { fatal = err } })
  agent.start()
  try {
    await eventually(async () => runs === 1, { timeoutMs: 10_000, what: 'the round measuring' })
    await revokeAgent(s.db, s.agentRow.id)
    release()
    await eventually(async () => fatal !== null, { timeoutMs: 10_000, what: 'the agent stopped' })
    assert.match(/** @type {any} */ (fatal).message, /the API refuses this agent's token \(HTTP 401: unknown or revoked\)/)
    assert.ok(fs.existsSync(path.join(s.dataDir, 'spool', `job-${j.jobId}.json`)), 'its results stay in the spool')
  } finally {
    await agent.stop()
    await s.close()
  }
})

test('a round handed back (its agent lost) at a location where no agent runs any more fails as not claimed in time, keeping why, and is not measured days late', async () => {
  const s = await setup()
  try {
    const j = await s.monitor('orphan')
    const [claimed] = await claimJobs(s.db, { agentId: s.agentRow.id, locationId: 'local', limit: 1, leaseSeconds: 120 })
    assert.equal(claimed.id, j.jobId)
    // The agent died with it; its lease ran out long ago, and the round was due two days ago.
    await s.db.query("UPDATE jobs SET lease_expires_at = now() - interval '1 s', due_at = now() - interval '2 days', run_after = now() - interval '2 days' WHERE id = $1", [j.jobId])
    await s.db.query("UPDATE agents SET last_seen_at = now() - interval '2 days' WHERE id = $1", [s.agentRow.id])
    assert.deepEqual(await expireLeases(s.db), { requeued: 1, failed: 0 })
    assert.equal(await failStaleJobs(s.db), 1)
    const stale = await s.job(j.jobId)
    assert.equal(stale.state, 'failed')
    assert.equal(stale.last_error, 'attempt 1 failed (lease expired after attempt 1 (agent stopped or lost)), and the next was not claimed in time: no agent is running for location local')
    assert.deepEqual(await claimJobs(s.db, { agentId: s.agentRow.id, locationId: 'local', limit: 1, leaseSeconds: 120 }), [], 'a returning agent measures the present')

    // A round handed back by its agent waits out its back-off before it can be stale.
    const k = await s.monitor('retried')
    await claimJobs(s.db, { agentId: s.agentRow.id, locationId: 'local', limit: 1, leaseSeconds: 120 })
    await failJob(s.db, { jobId: k.jobId, agentId: s.agentRow.id, error: 'the browser did not start' })
    await s.db.query("UPDATE jobs SET due_at = now() - interval '2 days' WHERE id = $1", [k.jobId])
    assert.equal(await failStaleJobs(s.db), 0, 'its back-off is not over: not stale')
    await s.db.query("UPDATE jobs SET run_after = now() - interval '2 days' WHERE id = $1", [k.jobId])
    assert.equal(await failStaleJobs(s.db), 1)
    assert.equal((await s.job(k.jobId)).last_error, 'attempt 1 failed (the browser did not start), and the next was not claimed in time: no agent is running for location local')
  } finally {
    await s.close()
  }
})

test('a database out of disk space is a 503 to retry, not a 500, and /healthz says so: the agent keeps the round in its spool and claims nothing more until it is stored', async () => {
  const s = await setup()
  const first = await s.monitor('first')
  const mended = await refuseResults(s.db, { errcode: 'disk_full' })
  /** @type {number[]} */
  const measured = []
  const agent = s.agent(async (job) => {
    measured.push(job.id)
    return round(new Date().toISOString())
  })
  agent.start()
  try {
    await eventually(async () => measured.length > 0, { timeoutMs: 10_000, what: 'a round measured' })
    // What the agent is answered, sent as it sends it.
    const answer = await fetch(`${s.apiUrl}/api/v1/agent/jobs/${first.jobId}/results`, {
      method: 'POST', headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ results: round(new Date().toISOString()) })
    })
    assert.equal(answer.status, 503)
    assert.equal(answer.headers.get('retry-after'), '5')
    assert.deepEqual(await answer.json(), { statusCode: 503, error: 'Service Unavailable', message: 'the database is unreachable or out of disk space or memory; retry in 5 s', code: 'database_unavailable' })
    // The database still answers /healthz's read: the failed write says it is down.
    const health = await fetch(`${s.apiUrl}/healthz`)
    assert.equal(health.status, 503)
    const down = await health.json()
    assert.equal(down.database, 'out_of_resources')
    assert.match(down.message, /^database out of disk space or memory: reads answer, but a write \(results\) failed at .* \(could not extend file .*No space left on device\) and has not succeeded since$/)
    const second = await s.monitor('second')
    await new Promise((resolve) => setTimeout(resolve, 2000))
    assert.deepEqual(measured, [first.jobId], 'no other round is claimed while the API cannot store')
    assert.equal((await s.job(second.jobId)).state, 'queued')
    await mended()
    await eventually(async () => (await s.job(first.jobId)).state === 'done' && (await s.job(second.jobId)).state === 'done', { timeoutMs: 30_000, what: 'both rounds stored' })
    assert.deepEqual(measured, [first.jobId, second.jobId])
    assert.deepEqual(await (await fetch(`${s.apiUrl}/healthz`)).json(), { status: 'ok', version: down.version, database: 'ok' }, 'well again once a write succeeds')
  } finally {
    await agent.stop()
    await s.close()
  }
})

test('a measured round whose results cannot be written to the spool (a full disk) is handed back saying so, and no temporary file stays', async () => {
  const s = await setup()
  const full = await s.monitor('full')
  // The entry's temporary file a link to /dev/full: its write fails with
  // ENOSPC, "no space left on device".
  const spoolDir = path.join(s.dataDir, 'spool')
  fs.mkdirSync(spoolDir, { recursive: true })
  fs.symlinkSync('/dev/full', path.join(spoolDir, `job-${full.jobId}.json.${process.pid}.tmp`))
  const agent = s.agent(async () => round(new Date().toISOString()))
  agent.start()
  try {
    const failed = await s.reported(full.jobId, 'the round handed back')
    assert.equal(failed.state, 'queued')
    assert.match(failed.last_error, /^attempt 1 of 2 failed and runs again: round failed to run: measured, but its results could not be written to the spool: ENOSPC: no space left on device/)
    assert.deepEqual(fs.readdirSync(spoolDir).filter((f) => f.endsWith('.tmp')), [])
  } finally {
    await agent.stop()
    await s.close()
  }
})

test('a heavy page\'s round, over a MB of request lists, is stored through the single-round route', async () => {
  const s = await setup()
  const heavy = await s.monitor('heavy')
  const requests = Array.from({ length: 2500 }, (_, i) => ({ url: `https://${LAB_HOSTNAME}:8443/assets/${'x'.repeat(300)}-${i}.js`, protocol: 'h2', status: 200, bytes: 1000 }))
  const results = round(new Date().toISOString(), { details: { requests } })
  assert.ok(JSON.stringify({ results }).length > 1.5 * 1024 * 1024)
  const agent = s.agent(async () => results)
  agent.start()
  try {
    await eventually(async () => (await s.job(heavy.jobId)).state === 'done', { timeoutMs: 15_000, what: 'the heavy round stored' })
    const { rows } = await s.db.query("SELECT jsonb_array_length(details->'requests') AS n FROM results WHERE job_id = $1", [heavy.jobId])
    assert.deepEqual(rows.map((r) => r.n), [2500, 2500])
  } finally {
    await agent.stop()
    await s.close()
  }
})

test('a journey trial whose outcome the API refuses (a last frame over its limit) is answered again with the API\'s words: the editor reads why instead of waiting for it to expire', async () => {
  const s = await setup()
  // The last frame as 5 MB of base64: more than the API takes (4 MiB).
  const screenshot = 'A'.repeat(5 * 1024 * 1024)
  const steps = [{ index: 0, action: 'navigate', ok: true, status: 'ok', ms: 12 }]
  const agent = s.agent(async () => [], { runTrial: async () => ({ outcome: { status: 'ok', steps }, screenshot }) })
  agent.start()
  try {
    const { secret } = await createApiKey(s.db, { name: 'editor', role: 'write' })
    const api = (/** @type {string} */ p, /** @type {RequestInit} */ init = {}) => fetch(`${s.apiUrl}/api/v1${p}`, { ...init, headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' } })
    // The trial is taken once the agent has been seen at its location.
    const id = await eventually(async () => {
      const res = await api('/journeys/trials', { method: 'POST', body: JSON.stringify({ location_id: 'local', url: `https://${LAB_HOSTNAME}:8443/`, journey: { steps: [{ action: 'navigate', url: `https://${LAB_HOSTNAME}:8443/` }] } }) })
      return res.status === 202 && (await res.json()).id
    }, { timeoutMs: 10_000, what: 'the trial queued' })
    const trial = await eventually(async () => {
      const t = await (await api(`/journeys/trials/${id}`)).json()
      return t.state === 'done' && t
    }, { timeoutMs: 15_000, what: 'the trial answered' })
    assert.equal(trial.outcome.status, 'error')
    assert.match(trial.outcome.error, /^the API refused this trial's outcome, so its steps are not shown: POST \/trials\/\d+ → 400: .*screenshot/)
    assert.deepEqual(trial.outcome.steps, [])
    assert.equal(trial.screenshot ?? null, null)
  } finally {
    await agent.stop()
    await s.close()
  }
})

test('`h3lens agent` with a token the API refuses, or another location\'s, stops with an error saying so, instead of waiting for ever', async () => {
  const s = await setup()
  try {
    await s.db.query("INSERT INTO locations (id, name, region, kind) VALUES ('elsewhere', 'Elsewhere', 'Test', 'real') ON CONFLICT DO NOTHING")
    /** @param {string[]} args */
    const agent = (args) => new Promise((resolve) => {
      const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'h3lens.js'), 'agent', '--api-url', s.apiUrl, '--data-dir', s.dataDir, '--log-level', 'silent', ...args],
        { env: { ...process.env, H3LENS_FIREFOX: '' }, stdio: ['ignore', 'pipe', 'pipe'] })
      let stderr = ''
      child.stderr.on('data', (d) => { stderr += d })
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
      child.on('close', (code) => { clearTimeout(timer); resolve({ code, stderr }) })
    })
    const refused = /** @type {any} */ (await agent(['--token', 'not-a-token', '--location', 'local']))
    assert.equal(refused.code, 1, refused.stderr)
    assert.match(refused.stderr, /h3lens agent: the API refuses this agent's token \(HTTP 401: unknown or revoked\)/)
    const mismatch = /** @type {any} */ (await agent(['--token', s.token, '--location', 'elsewhere']))
    assert.equal(mismatch.code, 1, mismatch.stderr)
    assert.match(mismatch.stderr, /h3lens agent: the agent token belongs to location local, but the agent was started for location elsewhere \(--location\)/)
  } finally {
    await s.close()
  }
})
