// WebPageTest agents as h3lens locations, driven over real HTTP against a
// running API with PostgreSQL, with the requests and result zips a real
// wptagent made (test/fixtures/wpt/). What a team with a wptagent fleet sees:
// its agents poll, get one WPT test per arm, upload, and the rounds appear in
// the API with the protocol the agent itself recorded.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { gunzipSync, gzipSync } from 'node:zlib'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { createTestApp } from './helpers/app.js'
import { replayAgent, recordedRequests, recordedFile } from '../dev/fake-wptagent.js'
import { rewriteResultZip, writeZip, readZip } from '../dev/wpt-zip.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createMonitor } from '../lib/store/monitors.js'
import { createWptKey, wptAgent, MAX_WPT_AGENTS_PER_LOCATION } from '../lib/store/wpt-keys.js'
import { nextTest } from '../lib/store/wpt-tests.js'
import { switchesOf, wptJob } from '../lib/measurement/wpt/job.js'
import { navigationTimings } from '../lib/measurement/wpt/navigation.js'
import { traceTimes, traceTtfb } from '../lib/measurement/wpt/trace.js'
import { readResultZip } from '../lib/measurement/wpt/zip.js'
import { readResultZipOffThread, zipReadsRunning, ZIP_THREADS } from '../lib/measurement/wpt/zip-thread.js'
import { resultFromDevtools } from '../lib/measurement/wpt/devtools.js'
import { redactNetlog } from '../lib/measurement/wpt/netlog.js'

const ZIP = {
  h1: recordedFile('131150_SPIKE_H1_0001_all_x_result.zip'),
  h3Failed: recordedFile('131342_SPIKE_H3_0001_all_x_result.zip'),
  h3: recordedFile('131447_SPIKE_H3_0002_all_x_result.zip')
}
const RUN = {
  h1: recordedRequests('server-requests-run1.jsonl'),
  h3Failed: recordedRequests('server-requests-run2.jsonl'),
  h3: recordedRequests('server-requests-run3.jsonl')
}
// The origin the recordings loaded; the agent's own data says where it went.
const URL_H3 = 'https://localhost:18443/'

let t
let server
let key
let otherKey
before(async () => {
  // The recordings loaded a loopback origin, which a WPT location measures only while private targets are allowed.
  t = await createTestApp({ H3LENS_AUTH_FAILURES_PER_MIN: '5', H3LENS_ALLOW_PRIVATE_TARGETS: 'true' })
  await upsertLocation(t.db, { id: 'wpt-eu', name: 'WPT Frankfurt', region: 'Europe', kind: 'wpt' })
  await upsertLocation(t.db, { id: 'wpt-us', name: 'WPT Virginia', region: 'North America', kind: 'wpt' })
  key = (await createWptKey(t.db, { location: 'wpt-eu' })).key
  otherKey = (await createWptKey(t.db, { location: 'wpt-us' })).key
  await t.app.listen({ host: '127.0.0.1', port: 0 })
  server = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (t.app.server.address()).port}`
})
after(async () => { await t.close() })

/** A monitor at one wpt location, with `rounds` rounds due now and in the minutes before; the forced arms unless `input` says otherwise. */
async function monitorWithRounds (input, rounds = 1, location = 'wpt-eu') {
  // A test is handed its own rounds: one an earlier test left (a refused
  // upload's round runs again after a back-off of seconds) would go first.
  await t.db.query("UPDATE jobs SET state = 'cancelled' WHERE location_id = $1 AND state IN ('queued', 'leased')", [location])
  const m = await createMonitor(t.db, { url: URL_H3, interval_s: 60, locations: [location], modes: ['h2', 'h3'], ...input }, { allowPrivateTargets: true })
  await t.db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at)
     SELECT $1, $2, date_trunc('minute', now()) - make_interval(mins => g) FROM generate_series(0, $3 - 1) g`, [m.id, location, rounds])
  return m
}

const arm = (job) => (job.addCmdLine.includes('--origin-to-force-quic-on') ? 'h3' : job.addCmdLine.includes('--disable-quic') ? 'h2' : 'auto')
const forTest = (zip, job, opts = {}) => rewriteResultZip(zip, { testId: job['Test ID'], ...opts })
/** The H3 recording as an H2 load would have recorded it: the agent writes h2 as "HTTP/2". */
const asH2 = (devtools) => { for (const r of devtools.requests) r.protocol = 'HTTP/2' }

async function results (monitorId) {
  const res = await fetch(`${server}/api/v1/monitors/${monitorId}/results?limit=100`, { headers: { authorization: `Bearer ${t.readKey}` } })
  assert.equal(res.status, 200)
  return (await res.json()).items
}

async function workdone (query, zip) {
  const form = new FormData()
  if (zip) form.append('file', new Blob([zip]), 'result.zip')
  const res = await fetch(`${server}/work/workdone.php?${new URLSearchParams({ location: 'wpt-eu', pc: 'spike1', key, testinfo: '1', ...query })}`, { method: 'POST', body: form })
  return { status: res.status, body: await res.text() }
}

async function getwork (pc = 'spike1', k = key, location = 'wpt-eu') {
  const res = await fetch(`${server}/work/getwork.php?${new URLSearchParams({ f: 'json', location, pc, key: k, version: '23.07' })}`, { headers: { 'user-agent': 'wptagent' } })
  const body = await res.text()
  return { status: res.status, body, job: res.status === 200 && body ? JSON.parse(body) : null }
}

test('a round of a journey-only monitor whose journey has no WPT form is skipped at a WPT location, saying why; a monitor that also runs the page gets its page arms', async () => {
  await upsertLocation(t.db, { id: 'wpt-journey', name: 'WPT Journeys', region: 'Europe', kind: 'wpt' })
  const journeyKey = (await createWptKey(t.db, { location: 'wpt-journey' })).key
  const steps = [{ action: 'navigate', url: '/', name: 'home' }, { action: 'assert', selector: 'h1' }]
  const only = await monitorWithRounds({ probes: ['journey'], journey: { steps } }, 1, 'wpt-journey')
  const asked = await getwork('spike1', journeyKey, 'wpt-journey')
  assert.equal(asked.status, 200)
  assert.equal(asked.body, '', 'no WPT test for a journey WPT cannot run (test/wpt-journey.test.js has those it can)')
  const { rows: [skipped] } = await t.db.query('SELECT state, last_error FROM jobs WHERE monitor_id = $1', [only.id])
  assert.equal(skipped.state, 'skipped')
  assert.equal(skipped.last_error, 'skipped: WebPageTest location wpt-journey does not run this journey, which runs on Puppeteer agents only: ' +
    'step 2 (assert h1) has no WebPageTest form: a WebPageTest script cannot fail a run on a condition')

  const both = await monitorWithRounds({ probes: ['page', 'journey'], journey: { steps } }, 1, 'wpt-journey')
  const { job } = await getwork('spike1', journeyKey, 'wpt-journey')
  assert.ok(job, 'the page arms of a monitor that runs the page probe too')
  assert.equal(job.url, URL_H3)
  const { rows: [leased] } = await t.db.query('SELECT state FROM jobs WHERE monitor_id = $1', [both.id])
  assert.equal(leased.state, 'leased')
})

test('a round becomes one WPT test per arm; the uploads become its results, with the protocol and TTFB of the base page', async () => {
  const m = await monitorWithRounds({})
  const { jobs, bodies } = await replayAgent({
    server,
    records: RUN.h3,
    location: 'wpt-eu',
    key,
    pc: 'spike3',
    // The H3 arm gets the recorded H3 run; the H2 arm the recorded plain-HTTP run, which an H2 arm must not count.
    result: async (job) => ({ zip: await forTest(arm(job) === 'h3' ? ZIP.h3 : ZIP.h1, job) })
  })
  assert.equal(jobs.length, 2, 'one test per arm')
  assert.deepEqual(jobs.map(arm).sort(), ['h2', 'h3'])
  for (const body of bodies) assert.ok(body === '' || body.startsWith('{'), `getwork answered ${JSON.stringify(body.slice(0, 40))}: only a job or nothing`)
  for (const job of jobs) {
    assert.equal(job.url, URL_H3)
    assert.equal(job.runs, 1)
    assert.equal(job.fvonly, 1)
    assert.equal(job['Capture Video'], 0)
    assert.deepEqual([job.bwIn, job.bwOut, job.latency, job.plr], [0, 0, 0, 0], 'no shaping unless the location shapes')
    assert.doesNotMatch(job.addCmdLine, /--host-resolver-rules|--disable-features/, 'never a switch the agent sets itself')
  }
  assert.equal(jobs.find((j) => arm(j) === 'h3')?.addCmdLine, '--enable-quic --origin-to-force-quic-on=localhost:18443')
  assert.equal(jobs.find((j) => arm(j) === 'h2')?.addCmdLine, '--disable-quic')
  assert.notEqual(jobs[0]['Test ID'], jobs[1]['Test ID'])

  const rows = await results(m.id)
  assert.equal(rows.length, 2)
  const h3 = rows.find((r) => r.mode === 'h3')
  const h2 = rows.find((r) => r.mode === 'h2')
  assert.equal(h3.status, 'ok')
  assert.equal(h3.observed_protocol, 'h3')
  assert.equal(h3.protocol_ok, true)
  // From the navigation's start to its document's first byte, as the upload's trace gives them (the agent's own: 115 ms).
  assert.equal(h3.ttfb_ms, 136.9, 'TTFB of the base page\'s navigation')
  // The load event and the paints from the navigation's start too: the agent's own load time
  // (260) and paints (287) count from its first activity, 17 ms before it.
  assert.equal(h3.load_ms, 243)
  assert.equal(h3.lcp_ms, 270)
  assert.equal(h3.fcp_ms, 270)
  assert.equal(h3.connect_ms, 106.6, 'the QUIC handshake, as Chromium\'s own timing in the trace gives it')
  assert.equal(h3.requests, 4)
  assert.equal(h3.browser_version, '156.0.0.0')
  assert.deepEqual(h3.flags, ['--enable-quic', '--origin-to-force-quic-on=localhost:18443'], 'the switches the arm was sent')
  assert.match(h3.agent_version, /^wptagent 23\.07$/)
  // The origins the agent saw feed the monitor's capabilities, as a Puppeteer agent's do.
  const caps = await (await fetch(`${server}/api/v1/monitors/${m.id}/capabilities`, { headers: { authorization: `Bearer ${t.readKey}` } })).json()
  const origin = JSON.stringify(caps)
  assert.match(origin, /https:\/\/localhost:18443/)
  assert.match(origin, /h3=\\":18443\\"/)
  const detail = async (id) => (await fetch(`${server}/api/v1/results/${id}`, { headers: { authorization: `Bearer ${t.readKey}` } })).json()
  assert.equal((await detail(h3.id)).details.wpt.navigation_on_agent_clock_ms, 17, 'where the navigation began on the agent\'s clock')
  assert.deepEqual((await detail(h3.id)).details.requests.map((r) => r.protocol), ['h3', 'h3', 'h3', 'h3'], 'each request\'s protocol, as the agent recorded it')
  // All four on the agent's socket 94: the document opened it, the others rode it.
  assert.deepEqual((await detail(h3.id)).details.requests.map((r) => [r.connection_id, r.connection_reused]), [[94, false], [94, true], [94, true], [94, true]])
  // The plain-HTTP recording in the H2 arm: the server-side protocol check calls it a fallback.
  assert.equal(h2.status, 'protocol_mismatch')
  assert.equal(h2.observed_protocol, 'http/1.0')
  assert.equal(h2.ttfb_ms, 27.1, 'the base page\'s navigation, not the agent start page\'s 81 ms')
  // The agent's own server's favicon, which the recording lists first, is no request of the page.
  const h2Requests = (await detail(h2.id)).details.requests.map((r) => r.url)
  assert.equal(h2Requests[0], 'http://127.0.0.1:18081/')
  assert.ok(!h2Requests.some((u) => u.startsWith('http://127.0.0.1:8888/')), h2Requests.join(' '))

  const { rows: [job] } = await t.db.query('SELECT state FROM jobs WHERE monitor_id = $1', [m.id])
  assert.equal(job.state, 'done')

  // The H3 run's net log is kept as evidence, like a Puppeteer agent's.
  const netlog = await fetch(`${server}/api/v1/results/${h3.id}/netlog`, { headers: { authorization: `Bearer ${t.readKey}` } })
  assert.equal(netlog.status, 200)
  const h3Detail = await detail(h3.id)
  assert.equal(h3Detail.details.netlog.summary.quic_sessions.length > 0, true, 'the net log is summarised like a Puppeteer agent\'s')
  // Kept without the page's contents: wptagent captures everything, the
  // bytes of each request and response among the events.
  const uploaded = JSON.parse(gunzipSync(/** @type {Buffer} */ ((await unzipMembers(ZIP.h3)).find((x) => x.name === '1_netlog.txt.gz')?.data)).toString())
  const withBytes = (/** @type {any} */ log) => log.events.filter((/** @type {any} */ e) => e.params && ('bytes' in e.params || 'hex_encoded_bytes' in e.params)).length
  assert.ok(withBytes(uploaded) > 0, 'the recorded log has the page\'s bytes')
  const body = Buffer.from(await netlog.arrayBuffer())
  const kept = JSON.parse((body[0] === 0x1f ? gunzipSync(body) : body).toString())
  assert.equal(withBytes(kept), 0)
  assert.equal(kept.events.length, uploaded.events.length, 'every event is kept')
  assert.equal(h3Detail.details.netlog.redacted, true)

  const agents = await (await fetch(`${server}/api/v1/agents`, { headers: { authorization: `Bearer ${t.readKey}` } })).json()
  const spike3 = agents.items.find((a) => a.name === 'spike3')
  assert.equal(spike3.kind, 'wpt')
  assert.equal(spike3.location_id, 'wpt-eu')
  assert.equal(spike3.version, '23.07')
  assert.equal(spike3.alive, true, 'polls are its heartbeat')
  assert.ok(spike3.last_result_at)
})

test('a monitor with the auto arm gets a third WPT test with nothing forced, its first visit only; its upload is the auto arm\'s result', async () => {
  const m = await monitorWithRounds({ modes: ['h2', 'h3', 'auto'], repeat_view: true })
  const { jobs } = await replayAgent({
    server, records: RUN.h3, location: 'wpt-eu', key, pc: 'spike-auto',
    result: async (job) => ({ zip: await forTest(arm(job) === 'h2' ? ZIP.h1 : ZIP.h3, job) })
  })
  assert.deepEqual(jobs.map(arm).sort(), ['auto', 'h2', 'h3'], 'one test per arm')
  const auto = jobs.find((j) => arm(j) === 'auto') ?? assert.fail('no auto test')
  assert.equal(auto.addCmdLine, '--enable-quic', 'QUIC as Chromium ships it, nothing forced or switched off')
  assert.equal(auto.fvonly, 1, 'the first visit only: the agent\'s repeat view keeps the cache')
  assert.equal(jobs.find((j) => arm(j) === 'h3')?.fvonly, 0, 'the forced arms keep their repeat view')
  assert.match(auto.label, /auto arm \(nothing forced\)/)

  const rows = await results(m.id)
  const mine = rows.find((r) => r.mode === 'auto')
  assert.equal(mine.view, 'first')
  assert.equal(mine.status, 'ok', 'whatever protocol the auto arm got counts')
  assert.equal(mine.observed_protocol, 'h3')
  assert.equal(mine.protocol_ok, true)
  const detail = await (await fetch(`${server}/api/v1/results/${mine.id}`, { headers: { authorization: `Bearer ${t.readKey}` } })).json()
  assert.equal(detail.details.protocol_reason.code, 'h3')
  const { rows: [job] } = await t.db.query('SELECT state FROM jobs WHERE monitor_id = $1', [m.id])
  assert.equal(job.state, 'done', 'the round is done once all three arms are in')
})

test('the round is done only when both arms are in', async () => {
  const m = await monitorWithRounds({})
  const first = (await getwork('spike1')).job
  const up = await workdone({ id: first['Test ID'], done: '1' }, await forTest(ZIP.h3, first, arm(first) === 'h2' ? { edit: asH2 } : {}))
  assert.equal(up.status, 200, up.body)
  assert.deepEqual(await results(m.id), [], 'half a round is not a result yet')
  const second = (await getwork('spike1')).job
  assert.notEqual(arm(second), arm(first))
  await workdone({ id: second['Test ID'], done: '1' }, await forTest(ZIP.h3, second, arm(second) === 'h2' ? { edit: asH2 } : {}))
  const rows = await results(m.id)
  assert.deepEqual(rows.map((r) => [r.mode, r.status, r.observed_protocol]).sort(), [['h2', 'ok', 'h2'], ['h3', 'ok', 'h3']])
})

test('the replaying agent feeds matched rounds into the regional comparison', async () => {
  const m = await monitorWithRounds({}, 6)
  await replayAgent({
    server, records: RUN.h3, location: 'wpt-eu', key, pc: 'spike3', maxJobs: 20,
    result: async (job) => ({ zip: await forTest(ZIP.h3, job, arm(job) === 'h2' ? { edit: asH2 } : {}) })
  })
  const res = await fetch(`${server}/api/v1/monitors/${m.id}/comparison?metric=ttfb`, { headers: { authorization: `Bearer ${t.readKey}` } })
  assert.equal(res.status, 200)
  const loc = (await res.json()).locations.find((l) => l.location_id === 'wpt-eu')
  assert.equal(loc.kind, 'wpt')
  assert.equal(loc.rounds.matched, 6)
})

test('an A/A monitor sends both arms with its one protocol and judges both against it', async () => {
  const m = await monitorWithRounds({ aa_protocol: 'h3' })
  const { jobs } = await replayAgent({
    server, records: RUN.h3, location: 'wpt-eu', key, pc: 'spike7',
    result: async (job) => ({ zip: await forTest(ZIP.h3, job) })
  })
  assert.deepEqual(jobs.map((j) => j.addCmdLine), ['--enable-quic --origin-to-force-quic-on=localhost:18443', '--enable-quic --origin-to-force-quic-on=localhost:18443'])
  const rows = await results(m.id)
  assert.deepEqual(rows.map((r) => `${r.mode}/${r.status}/${r.observed_protocol}`).sort(), ['h2/ok/h3', 'h3/ok/h3'])
})

test('a ping is a heartbeat and keeps the test\'s round leased', async () => {
  const m = await monitorWithRounds({})
  const job = (await getwork('spike8')).job
  // A test keeps wptagent silent up to twice its time limit (the load, then its processing) beyond the lease setting.
  const { rows: [given] } = await t.db.query('SELECT extract(epoch FROM lease_expires_at - now())::float8 AS s FROM jobs WHERE monitor_id = $1', [m.id])
  assert.ok(given.s > t.config.leaseSeconds + 2 * 60 - 10, `lease of ${given.s} s`)
  await t.db.query("UPDATE jobs SET lease_expires_at = now() + interval '1 second' WHERE monitor_id = $1", [m.id])
  const ping = recordedRequests('server-requests-run3.jsonl').find((r) => r.path.endsWith('/ping.php'))
  const res = await fetch(`${server}/work/ping.php?${new URLSearchParams({ ...ping.query, location: 'wpt-eu', pc: 'spike8', key, test: job['Test ID'] })}`)
  assert.equal(res.status, 200)
  const { rows: [j] } = await t.db.query("SELECT lease_expires_at > now() + interval '60 seconds' AS extended FROM jobs WHERE monitor_id = $1", [m.id])
  assert.equal(j.extended, true)
  const wrong = await fetch(`${server}/work/ping.php?${new URLSearchParams({ ...ping.query, location: 'wpt-eu', pc: 'spike8', key: 'not-the-key' })}`)
  assert.equal(wrong.status, 403)
  // Leave the round finished for the tests after this one.
  await t.db.query("UPDATE jobs SET state = 'cancelled' WHERE monitor_id = $1", [m.id])
})

test('error= and a failed run become error results with the agent\'s message', async () => {
  const m = await monitorWithRounds({})
  await replayAgent({
    server, records: RUN.h3Failed, location: 'wpt-eu', key, pc: 'spike2',
    result: async (job) => arm(job) === 'h3'
      ? { zip: await forTest(ZIP.h3Failed, job), error: 'net::ERR_QUIC_HANDSHAKE_FAILED' }
      : { zip: await forTest(ZIP.h3, job, { edit: asH2 }) }
  })
  const rows = await results(m.id)
  const h3 = rows.find((r) => r.mode === 'h3')
  assert.equal(h3.status, 'error')
  // The origin advertises h3 (its H2 arm saw Alt-Svc h3): an H3 failure, not "H3 not supported".
  assert.equal(h3.error, 'net::ERR_QUIC_HANDSHAKE_FAILED')
  assert.equal(h3.ttfb_ms, null)
  assert.equal(rows.find((r) => r.mode === 'h2').status, 'ok')
})

test('an H3 test whose origin refused QUIC, where the round\'s H2 arm saw the origin advertise no h3, is "H3 not supported", as at a Puppeteer agent\'s location', async () => {
  const m = await monitorWithRounds({})
  // The origin's answers to the H2 arm carry no Alt-Svc.
  const noAltSvc = (devtools) => {
    asH2(devtools)
    for (const r of devtools.requests) r.headers.response = r.headers.response.filter((l) => !/^alt-svc:/i.test(l))
  }
  await replayAgent({
    server, records: RUN.h3Failed, location: 'wpt-eu', key, pc: 'spike2',
    result: async (job) => arm(job) === 'h3'
      ? { zip: await forTest(ZIP.h3Failed, job), error: 'net::ERR_QUIC_HANDSHAKE_FAILED' }
      : { zip: await forTest(ZIP.h3, job, { edit: noAltSvc }) }
  })
  const h3 = (await results(m.id)).find((r) => r.mode === 'h3')
  assert.equal(h3.status, 'error')
  assert.equal(h3.error, 'H3 not supported: https://localhost:18443 refused QUIC and advertises no Alt-Svc h3 (net::ERR_QUIC_HANDSHAKE_FAILED)')
  // Counted as an origin without HTTP/3, not as an H3 failure.
  const res = await fetch(`${server}/api/v1/monitors/${m.id}/comparison?percentiles=50`, { headers: { authorization: `Bearer ${t.readKey}` } })
  const arms = (await res.json()).locations.find((l) => l.location_id === 'wpt-eu').arms
  assert.deepEqual([arms.h3.unsupported, arms.h3.failed], [1, 0])
})

test('workdone is idempotent on (test id, run, cached), and the sharded form works', async () => {
  const m = await monitorWithRounds({ repeat_view: true })
  const a = (await getwork('spike1')).job
  assert.equal(a.fvonly, 0, 'repeat view asked for')
  // Sharded: the first view, then the repeat view with done=1; each twice.
  const first = await forTest(ZIP.h3, a, arm(a) === 'h2' ? { edit: asH2 } : {})
  const repeat = await forTest(ZIP.h3, a, { edit: (d) => { d.pageData.cached = 1; if (arm(a) === 'h2') asH2(d) }, rename: (n) => n.replace(/^1_/, '1_Cached_') })
  for (let i = 0; i < 2; i++) {
    const r1 = await workdone({ id: a['Test ID'], run: '1', cached: '0' }, first)
    assert.equal(r1.status, 200, r1.body)
    assert.equal(JSON.parse(r1.body).stored, i === 0 ? 1 : 0)
  }
  await workdone({ id: a['Test ID'], run: '1', cached: '1', done: '1' }, repeat)
  const again = await workdone({ id: a['Test ID'], run: '1', cached: '1', done: '1' }, repeat)
  assert.deepEqual(JSON.parse(again.body), { stored: 0, duplicates: 1, round_done: false })
  // The whole-test form for the other arm, sent twice.
  const b = (await getwork('spike1')).job
  const whole = writeZip([
    ...(await unzipMembers(await forTest(ZIP.h3, b, arm(b) === 'h2' ? { edit: asH2 } : {}))),
    ...(await unzipMembers(await forTest(ZIP.h3, b, { edit: (d) => { if (arm(b) === 'h2') asH2(d) }, rename: (n) => n.replace(/^1_/, '1_Cached_') })))
  ])
  assert.equal(JSON.parse((await workdone({ id: b['Test ID'], done: '1' }, whole)).body).round_done, true)
  assert.equal((await workdone({ id: b['Test ID'], done: '1' }, whole)).status, 200)
  const rows = await results(m.id)
  assert.deepEqual(rows.map((r) => `${r.mode}/${r.view}/${r.status}`).sort(), ['h2/first/ok', 'h2/repeat/ok', 'h3/first/ok', 'h3/repeat/ok'])
})

const unzipMembers = (zip) => readZip(zip)

/** A whole upload of both views of a test, as the recording loaded them in the test's arm; `first` and `repeat` edit each view's devtools. */
async function bothViews (job, { first = (d) => d, repeat = (d) => d } = {}) {
  const protocol = (d) => { if (arm(job) === 'h2') asH2(d) }
  return writeZip([
    ...(await unzipMembers(await forTest(ZIP.h3, job, { edit: (d) => { protocol(d); first(d) } }))),
    ...(await unzipMembers(await forTest(ZIP.h3, job, { edit: (d) => { protocol(d); repeat(d) }, rename: (n) => n.replace(/^1_/, '1_Cached_') })))
  ])
}

test('the page is the navigation\'s document, not the request the agent names: a document that answered 500 is that error, whatever its error page loaded; a repeat view whose document came from the cache has no load to compare', async () => {
  const m = await monitorWithRounds({ repeat_view: true })
  const a = (await getwork('spike1')).job
  // As wptagent picks its base page: the main frame's first request that answered 200 or 304.
  const res = await workdone({ id: a['Test ID'], done: '1' }, await bothViews(a, {
    first: (d) => {
      d.requests.find((r) => r.request_type === 'Document').responseCode = 500
      d.pageData.final_base_page_request = d.requests.findIndex((r) => r.request_type !== 'Document' && r.responseCode === 200)
    },
    repeat: (d) => {
      d.requests = d.requests.filter((r) => r.request_type !== 'Document')
      d.pageData.final_base_page_request = 0
    }
  }))
  assert.equal(res.status, 200, res.body)
  const b = (await getwork('spike1')).job
  assert.equal(JSON.parse((await workdone({ id: b['Test ID'], done: '1' }, await bothViews(b))).body).round_done, true)
  const rows = await results(m.id)
  const view = (/** @type {string} */ v) => rows.find((r) => r.mode === arm(a) && r.view === v)
  assert.equal(view('first').status, 'error')
  assert.equal(view('first').error, `HTTP 500: ${URL_H3}`)
  assert.equal(view('repeat').status, 'error')
  assert.match(view('repeat').error, /^the repeat view recorded no request for the page: the browser took it from its cache/)
  assert.deepEqual(rows.filter((r) => r.mode === arm(b)).map((r) => r.status), ['ok', 'ok'], 'the other arm, as recorded')
})

test('a whole upload\'s error= is the test\'s: a view whose own record says it loaded is stored as loaded, with a note, and the view that failed keeps the error', async () => {
  const m = await monitorWithRounds({ repeat_view: true })
  const a = (await getwork('spike1')).job
  // The repeat view timed out; wptagent sends its error once, for the whole test.
  const res = await workdone({ id: a['Test ID'], done: '1', error: 'Page Load Timeout' }, await bothViews(a, { repeat: (d) => Object.assign(d.pageData, { result: 99997, error: 'Page Load Timeout' }) }))
  assert.equal(res.status, 200, res.body)
  const b = (await getwork('spike1')).job
  assert.equal(JSON.parse((await workdone({ id: b['Test ID'], done: '1' }, await bothViews(b))).body).round_done, true)
  const rows = await results(m.id)
  const view = (/** @type {string} */ v) => rows.find((r) => r.mode === arm(a) && r.view === v)
  assert.equal(view('first').status, 'ok', view('first').error)
  assert.ok(view('first').ttfb_ms > 0)
  assert.ok(view('first').notes.some((/** @type {any} */ n) => n.code === 'wpt_other_view_error'), JSON.stringify(view('first').notes))
  assert.deepEqual([view('repeat').status, view('repeat').error], ['timeout', 'Page Load Timeout'])
})

test('a bad or hostile zip is refused with 400 and nothing is stored', async () => {
  await monitorWithRounds({})
  const job = (await getwork('spike4')).job
  const id = job['Test ID']
  /** An upload from spike4, the agent the test was given to. */
  const fromItsAgent = (/** @type {Record<string, string>} */ query, /** @type {Buffer | undefined} */ zip) => workdone({ pc: 'spike4', ...query }, zip)
  const devtools = (await unzipMembers(await forTest(ZIP.h3, job))).find((m) => m.name === '1_devtools_requests.json.gz')?.data
  assert.ok(devtools)
  const cases = {
    'not a zip': Buffer.from('this is not a zip file at all'),
    'no devtools requests': await forTest(ZIP.h3, job, { drop: (n) => n.includes('devtools_requests') }),
    'a gzip bomb': writeZip([{ name: '1_devtools_requests.json.gz', data: gzipSync(Buffer.alloc(200 * 1024 * 1024, 0x20)) }]),
    'a member that inflates past its cap': writeZip([{ name: '1_netlog.txt.gz', data: Buffer.alloc(40 * 1024 * 1024), deflate: true }]),
    'a member that lies about its size': writeZip([{ name: '1_devtools_requests.json.gz', data: Buffer.alloc(1024 * 1024), deflate: true, declaredSize: 10 }]),
    'a path out of the archive': writeZip([{ name: '../../../etc/cron.d/x', data: Buffer.from('x') }, { name: '1_devtools_requests.json.gz', data: devtools }]),
    'an absolute path': writeZip([{ name: '/etc/passwd', data: Buffer.from('x') }, { name: '1_devtools_requests.json.gz', data: devtools }]),
    'another test\'s zip': await rewriteResultZip(ZIP.h3, { testId: 'SPIKE_H3_0002' })
  }
  for (const [what, zip] of Object.entries(cases)) {
    const res = await fromItsAgent({ id, done: '1' }, zip)
    assert.equal(res.status, 400, `${what}: ${res.body}`)
  }
  // What one upload may make the API hold, whatever it is made of: each of
  // these is a readable result of the test (its devtools requests are
  // there) with more beside it, and is refused for that, saying why.
  const besides = (/** @type {{ name: string, data: Buffer, deflate?: boolean }[]} */ members) => writeZip([{ name: '1_devtools_requests.json.gz', data: devtools }, ...members])
  /** @type {Record<string, [Buffer, RegExp]>} */
  const bounded = {
    // 12 MB of "{}," parses into 4 million objects, gigabytes of memory.
    'JSON of millions of tiny values': [besides([{ name: '1_2_devtools_requests.json.gz', data: gzipSync(`[${'{},'.repeat(4_000_001)}{}]`) }]), /1_2_devtools_requests\.json\.gz holds more than 4000000 JSON values/],
    'members that together inflate past the upload\'s cap': [besides(['1_screen.jpg', '1_2_screen.jpg', '1_3_screen.jpg', '1_4_screen.jpg']
      .map((name) => ({ name, data: Buffer.alloc(30 * 1024 * 1024), deflate: true }))), /its members come to more than 100663296 bytes/],
    'steps whose JSON together holds too many values': [besides(['1_2', '1_3', '1_4'].map((step) => ({ name: `${step}_devtools_requests.json.gz`, data: gzipSync(`[${'0,'.repeat(3_000_000)}0]`) }))),
      /hold more than 8000000 JSON values in all/],
    // Each under its cap, together 300 MB to gunzip, while the API waits.
    'page data that together decompresses past the upload\'s cap': [((big) => besides(['1', '1_2', '1_3', '1_4', '1_5'].map((step) => ({ name: `${step}_page_data.json.gz`, data: big }))))(gzipSync(`"${'x'.repeat(60 * 1024 * 1024)}"`)),
      /its JSON files decompress to more than 268435456 bytes in all/]
  }
  for (const [what, [zip, why]] of Object.entries(bounded)) {
    const res = await fromItsAgent({ id, done: '1' }, zip)
    assert.equal(res.status, 400, `${what}: ${res.body}`)
    assert.match(JSON.parse(res.body).message, why, what)
  }
  // Another agent of the location holds the same key; the test is not its.
  const otherAgent = await fromItsAgent({ id, done: '1', pc: 'spike1' }, await forTest(ZIP.h3, job))
  assert.equal(otherAgent.status, 400, otherAgent.body)
  assert.equal(JSON.parse(otherAgent.body).field, 'pc')
  assert.match(JSON.parse(otherAgent.body).message, /was given to another agent of location wpt-eu, not to spike1/)
  // A name that never asked for work: refused, and not listed as an agent of the location.
  const phantom = await fromItsAgent({ id, done: '1', pc: 'phantom' }, await forTest(ZIP.h3, job))
  assert.equal(phantom.status, 400, phantom.body)
  assert.equal(JSON.parse(phantom.body).field, 'pc')
  assert.match(JSON.parse(phantom.body).message, /no WebPageTest agent "phantom" of location wpt-eu has asked for work/)
  assert.equal((await t.db.query("SELECT count(*)::int AS n FROM agents WHERE name = 'phantom'")).rows[0].n, 0)
  const unknown = await fromItsAgent({ id: 'SPIKE_H3_0002', done: '1' }, ZIP.h3)
  assert.equal(unknown.status, 400, 'a test id h3lens never gave out')
  assert.equal(JSON.parse(unknown.body).field, 'id')
  // The test asked for no repeat view: an upload calling itself one is no result of it.
  const repeat = await fromItsAgent({ id, run: '1', cached: '1', done: '1' }, await forTest(ZIP.h3, job))
  assert.equal(repeat.status, 400, repeat.body)
  assert.equal(JSON.parse(repeat.body).field, 'cached')
  assert.equal((await fromItsAgent({ id, run: '2', cached: '0', done: '1' }, await forTest(ZIP.h3, job))).status, 400, 'a second run')
  // Another location's key does not reach this location's tests.
  await upsertLocation(t.db, { id: 'wpt-ap', name: 'WPT Singapore', region: 'Asia', kind: 'wpt' })
  const apKey = (await createWptKey(t.db, { location: 'wpt-ap' })).key
  const elsewhere = await fromItsAgent({ id, done: '1', location: 'wpt-ap', key: apKey }, await forTest(ZIP.h3, job))
  assert.equal(elsewhere.status, 400, elsewhere.body)
  assert.equal((await fromItsAgent({ id, done: '1', location: 'wpt-ap', key }, await forTest(ZIP.h3, job))).status, 403, 'nor its key another location')
  const { rows: [n] } = await t.db.query('SELECT count(*)::int AS n FROM wpt_runs WHERE test_id = $1', [id])
  assert.equal(n.n, 0)
})

test('a multipart body that cannot be read (no boundary, cut short, two files) is a 400 naming file, and the round learns why', async () => {
  // A location of its own: the rounds other tests leave queued are not handed out here.
  await upsertLocation(t.db, { id: 'wpt-mp', name: 'WPT multipart', region: 'Europe', kind: 'wpt' })
  const mpKey = (await createWptKey(t.db, { location: 'wpt-mp' })).key
  const m = await monitorWithRounds({}, 1, 'wpt-mp')
  const job = (await getwork('spike4', mpKey, 'wpt-mp')).job
  const id = job['Test ID']
  const url = `${server}/work/workdone.php?${new URLSearchParams({ location: 'wpt-mp', pc: 'spike4', key: mpKey, id })}`
  const zip = await forTest(ZIP.h3, job)
  const twoFiles = new FormData()
  twoFiles.append('other', new Blob([Buffer.from('x')]), 'other.txt')
  twoFiles.append('file', new Blob([new Uint8Array(zip)]), 'result.zip')
  /** @type {[string, RequestInit][]} */
  const bodies = [
    ['no boundary', { headers: { 'content-type': 'multipart/form-data' }, body: 'xx' }],
    ['cut short', { headers: { 'content-type': 'multipart/form-data; boundary=abc' }, body: '--abc\r\nContent-Disposition: form-data; name="file"; filename="result.zip"\r\n\r\n' + zip.subarray(0, 100).toString('latin1') }],
    ['two files', { body: twoFiles }]
  ]
  for (const [what, init] of bodies) {
    const res = await fetch(url, { method: 'POST', ...init })
    const body = await res.text()
    assert.equal(res.status, 400, `${what}: ${body}`)
    assert.equal(JSON.parse(body).field, 'file', what)
  }
  const { rows: [round] } = await t.db.query('SELECT last_error FROM jobs WHERE monitor_id = $1', [m.id])
  assert.match(round.last_error, /the upload of test \S+ was refused \(400\): file: /)
})

test('an upload being read holds up no other request: the API answers while it gunzips and parses', async () => {
  await monitorWithRounds({})
  const job = (await getwork('spike6')).job
  const devtools = (await unzipMembers(await forTest(ZIP.h3, job))).find((m) => m.name === '1_devtools_requests.json.gz')?.data
  assert.ok(devtools)
  // Five steps' page data of 60 MB each: seconds of gunzip before the
  // upload is refused for its size.
  const page = gzipSync(`"${'x'.repeat(60 * 1024 * 1024)}"`)
  const zip = writeZip([{ name: '1_devtools_requests.json.gz', data: devtools }, ...['1', '1_2', '1_3', '1_4', '1_5'].map((step) => ({ name: `${step}_page_data.json.gz`, data: page }))])
  // The API runs in this process: the longest its event loop was held while the upload was read.
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  const started = performance.now()
  const res = await workdone({ pc: 'spike6', id: job['Test ID'], done: '1' }, zip)
  const took = performance.now() - started
  delay.disable()
  assert.equal(res.status, 400, res.body)
  assert.match(JSON.parse(res.body).message, /decompress to more than 268435456 bytes in all/)
  const heldMs = delay.max / 1e6
  // Read on the API's thread, the loop was held for nearly all of it (3 s of 3.2 s here).
  assert.ok(heldMs < took / 4, `the event loop was held ${heldMs.toFixed(0)} ms of the upload's ${took.toFixed(0)} ms`)
})

test('a large net log is summarised off the API\'s thread: the API answers while it is read, and the run keeps its summary', async () => {
  // A location of its own: no other test's round is handed out here.
  const m = await monitorWithRounds({}, 1, 'wpt-us')
  const job = (await getwork('spike7', otherKey, 'wpt-us')).job
  const members = await unzipMembers(await forTest(ZIP.h3, job, arm(job) === 'h2' ? { edit: asH2 } : {}))
  const recorded = JSON.parse(gunzipSync(/** @type {Buffer} */ (members.find((x) => x.name === '1_netlog.txt.gz')?.data)).toString())
  // The recorded log's events again and again, each copy's sources apart: about 30 MB, as a busy page's log captured with IncludeSensitive is.
  const copies = Math.ceil(30e6 / JSON.stringify(recorded.events).length)
  const events = []
  for (let k = 0; k < copies; k++) for (const e of recorded.events) events.push({ ...e, source: { ...e.source, id: e.source.id + k * 100000 } })
  const big = gzipSync(JSON.stringify({ constants: recorded.constants, events }))
  const zip = writeZip(members.map((x) => (x.name === '1_netlog.txt.gz' ? { ...x, data: big } : x)))
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  const started = performance.now()
  const res = await workdone({ pc: 'spike7', key: otherKey, location: 'wpt-us', id: job['Test ID'], done: '1' }, zip)
  const took = performance.now() - started
  delay.disable()
  assert.equal(res.status, 200, res.body)
  const heldMs = delay.max / 1e6
  // Summarised on the API's thread, the loop was held for most of the upload (631 ms of 1.1 s here).
  assert.ok(heldMs < took / 4, `the event loop was held ${heldMs.toFixed(0)} ms of the upload's ${took.toFixed(0)} ms`)
  // The arm's run as stored until the round's other arm is in.
  const { rows: [run] } = await t.db.query('SELECT result FROM wpt_runs WHERE test_id = $1', [job['Test ID']])
  const netlog = [run.result].flat()[0].details.netlog
  assert.ok(netlog.raw_bytes > 25e6, JSON.stringify(netlog).slice(0, 300))
  assert.ok(netlog.summary?.quic_sessions, netlog.error ?? 'no summary')
  const other = (await getwork('spike7', otherKey, 'wpt-us')).job
  const done = await workdone({ pc: 'spike7', key: otherKey, location: 'wpt-us', id: other['Test ID'], done: '1' }, await forTest(ZIP.h3, other, arm(other) === 'h2' ? { edit: asH2 } : {}))
  assert.equal(JSON.parse(done.body).round_done, true, done.body)
  assert.equal((await results(m.id)).length, 2)
})

test('the agent\'s strings are stored without NUL characters or half a surrogate pair', async () => {
  const m = await monitorWithRounds({})
  await replayAgent({
    server, records: RUN.h3, location: 'wpt-eu', key, pc: 'spike5',
    result: async (job) => ({
      zip: await forTest(ZIP.h3, job, {
        edit: (d) => {
          if (arm(job) === 'h2') asH2(d)
          d.pageData.browser_version = `Chrome\u0000 ${'x'.repeat(192)}😀 and more`
          d.pageData.tester = 'agent\ud800'
        }
      })
    })
  })
  const rows = await results(m.id)
  assert.equal(rows.length, 2)
  for (const r of rows) {
    assert.equal(r.status, 'ok', r.error)
    assert.equal(r.browser_version, `Chrome ${'x'.repeat(192)}\ufffd`, 'cut at 200 characters, inside the emoji')
  }
})

test('a kept net log holds no cookie, credential or body: the cookie store\'s values, such headers in either shape, the bytes', () => {
  const log = {
    constants: { logEventTypes: { COOKIE_STORE_COOKIE_ADDED: 7, HTTP2_SESSION_SEND_HEADERS: 9, URL_REQUEST_JOB_FILTERED_BYTES_READ: 3 } },
    events: [
      { type: 7, params: { name: 'sid', value: 'secret-1' } },
      { type: 9, params: { headers: [':method: GET', 'cookie: sid=secret-2', 'WWW-Authenticate: Negotiate secret-3'] } },
      { type: 3, params: { byte_count: 5, bytes: 'c2VjcmV0LTQ=' } },
      { type: 2, params: { headers: { Authorization: 'Bearer secret-5', accept: '*/*' } } }
    ]
  }
  assert.equal(redactNetlog(log), true)
  assert.doesNotMatch(JSON.stringify(log), /secret|c2VjcmV0/)
  assert.deepEqual(log.events.map((e) => e.params), [
    { name: 'sid', value: '[value not kept]' },
    { headers: [':method: GET', 'cookie: [value not kept]', 'WWW-Authenticate: [value not kept]'] },
    { byte_count: 5 },
    { headers: { Authorization: '[value not kept]', accept: '*/*' } }
  ])
  assert.equal(redactNetlog(log), false, 'nothing left to leave out')
})

test('a long redirect chain is read in one pass', () => {
  // 200,000 hops of one navigation: too many for Math.min(...) to take, and
  // a quadratic look-up would take minutes.
  const hops = Array.from({ length: 200_000 }, (_, i) => ({ raw_id: 'nav', responseCode: 302, load_start: 10 + i, ttfb_ms: 1 }))
  const base = { raw_id: 'nav', responseCode: 200, load_start: 300_000, ttfb_ms: 20, protocol: 'HTTP/2' }
  const requests = [...hops, base, ...Array.from({ length: 100_000 }, (_, i) => ({ raw_id: `r${i}`, responseCode: 200, load_start: 400_000 }))]
  const t = navigationTimings(requests, base, { TTFB: 300_020 })
  assert.equal(t.check.navigation_start, 10)
  assert.equal(t.check.base_ttfb_ms, 300_010)
  // The page's own figure is this navigation's: nothing outside the chain started before it.
  assert.equal(t.check.page_ttfb_is_navigation, true)
})

test('a location\'s key makes at most MAX_WPT_AGENTS_PER_LOCATION agents by naming them; those it has go on', async () => {
  await upsertLocation(t.db, { id: 'wpt-many', name: 'WPT many names', region: 'Europe', kind: 'wpt' })
  const manyKey = (await createWptKey(t.db, { location: 'wpt-many' })).key
  await t.db.query("INSERT INTO agents (location_id, name, kind) SELECT 'wpt-many', 'node-' || g, 'wpt' FROM generate_series(1, $1) g", [MAX_WPT_AGENTS_PER_LOCATION])
  const known = await getwork('node-7', manyKey, 'wpt-many')
  assert.equal(known.status, 200, known.body)
  const named = await getwork('one-more', manyKey, 'wpt-many')
  assert.equal(named.status, 400, named.body)
  assert.match(named.body, new RegExp(`location wpt-many has ${MAX_WPT_AGENTS_PER_LOCATION} WebPageTest agents, the most it may have`))
  const { rows: [{ n }] } = await t.db.query("SELECT count(*)::int AS n FROM agents WHERE location_id = 'wpt-many'")
  assert.equal(n, MAX_WPT_AGENTS_PER_LOCATION)
})

test('an upload\'s body other than the multipart result.zip is refused over 64 KiB, before it is parsed and whatever its key', async () => {
  // A stranger's JSON body is parsed before the key is checked: were it 60 MiB, it would stall the API.
  const res = await fetch(`${server}/work/workdone.php?${new URLSearchParams({ location: 'wpt-eu', pc: 'stranger', key: 'wrong-key', id: 'x' })}`,
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"a": [${'1,'.repeat(40000)}1]}` })
  assert.equal(res.status, 413, await res.text())
})

test('wrong keys get 403, then 429 for that address and location; the right key always passes', async () => {
  for (let i = 0; i < 5; i++) assert.equal((await getwork('intruder', 'wrong-key', 'wpt-us')).status, 403)
  const over = await fetch(`${server}/work/getwork.php?${new URLSearchParams({ location: 'wpt-us', pc: 'intruder', key: 'wrong-key' })}`)
  assert.equal(over.status, 429)
  assert.match(over.headers.get('retry-after') ?? '', /^\d+$/)
  assert.match(await over.text(), /too many wrong keys for location wpt-us; try again in \d+ s/)
  // The agents of the guessed location share the guesser's address (a reverse proxy): their key still works.
  const right = await getwork('spike9', otherKey, 'wpt-us')
  assert.equal(right.status, 200, right.body)
  const ping = await fetch(`${server}/work/ping.php?${new URLSearchParams({ location: 'wpt-us', pc: 'spike9', key: otherKey })}`)
  assert.equal(ping.status, 200)
  assert.equal((await getwork('intruder', 'wrong-key', 'wpt-us')).status, 429, 'further wrong keys stay refused for the minute')
  assert.equal((await getwork('nobody', key, 'no-such-location')).status, 403, 'another location is counted on its own')
  assert.equal((await getwork('spike9', key, 'wpt-eu')).status, 200, 'an agent of another location from the same address is unaffected')
})

test('requeue.php gives the test back; the round runs again with new tests', async () => {
  const m = await monitorWithRounds({})
  const job = (await getwork('spike5')).job
  const res = await fetch(`${server}/work/requeue.php?${new URLSearchParams({ id: job['Test ID'], sig: 'x', location: 'wpt-eu' })}`)
  assert.equal(await res.text(), 'requeued')
  const { rows: [j] } = await t.db.query('SELECT state, attempts FROM jobs WHERE monitor_id = $1', [m.id])
  assert.deepEqual(j, { state: 'queued', attempts: 0 })
  const again = (await getwork('spike5')).job
  assert.notEqual(again['Test ID'], job['Test ID'])
  const stale = await workdone({ id: job['Test ID'], pc: 'spike5', done: '1' }, await forTest(ZIP.h3, job))
  assert.equal(stale.status, 409, 'the given-back test no longer counts')
})

test('requeue.php after one arm is in: the round runs again in both arms, never pairing an arm of each run', async () => {
  const m = await monitorWithRounds({})
  // The run after the requeue uploads no screenshot and no net log: nothing of the first run may stand for its loads.
  const upload = async (job, { evidence = true } = {}) => {
    const zip = await forTest(ZIP.h3, job, { ...(arm(job) === 'h2' ? { edit: asH2 } : {}), drop: (n) => !evidence && /_(screen\.jpg|netlog\.txt\.gz)$/.test(n) })
    const up = await workdone({ id: job['Test ID'], pc: 'spike6', done: '1' }, zip)
    assert.equal(up.status, 200, up.body)
  }
  const done = (await getwork('spike6')).job
  await upload(done)
  const stopped = (await getwork('spike6')).job
  const res = await fetch(`${server}/work/requeue.php?${new URLSearchParams({ id: stopped['Test ID'], sig: 'x', location: 'wpt-eu' })}`)
  assert.equal(await res.text(), 'requeued')
  const again = []
  for (let i = 0; i < 2; i++) {
    const job = (await getwork('spike6')).job
    assert.ok(job, `the round's arm ${i + 1} runs again`)
    again.push(job)
    await upload(job, { evidence: false })
  }
  assert.deepEqual(again.map(arm).sort(), ['h2', 'h3'], 'both arms run again, the one already in too')
  const rows = await results(m.id)
  assert.deepEqual(rows.map((r) => r.mode).sort(), ['h2', 'h3'], 'one result per arm')
  for (const r of rows) {
    const detail = await (await fetch(`${server}/api/v1/results/${r.id}`, { headers: { authorization: `Bearer ${t.readKey}` } })).json()
    assert.ok(again.some((j) => j['Test ID'] === detail.details.wpt.test_id), `the ${r.mode} arm is from the run after the requeue, not test ${detail.details.wpt.test_id}`)
    for (const evidence of ['filmstrip', 'netlog']) {
      const res = await fetch(`${server}/api/v1/results/${r.id}/${evidence}`, { headers: { authorization: `Bearer ${t.readKey}` } })
      assert.equal(res.status, 404, `the ${r.mode} arm's ${evidence} would be the first run's`)
    }
  }
  const stale = await workdone({ id: done['Test ID'], pc: 'spike6', done: '1' }, await forTest(ZIP.h3, done))
  assert.equal(stale.status, 409, 'the arm of the given-back run no longer counts')
})

test('a page that redirects to another origin: the H3 arm forces the origin its H2 arm last landed on at that location', async () => {
  const m = await monitorWithRounds({}, 2)
  // The agent's own record of where the page ended: another https origin.
  const landedElsewhere = (devtools) => { asH2(devtools); devtools.pageData.final_url = 'https://www.localhost:18443/' }
  const { jobs } = await replayAgent({
    server, records: RUN.h3, location: 'wpt-eu', key, pc: 'spike7',
    result: async (job) => ({ zip: await forTest(ZIP.h3, job, arm(job) === 'h2' ? { edit: landedElsewhere } : {}) })
  })
  const forced = jobs.filter((j) => arm(j) === 'h3').map((j) => switchesOf(j.addCmdLine).find((f) => f.startsWith('--origin-to-force-quic-on=')))
  // The first round knows nothing of where the page lands; the second forces it too.
  assert.deepEqual(forced, ['--origin-to-force-quic-on=localhost:18443', '--origin-to-force-quic-on=localhost:18443,www.localhost:18443'])
  assert.equal((await results(m.id)).length, 4)
})

test('a location whose browser was set to one that is not Chromium-based before that was refused gets no test: its round fails saying why', async () => {
  await upsertLocation(t.db, { id: 'wpt-firefox', name: 'WPT Firefox', region: 'Europe', kind: 'wpt', profile: { wpt_browser: 'Firefox' } })
  const firefoxKey = (await createWptKey(t.db, { location: 'wpt-firefox' })).key
  const m = await monitorWithRounds({}, 1, 'wpt-firefox')
  const { status, job } = await getwork('spike9', firefoxKey, 'wpt-firefox')
  assert.deepEqual([status, job], [200, null], 'no test')
  const { rows: [j] } = await t.db.query('SELECT last_error FROM jobs WHERE monitor_id = $1', [m.id])
  assert.match(j.last_error, /: WPT location wpt-firefox cannot measure \S+: its browser "Firefox" is not a Chromium-based browser .* --wpt-browser Chrome$/)
})

test('an agent that asks for work without returning its test fails that attempt, which is retried', async () => {
  const m = await monitorWithRounds({})
  await getwork('spike6')
  await getwork('spike6')
  const { rows: [j] } = await t.db.query('SELECT state, attempts, last_error FROM jobs WHERE monitor_id = $1', [m.id])
  assert.equal(j.state, 'queued')
  assert.match(j.last_error, /without returning test/)
})

test('the two arms are handed out in random order', async () => {
  const db = t.db
  const agent = await wptAgent(db, { location: 'wpt-us', pc: 'order' })
  const firsts = []
  for (const random of [() => 0, () => 0.99]) {
    await monitorWithRounds({}, 1, 'wpt-us')
    const job = await nextTest(db, { agent, leaseSeconds: 60, random })
    firsts.push(arm(job))
    await db.query("UPDATE jobs SET state = 'cancelled' WHERE location_id = 'wpt-us'")
    await db.query("UPDATE wpt_tests SET state = 'dropped' WHERE location_id = 'wpt-us'")
  }
  assert.deepEqual(firsts.sort(), ['h2', 'h3'])
})

test('a job shapes only when the location says so, asks for a net log when the monitor keeps them, and forces QUIC on the H3 origins', async () => {
  const job = { url: 'https://www.example.com/a', monitor_id: 1, due_at: new Date(0), options: { netlog: 'always' } }
  const h3 = wptJob({ testId: 'x', mode: 'h3', job, forceOrigins: ['https://cdn.example.com'], location: { profile: { wpt_shaping: true, rtt_ms: 80, down_kbps: 5000, up_kbps: 1000, loss_pct: 0.5 } } })
  assert.equal(h3.addCmdLine, '--enable-quic --origin-to-force-quic-on=www.example.com:443,cdn.example.com:443')
  assert.deepEqual([h3.bwIn, h3.bwOut, h3.latency, h3.plr], [5000, 1000, 80, 0.5])
  assert.equal(h3.netlog, 1)
  const h2 = wptJob({ testId: 'y', mode: 'h2', job: { ...job, options: {}, repeat_view: true }, forceOrigins: ['https://cdn.example.com'], location: { profile: { rtt_ms: 80 } } })
  assert.equal(h2.addCmdLine, '--disable-quic')
  assert.deepEqual([h2.bwIn, h2.bwOut, h2.latency, h2.plr], [0, 0, 0, 0])
  assert.equal(h2.netlog, undefined)
  assert.equal(h2.fvonly, 0)
})

test('TTFB counts the redirects before the base page, from the first hop\'s DNS lookup, as Navigation Timing does', () => {
  const none = { dns_start: -1, dns_end: -1, connect_start: -1, connect_end: -1, ssl_start: -1, ssl_end: -1, dns_ms: -1, connect_ms: -1, ssl_ms: -1 }
  const requests = [
    // The agent's start page, before the navigation: not 200, so the page TTFB is the base page's.
    { ...none, raw_id: 'S', responseCode: 404, load_start: 0, all_start: 0, ttfb_end: 3 },
    { ...none, raw_id: 'N', responseCode: 301, dns_start: 5, dns_end: 6, connect_start: 6, connect_end: 9, load_start: 9, ttfb_end: 30 },
    { ...none, raw_id: 'N', responseCode: 200, load_start: 31, ttfb_end: 131 }
  ]
  const t = navigationTimings(requests, requests[2], { TTFB: 131 })
  assert.equal(t.ttfb_ms, 126, 'from the first hop\'s DNS lookup at 5 ms')
  assert.equal(t.check.page_ttfb_is_navigation, false, 'the page TTFB counts from the start page, before the navigation')
  assert.equal(t.note, null)
  assert.deepEqual([t.dns_ms, t.connect_ms, t.tls_ms], [null, null, null], 'the base page reused the connection')
})

test('without a trace, an H3 handshake the agent placed across load_start counts whole, back from load_start', () => {
  // A real agent's upload: the QUIC handshake at 75–164 on its net log's clock, the request at 90,
  // the first byte at 301. The navigation began 89 ms before the request: at 1, not at 75.
  const base = { raw_id: 'N', responseCode: 200, protocol: 'h3', dns_start: -1, dns_end: -1, dns_ms: -1, connect_start: -1, connect_end: -1, connect_ms: -1, ssl_start: 75, ssl_end: 164, ssl_ms: 89, load_start: 90, ttfb_end: 301 }
  const t = navigationTimings([base], base, {})
  assert.equal(t.check.source, 'base_request')
  assert.equal(t.check.navigation_start, 1)
  assert.equal(t.ttfb_ms, 300, 'the handshake inside the TTFB (226 from 75)')
})

test('a trace gives the TTFB from the navigation\'s start: the main frame\'s, through redirects; anything else in it is skipped', () => {
  const nav = (id, ts, main = true) => ({ name: 'navigationStart', ts, args: { data: { navigationId: id, isLoadingMainFrame: main } } })
  const response = (id, requestTime, timing = {}) => ({ name: 'ResourceReceiveResponse', ts: 0, args: { data: { requestId: id, timing: { requestTime, receiveHeadersStart: 5.5, receiveHeadersEnd: 6, ...timing } } } })
  const times = traceTimes({
    traceEvents: [
      nav('SUB', 999_000, false), // a subframe's navigation
      nav('N', 1_000_000), // 1,000 ms on the trace's clock (µs)
      response('N', 1.010), // a redirect's hop: 1,010 ms + 5.5
      response('N', 1.020), // the document: 1,020 ms + 5.5
      response('N', 'soon'), null, 7, { name: 'navigationStart' }, { name: 'ResourceReceiveResponse', args: { data: { requestId: 'N' } } }
    ]
  })
  assert.equal(traceTtfb(times, { request_id: 'N-1' }), 25.5, 'the last response\'s first byte, the agent\'s redirect suffix dropped')
  assert.equal(traceTtfb(times, { request_id: 'SUB' }), null, 'no main-frame navigation of that id')
  assert.equal(traceTtfb(traceTimes([nav('N', 1_000_000), response('N', 1.020, { receiveHeadersStart: undefined })]), { request_id: 'N' }), 26,
    'receiveHeadersEnd where the browser gives no receiveHeadersStart')
  assert.equal(traceTtfb(traceTimes([nav('N', 2_000_000), response('N', 1.020)]), { request_id: 'N' }), null, 'a first byte before its navigation is no TTFB')
  for (const hostile of [null, 'x', 42, {}, { traceEvents: 'no' }, []]) assert.equal(traceTimes(hostile), null, JSON.stringify(hostile))
  assert.equal(traceTtfb(null, { request_id: 'N' }), null)
})

test('an upload whose trace cannot be read keeps its run: the TTFB falls back to the agent\'s own', async () => {
  const members = await readZip(recordedFile('131447_SPIKE_H3_0002_all_x_result.zip'))
  const broken = members.map((m) => (m.name === '1_trace.json.gz' ? { ...m, data: gzipSync('{"traceEvents": [') } : m))
  const [view] = await readResultZip(writeZip(broken))
  assert.equal(view.trace, null)
  const fallback = resultFromDevtools(view.devtools, { mode: 'h3', view: 'first', expected: 'h3', trace: view.trace })
  assert.deepEqual([fallback.status, fallback.ttfb_ms, fallback.details.wpt.ttfb_check.source], ['ok', 115, 'agent'])
  assert.deepEqual(fallback.notes.map((n) => n.code), ['wpt_ttfb_agent_clock'], 'the result says its TTFB is on the agent\'s clock')
  const [whole] = await readResultZip(recordedFile('131447_SPIKE_H3_0002_all_x_result.zip'))
  assert.equal(traceTtfb(whole.trace, whole.devtools?.requests[whole.devtools.pageData.final_base_page_request]), 136.9)
  // Traces past what an upload may decompress are left out, never its devtools requests: the run stands without them.
  const budget = { jsonTotalBytes: 1024 * 1024 }
  const big = gzipSync(`{"traceEvents": [], "pad": "${'x'.repeat(2 * 1024 * 1024)}"}`)
  // The big traces come first in the zip; the devtools requests are read before any trace all the same.
  const many = [...['1_2', '1_3', '1_4'].map((step) => ({ name: `${step}_trace.json.gz`, data: big })), ...members]
  const steps = await readResultZip(writeZip(many), budget)
  assert.ok(steps.find((v) => v.step === 1)?.devtools, 'the run\'s devtools requests are read')
  assert.deepEqual(steps.map((v) => [v.step, v.trace]), [[1, null], [2, null], [3, null], [4, null]], 'the traces past the budget are left out')
})

test('uploads that arrive together are read two at a time, each on its thread, and each gets its own views', async () => {
  const zip = recordedFile('131447_SPIKE_H3_0002_all_x_result.zip')
  let most = 0
  const watch = setInterval(() => { most = Math.max(most, zipReadsRunning()) }, 2)
  try {
    const all = await Promise.all(Array.from({ length: 6 }, () => readResultZipOffThread(zip)))
    assert.ok(all.every((views) => views.length === 1 && views[0].devtools), 'every read answered with its run')
  } finally {
    clearInterval(watch)
  }
  assert.equal(ZIP_THREADS, 2)
  assert.equal(most, ZIP_THREADS, `at most ${ZIP_THREADS} zips read at once, and that many: ${most}`)
  assert.equal(zipReadsRunning(), 0)
})

test('the agent\'s own server is no request of the page: a run whose page failed, its favicon named as the base page, has no protocol, requests or bytes', () => {
  const favicon = { full_url: 'http://127.0.0.1:8888/favicon.ico', protocol: 'http/1.1', responseCode: 200, bytesIn: 194, url: '/favicon.ico', host: '127.0.0.1:8888' }
  const row = resultFromDevtools({ pageData: { result: 404, error: 'net::ERR_QUIC_HANDSHAKE_FAILED', final_base_page_request: 0, bytesIn: 194 }, requests: [favicon] },
    { mode: 'h3', view: 'first', expected: 'h3' })
  assert.equal(row.status, 'error')
  assert.equal(row.error, 'net::ERR_QUIC_HANDSHAKE_FAILED')
  assert.deepEqual([row.observed_protocol, row.requests, row.bytes, row.details.requests.length, row.details.origins.length], [null, 0, 0, 0, 0])
})

test('a WPT page-load timeout is a timeout, as a Puppeteer agent\'s is; a repeat view from the browser\'s cache says so', () => {
  const timedOut = resultFromDevtools({ pageData: { result: 99997, error: 'Page Load Timeout', loadTime: 68692 }, requests: [] }, { mode: 'h2', view: 'first', expected: 'h2' })
  assert.deepEqual([timedOut.status, timedOut.error, timedOut.ttfb_ms, timedOut.load_ms], ['timeout', 'Page Load Timeout', null, null])
  // 99998: the browser's own timeout ended the test.
  const browserTimeout = resultFromDevtools({ pageData: { result: 99998, error: 'Timed Out', loadTime: 60000 }, requests: [] }, { mode: 'h2', view: 'first', expected: 'h2' })
  assert.deepEqual([browserTimeout.status, browserTimeout.error], ['timeout', 'Timed Out'])
  const cached = resultFromDevtools({ pageData: { result: 404, loadEventStart: 154, loadTime: 160 }, requests: [{ full_url: 'https://example.com/favicon.ico', protocol: 'h2', responseCode: 404, bytesIn: 10 }] },
    { mode: 'h2', view: 'repeat', expected: 'h2' })
  assert.equal(cached.status, 'error')
  assert.match(cached.error, /^the repeat view recorded no request for the page: the browser took it from its cache/)
})

test('an error of getwork.php is plain text, never JSON that wptagent would read as a test', async () => {
  // No location: a 400 that names the field, in words.
  const res = await fetch(`${server}/work/getwork.php?${new URLSearchParams({ f: 'json', pc: 'spike1', key, version: '23.07' })}`)
  assert.equal(res.status, 400)
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain/)
  const body = await res.text()
  assert.throws(() => JSON.parse(body), 'not JSON')
  assert.match(body, /location/)
})
