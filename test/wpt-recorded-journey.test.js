// A journey at a WebPageTest location, as a team that points a real
// wptagent at h3lens sees it: the uploads an unmodified agent made for the
// lab shop's journey (test/fixtures/wpt/recorded-real-journey/: log in,
// then search, in both arms) replayed through POST /work/workdone.php over
// HTTP, against the API and PostgreSQL. The agent writes each step's files
// under its own prefix (1_, 1_2_, 1_3_) and, in every step's devtools
// requests, the event name and DOMContentLoaded of the LAST step; a step
// whose click found no element comes back with result 0 and only the
// agent's own marker request. What a user must see is each step's own
// figures, each arm over its protocol, and a wrong selector named.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createTestApp } from './helpers/app.js'
import { resultOf } from './helpers/results.js'
import { replayAgent, recordedRequests, recordedFile, RECORDED } from '../dev/fake-wptagent.js'
import { rewriteResultZip, recordedSteps } from '../dev/wpt-zip.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createWptKey } from '../lib/store/wpt-keys.js'
import { LAB_HOSTNAME } from '../lib/runtime/lab-host.js'
import { LAB_SHOP_ACCOUNT } from '../lab/site/shop.js'

const DIR = 'recorded-real-journey'
const ORIGIN = `https://${LAB_HOSTNAME}:18543`
const LOCATION = 'wpt-27'
/** The password is not in the recorded jobs: the README says how it was redacted. */
const REDACTED = 'REDACTED-PASSWORD'
/** What the agent sent for each test, by round and arm. */
const UPLOADS = {
  round1: { h2: '021126_h3l_4_h2_journey_246cec3633ce.zip', h3: '021143_h3l_4_h3_journey_afa5e6cf2beb.zip' },
  round2: { h2: '021533_h3l_8_h2_journey_78ea33f2f112.zip', h3: '021545_h3l_8_h3_journey_14d868b7ac17.zip' },
  wrongSelector: { h2: '021516_h3l_5_h2_journey_ae879e0e984f.zip', h3: '021502_h3l_5_h3_journey_c92a74806a96.zip' },
  wait: { h2: '022457_h3l_17_h2_journey_ef7107a9515c.zip', h3: '022446_h3l_17_h3_journey_3898747c3bdb.zip' },
  waitNever: { h2: '022518_h3l_18_h2_journey_fc65dc4bec53.zip', h3: '022539_h3l_18_h3_journey_645e7b3f1891.zip' }
}
const job = (/** @type {string} */ name) => JSON.parse(fs.readFileSync(path.join(RECORDED, DIR, name), 'utf8'))
const RECORDED_JOBS = {
  h2: job('job-h2.json'),
  h3: job('job-h3.json'),
  wrongSelector: job('job-wrong-selector-h3.json'),
  wait: job('job-wait-h3.json'),
  waitNever: job('job-wait-never-h3.json')
}
// How the agent talks (its polls, pings and multipart uploads).
const AGENT = recordedRequests('server-requests-run3.jsonl')

/** The journey of the recorded monitor: the lab shop's login and search, the password typed as text (a secret is never sent to a WPT agent). */
const journey = (loginSelector = '#login') => ({
  steps: [
    { action: 'navigate', url: '/shop/login.html', name: 'open' },
    { action: 'measure_start', name: 'login' },
    { action: 'type', selector: '#user', text: LAB_SHOP_ACCOUNT.user },
    { action: 'type', selector: '#password', text: LAB_SHOP_ACCOUNT.password },
    { action: 'click', selector: loginSelector },
    { action: 'measure_end', name: 'login' },
    { action: 'measure_start', name: 'search' },
    { action: 'type', selector: '#q', text: 'quic' },
    { action: 'click', selector: '#search' },
    { action: 'measure_end', name: 'search' }
  ],
  step_timeout_ms: 10000
})

/**
 * The same login and search, each step ending when its element is there
 * (wait_for), a second's pause, and the search as a script.
 */
const waitJourney = (accountSelector = '#who') => ({
  steps: [
    { action: 'measure_start', name: 'open' },
    { action: 'navigate', url: '/shop/login.html' },
    { action: 'wait_for', selector: '#login' },
    { action: 'measure_end', name: 'open' },
    { action: 'measure_start', name: 'login' },
    { action: 'type', selector: '#user', text: LAB_SHOP_ACCOUNT.user },
    { action: 'type', selector: '#password', text: LAB_SHOP_ACCOUNT.password },
    { action: 'click', selector: '#login' },
    { action: 'wait_for', selector: accountSelector },
    { action: 'measure_end', name: 'login' },
    { action: 'wait_for', ms: 1000 },
    { action: 'eval', script: "location.href = '/shop/search?q=packet'", name: 'search' }
  ],
  step_timeout_ms: 10000
})

let t
let server
let key
let dataDir
before(async () => {
  // The unshaped lab the recording ran against (`h3lens start --lab local`), so that its page is sent with the lab's switches.
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-wpt-journey-real-'))
  const spki = /--ignore-certificate-errors-spki-list=(\S+)/.exec(RECORDED_JOBS.h3.addCmdLine)?.[1]
  fs.mkdirSync(path.join(dataDir, 'lab'))
  fs.writeFileSync(path.join(dataDir, 'lab', 'state.json'),
    JSON.stringify({ hostname: LAB_HOSTNAME, port: 18543, spki, locations: { local: { address: '127.0.0.1', netns: null } } }))
  t = await createTestApp({ H3LENS_ALLOW_PRIVATE_TARGETS: 'true', H3LENS_DATA_DIR: dataDir })
  await upsertLocation(t.db, { id: LOCATION, name: 'WPT 27', region: 'Europe', kind: 'wpt' })
  key = (await createWptKey(t.db, { location: LOCATION })).key
  await t.app.listen({ host: '127.0.0.1', port: 0 })
  server = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (t.app.server.address()).port}`
})
after(async () => {
  await t?.close()
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
})

/** @param {string} p */
async function get (p) {
  const res = await fetch(`${server}${p}`, { headers: { authorization: `Bearer ${t.readKey}` } })
  const body = await res.json()
  assert.equal(res.status, 200, `${p}: ${JSON.stringify(body)}`)
  return body
}

const arm = (/** @type {Record<string, any>} */ j) => (j.addCmdLine.includes('--origin-to-force-quic-on') ? 'h3' : 'h2')

/**
 * A monitor of the recorded journey at the WPT location, its rounds run by
 * the replaying agent: round i's test in each arm gets the upload
 * `rounds[i][arm]`, its test id the one h3lens handed out.
 * @param {ReturnType<typeof journey> | ReturnType<typeof waitJourney>} j
 * @param {{ h2: string, h3: string }[]} rounds
 */
async function replayJourney (j, rounds) {
  const res = await fetch(`${server}/api/v1/monitors`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.writeKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${ORIGIN}/shop/login.html`, interval_s: 120, locations: [LOCATION], modes: ['h2', 'h3'], journey: j })
  })
  const m = await res.json()
  assert.equal(res.status, 201, JSON.stringify(m))
  /** @type {Record<string, any>[]} */
  const jobs = []
  /** @type {import('../dev/fake-wptagent.js').Sent[]} */
  const sent = []
  // One minute read once: a clock reading per round could cross a minute
  // between two rounds and give both the same due time.
  const minute = Math.floor(Date.now() / 60e3) * 60e3
  for (const [i, round] of rounds.entries()) {
    await t.db.query('INSERT INTO jobs (monitor_id, location_id, due_at) VALUES ($1, $2, $3)', [m.id, LOCATION, new Date(minute - i * 60e3)])
    const replayed = await replayAgent({
      server, records: AGENT, location: LOCATION, key, pc: 'wpt27',
      result: async (job) => ({ zip: await rewriteResultZip(recordedFile(path.join(DIR, round[arm(job)])), { testId: job['Test ID'] }) })
    })
    jobs.push(...replayed.jobs)
    sent.push(...replayed.sent)
  }
  const { items } = await get(`/api/v1/monitors/${m.id}/results?limit=100`)
  const { rows } = await t.db.query('SELECT state, attempts FROM jobs WHERE monitor_id = $1', [m.id])
  return { m, jobs, sent, items, rounds: rows }
}

/** The job as recorded, its redacted password put back, without what differs per test. */
// The lab's resolver rules as they were when the jobs were recorded, and as
// h3lens writes them since: the lab host names on the lab's port only, and
// of the agent's loopback only its own server (docs/WPT.md), followed by the
// lab browser's WebRTC policy.
const RECORDED_RULES = '"MAP lab.h3lens.test 127.0.0.1, MAP lab2.h3lens.test 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"'
const rulesNow = (/** @type {string} */ port) => `"MAP lab.h3lens.test:${port} 127.0.0.1, MAP lab2.h3lens.test:${port} 127.0.0.1, MAP 127.0.0.1:8888 127.0.0.1, MAP * ~NOTFOUND" --webrtc-ip-handling-policy=disable_non_proxied_udp`
const comparable = (/** @type {Record<string, any>} */ j) => {
  /** @type {Record<string, any>} */
  const rest = { ...j, script: j.script.replace(REDACTED, LAB_SHOP_ACCOUNT.password), addCmdLine: j.addCmdLine.replace(RECORDED_RULES, rulesNow(new URL(j.url).port)) }
  delete rest['Test ID']
  delete rest.label
  return rest
}

test('the real agent\'s journey uploads: each step in each arm over its own protocol, with its own figures, compared per step', async () => {
  const { m, jobs, sent, items, rounds } = await replayJourney(journey(), [UPLOADS.round1, UPLOADS.round2])
  // h3lens sends the job the recorded agent ran.
  assert.equal(jobs.length, 4)
  for (const j of jobs) assert.deepEqual(comparable(j), comparable(RECORDED_JOBS[arm(j)]), `${arm(j)} arm: the job the agent was given`)
  assert.deepEqual(recordedSteps(jobs[0].script).map((s) => s.eventName), ['open', 'login', 'search'])
  assert.deepEqual(sent.filter((s) => s.url.includes('/workdone.php')).map((s) => s.status), [200, 200, 200, 200], 'every upload stored')
  assert.deepEqual(rounds.map((r) => [r.state, r.attempts]), [['done', 1], ['done', 1]])

  for (const probe of ['journey', 'journey:open', 'journey:login', 'journey:search']) {
    for (const mode of ['h2', 'h3']) {
      const rs = items.filter((r) => r.probe === probe && r.mode === mode)
      assert.equal(rs.length, 2, `${probe} ${mode}: one result per round`)
      for (const r of rs) {
        assert.equal(r.status, 'ok', `${probe} ${mode}: ${r.error}`)
        assert.equal(r.observed_protocol, mode, `${probe} ${mode}: over its arm's protocol`)
        assert.equal(r.location_id, LOCATION)
      }
    }
  }
  // Round 1: the earlier of the agent's runs.
  const first = (probe, mode) => items.filter((r) => r.probe === probe && r.mode === mode).sort((a, b) => a.measured_at.localeCompare(b.measured_at))[0]
  const detail = (probe, mode) => get(`/api/v1/results/${first(probe, mode).id}`)

  // Round 1, H3 arm. Each step lasts from its start to its load event, as the agent measured it.
  const open = await detail('journey:open', 'h3')
  assert.deepEqual(open.details.samples, [156])
  // Its page's load event and paints from the navigation's start, as every page's: the agent's own
  // load time (156) and paint (175) count from its first activity, 19 ms before the navigation.
  assert.equal(open.load_ms, 137)
  // Each step has its own page's DOMContentLoaded (its own 1_page_data.json.gz), not the last page's (71).
  assert.equal(open.dcl_ms, 116)
  assert.equal(open.fcp_ms, 156)
  // The TTFB of the step's navigation, from its start to the first byte, as the step's trace gives them.
  // The agent's own figure is 53: its clock starts at the first activity it saw, here the request,
  // 28.5 ms after the navigation began.
  assert.equal(open.ttfb_ms, 80.8)
  assert.deepEqual(open.details.requests.map((q) => `${q.protocol} ${q.method} ${q.url.replace(ORIGIN, '')} ${q.status}`),
    ['h3 GET /shop/login.html 200', 'h3 GET /shop/shop.css 200', 'h3 GET /shop/logo.png 200'])
  assert.equal(open.details.repeat.document_connection_reused, false, 'the first step opens the connection')

  // Round 2, H3 arm: its QUIC handshake had ended before the request began (the agent wrote
  // 0 ms for it). Chromium's own timing in the trace says the request waited for no connection
  // set-up (0–0), as an h3lens agent's Navigation Timing would: 0 ms each. The navigation's
  // TTFB, from the trace, still holds the handshake.
  const open2 = items.filter((r) => r.probe === 'journey:open' && r.mode === 'h3').sort((a, b) => a.measured_at.localeCompare(b.measured_at))[1]
  assert.deepEqual([open2.ttfb_ms, open2.dns_ms, open2.connect_ms, open2.tls_ms], [17, 0, 0, 0])
  // Round 1, H2 arm: Chromium set the connection up before the document's request (its trace
  // times no connect for the request, −1) although the agent's DevTools times it (TCP 3 ms, TLS
  // 18 ms): the request waited for none, as Navigation Timing would say.
  const h2Open = first('journey:open', 'h2')
  assert.deepEqual([h2Open.connect_ms, h2Open.tls_ms], [0, null])

  const login = await detail('journey:login', 'h3')
  assert.deepEqual(login.details.step, { name: 'login', steps: [2, 4], navigations: [`${ORIGIN}/shop/account`] })
  assert.deepEqual(login.details.samples, [166])
  assert.equal(login.dcl_ms, 79)
  assert.deepEqual(login.details.requests.map((q) => `${q.protocol} ${q.method} ${q.url.replace(ORIGIN, '')} ${q.status}`),
    ['h3 POST /shop/login 303', 'h3 GET /shop/account 200', 'h3 GET /shop/shop.css 304', 'h3 GET /shop/logo.png 304'], 'the form post over H3, and its redirect')
  assert.equal(login.details.repeat.requests_on_reused_connections, 4, 'logging in rides the connection the first step opened')
  const search = await detail('journey:search', 'h3')
  assert.deepEqual(search.details.samples, [80])
  assert.equal(search.dcl_ms, 71)

  const whole = await detail('journey', 'h3')
  assert.deepEqual(whole.details.samples, [156 + 166 + 80], 'the whole journey lasts its recorded steps; typing is timed by nobody')
  assert.deepEqual(whole.details.wpt.steps.map((s) => [s.step, s.event_name, s.result]), [[1, 'open', 0], [2, 'login', 0], [3, 'search', 0]])
  // Each step's navigation TTFB from its own trace, beside the agent's own page TTFB of that step.
  assert.deepEqual(whole.details.wpt.steps.map((s) => [s.ttfb_check?.source, s.ttfb_check?.trace_ttfb_ms, s.ttfb_check?.page_ttfb_ms]),
    [['trace', 80.8, 53], ['trace', 65.3, 38], ['trace', 31, 12]])
  assert.equal(whole.details.journey.failed_step, null)
  assert.deepEqual(whole.details.journey.steps.map((s) => s.ms), [156, null, null, null, 166, null, null, null, 80, null])

  // The H2 arm, as the agent writes h2 ("HTTP/2").
  const h2 = await detail('journey', 'h2')
  assert.deepEqual(h2.details.samples, [167 + 94 + 52])
  assert.ok(h2.details.requests.every((q) => q.protocol === 'h2'), 'every request of the H2 arm over H2')
  assert.equal((await detail('journey:open', 'h2')).dcl_ms, 136)

  // The per-step comparison has the WPT location, both rounds matched.
  const agentMs = { 'journey:open': { h2: [167, 179], h3: [156, 215] }, 'journey:login': { h2: [94, 70], h3: [166, 70] }, 'journey:search': { h2: [52, 120], h3: [80, 79] } }
  for (const [probe, ms] of Object.entries(agentMs)) {
    const answer = await get(`/api/v1/monitors/${m.id}/comparison?probe=${encodeURIComponent(probe)}&metric=step_ms&percentiles=50`)
    const loc = answer.locations.find((l) => l.location_id === LOCATION) ?? assert.fail(`${probe}: no row for ${LOCATION}`)
    assert.equal(loc.rounds.used, 2, probe)
    const [row] = loc.rows
    for (const mode of /** @type {const} */ (['h2', 'h3'])) {
      const [a, b] = ms[mode]
      const p50 = row[`${mode}_ms`]
      assert.ok(p50 >= Math.min(a, b) && p50 <= Math.max(a, b), `${probe} ${mode}: median ${p50} ms of the agent's ${a} and ${b} ms`)
    }
  }
})

test('a wrong selector in the real agent\'s upload fails its step, named, in both arms: the agent says result 0, with only its own marker request', async () => {
  const { jobs, items, rounds } = await replayJourney(journey('#no-such-button'), [UPLOADS.wrongSelector])
  const h3Job = jobs.find((j) => arm(j) === 'h3')
  assert.deepEqual(comparable(h3Job ?? {}), comparable(RECORDED_JOBS.wrongSelector))
  assert.deepEqual(rounds.map((r) => r.state), ['done'], 'a failed step is data: the round is done')
  const of = (/** @type {string} */ probe, /** @type {string} */ mode) => resultOf(items, probe, mode)
  const why = 'step 5 (click #no-such-button): nothing loaded (the WebPageTest agent recorded no request of the page for this step: ' +
    'the element may not be there, or clicking it loads nothing)'
  for (const mode of ['h2', 'h3']) {
    assert.equal(of('journey', mode).status, 'error')
    assert.equal(of('journey', mode).error, why, mode)
    assert.equal(of('journey:open', mode).status, 'ok', `${mode}: the step before it stands`)
    assert.equal(of('journey:login', mode).error, why, `${mode}: the named step it was in fails with it`)
    assert.equal(of('journey:search', mode).error, `not run: ${why}`, mode)
    const whole = await get(`/api/v1/results/${of('journey', mode).id}`)
    assert.equal(whole.details.journey.failed_step, 4)
    assert.equal(whole.details.journey.steps[4].ms, null, 'the agent\'s time for a step that did nothing is not a step time')
    assert.ok(!whole.details.requests.some((q) => q.url.startsWith('http://127.0.0.1:8888/')), 'the agent\'s own requests are not the page\'s')
  }
})

test('the real agent\'s journey with waits, a pause and a script: each wait ends its step once its element is there, and the agent says so', async () => {
  const { jobs, items } = await replayJourney(waitJourney(), [UPLOADS.wait])
  assert.deepEqual(comparable(jobs.find((j) => arm(j) === 'h3') ?? {}), comparable(RECORDED_JOBS.wait), 'the job the agent was given')
  for (const probe of ['journey', 'journey:open', 'journey:login', 'journey:search']) {
    for (const mode of ['h2', 'h3']) {
      const r = items.find((x) => x.probe === probe && x.mode === mode) ?? assert.fail(`no ${probe} result in the ${mode} arm`)
      assert.equal(r.status, 'ok', `${probe} ${mode}: ${r.error}`)
      assert.equal(r.observed_protocol, mode)
    }
  }
  const whole = await get(`/api/v1/results/${items.find((r) => r.probe === 'journey' && r.mode === 'h3')?.id}`)
  // What the agent measured: the login page until #login was there, the login until #who was, the search the script started.
  assert.deepEqual(whole.details.journey.steps.map((s) => [s.action, s.ms, s.status]), [
    ['measure_start', null, 'ok'], ['navigate', 153, 'ok'], ['wait_for', null, 'ok'], ['measure_end', null, 'ok'],
    ['measure_start', null, 'ok'], ['type', null, 'ok'], ['type', null, 'ok'], ['click', 67, 'ok'], ['wait_for', null, 'ok'],
    ['measure_end', null, 'ok'], ['wait_for', null, 'ok'], ['eval', 40, 'ok']
  ])
  assert.deepEqual(whole.details.samples, [153 + 67 + 40], 'the pause counts in no step')
  const search = await get(`/api/v1/results/${items.find((r) => r.probe === 'journey:search' && r.mode === 'h3')?.id}`)
  assert.deepEqual(search.details.step.navigations, [`${ORIGIN}/shop/search?q=packet`], 'the script\'s navigation is the step\'s')
})

test('a wait for an element that never comes fails at that wait in the real agent\'s upload, though the agent reports the step as loaded', async () => {
  const { jobs, items, rounds } = await replayJourney(waitJourney('#not-on-the-account-page'), [UPLOADS.waitNever])
  assert.deepEqual(comparable(jobs.find((j) => arm(j) === 'h3') ?? {}), comparable(RECORDED_JOBS.waitNever))
  assert.deepEqual(rounds.map((r) => r.state), ['done'])
  const why = 'step 9 (wait_for #not-on-the-account-page): no element matches #not-on-the-account-page within 10000 ms ' +
    '(the WebPageTest agent waited for it until the step\'s time limit)'
  const of = (/** @type {string} */ probe, /** @type {string} */ mode) => resultOf(items, probe, mode)
  for (const mode of ['h2', 'h3']) {
    assert.deepEqual([of('journey', mode).status, of('journey', mode).error], ['timeout', why], mode)
    assert.equal(of('journey:open', mode).status, 'ok', `${mode}: its own wait held`)
    assert.deepEqual([of('journey:login', mode).status, of('journey:login', mode).error], ['timeout', why])
    assert.equal(of('journey:search', mode).error, `not run: ${why}`)
    const whole = await get(`/api/v1/results/${of('journey', mode).id}`)
    assert.equal(whole.details.journey.failed_step, 8)
    assert.equal(whole.details.journey.steps[7].status, 'ok', `${mode}: the click itself loaded the account page`)
    assert.deepEqual(whole.details.wpt.steps.map((s) => s.result), [0, 0], 'the agent reported the login step as done (result 0)')
  }
})
