// What a team that points a real wptagent at h3lens sees, with the uploads
// an unmodified agent made (test/fixtures/wpt/*_h3l_*.zip) replayed through
// POST /work/workdone.php over HTTP, against the API and PostgreSQL: the
// TTFB of the navigation as its trace gives it (the QUIC handshake and the
// time before the agent's first activity counted), the agent's own figures
// where the upload has no trace, fast H3 pages stored, impossible values
// stored as error arms, refusals that say why in the log, the round and
// the location's page, and lab and private pages.
// run-tests: side — it replays recorded uploads; its one browser load is on a free port, and it times no page load
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import puppeteer from 'puppeteer-core'
import { buildApp } from '../api/app.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createMonitor } from '../lib/store/monitors.js'
import { createWptKey } from '../lib/store/wpt-keys.js'
import { createApiKey } from '../lib/store/api-keys.js'
import { switchesOf } from '../lib/measurement/wpt/job.js'
import { LAB_HOSTNAME } from '../lib/runtime/lab-host.js'
import { startOrigin } from '../lab/origin.js'
import { createTestDatabase } from './helpers/db.js'
import { startInternalService } from './helpers/receiver.js'
import { replayAgent, recordedRequests, recordedFile } from '../dev/fake-wptagent.js'
import { rewriteResultZip } from '../dev/wpt-zip.js'
import { freePort } from '../dev/free-port.js'
import { CHROMIUM_FLAGS, launchBrowser, collectPageErrors, useApiKey, waitUntilSettled } from '../dev/browser.js'

const REAL = {
  fastH2: recordedFile('164912_h3l_11_h2_1b0e26a7aa71.zip'),
  fastH3: recordedFile('164917_h3l_11_h3_47938c6a2d1a.zip'),
  slowH3: recordedFile('165154_h3l_16_h3_6586e6310e2f.zip'),
  slowH2: recordedFile('165205_h3l_16_h2_49881b46bb4b.zip')
}
// How the agent talks (its polls, pings and uploads); the zips are the trial's.
const RECORDS = recordedRequests('server-requests-run3.jsonl')
const LOCATION = 'wpt-fra'
const PC = 'wpt1'
const ORIGIN = 'https://localhost:18443'

/** @type {Awaited<ReturnType<typeof createTestDatabase>>} */
let database
/** @type {import('fastify').FastifyInstance} */
let app
let server
let key
let readKey
let dataDir
/** Every line the API logged. */
const lines = []

before(async () => {
  database = await createTestDatabase()
  const db = database.pool
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-wpt-real-'))
  // The trial measured a loopback origin: private targets allowed, as they must be for it.
  const config = loadConfig({ LOG_LEVEL: 'info', H3LENS_ALLOW_PRIVATE_TARGETS: 'true', H3LENS_DATA_DIR: dataDir })
  const log = createLogger({ logLevel: 'info', destination: new Writable({ write (c, _e, done) { lines.push(String(c)); done() } }) })
  app = await buildApp({ db, config, log })
  await upsertLocation(db, { id: LOCATION, name: 'WPT Frankfurt', region: 'Europe', kind: 'wpt' })
  key = (await createWptKey(db, { location: LOCATION })).key
  readKey = (await createApiKey(db, { name: 'read', role: 'read' })).secret
  await app.listen({ host: '127.0.0.1', port: 0 })
  server = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (app.server.address()).port}`
})

after(async () => {
  await app?.close()
  await database?.drop()
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
})

const arm = (job) => (job.addCmdLine.includes('--enable-quic') ? 'h3' : 'h2')
const get = async (p) => {
  const res = await fetch(`${server}${p}`, { headers: { authorization: `Bearer ${readKey}` } })
  assert.equal(res.status, 200, p)
  return res.json()
}
/** The log lines of one test id, parsed. */
const logged = (testId) => lines.map((l) => JSON.parse(l)).filter((l) => l.test === testId)

/** A monitor of `path` at the WPT location, its forced arms (the recordings' two), with one round due now. */
async function monitorWithRound (url) {
  const m = await createMonitor(database.pool, { url, interval_s: 60, locations: [LOCATION], modes: ['h2', 'h3'] }, { allowPrivateTargets: true })
  await database.pool.query("INSERT INTO jobs (monitor_id, location_id, due_at) VALUES ($1, $2, date_trunc('minute', now()))", [m.id, LOCATION])
  return m
}

/**
 * One round run by the replaying agent: each arm's test gets the recorded
 * upload `zips[arm]` (its test id the one h3lens handed out, `edit` applied,
 * the members `drop` names left out).
 */
async function replayRound (url, zips, { edit = {}, drop = {} } = {}) {
  const m = await monitorWithRound(url)
  const { jobs, sent } = await replayAgent({
    server, records: RECORDS, location: LOCATION, key, pc: PC,
    result: async (job) => ({ zip: await rewriteResultZip(zips[arm(job)], { testId: job['Test ID'], edit: edit[arm(job)], drop: drop[arm(job)] }) })
  })
  const results = (await get(`/api/v1/monitors/${m.id}/results?limit=10`)).items
  const { rows: [round] } = await database.pool.query('SELECT state, attempts, last_error FROM jobs WHERE monitor_id = $1', [m.id])
  const testOf = Object.fromEntries(jobs.map((j) => [arm(j), j['Test ID']]))
  const uploads = sent.filter((s) => s.url.includes('/workdone.php'))
  return { m, jobs, results, round, testOf, uploads, h2: results.find((r) => r.mode === 'h2'), h3: results.find((r) => r.mode === 'h3') }
}

/** Each phase within TTFB, and DNS and connect one after the other within it. */
function phasesAddUp (r) {
  for (const k of ['dns_ms', 'connect_ms', 'tls_ms']) assert.equal(typeof r[k], 'number', `${r.mode} ${k}`)
  assert.ok(r.dns_ms + r.connect_ms <= r.ttfb_ms, `${r.mode}: dns ${r.dns_ms} + connect ${r.connect_ms} <= ttfb ${r.ttfb_ms}`)
  assert.ok(r.tls_ms <= r.connect_ms, `${r.mode}: tls within connect`)
  assert.ok(r.ttfb_ms <= r.dcl_ms && r.dcl_ms <= r.load_ms, `${r.mode}: ttfb <= dcl <= load`)
}

test('round 16 (200 ms backend): H3 TTFB counts the QUIC handshake, so H3 is slower than H2 as the agent measured', async () => {
  const { h2, h3, round, uploads } = await replayRound(`${ORIGIN}/slow/`, { h2: REAL.slowH2, h3: REAL.slowH3 })
  assert.deepEqual(uploads.map((u) => u.status), [200, 200])
  assert.equal(round.state, 'done')
  assert.deepEqual([h2.status, h2.observed_protocol, h3.status, h3.observed_protocol], ['ok', 'h2', 'ok', 'h3'])
  // From the navigation's start to the document's first byte, as the trace
  // gives them (the agent's own figures, from its first activity: 297 and 252).
  assert.equal(h3.ttfb_ms, 312.2, 'H3 TTFB')
  assert.equal(h2.ttfb_ms, 260.1, 'H2 TTFB')
  assert.ok(h3.ttfb_ms > h2.ttfb_ms, 'the stored answer is the measured one: H3 slower in this round')
  // The connection set-up as Chromium's own timing in the trace gives it, as an h3lens agent's
  // Navigation Timing does: on QUIC the handshake (the agent's ssl_ms: 80), on H2 TCP + TLS
  // from the request's start (the agent's own: 39, counting the part before it).
  assert.equal(h3.connect_ms, 79.8, 'connect on QUIC is the handshake')
  assert.equal(h3.tls_ms, 79.8)
  assert.equal(h2.connect_ms, 27.5, 'TCP + TLS')
  phasesAddUp(h2)
  phasesAddUp(h3)
  const detail = await get(`/api/v1/results/${h3.id}`)
  assert.equal(detail.details.wpt.page_ttfb_ms, 297)
  assert.deepEqual([detail.details.wpt.ttfb_check.source, detail.details.wpt.ttfb_check.trace_ttfb_ms], ['trace', 312.2])
  assert.equal(detail.details.wpt.ttfb_check.page_ttfb_is_navigation, true, 'the agent\'s own page TTFB kept beside it')
  assert.ok(!(h3.notes ?? []).some((n) => n.code === 'wpt_page_ttfb'), 'no note: the trace\'s figure is stored')
})

test('round 11 (static page): the fast H3 upload is stored, in one attempt, with the TTFB of its navigation, which the agent\'s own put on the wrong side of H2', async () => {
  const { h2, h3, round, uploads } = await replayRound(`${ORIGIN}/`, { h2: REAL.fastH2, h3: REAL.fastH3 })
  assert.deepEqual(uploads.map((u) => u.status), [200, 200], uploads.map((u) => u.body).join('\n'))
  assert.deepEqual([round.state, round.attempts], ['done', 1], 'not re-run')
  assert.equal(h3.status, 'ok')
  // The agent's clock starts at the first activity it saw: the H2 arm's TCP
  // connect, but the H3 arm's request, 19 ms into its navigation (the QUIC
  // handshake is on the agent's net log's clock). Its own figures, 41 ms for
  // H3 and 51 for H2, made H3 10 ms faster; from the navigation's start H3
  // is 3.8 ms slower.
  assert.equal(h3.ttfb_ms, 59.9, 'H3 TTFB')
  assert.equal(h2.ttfb_ms, 56.1, 'H2 TTFB')
  const checks = await Promise.all([h2, h3].map(async (r) => (await get(`/api/v1/results/${r.id}`)).details.wpt.ttfb_check))
  assert.deepEqual(checks.map((c) => [c.source, c.page_ttfb_ms]), [['trace', 51], ['trace', 41]])
  assert.equal(h3.connect_ms, 30)
  assert.ok(![...h2.notes ?? [], ...h3.notes ?? []].some((n) => n.code.startsWith('wpt_')), 'no note: the trace\'s figures are stored')
  phasesAddUp(h2)
  phasesAddUp(h3)
  // The agent sent one screenshot (1_screen.jpg), and no video: a one-frame filmstrip, no visual metrics.
  for (const r of [h2, h3]) {
    const film = await get(`/api/v1/results/${r.id}/filmstrip`)
    assert.equal(film.kind, 'wpt_screen')
    assert.equal(film.frames.length, 1)
    assert.equal(film.frames[0].t_ms, r.load_ms)
    assert.equal(r.speed_index_ms, null, 'no video, so no Speed Index')
  }
})

const noTrace = (/** @type {string} */ name) => name.endsWith('_trace.json.gz')

test('without a trace, an agent page TTFB of the same navigation that disagrees with the base request is stored, with a note', async () => {
  // The handshake's duration halved: the base request now says 297 − (81 − 40) = 256 ms, the agent's page data still 297.
  const halve = (d) => { d.requests[d.pageData.final_base_page_request].ssl_ms = 40 }
  const { h3 } = await replayRound(`${ORIGIN}/slow/`, { h2: REAL.slowH2, h3: REAL.slowH3 }, { edit: { h3: halve }, drop: { h3: noTrace } })
  assert.equal(h3.status, 'ok')
  assert.equal(h3.ttfb_ms, 297, 'the agent\'s figure')
  assert.equal((await get(`/api/v1/results/${h3.id}`)).details.wpt.ttfb_check.source, 'agent')
  assert.ok((h3.notes ?? []).some((n) => n.code === 'wpt_ttfb_agent_clock'), 'the result says its TTFB is on the agent\'s clock')
  const note = (h3.notes ?? []).find((n) => n.code === 'wpt_page_ttfb')
  assert.ok(note, JSON.stringify(h3.notes))
  assert.match(note.message, /TTFB of 256 ms, more than 5 ms from the agent's own page TTFB of 297 ms/)
})

test('values that cannot be true make that arm an error result with the reason; the round is data, logged and shown', async () => {
  // DOMContentLoaded and the load event before the first byte.
  const early = (d) => Object.assign(d.pageData, { domContentLoadedEventStart: 15, loadTime: 20 })
  const { h2, h3, round, testOf, uploads } = await replayRound(`${ORIGIN}/`, { h2: REAL.fastH2, h3: REAL.fastH3 }, { edit: { h3: early } })
  assert.deepEqual(uploads.map((u) => u.status), [200, 200], 'stored, not refused')
  assert.deepEqual([round.state, round.attempts], ['done', 1], 'not re-run until skipped')
  assert.equal(h2.status, 'ok')
  assert.equal(h3.status, 'error')
  assert.equal(h3.error, 'implausible timings: ttfb_ms (59.9 ms) is larger than dcl_ms (15 ms), which cannot happen in one page load')
  assert.equal(h3.ttfb_ms, null, 'no impossible value reaches a percentile')
  const [line] = logged(testOf.h3)
  assert.equal(line.location, LOCATION)
  assert.equal(line.agent, PC)
  assert.match(line.reason, /ttfb_ms \(59\.9 ms\) is larger than dcl_ms/)
  const { items } = await get('/api/v1/locations')
  const refusal = items.find((l) => l.id === LOCATION).last_refusal
  assert.equal(refusal.test_id, testOf.h3)
  assert.equal(refusal.status, 200)
  assert.match(refusal.reason, /^stored as an error: implausible timings: ttfb_ms/)
})

test('without a trace, a first byte before its navigation began is an error arm too, with both times', async () => {
  const backwards = (d) => Object.assign(d.requests[d.pageData.final_base_page_request], { dns_start: -1, connect_start: -1, ssl_start: -1, ttfb_end: 20 })
  const { h2, h3, round } = await replayRound(`${ORIGIN}/`, { h2: REAL.fastH2, h3: REAL.fastH3 }, { edit: { h3: backwards }, drop: { h3: noTrace } })
  assert.deepEqual([round.state, h2.status, h3.status], ['done', 'ok', 'error'])
  assert.equal(h3.error, 'implausible timings: the base-page request\'s first byte (20 ms) comes before its navigation began (30 ms)')
})

test('a refused upload says why: in the log, in the round\'s error and on the location\'s page', async () => {
  const m = await monitorWithRound(`${ORIGIN}/`)
  const { jobs, sent } = await replayAgent({
    server, records: RECORDS, location: LOCATION, key, pc: PC, maxJobs: 1,
    // The upload is cut short: not a zip h3lens can read.
    result: async (job) => ({ zip: (await rewriteResultZip(REAL.fastH3, { testId: job['Test ID'] })).subarray(0, 1000) })
  })
  const testId = jobs[0]['Test ID']
  assert.equal(sent.find((s) => s.url.includes('/workdone.php'))?.status, 400)

  const [line] = logged(testId)
  assert.equal(line.msg, 'WPT upload refused')
  assert.deepEqual([line.location, line.agent, line.status], [LOCATION, PC, 400])
  assert.match(line.reason, /result\.zip: not a readable zip/)

  // The agent polled on after its upload, as it does; the round keeps the refusal's reason.
  const { rows: [round] } = await database.pool.query('SELECT state, attempts, last_error FROM jobs WHERE monitor_id = $1', [m.id])
  assert.deepEqual([round.state, round.attempts], ['queued', 1], 'this attempt failed; the round is retried')
  assert.match(round.last_error, new RegExp(`WPT agent ${PC}: the upload of test ${testId} was refused \\(400\\): result\\.zip: not a readable zip`))
  assert.doesNotMatch(round.last_error, /asked for new work/)

  const { items } = await get('/api/v1/locations')
  const refusal = items.find((l) => l.id === LOCATION).last_refusal
  assert.deepEqual([refusal.agent, refusal.test_id, refusal.status], [PC, testId, 400])
  assert.match(refusal.reason, /not a readable zip/)
  assert.ok(Date.now() - Date.parse(refusal.at) < 60_000)

  const chromium = await launchBrowser()
  try {
    const page = await chromium.browser.newPage()
    const errors = collectPageErrors(page)
    await useApiKey(page, readKey)
    await page.goto(`${server}/#/locations`, { waitUntil: 'networkidle0' })
    await waitUntilSettled(page)
    const card = await page.$eval(`#loc-${LOCATION}`, (h) => /** @type {HTMLElement} */ (h.closest('.loc-card')).innerText)
    assert.match(card, /Last refused upload \(HTTP 400\)/)
    assert.match(card, new RegExp(`from agent ${PC}, test ${testId}`))
    assert.match(card, /result\.zip: not a readable zip/)
    assert.deepEqual(errors, [])
  } finally {
    await chromium.close()
  }
  await database.pool.query("UPDATE jobs SET state = 'cancelled' WHERE monitor_id = $1", [m.id])
})

test('a private target is sent while H3LENS_ALLOW_PRIVATE_TARGETS allows it, and otherwise fails its round with the reason', async () => {
  const strictLines = []
  const strict = await buildApp({
    db: database.pool,
    config: loadConfig({ LOG_LEVEL: 'info', H3LENS_DATA_DIR: dataDir }),
    log: createLogger({ logLevel: 'info', destination: new Writable({ write (c, _e, done) { strictLines.push(String(c)); done() } }) })
  })
  try {
    // Saved while private targets were allowed (or while the name resolved elsewhere).
    const m = await monitorWithRound(`${ORIGIN}/`)
    const poll = (a) => a.inject({ url: `/work/getwork.php?${new URLSearchParams({ f: 'json', location: LOCATION, pc: PC, key })}` })
    const { rows: [faultsBefore] } = await database.pool.query('SELECT faults, last_fault FROM agents WHERE location_id = $1 AND name = $2', [LOCATION, PC])
    const refused = await poll(strict)
    assert.deepEqual([refused.statusCode, refused.body], [200, ''], 'no job')
    const { rows: [round] } = await database.pool.query('SELECT state, last_error FROM jobs WHERE monitor_id = $1', [m.id])
    assert.equal(round.state, 'queued')
    assert.match(round.last_error, /^attempt 1 of \d+ failed and runs again: WPT location wpt-fra cannot measure https:\/\/localhost:18443\/: url points at localhost, a loopback name, which monitors may not target/)
    assert.ok(strictLines.some((l) => /"url":"https:\/\/localhost:18443\/".*"reason":"url points at localhost/.test(l)), strictLines.join(''))
    // The server's refusal is no fault of the agent's: its health on the Locations page stays as it was.
    const { rows: [agent] } = await database.pool.query('SELECT faults, last_fault FROM agents WHERE location_id = $1 AND name = $2', [LOCATION, PC])
    assert.deepEqual([agent.faults, agent.last_fault], [faultsBefore.faults, faultsBefore.last_fault])
    assert.doesNotMatch(String(agent.last_fault), /cannot measure/)

    await database.pool.query('UPDATE jobs SET run_after = now() WHERE monitor_id = $1', [m.id])
    const sent = await poll(app)
    assert.equal(JSON.parse(sent.body).url, `${ORIGIN}/`, 'allowed: the round is sent')
    await database.pool.query("UPDATE jobs SET state = 'cancelled' WHERE monitor_id = $1", [m.id])
  } finally {
    await strict.close()
  }
})

test('a lab page: the job carries the lab\'s resolver rule and certificate pin, the agent\'s Chromium loads it over H3 and reaches nothing else of the agent\'s loopback', async () => {
  const log = createLogger({ logLevel: 'silent' })
  const origin = await startOrigin({ dataDir, port: await freePort(), log })
  // A stand-in for the agent's own start page at 127.0.0.1:8888, the one port of its loopback a lab page's Chromium reaches.
  const startPage = http.createServer((_q, s) => s.end('<title>start</title>')).listen(8888, '127.0.0.1')
  await new Promise((resolve, reject) => startPage.once('listening', resolve).once('error', (err) => reject(new Error(`this test stands in for the agent's start page on 127.0.0.1:8888: ${err.message}`))))
  // What else listens on the agent's loopback.
  const internal = await startInternalService()
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-wpt-chromium-'))
  let browser
  try {
    const statePath = path.join(dataDir, 'lab', 'state.json')
    // Emulated regions only: the origin is inside namespaces a WPT agent does not reach.
    fs.writeFileSync(statePath, JSON.stringify({ hostname: LAB_HOSTNAME, port: origin.port, spki: origin.spki, locations: { 'lab-eu': { address: '10.213.1.1', netns: 'h3lens-lab-eu' } } }))
    const m = await monitorWithRound(`${origin.baseUrl}/page-15k.html`)
    const poll = () => fetch(`${server}/work/getwork.php?${new URLSearchParams({ f: 'json', location: LOCATION, pc: PC, key })}`).then((r) => r.text())
    assert.equal(await poll(), '', 'no job the agent could not load')
    const { rows: [failed] } = await database.pool.query('SELECT last_error FROM jobs WHERE monitor_id = $1', [m.id])
    assert.match(failed.last_error, /cannot measure https:\/\/lab\.h3lens\.test:\d+\/page-15k\.html: no lab reachable from outside its namespaces/)

    // The unshaped lab, as `h3lens start` or `h3lens lab --lab local` leaves it.
    fs.writeFileSync(statePath, JSON.stringify({ hostname: LAB_HOSTNAME, port: origin.port, spki: origin.spki, locations: { local: { address: '127.0.0.1', netns: null } } }))
    await database.pool.query('UPDATE jobs SET run_after = now() WHERE monitor_id = $1', [m.id])
    const lab = [`--ignore-certificate-errors-spki-list=${origin.spki}`,
      `--host-resolver-rules=MAP lab.h3lens.test:${origin.port} 127.0.0.1, MAP lab2.h3lens.test:${origin.port} 127.0.0.1, MAP 127.0.0.1:8888 127.0.0.1, MAP * ~NOTFOUND`,
      '--webrtc-ip-handling-policy=disable_non_proxied_udp']
    let job = JSON.parse(await poll())
    if (arm(job) === 'h2') {
      assert.deepEqual(switchesOf(job.addCmdLine), ['--disable-quic', ...lab])
      // Say the H2 arm came back, and take the H3 one.
      await database.pool.query("UPDATE wpt_tests SET state = 'done' WHERE test_id = $1", [job['Test ID']])
      job = JSON.parse(await poll())
    }
    const switches = switchesOf(job.addCmdLine)
    assert.deepEqual(switches, ['--enable-quic', `--origin-to-force-quic-on=${LAB_HOSTNAME}:${origin.port}`, ...lab])

    // Chromium as wptagent starts it: the agent's own resolver rules and
    // features first, then addCmdLine; the last repeated switch wins.
    browser = await puppeteer.launch({
      executablePath: process.env.H3LENS_CHROMIUM ?? '/usr/bin/chromium',
      args: [...CHROMIUM_FLAGS, `--user-data-dir=${userDataDir}`, '--host-resolver-rules=MAP update.googleapis.com 127.0.0.1,MAP clients1.google.com 127.0.0.1',
        '--disable-features=Translate,OptimizationHints', ...switches]
    })
    const page = await browser.newPage()
    const start = await page.goto('http://127.0.0.1:8888/')
    assert.equal(start?.status(), 200, 'the agent\'s start page still loads')
    const res = await page.goto(job.url, { waitUntil: 'load' })
    assert.equal(res?.status(), 200)
    assert.equal(await page.evaluate(() => /** @type {PerformanceNavigationTiming} */ (performance.getEntriesByType('navigation')[0]).nextHopProtocol), 'h3')
    // A lab page's script (a journey's eval step, say) tries the agent's other loopback ports, by the lab name and by address.
    const tried = await page.evaluate((urls) => Promise.all(urls.map((u) => fetch(u, { mode: 'no-cors' }).then(() => `${u} reached`, () => `${u} refused`))),
      [`https://${LAB_HOSTNAME}:${internal.port}/`, `https://127.0.0.1:${internal.port}/`, `https://localhost:${internal.port}/`])
    assert.ok(tried.every((t) => t.endsWith('refused')), tried.join(', '))
    assert.deepEqual(internal.connections, [], 'no other service on the agent\'s loopback was reached')
    await database.pool.query("UPDATE jobs SET state = 'cancelled' WHERE monitor_id = $1", [m.id])
  } finally {
    await browser?.close()
    startPage.close()
    internal.close()
    await origin.stop()
    fs.rmSync(userDataDir, { recursive: true, force: true })
  }
})
