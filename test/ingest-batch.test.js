// Batched ingest through the real API and PostgreSQL: many rounds in one
// request and one transaction, each with the single-round route's checks and
// its own answer, and an agent's spool flushed through it.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createTestApp } from './helpers/app.js'
import { createMonitor } from '../lib/store/monitors.js'
import { createAgentToken } from '../lib/store/agents.js'
import { createAgent } from '../agents/agent.js'
import { createSpool } from '../agents/spool.js'
import { ApiError, createApiClient } from '../agents/api-client.js'
import net from 'node:net'
import { startApi } from '../api/server.js'
import { loadConfig } from '../lib/runtime/config.js'
import { freePort } from '../dev/free-port.js'

let t
before(async () => { t = await createTestApp() })
after(async () => { await t.close() })

const auth = (token) => ({ authorization: `Bearer ${token}` })
const result = (mode, extra = {}) => ({ mode, status: 'ok', protocol_ok: true, observed_protocol: mode, ttfb_ms: 10, load_ms: 20, ...extra })
const post = (token, payload) => t.app.inject({ method: 'POST', url: '/api/v1/agent/results', headers: auth(token), payload })

/** `n` jobs leased to `agentId`, due a minute apart in the past. */
async function leased (monitorId, agentId, n) {
  const { rows } = await t.db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at, state, attempts, lease_owner, lease_expires_at)
     SELECT $1, 'local', now() - make_interval(mins => g), 'leased', 1, $2, now() + interval '1 hour'
       FROM generate_series(1, $3) g RETURNING id`, [monitorId, agentId, n])
  return rows.map((r) => r.id)
}

test('one request stores many rounds; each round is answered as the single-round route would, and a resubmission stores nothing', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/', interval_s: 60, locations: ['local'], paused: true }, { allowPrivateTargets: true })
  const me = await createAgentToken(t.db, { location: 'local' })
  const other = await createAgentToken(t.db, { location: 'local' })
  const mine = await leased(m.id, me.agent.id, 3)
  const [theirs] = await leased(m.id, other.agent.id, 1)
  const rounds = [
    { job_id: mine[0], results: [result('h2'), result('h3')] },
    { job_id: theirs, results: [result('h2'), result('h3')] },
    { job_id: mine[1], results: [result('h2', { ttfb_ms: 50, load_ms: 20 }), result('h3')] },
    { job_id: 987654321, results: [result('h2')] },
    { job_id: mine[2], results: [result('h2'), result('h3')] }
  ]
  const res = await post(me.token, { agent_version: 'test', rounds })
  assert.equal(res.statusCode, 200, res.body)
  const answers = res.json().rounds
  assert.deepEqual(answers.map((a) => a.job_id), rounds.map((r) => r.job_id), 'answers in the order sent')
  assert.deepEqual(answers[0], { job_id: mine[0], stored: 2, duplicates: 0 })
  assert.deepEqual([answers[1].error.statusCode, answers[1].error.code], [409, 'lease_lost'])
  assert.equal(answers[2].error.statusCode, 422)
  assert.match(answers[2].error.message, /rounds\.2\.results\.0\.ttfb_ms/)
  assert.equal(answers[3].error.statusCode, 404)
  assert.deepEqual(answers[4], { job_id: mine[2], stored: 2, duplicates: 0 })

  const { rows } = await t.db.query('SELECT id, state, (SELECT count(*)::int FROM results r WHERE r.job_id = j.id) AS n FROM jobs j WHERE monitor_id = $1 ORDER BY id', [m.id])
  assert.deepEqual(rows.map((r) => [r.id, r.state, r.n]), [[mine[0], 'done', 2], [mine[1], 'leased', 0], [mine[2], 'done', 2], [theirs, 'leased', 0]])
  const { rows: [queued] } = await t.db.query('SELECT count(*)::int AS n FROM rollup_pending p JOIN results r ON r.id = p.result_id WHERE r.monitor_id = $1', [m.id])
  assert.equal(queued.n, 4, 'stored results are queued for the rollups')

  const again = await post(me.token, { rounds: [rounds[0], rounds[4]] })
  assert.deepEqual(again.json().rounds, [{ job_id: mine[0], stored: 0, duplicates: 2 }, { job_id: mine[2], stored: 0, duplicates: 2 }])
})

test('a round is stored whole: a done round takes its own results again, but no result it did not have, by either route', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/whole', interval_s: 60, locations: ['local'], paused: true }, { allowPrivateTargets: true })
  const me = await createAgentToken(t.db, { location: 'local' })
  const [single, batched] = await leased(m.id, me.agent.id, 2)
  const one = (/** @type {number} */ job, /** @type {any[]} */ results) => t.app.inject({ method: 'POST', url: `/api/v1/agent/jobs/${job}/results`, headers: auth(me.token), payload: { results } })
  // A first answer with one arm only: stored, the round done.
  assert.deepEqual((await one(single, [result('h2')])).json(), { stored: 1, duplicates: 0 })
  assert.deepEqual((await post(me.token, { rounds: [{ job_id: batched, results: [result('h2')] }] })).json().rounds, [{ job_id: batched, stored: 1, duplicates: 0 }])
  // The other arm, or a repeat view, sent later is no part of that round.
  const late = await one(single, [result('h2'), result('h3')])
  assert.equal(late.statusCode, 409, late.body)
  assert.equal(late.json().code, 'round_done')
  assert.match(late.json().message, /job \d+ is done: its round's results were stored already, and a round's results are sent together; h3\/first\/page was not stored/)
  const [answer] = (await post(me.token, { rounds: [{ job_id: batched, results: [result('h2', { view: 'repeat' })] }] })).json().rounds
  assert.deepEqual([answer.error.statusCode, answer.error.code], [409, 'round_done'])
  // Sent again as it was, it is a duplicate, as after a lost answer.
  assert.deepEqual((await one(single, [result('h2')])).json(), { stored: 0, duplicates: 1 })
  const { rows } = await t.db.query('SELECT job_id, mode, view FROM results WHERE monitor_id = $1 ORDER BY job_id, mode, view', [m.id])
  assert.deepEqual(rows.map((r) => [r.job_id, r.mode, r.view]), [[single, 'h2', 'first'], [batched, 'h2', 'first']])
})

test('a batch naming a job twice, or of the wrong shape, is refused naming the field', async () => {
  const { token } = await createAgentToken(t.db, { location: 'local' })
  const twice = await post(token, { rounds: [{ job_id: 1, results: [result('h2')] }, { job_id: 1, results: [result('h3')] }] })
  assert.equal(twice.statusCode, 400)
  assert.match(twice.json().message, /rounds\.1\.job_id/)
  // A job id no job can have (beyond PostgreSQL's bigint, which Schemathesis
  // sent) is refused as out of range, naming it, not a database error.
  for (const jobId of [0, 65725957319596923944960, 2 ** 31]) {
    const huge = await post(token, { rounds: [{ job_id: jobId, results: [result('h2')] }] })
    assert.equal(huge.statusCode, 422, `${jobId}: ${huge.body}`)
    assert.equal(huge.json().field, 'rounds.0.job_id', huge.body)
  }
  const empty = await post(token, { rounds: [] })
  assert.equal(empty.statusCode, 400)
  assert.match(empty.json().message, /rounds/)
  const none = await t.app.inject({ method: 'POST', url: '/api/v1/agent/results', payload: { rounds: [] }, headers: { authorization: undefined } })
  assert.equal(none.statusCode, 401)
})

test('an agent flushes its spool through the batched route: every round stored once, refused ones dropped', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/', interval_s: 60, locations: ['local'], paused: true }, { allowPrivateTargets: true })
  const me = await createAgentToken(t.db, { location: 'local' })
  const other = await createAgentToken(t.db, { location: 'local' })
  const mine = await leased(m.id, me.agent.id, 60)
  const [theirs] = await leased(m.id, other.agent.id, 1)
  const spool = createSpool(fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-spool-batch-')))
  for (const id of [...mine, theirs]) await spool.put(id, { agent_version: 'test', results: [result('h2'), result('h3')] })

  const calls = []
  const client = {
    /** @param {string} url @param {any} payload */
    async call (url, payload) {
      calls.push(url)
      const res = await t.app.inject({ method: 'POST', url: `/api/v1/agent${url}`, headers: auth(me.token), payload })
      if (res.statusCode !== 200) throw new ApiError(res.json().message, res.statusCode, res.json().code)
      return res.json()
    },
    submitRounds (body) { return this.call('/results', body) },
    submit (jobId, body) { return this.call(`/jobs/${jobId}/results`, body) }
  }
  const log = t.log
  const agent = createAgent(/** @type {any} */ ({ client, spool, runJob: async () => [], log, version: 'test' }))
  assert.equal(await agent.flushSpool(), true)
  assert.deepEqual(calls, ['/results', '/results'], '61 rounds in two requests of at most 50')
  assert.deepEqual(await spool.list(), [], 'stored and refused rounds left the spool')
  const { rows: [stored] } = await t.db.query('SELECT count(*)::int AS n, count(DISTINCT job_id)::int AS jobs FROM results WHERE monitor_id = $1', [m.id])
  assert.deepEqual(stored, { n: 120, jobs: 60 })
  fs.rmSync(spool.dir, { recursive: true, force: true })
})

test('a spooled round the API fails on (500) stays in the spool without holding the agent up; an API it cannot reach does hold it', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/', interval_s: 60, locations: ['local'], paused: true }, { allowPrivateTargets: true })
  const me = await createAgentToken(t.db, { location: 'local' })
  const [poison, ...good] = await leased(m.id, me.agent.id, 3)
  const spool = createSpool(fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-spool-500-')))
  for (const id of [poison, ...good]) await spool.put(id, { agent_version: 'test', results: [result('h2'), result('h3')] })
  let reachable = true
  // The real API, but for one round it fails on, as it would on a fault of its own with those results.
  const client = {
    /** @param {string} url @param {any} payload */
    async call (url, payload) {
      if (!reachable) throw new ApiError('API unreachable at http://127.0.0.1:1: ECONNREFUSED', 0)
      const jobs = url === '/results' ? payload.rounds.map((r) => r.job_id) : [Number(url.split('/')[2])]
      if (jobs.includes(poison)) throw new ApiError(`POST ${url} → 500: Internal Server Error`, 500)
      const res = await t.app.inject({ method: 'POST', url: `/api/v1/agent${url}`, headers: auth(me.token), payload })
      if (res.statusCode !== 200) throw new ApiError(res.json().message, res.statusCode, res.json().code)
      return res.json()
    },
    submitRounds (body) { return this.call('/results', body) },
    submit (jobId, body) { return this.call(`/jobs/${jobId}/results`, body) }
  }
  const agent = createAgent(/** @type {any} */ ({ client, spool, runJob: async () => [], log: t.log, version: 'test' }))
  assert.equal(await agent.flushSpool(), true, 'the agent may go on claiming')
  assert.deepEqual((await spool.list()).map((e) => e.jobId), [poison], 'the round the API failed on stays, the others are stored')
  const { rows: [stored] } = await t.db.query('SELECT count(DISTINCT job_id)::int AS jobs FROM results WHERE monitor_id = $1', [m.id])
  assert.equal(stored.jobs, 2)
  assert.equal(await agent.flushSpool(), true, 'alone, through the single-round route, the same')
  reachable = false
  assert.equal(await agent.flushSpool(), false, 'an API it cannot reach: the agent waits')
  assert.deepEqual((await spool.list()).map((e) => e.jobId), [poison])
  fs.rmSync(spool.dir, { recursive: true, force: true })
})

/**
 * A TCP relay to `port` that passes what the client sends at `bytesPerS`
 * (what the server answers at once): an uplink that slow.
 * @param {number} port
 * @param {number} bytesPerS
 */
async function slowUplink (port, bytesPerS) {
  const tick = 100
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1')
    /** @type {Buffer[]} */
    const queue = []
    const timer = setInterval(() => {
      let budget = Math.floor(bytesPerS * tick / 1000)
      while (budget > 0 && queue.length) {
        const chunk = /** @type {Buffer} */ (queue.shift())
        const part = chunk.subarray(0, budget)
        if (part.length < chunk.length) queue.unshift(chunk.subarray(part.length))
        budget -= part.length
        upstream.write(part)
      }
    }, tick)
    client.on('data', (d) => queue.push(d))
    upstream.pipe(client)
    const end = () => { clearInterval(timer); client.destroy(); upstream.destroy() }
    client.on('close', end)
    upstream.on('close', end)
    client.on('error', end)
    upstream.on('error', end)
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)))
  return { url: `http://127.0.0.1:${/** @type {net.AddressInfo} */ (server.address()).port}`, close: () => new Promise((resolve) => server.close(resolve)) }
}

test('an agent on a slow uplink gets a spool of MBs through: its deadline grows with the body, and the API waits for it', async () => {
  const m = await createMonitor(t.db, { url: 'https://example.com/', interval_s: 60, locations: ['local'], paused: true }, { allowPrivateTargets: true })
  const me = await createAgentToken(t.db, { location: 'local' })
  const jobs = await leased(m.id, me.agent.id, 6)
  const spool = createSpool(fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-spool-slow-')))
  // A heavy page's request list: about 300 KB a round, 1.8 MB in all.
  const requests = Array.from({ length: 2500 }, (_, i) => ({ url: `https://example.com/asset-${i}.js`, protocol: 'h2', status: 200, bytes: 1000 + i }))
  for (const id of jobs) await spool.put(id, { agent_version: 'test', results: [result('h2', { details: { requests } }), result('h3', { details: { requests } })] })
  const api = await startApi({ db: t.db, config: loadConfig({ PORT: String(await freePort()), LOG_LEVEL: 'silent' }), log: t.log })
  // 96 KB/s: the 1.8 MB take about 19 s, past the 15 s a request was given whatever its size.
  const link = await slowUplink(Number(new URL(api.url).port), 96 * 1024)
  try {
    const client = createApiClient({ apiUrl: link.url, token: me.token })
    const agent = createAgent(/** @type {any} */ ({ client, spool, runJob: async () => [], log: t.log, version: 'test' }))
    const started = Date.now()
    assert.equal(await agent.flushSpool(), true, 'the API took the spool')
    const took = Date.now() - started
    assert.ok(took > 15_000, `the link is slower than the old deadline: ${took} ms`)
    assert.deepEqual(await spool.list(), [])
    const { rows: [stored] } = await t.db.query('SELECT count(*)::int AS n FROM results WHERE monitor_id = $1', [m.id])
    assert.equal(stored.n, 12)
  } finally {
    await link.close()
    await api.close()
    fs.rmSync(spool.dir, { recursive: true, force: true })
  }
})
