// A journey end to end, in the lab's namespaces: a real agent runs a
// three-step journey through the lab shop (log in, then search) in Chromium
// inside an emulated location, Caddy serves the shop in the origin
// namespace, and the answer is read through the API as a user would:
//   - each named step has its results in both arms, over the arm's protocol,
//     with its duration, its navigation's timings, its requests and
//     connection reuse, and a verdict per step in the comparison;
//   - the auto arm runs the journey as a first and a returning visit;
//   - a wrong selector fails the run at that step, named, in both arms;
//   - the password typed as a secret is in no API answer, export or log line.
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, before, describe, test } from 'node:test'
import { createTestDatabase } from './helpers/db.js'
import { runRounds as runLabRounds } from './helpers/rounds.js'
import { resultOf } from './helpers/results.js'
import { JOURNEY_LIMITS } from '../lib/measurement/probes/journey.js'
import { freePort } from '../dev/free-port.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createAgentToken } from '../lib/store/agents.js'
import { createApiKey } from '../lib/store/api-keys.js'
import { startApi } from '../api/server.js'
import { startAgent } from '../agents/main.js'
import { startOrigin } from '../lab/origin.js'
import { labUp, netnsSupport } from '../lab/netns.js'
import { LAB_SHOP_ACCOUNT } from '../lab/site/shop.js'
import { launchBrowser, whenRedrawn } from '../dev/browser.js'
import { openRoute } from './helpers/ui.js'

const support = await netnsSupport()
const skip = !support.ok && `needs network namespaces: ${support.reason}`
// p50 needs 20 matched rounds for a verdict (lib/analysis/comparison.js
// minRoundsFor): MEASURED rounds run here, and exported and imported again
// as earlier rounds (COPIES times, each an hour further back) they make 20.
// The verdict's statistics are tested on their own (test/verdicts.test.js);
// here it is the journey's results that must reach them, step by step.
const MEASURED = 5
const COPIES = 3
const ROUNDS = MEASURED * (COPIES + 1)
const SECRET = LAB_SHOP_ACCOUNT.password

let database
let dataDir
let topology
let origin
let api
/** Four agents at the location, as a location may have: rounds run four at a time. */
const agents = []
let writeKey
/** Every log line the API and the agent wrote, at debug level. */
const logLines = []

/** The lab shop journey: open the login page, log in (the password as a secret), search. */
const shopJourney = (overrides = {}) => ({
  steps: [
    { action: 'navigate', url: '/shop/login.html', name: 'open' },
    { action: 'measure_start', name: 'login' },
    { action: 'type', selector: '#user', text: LAB_SHOP_ACCOUNT.user },
    { action: 'type', selector: '#password', secret: SECRET },
    { action: 'click', selector: '#login' },
    { action: 'assert', selector: 'h1', text: 'Account' },
    { action: 'measure_end', name: 'login' },
    { action: 'measure_start', name: 'search' },
    { action: 'type', selector: '#q', text: 'quic' },
    { action: 'click', selector: '#search' },
    { action: 'assert', selector: '#results', text: 'QUIC stream tester' },
    { action: 'measure_end', name: 'search' }
  ],
  // Far above what a step takes (under 1 s on an idle machine, several
  // seconds with four agents on a busy one): no step of it is slow enough
  // to fail a run by itself.
  step_timeout_ms: 10_000,
  ...overrides
})

before(async () => {
  if (!support.ok) return
  database = await createTestDatabase()
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-journey-'))
  topology = await labUp({
    prefix: 'h3tjy',
    runDir: path.join(dataDir, 'run'),
    profiles: [{ name: 'shop', rtt_ms: 20, jitter_ms: 0, loss_pct: 0, loss_model: 'bernoulli', down_kbps: 50_000, up_kbps: 20_000, queue_packets: 200 }]
  })
  origin = await startOrigin({ dataDir, port: 8443, netns: topology.originNs })
  const sink = new Writable({ write (chunk, _enc, done) { logLines.push(...String(chunk).split('\n').filter(Boolean)); done() } })
  const log = createLogger({ logLevel: 'debug', destination: sink })
  const config = loadConfig({ LOG_LEVEL: 'debug', PORT: String(await freePort()), HOST: '127.0.0.1', H3LENS_DATA_DIR: dataDir })
  api = await startApi({ db: database.pool, config, log })
  writeKey = (await createApiKey(database.pool, { name: 'test', role: 'write' })).secret
  const [loc] = topology.locations
  await upsertLocation(database.pool, { id: 'lab-shop', name: loc.name, region: 'Test', kind: 'lab', profile: loc.profile })
  for (let i = 0; i < 4; i++) {
    const { token } = await createAgentToken(database.pool, { location: 'lab-shop' })
    agents.push(await startAgent({
      config: { ...config, apiUrl: api.url }, log, token, location: 'lab-shop',
      lab: { spki: origin.spki, hostname: origin.hostname, address: loc.originAddress, netns: loc.ns }
    }))
  }
})

after(async () => {
  for (const agent of agents) await agent.stop()
  await api?.close()
  await origin?.stop()
  await topology?.down()
  await database?.drop()
  if (dataDir) await rm(dataDir, { recursive: true, force: true })
})

/**
 * @param {string} url
 * @param {RequestInit & { json?: unknown }} [init]
 */
async function call (url, init = {}) {
  const { json, ...rest } = init
  const res = await fetch(`${api.url}${url}`, {
    ...rest,
    headers: { authorization: `Bearer ${writeKey}`, ...(json !== undefined ? { 'content-type': 'application/json' } : {}), ...rest.headers },
    body: json !== undefined ? JSON.stringify(json) : rest.body
  })
  return { status: res.status, text: await res.text() }
}

/** @param {string} url */
async function get (url) {
  const res = await call(url)
  assert.equal(res.status, 200, `${url}: ${res.status} ${res.text}`)
  return JSON.parse(res.text)
}

/** @param {Record<string, any>} body */
async function createMonitor (body) {
  const res = await call('/api/v1/monitors', { method: 'POST', json: { locations: ['lab-shop'], interval_s: 3600, url: `${origin.baseUrl}/shop/login.html`, ...body } })
  assert.equal(res.status, 201, res.text)
  return JSON.parse(res.text)
}

/**
 * Queue `n` rounds of a monitor at the shop location and wait until the
 * agents have done them all (helpers/rounds.js).
 * @param {number} monitorId
 * @param {number} n
 */
const runRounds = (monitorId, n) => runLabRounds(database.pool, { monitorId, n, location: 'lab-shop' })

/** @param {number} monitorId */
async function allResults (monitorId) {
  const { items } = await get(`/api/v1/monitors/${monitorId}/results?limit=1000`)
  return /** @type {Record<string, any>[]} */ (items)
}

let shopMonitor

// The monitors' rounds share the agents: they run at the same time.
describe('rounds of three monitors at once', { concurrency: true }, () => {
  test('a three-step journey through the lab shop: per-step results in both arms, over each arm\'s protocol, and a verdict per step', { skip }, async () => {
    shopMonitor = await createMonitor({ modes: ['h2', 'h3'], journey: shopJourney() })
    assert.deepEqual(shopMonitor.probes, ['journey'])
    await runRounds(shopMonitor.id, MEASURED)

    const items = await allResults(shopMonitor.id)
    const probes = ['journey', 'journey:open', 'journey:login', 'journey:search']
    for (const probe of probes) {
      for (const mode of ['h2', 'h3']) {
        const rs = items.filter((r) => r.probe === probe && r.mode === mode)
        assert.equal(rs.length, MEASURED, `${probe} ${mode}: one result per round`)
        for (const r of rs) {
          assert.equal(r.status, 'ok', `${probe} ${mode}: ${r.error}`)
          assert.equal(r.observed_protocol, mode, `${probe} ${mode}`)
          assert.ok(r.requests > 0, `${probe} ${mode}: its requests`)
        }
      }
    }
    // Each named step carries what its own steps did.
    /** The detail of the first result of a probe in an arm. @param {string} probe @param {string} mode */
    const detailOf = (probe, mode) => get(`/api/v1/results/${resultOf(items, probe, mode).id}`)
    const open = await detailOf('journey:open', 'h3')
    assert.ok(open.ttfb_ms > 0 && open.load_ms >= open.ttfb_ms && open.fcp_ms > 0, 'a navigation step has its page timings')
    assert.ok(open.details.samples[0] >= open.load_ms, 'the step lasts at least until its load event')
    assert.ok(open.details.requests.some((q) => q.url.endsWith('/shop/shop.css')))
    assert.equal(open.details.repeat.document_connection_reused, false, 'the first step opens the connection')
    const login = await detailOf('journey:login', 'h2')
    assert.deepEqual(login.details.step.steps, [2, 5])
    assert.ok(login.details.step.navigations[0].endsWith('/shop/account'), 'logging in loads the account page')
    assert.ok(login.ttfb_ms > 0, 'the step\'s navigation (the form post and its redirect) has its TTFB')
    assert.ok(login.details.requests.some((q) => q.method === 'POST' && q.url.endsWith('/shop/login')))
    assert.ok(login.details.repeat.requests_on_reused_connections > 0, 'the login step rides the connection the first step opened')
    const search = await detailOf('journey:search', 'h3')
    assert.ok(search.details.requests.some((q) => q.url.includes('/shop/search?q=quic')))
    const whole = await detailOf('journey', 'h2')
    assert.equal(whole.details.journey.steps.length, 12)
    assert.equal(whole.details.journey.failed_step, null)
    // The whole journey lasts its steps' time: here, the three named steps and
    // nothing between them (the markers bounding them take 0 ms).
    const named = await Promise.all(['journey:open', 'journey:login', 'journey:search'].map((p) =>
      get(`/api/v1/results/${items.find((r) => r.probe === p && r.mode === 'h2' && r.job_id === whole.job_id)?.id}`)))
    const sum = named.reduce((a, r) => a + r.details.samples[0], 0)
    assert.ok(Math.abs(whole.details.samples[0] - sum) < 0.5, `whole ${whole.details.samples[0]} ms, steps ${sum} ms`)
    assert.ok(whole.details.journey.steps.filter((s) => s.action.startsWith('measure_')).every((s) => s.ms === 0), 'markers take no time')

    // The measured rounds again as earlier ones, through the export and the import.
    const exported = await call(`/api/v1/results?monitor=${shopMonitor.id}&format=ndjson`)
    assert.equal(exported.status, 200, exported.text)
    const rows = exported.text.trim().split('\n').map((l) => JSON.parse(l))
    assert.equal(rows.length, MEASURED * 2 * probes.length)
    for (let copy = 1; copy <= COPIES; copy++) {
      const earlier = (/** @type {string} */ t) => new Date(Date.parse(t) - copy * 3600_000).toISOString()
      const body = rows.map((r) => JSON.stringify({ ...r, time: earlier(r.time), measured_at: r.measured_at && earlier(r.measured_at) })).join('\n')
      const imported = await call(`/api/v1/monitors/${shopMonitor.id}/results/import`, { method: 'POST', headers: { 'content-type': 'application/x-ndjson' }, body })
      assert.equal(imported.status, 200, imported.text)
      assert.equal(JSON.parse(imported.text).rounds, MEASURED)
    }

    // A verdict per step and location, from matched rounds.
    for (const probe of probes) {
      const answer = await get(`/api/v1/monitors/${shopMonitor.id}/comparison?probe=${encodeURIComponent(probe)}&metric=step_ms&percentiles=50`)
      assert.equal(answer.probe, probe)
      const loc = answer.locations.find((l) => l.location_id === 'lab-shop')
      assert.equal(loc.rounds.used, ROUNDS, `${probe}: every round matched`)
      const [row] = loc.rows
      assert.ok(row.h2_ms > 0 && row.h3_ms > 0, probe)
      assert.ok(['h3_faster', 'h3_slower', 'no_clear_difference'].includes(row.verdict), `${probe}: ${row.verdict} (${row.reason})`)
    }
    // A navigation step is compared by its page timings too.
    const ttfb = await get(`/api/v1/monitors/${shopMonitor.id}/comparison?probe=journey:open&metric=ttfb_ms&percentiles=50`)
    assert.equal(ttfb.locations.find((l) => l.location_id === 'lab-shop').rounds.used, ROUNDS)
  })

  test('the auto arm runs the journey as a first and a returning visit', { skip }, async () => {
    const m = await createMonitor({ modes: ['auto'], journey: shopJourney() })
    await runRounds(m.id, 2)
    const items = await allResults(m.id)
    for (const view of ['first', 'returning']) {
      for (const probe of ['journey', 'journey:open', 'journey:login', 'journey:search']) {
        const rs = items.filter((r) => r.probe === probe && r.view === view)
        assert.equal(rs.length, 2, `${probe} ${view}`)
        for (const r of rs) assert.equal(r.status, 'ok', `${probe} ${view}: ${r.error}`)
      }
    }
    // The first visit learns the origin's Alt-Svc; the returning one races
    // QUIC against TCP for it (Chromium says which won): over H3 when QUIC
    // won, over H2 saying TCP won the race on a busy machine, never as if
    // H3 were unknown.
    const returning = items.filter((r) => r.probe === 'journey:open' && r.view === 'returning')
    for (const r of returning) {
      const reason = (await get(`/api/v1/results/${r.id}`)).details.protocol_reason
      assert.ok((r.observed_protocol === 'h3' && reason.code === 'alt_svc') || (r.observed_protocol === 'h2' && reason.code === 'tcp_won'),
        `a returning visit over ${r.observed_protocol}: ${JSON.stringify(reason)}`)
    }
  })

  test('a journey of as many named steps as a journey may have runs in every arm and visit of a round, each step\'s result stored', { skip }, async () => {
    const steps = [{ action: 'navigate', url: '/shop/login.html', name: 'open' },
      ...Array.from({ length: JOURNEY_LIMITS.steps - 1 }, (_, i) => ({ action: 'wait_for', ms: 1, name: `pause-${i + 2}` }))]
    const m = await createMonitor({ modes: ['h2', 'h3', 'auto'], journey: { steps } })
    await runRounds(m.id, 1)
    const items = await allResults(m.id)
    // Four runs (h2, h3, and the auto arm's two visits), each the journey's
    // own result and one per named step: more than a hundred.
    const runs = [['h2', 'first'], ['h3', 'first'], ['auto', 'first'], ['auto', 'returning']]
    assert.equal(items.length, runs.length * (1 + steps.length))
    for (const [mode, view] of runs) {
      const run = items.filter((r) => r.mode === mode && r.view === view)
      assert.deepEqual(run.map((r) => r.probe).sort(), ['journey', ...steps.map((st) => `journey:${st.name}`)].sort(), `${mode} ${view}`)
      for (const r of run) assert.notEqual(r.status, 'error', `${r.probe} ${mode} ${view}: ${r.error}`)
    }
  })

  test('a wrong selector fails the run at its step, named, in both arms', { skip }, async () => {
    const journey = shopJourney()
    journey.steps[9] = { action: 'click', selector: '#no-such-button' }
    const m = await createMonitor({ modes: ['h2', 'h3'], journey: { ...journey, step_timeout_ms: 6000 } })
    await runRounds(m.id, 1)
    const items = await allResults(m.id)
    for (const mode of ['h2', 'h3']) {
      /** @type {(probe: string) => Record<string, any>} */
      const of = (/** @type {string} */ probe) => resultOf(items, probe, mode)
      const whole = of('journey')
      assert.equal(whole.status, 'timeout', `${mode}: ${whole.error}`)
      assert.equal(whole.error, 'step 10 (click #no-such-button): no element matches #no-such-button within 6000 ms')
      assert.equal(of('journey:open').status, 'ok', 'the steps before it stand')
      assert.equal(of('journey:login').status, 'ok')
      assert.equal(of('journey:search').status, 'timeout')
      assert.equal(of('journey:search').error, whole.error, 'the named step it was in fails with it')
      const detail = await get(`/api/v1/results/${whole.id}`)
      assert.equal(detail.details.journey.failed_step, 9)
      assert.equal(detail.details.journey.steps.at(-1).ok, false)
    }
    // Failures are data: the comparison counts the failed arms.
    const answer = await get(`/api/v1/monitors/${m.id}/comparison?probe=journey:search&metric=step_ms&percentiles=50`)
    const loc = answer.locations.find((l) => l.location_id === 'lab-shop')
    assert.equal(loc.arms.h2.failed, 1)
    assert.equal(loc.arms.h3.failed, 1)
  })
})

/**
 * Ask for a trial and wait until the agent has answered it.
 * @param {Record<string, any>} body
 */
async function tryJourney (body) {
  const res = await call('/api/v1/journeys/trials', { method: 'POST', json: { location_id: 'lab-shop', url: `${origin.baseUrl}/shop/login.html`, ...body } })
  assert.equal(res.status, 202, res.text)
  assert.ok(!res.text.includes(SECRET), 'the trial as stored holds no secret')
  const { id } = JSON.parse(res.text)
  const until = Date.now() + 120_000
  for (;;) {
    const trial = await get(`/api/v1/journeys/trials/${id}`)
    if (trial.state === 'done') return trial
    assert.ok(Date.now() < until, `trial ${id} still ${trial.state}`)
    await sleep(250)
  }
}

test('"try it": the location\'s agent runs the journey once in the H2 arm, shows each step and the last frame, and stores no result', { skip }, async () => {
  const before = (await database.pool.query('SELECT count(*)::int AS n FROM results')).rows[0].n
  const trial = await tryJourney({ journey: shopJourney() })
  assert.equal(trial.outcome.status, 'ok', trial.outcome.error)
  assert.equal(trial.outcome.observed_protocol, 'h2')
  assert.equal(trial.outcome.steps.length, 12)
  assert.ok(trial.outcome.steps.every((s) => s.ok), JSON.stringify(trial.outcome.steps))
  assert.ok(trial.outcome.steps[0].navigated && trial.outcome.steps[0].ttfb_ms > 0, 'the navigation step has its TTFB')
  const jpeg = Buffer.from(trial.screenshot, 'base64')
  assert.ok(jpeg.length > 1000 && jpeg[0] === 0xff && jpeg[1] === 0xd8, 'the last frame is a JPEG')
  const answer = await call(`/api/v1/journeys/trials/${trial.id}`)
  assert.ok(!answer.text.includes(SECRET), 'the trial\'s answer holds no secret')
  assert.equal((await database.pool.query('SELECT count(*)::int AS n FROM results')).rows[0].n, before, 'a trial is not a result')

  // A monitor's stored secret can be tried by reference.
  const stored = shopMonitor.journey.steps.find((s) => s.secret)?.secret
  assert.ok(stored?.stored, 'the shop monitor keeps its secret by reference')
  const byRef = shopJourney()
  byRef.steps[3] = { action: 'type', selector: '#password', secret: stored }
  const again = await tryJourney({ monitor_id: shopMonitor.id, journey: byRef })
  assert.equal(again.outcome.status, 'ok', again.outcome.error)

  const wrong = shopJourney({ step_timeout_ms: 6000 })
  wrong.steps[4] = { action: 'click', selector: '#no-such-login' }
  const failed = await tryJourney({ journey: wrong })
  assert.equal(failed.outcome.status, 'timeout')
  assert.equal(failed.outcome.error, 'step 5 (click #no-such-login): no element matches #no-such-login within 6000 ms')
  assert.equal(failed.outcome.steps.at(-1).ok, false)
  assert.ok(failed.screenshot, 'a failed trial shows where it stopped')
  // A selector no browser can read fails its step at once, saying so, not as a timeout.
  const unreadable = shopJourney({ step_timeout_ms: 5000 })
  unreadable.steps[4] = { action: 'click', selector: '[[[<>' }
  const refused = await tryJourney({ journey: unreadable })
  assert.equal(refused.outcome.status, 'error', refused.outcome.error)
  assert.equal(refused.outcome.error, 'step 5 (click [[[<>): [[[<> is not a valid CSS selector')

  // A page that sends itself on by script: each step asks the page that is there.
  const hopping = await tryJourney({
    journey: {
      steps: [
        { action: 'navigate', url: '/shop/hop.html?n=60' },
        ...Array.from({ length: 20 }, () => ({ action: 'wait_for', selector: '#hops' })),
        { action: 'assert', selector: '#hops', text: 'Arrived' }
      ],
      // The hops take about 2 s on an idle machine and took over 10 s on a
      // busy one; a step waits them out, whatever document it finds.
      step_timeout_ms: 30_000
    }
  })
  assert.equal(hopping.outcome.status, 'ok', hopping.outcome.error)

  // A step that reaches an address longer than a trial's answer keeps
  // (4,096 characters): the trial is stored, with the address's start.
  const far = await tryJourney({
    journey: { steps: [{ action: 'navigate', url: '/shop/login.html' }, { action: 'eval', script: 'location.href = "/shop/login.html?q=" + "x".repeat(6000); return true' }, { action: 'wait_for', selector: 'body' }] }
  })
  assert.equal(far.outcome.status, 'ok', far.outcome.error)
  assert.equal(far.outcome.steps[1].navigated, true, JSON.stringify(far.outcome.steps[1]).slice(0, 300))
  assert.equal(far.outcome.steps[1].url.length, 4096)
  assert.match(far.outcome.steps[1].url, /\/shop\/login\.html\?q=x+$/)

  const bad = await call('/api/v1/journeys/trials', { method: 'POST', json: { location_id: 'lab-shop', url: `${origin.baseUrl}/`, journey: { steps: [{ action: 'click' }] } } })
  assert.equal(bad.status, 400)
  assert.equal(JSON.parse(bad.text).field, 'journey.steps[0].selector')
})

/* global document, location -- used inside functions that run in the page */
/**
 * Where the walk's screenshots go when asked for (H3LENS_JOURNEY_SCREENSHOTS,
 * a folder: docs/screenshots/ holds the README's); otherwise none are kept.
 */
const SHOT_DIR = process.env.H3LENS_JOURNEY_SCREENSHOTS ?? null

test('the dashboard walk: the journey editor checks as one types, "Try it" shows each step and the last frame, the monitor page compares step by step', { skip }, async () => {
  assert.ok(shopMonitor, 'the shop journey ran')
  const chromium = await launchBrowser()
  try {
    const server = { url: api.url }
    // The check's 400 for the unfinished step is the browser's console error for that request, and expected.
    const form = await openRoute(chromium, server, writeKey, '#/new', { allow: [/status of 400 .*\/api\/v1\/journeys\/check/] })
    const { page } = form
    await page.setViewport({ width: 1100, height: 1400 })
    await page.type('#url', `${origin.baseUrl}/shop/login.html`)
    // A step without its selector: the editor says which, as one types.
    await page.type('#journey', 'steps:\n  - { action: navigate, url: /shop/login.html, name: open }\n  - { action: click }\n')
    await page.waitForFunction(() => /selector: required for click/.test(document.querySelector('#journey-status')?.textContent ?? ''))
    assert.equal(await page.$eval('#journey-status', (e) => e.textContent), 'journey.steps[1].selector: required for click')
    assert.equal(await page.$eval('#journey', (e) => e.getAttribute('aria-invalid')), 'true')
    // The whole shop journey, as YAML.
    const yaml = 'steps:\n' + shopJourney().steps.map((st) => `  - ${JSON.stringify(st)}`).join('\n') + '\nstep_timeout_ms: 10000\n'
    await page.$eval('#journey', (e, text) => {
      const area = /** @type {HTMLTextAreaElement} */ (e)
      area.value = text
      area.dispatchEvent(new Event('input', { bubbles: true }))
    }, yaml)
    await page.waitForFunction(() => /^12 steps/.test(document.querySelector('#journey-status')?.textContent ?? ''))
    assert.equal(await page.$eval('#journey-status', (e) => e.textContent), '12 steps; measured on their own: open, login, search.')
    assert.equal(await page.$eval('input[name="probes"][value="journey"]', (e) => /** @type {HTMLInputElement} */ (e).checked), true, 'writing a journey ticks its probe')
    // Try it at the lab location: each step's outcome and the last frame.
    await page.select('#journey-location', 'lab-shop')
    await page.click('#journey-try')
    await page.waitForSelector('#journey-verdict', { timeout: 90_000 })
    assert.equal(await page.$eval('#journey-verdict', (e) => e.textContent), 'Every step passed, over h2.')
    const rows = await page.$$eval('#journey-steps tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)))
    assert.equal(rows.length, 12)
    assert.deepEqual(rows[0].slice(0, 4), ['1', 'navigate', 'open', 'ok'])
    assert.deepEqual(rows[4].slice(0, 4), ['5', 'click', '', 'ok'])
    await page.waitForFunction(() => ((/** @type {HTMLImageElement | null} */ (document.querySelector('#journey-shot')))?.naturalWidth ?? 0) > 0)
    assert.ok(!(await page.content()).includes(SECRET), 'the page shows no secret')
    if (SHOT_DIR) await (await page.$('.journey-editor'))?.screenshot({ path: path.join(SHOT_DIR, 'journey-editor.png') })
    await form.done()

    // The monitor page: a row per step and location, and the steps as probes.
    const monitorPage = await openRoute(chromium, server, writeKey, `#/monitors/${shopMonitor.id}`)
    const mp = monitorPage.page
    await mp.setViewport({ width: 1100, height: 1400 })
    await mp.waitForSelector('#journey-step-table tbody tr')
    const table = await mp.$$eval('#journey-step-table tbody tr', (trs) => trs.map((tr) => ({ probe: tr.dataset.probe, cells: [...tr.querySelectorAll('td')].map((td) => td.textContent) })))
    assert.deepEqual(table.map((r) => r.probe), ['journey', 'journey:open', 'journey:login', 'journey:search'])
    for (const r of table) {
      assert.equal(r.cells[0], topology.locations[0].name, 'the location, by its name')
      assert.match(r.cells[1], /^\d[\d,.]* ms$/, `${r.probe}: H2 median`)
      assert.match(r.cells[2], /^\d[\d,.]* ms$/, `${r.probe}: H3 median`)
      assert.match(r.cells[4], /^(H3 faster|H3 slower|No clear difference)$/, `${r.probe}: a verdict`)
      assert.equal(r.cells[5], String(ROUNDS))
    }
    const options = await mp.$$eval('#probe-select option', (os) => os.map((o) => /** @type {HTMLOptionElement} */ (o).value))
    assert.deepEqual(options, ['journey', 'journey:open', 'journey:login', 'journey:search'])
    if (SHOT_DIR) await (await mp.$('#journey-steps'))?.screenshot({ path: path.join(SHOT_DIR, 'journey-steps.png') })
    // Choosing a step shows its full table, by its duration.
    await whenRedrawn(mp, () => mp.select('#probe-select', 'journey:login'))
    assert.match(await mp.evaluate(() => decodeURIComponent(location.hash)), /probe=journey:login/)
    await mp.waitForSelector('#comparison table.compare')
    assert.match(await mp.$eval('#comparison', (e) => e.textContent ?? ''), /Step/)
    // The page drawn for the step: its exports are the step's.
    assert.ok(await mp.$$eval('#view .menu-list a', (as) => as.some((a) => /** @type {HTMLAnchorElement} */ (a).href.includes('probe=journey%3Alogin'))), 'the exports are the step\'s')
    await monitorPage.done()
  } finally {
    await chromium.close()
  }
})

test('the password typed as a secret is in no API answer, export or log line', { skip }, async () => {
  assert.ok(shopMonitor, 'the shop journey ran')
  const answers = [
    await call(`/api/v1/monitors/${shopMonitor.id}`),
    await call('/api/v1/monitors'),
    await call(`/api/v1/monitors/${shopMonitor.id}/results?limit=1000`),
    await call(`/api/v1/results?monitor=${shopMonitor.id}&format=ndjson`),
    await call(`/api/v1/results?monitor=${shopMonitor.id}&format=csv`)
  ]
  const items = await allResults(shopMonitor.id)
  for (const r of items.filter((x) => x.mode === 'h2').slice(0, 8)) answers.push(await call(`/api/v1/results/${r.id}`))
  for (const a of answers) {
    assert.equal(a.status, 200, a.text)
    assert.ok(!a.text.includes(SECRET), 'an API answer holds the secret')
  }
  assert.ok(answers[3].text.includes('journey:login'), 'the export carries the steps')
  assert.ok(logLines.filter((l) => l.includes('journey')).length > 10, `the log was captured, the journeys' runs with it (${logLines.length} lines)`)
  const leaked = logLines.filter((l) => l.includes(SECRET) || l.includes(encodeURIComponent(SECRET)))
  assert.deepEqual(leaked, [], 'a log line holds the secret')
  const { rows } = await database.pool.query('SELECT count(*)::int AS n FROM results WHERE details::text LIKE $1 OR error LIKE $1', [`%${SECRET}%`])
  assert.equal(rows[0].n, 0, 'a stored result holds the secret')
})
