// An agent in another region, as deployed: the API in one network namespace
// serving HTTPS with a certificate from a private CA, a separately started
// `h3lens agent` (token from the CLI) in another, joined only by a linkem
// WAN link with 40 ms RTT and 2 % loss. Results flow over TLS; the agent
// trusts the API through H3LENS_CA_FILE and refuses it without; and a 30 s
// outage of the link while a round is in hand leaves the results in the
// agent's spool until the link is back, then stores them exactly once.
// run-tests: side — it waits through a 30 s outage; its lab has a prefix of its own, and it times no page load
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync, execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createTestDatabase } from './helpers/db.js'
import { eventually } from './helpers/process.js'
import { labUp, labDown, netnsSupport } from '../lab/netns.js'
import { startOrigin } from '../lab/origin.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createMonitor } from '../lib/store/monitors.js'
import { LAB_HOSTNAME } from '../lib/runtime/lab-host.js'

const support = await netnsSupport()
// Own prefix: other tests and a running lab keep theirs.
const PREFIX = 'h3wan'
const LOCATION = 'wan-test'
const API_PORT = 9443
const ORIGIN_PORT = 8443

/** A private CA and a certificate it signed for the API's address. */
function makeCertificates (dir, ip) {
  const openssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
  openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2', '-subj', '/CN=h3lens test CA',
    '-keyout', 'ca.key', '-out', 'ca.pem')
  openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=h3lens api', '-keyout', 'api.key', '-out', 'api.csr')
  fs.writeFileSync(path.join(dir, 'ext.cnf'), `subjectAltName=IP:${ip}\nextendedKeyUsage=serverAuth\n`)
  openssl('x509', '-req', '-in', 'api.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'ext.cnf', '-out', 'api.pem')
  return { ca: path.join(dir, 'ca.pem'), cert: path.join(dir, 'api.pem'), key: path.join(dir, 'api.key') }
}

/** `node bin/h3lens.js …` inside a namespace, collecting output. */
function inNamespace (ns, args, env) {
  const child = spawn('ip', ['netns', 'exec', ns, process.execPath, 'bin/h3lens.js', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (d) => { output += d })
  child.stderr.on('data', (d) => { output += d })
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
  return { child, exited, get output () { return output } }
}

/** The same database through its unix socket: the namespaces have no route to the host's loopback. */
function socketUrl (url) {
  const u = new URL(url)
  u.hostname = 'localhost'
  u.searchParams.set('host', '/tmp')
  u.searchParams.set('port', u.port)
  return u.toString()
}

test('an agent across a lossy WAN link submits over verified TLS, and its spool survives a 30 s outage', { skip: !support.ok && support.reason }, async () => {
  const db = await createTestDatabase()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-wan-'))
  const runDir = path.join(dir, 'run')
  const agentDir = path.join(dir, 'agent')
  /** @type {ReturnType<typeof inNamespace>[]} */
  const processes = []
  let origin
  try {
    const lab = await labUp({
      prefix: PREFIX,
      runDir,
      profiles: [{ name: 'wan', region: 'Test', rtt_ms: 40, jitter_ms: 0, loss_pct: 2, loss_model: 'bernoulli', down_kbps: 20_000, up_kbps: 20_000, queue_packets: 200, seed: 5 }]
    })
    const [wan] = lab.locations
    const apiAddress = wan.originAddress
    const certs = makeCertificates(dir, apiAddress)

    // The page the agent measures is in its own namespace: only the API
    // traffic crosses the WAN link, so the outage hits submissions, not loads.
    origin = await startOrigin({ dataDir: agentDir, port: ORIGIN_PORT, netns: wan.ns })
    fs.mkdirSync(path.join(agentDir, 'lab'), { recursive: true })
    fs.writeFileSync(path.join(agentDir, 'lab', 'state.json'), JSON.stringify({
      hostname: LAB_HOSTNAME, port: ORIGIN_PORT, spki: origin.spki, locations: { [LOCATION]: { address: '127.0.0.1', netns: null, profile: wan.profile } }
    }))
    await upsertLocation(db.pool, { id: LOCATION, name: 'WAN test', region: 'Test', kind: 'lab', profile: { rtt_ms: 40 } })
    const tokenRun = spawnSync(process.execPath, ['bin/h3lens.js', 'agents', 'token', '--location', LOCATION], { encoding: 'utf8', env: { ...process.env, DATABASE_URL: db.url, LOG_LEVEL: 'warn' } })
    assert.equal(tokenRun.status, 0, tokenRun.stderr)
    const token = tokenRun.stdout.trim()

    const api = inNamespace(lab.originNs, ['api'], {
      DATABASE_URL: socketUrl(db.url), HOST: apiAddress, PORT: String(API_PORT), H3LENS_TLS_CERT: certs.cert, H3LENS_TLS_KEY: certs.key,
      H3LENS_DATA_DIR: path.join(dir, 'api'), LOG_LEVEL: 'info'
    })
    processes.push(api)
    await eventually(() => /api listening/.test(api.output) || api.child.exitCode !== null, { what: 'the API' })
    assert.match(api.output, new RegExp(`"url":"https://${apiAddress.replace(/\./g, '\\.')}:${API_PORT}"`), api.output.slice(-2000))

    const agentEnv = { H3LENS_API_URL: `https://${apiAddress}:${API_PORT}`, H3LENS_AGENT_TOKEN: token, H3LENS_LOCATION: LOCATION, H3LENS_DATA_DIR: agentDir, LOG_LEVEL: 'info', DATABASE_URL: '' }
    // Without the CA the agent does not talk to the API at all.
    const untrusting = inNamespace(wan.ns, ['agent'], { ...agentEnv, H3LENS_DATA_DIR: path.join(dir, 'untrusting') })
    processes.push(untrusting)
    await eventually(() => /API unreachable at https:.*UNABLE_TO_VERIFY_LEAF_SIGNATURE/.test(untrusting.output), { what: 'a refused certificate', timeoutMs: 30000 })
    untrusting.child.kill('SIGTERM')
    await untrusting.exited

    const agent = inNamespace(wan.ns, ['agent'], { ...agentEnv, H3LENS_CA_FILE: certs.ca })
    processes.push(agent)
    const monitor = await createMonitor(db.pool, { url: `https://${LAB_HOSTNAME}:${ORIGIN_PORT}/page-15k.html`, interval_s: 3600, locations: [LOCATION], modes: ['h2', 'h3'], paused: true })
    await db.pool.query('UPDATE monitors SET paused = false WHERE id = $1', [monitor.id])
    const queueRound = async () => (await db.pool.query('INSERT INTO jobs (monitor_id, location_id, due_at) VALUES ($1, $2, now()) RETURNING id', [monitor.id, LOCATION])).rows[0].id
    const resultsOf = async (jobId) => (await db.pool.query('SELECT mode, status, observed_protocol FROM results WHERE job_id = $1 ORDER BY mode', [jobId])).rows

    const first = await queueRound()
    const flowed = await eventually(async () => { const r = await resultsOf(first); return r.length === 2 && r }, { what: 'results over TLS', timeoutMs: 90000 })
    assert.deepEqual(flowed, [{ mode: 'h2', status: 'ok', observed_protocol: 'h2' }, { mode: 'h3', status: 'ok', observed_protocol: 'h3' }], agent.output.slice(-3000))

    // The link goes down as soon as the agent holds the next round: it
    // measures it, cannot submit, and keeps the results in its spool.
    const second = await queueRound()
    // Leased in the database is not enough: the claim's answer must have
    // crossed the link too, or the agent never holds the round.
    await eventually(() => new RegExp(`"job":${second},[^\n]*"msg":"measuring round"`).test(agent.output), { what: 'the round claimed by the agent', intervalMs: 50 })
    execFileSync('ip', ['-n', wan.ns, 'link', 'set', wan.device, 'down'])
    const downAt = Date.now()
    const spoolDir = path.join(agentDir, 'spool', LOCATION)
    await eventually(() => fs.existsSync(spoolDir) && fs.readdirSync(spoolDir).length > 0, { what: 'results in the spool', timeoutMs: 25000 })
    assert.deepEqual(await resultsOf(second), [], 'nothing arrives while the link is down')
    await sleep(Math.max(0, 30000 - (Date.now() - downAt)))
    execFileSync('ip', ['-n', wan.ns, 'link', 'set', wan.device, 'up'])

    const late = await eventually(async () => { const r = await resultsOf(second); return r.length === 2 && r }, { what: 'spooled results after the outage', timeoutMs: 90000 })
    assert.deepEqual(late.map((r) => [r.mode, r.status]), [['h2', 'ok'], ['h3', 'ok']])
    await eventually(() => fs.readdirSync(spoolDir).length === 0, { what: 'an empty spool' })
    const { rows: [{ n }] } = await db.pool.query('SELECT count(*)::int AS n FROM results WHERE monitor_id = $1', [monitor.id])
    assert.equal(n, 4, 'each round stored exactly once')
  } finally {
    for (const p of processes) if (p.child.exitCode === null) p.child.kill('SIGTERM')
    await Promise.all(processes.map((p) => p.exited))
    await origin?.stop()
    await labDown({ prefix: PREFIX, runDir })
    await db.drop()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
