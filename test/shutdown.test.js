// Clean shutdown as a terminal delivers it: SIGTERM to the whole process
// group of `h3lens start` with emulated regions, while an agent is in the
// middle of a page load. The agents finish or give back their rounds before
// the lab's links go down, so no result is stored because of the shutdown.
// run-tests: side — it waits for a round, then a shutdown; its lab is named after its own data dir, and it times no page load
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createTestDatabase } from './helpers/db.js'
import { eventually } from './helpers/process.js'
import { freePort } from '../dev/free-port.js'
import { netnsSupport } from '../lab/netns.js'

const support = await netnsSupport()

test('SIGTERM to the process group mid-round stores no false error and leaves no job leased', { skip: !support.ok && support.reason }, async () => {
  const db = await createTestDatabase()
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-shutdown-'))
  const port = await freePort()
  // detached: its own process group, which the test signals as a whole,
  // the way Ctrl-C or `docker stop` of a shell wrapper does.
  const child = spawn(process.execPath, ['bin/h3lens.js', 'start', '--lab', 'regions', '--no-seed'], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DATABASE_URL: db.url, PORT: String(port), H3LENS_DATA_DIR: dataDir, H3LENS_LAB_PORT: String(await freePort()), LOG_LEVEL: 'info' }
  })
  let output = ''
  child.stdout.on('data', (d) => { output += d })
  child.stderr.on('data', (d) => { output += d })
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  let stopped = false
  try {
    await eventually(() => /dashboard\s+http/.test(output) || child.exitCode !== null, { timeoutMs: 90000, what: 'the start banner' })
    assert.match(output, /dashboard\s+http/, output.slice(-3000))
    const labPort = /lab\s+https:\/\/lab\.h3lens\.test:(\d+)/.exec(output)?.[1]
    const key = fs.readFileSync(path.join(dataDir, 'admin-key'), 'utf8').trim()
    // The slowest region and the largest page, viewed twice: a round is
    // several seconds of page loads through the emulated link.
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/monitors`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `https://lab.h3lens.test:${labPort}/page-1m.html`, interval_s: 10, locations: ['lab-asia'], repeat_view: true })
    })
    const body = await res.json()
    assert.equal(res.status, 201, JSON.stringify(body))
    const monitorId = body.id
    // One full round first, so the browsers are warm and the next round is
    // page loads from its first second.
    await eventually(async () => ((await db.pool.query("SELECT 1 FROM jobs WHERE monitor_id = $1 AND state = 'done'", [monitorId])).rowCount ?? 0) > 0, { timeoutMs: 180_000, what: 'a first round' })
    await eventually(async () => ((await db.pool.query("SELECT 1 FROM jobs WHERE monitor_id = $1 AND state = 'leased'", [monitorId])).rowCount ?? 0) > 0, { timeoutMs: 30000, intervalMs: 100, what: 'a round in flight' })
    await sleep(600)
    const { rows: doneBefore } = await db.pool.query("SELECT id FROM jobs WHERE monitor_id = $1 AND state = 'done'", [monitorId])
    process.kill(-(/** @type {number} */ (child.pid)), 'SIGTERM')
    stopped = true
    const { code } = await exited
    assert.equal(code, 0, output.slice(-3000))

    // The rounds done before the signal ran through an emulated link on a
    // machine busy with other tests, and can fail on their own; every round
    // after them is one the shutdown could have spoilt.
    const { rows: failed } = await db.pool.query("SELECT status, error FROM results WHERE monitor_id = $1 AND job_id <> ALL($2) AND status <> 'ok'", [monitorId, doneBefore.map((r) => r.id)])
    assert.deepEqual(failed, [], 'no result stored because of the shutdown')
    const { rows: leased } = await db.pool.query("SELECT id FROM jobs WHERE monitor_id = $1 AND state = 'leased'", [monitorId])
    assert.deepEqual(leased, [], 'the round in flight was finished or given back')
    assert.doesNotMatch(output, /linkem exited unexpectedly/)
  } finally {
    if (!stopped) try { process.kill(-(/** @type {number} */ (child.pid)), 'SIGTERM') } catch {}
    await exited
    await db.drop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
})
