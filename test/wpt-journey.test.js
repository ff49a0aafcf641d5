// Journeys at WebPageTest locations, over real HTTP against a running API
// with PostgreSQL: the agent is sent each arm's journey as a WPT script, and
// its multi-step upload comes back through workdone.php as per-step results,
// compared per step like a Puppeteer agent's. The agent here replays a real
// wptagent's requests (dev/fake-wptagent.js) and uploads what a real one
// writes for a script: one set of files per recorded step (`1_…`, `1_2_…`),
// made from a real agent's one-page uploads (test/fixtures/wpt/*_h3l_*.zip)
// in the shape of a real agent's journey uploads, which
// test/wpt-recorded-journey.test.js replays as they are.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from './helpers/app.js'
import { resultOf } from './helpers/results.js'
import { replayAgent, recordedRequests, recordedFile } from '../dev/fake-wptagent.js'
import { scriptResultZip, recordedSteps } from '../dev/wpt-zip.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createWptKey } from '../lib/store/wpt-keys.js'
import { readResultZip } from '../lib/measurement/wpt/zip.js'

// A real agent's uploads of one page (https://localhost:18443/slow/): H3, and H2 as the agent writes it ("HTTP/2").
const PAGE = {
  h3: recordedFile('165154_h3l_16_h3_6586e6310e2f.zip'),
  h2: recordedFile('165205_h3l_16_h2_49881b46bb4b.zip')
}
const AGENT = recordedRequests('server-requests-run3.jsonl')
const ORIGIN = 'https://localhost:18443'
const LOCATION = 'wpt-journeys'

// Three named steps, each one recorded WPT step: open the page, log in (a click), search (a click).
const JOURNEY = {
  steps: [
    { action: 'navigate', url: `${ORIGIN}/slow/`, name: 'open' },
    { action: 'type', selector: '#user', text: 'lab' },
    { action: 'measure_start', name: 'login' },
    { action: 'click', selector: '#login' },
    { action: 'measure_end', name: 'login' },
    { action: 'type', selector: '#q', text: 'quic' },
    { action: 'click', selector: '#search', name: 'search' }
  ]
}
// The page each recorded step loads.
const PAGES = [`${ORIGIN}/slow/`, `${ORIGIN}/account/`, `${ORIGIN}/search/?q=quic`]

let t
let server
let key
before(async () => {
  // The recordings loaded a loopback origin, which a WPT location measures only while private targets are allowed.
  t = await createTestApp({ H3LENS_ALLOW_PRIVATE_TARGETS: 'true' })
  await upsertLocation(t.db, { id: LOCATION, name: 'WPT Journeys', region: 'Europe', kind: 'wpt' })
  key = (await createWptKey(t.db, { location: LOCATION })).key
  await t.app.listen({ host: '127.0.0.1', port: 0 })
  server = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (t.app.server.address()).port}`
})
after(async () => { await t.close() })

/**
 * @param {string} path
 * @param {{ method?: string, json?: unknown }} [init]
 */
async function api (path, { method = 'GET', json } = {}) {
  const res = await fetch(`${server}${path}`, {
    method,
    headers: { authorization: `Bearer ${method === 'GET' ? t.readKey : t.writeKey}`, ...(json ? { 'content-type': 'application/json' } : {}) },
    body: json ? JSON.stringify(json) : undefined
  })
  const body = await res.json()
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(body)}`)
  return body
}

/** A monitor made through the API, with `rounds` rounds due at the WPT location. */
async function monitorWithRounds (input, rounds = 1) {
  const m = await api('/api/v1/monitors', { method: 'POST', json: { url: `${ORIGIN}/slow/`, interval_s: 60, locations: [LOCATION], modes: ['h2', 'h3'], ...input } })
  await t.db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at)
     SELECT $1, $2, date_trunc('minute', now()) - make_interval(mins => g) FROM generate_series(0, $3 - 1) g`, [m.id, LOCATION, rounds])
  return m
}

const arm = (job) => (job.addCmdLine.includes('--origin-to-force-quic-on') ? 'h3' : 'h2')

/**
 * What the agent uploads for a job's script: a step per recorded command,
 * named as the script names it, each made from the real one-page upload of
 * the arm's protocol with its pages put in (and `edit` for a step that went
 * otherwise: (devtools, step number, arm)).
 * @param {Record<string, any>} job
 * @param {(devtools: any, n: number, arm: string) => void} [edit]
 */
function agentUpload (job, edit = () => {}) {
  const steps = recordedSteps(job.script)
  return scriptResultZip({
    testId: job['Test ID'],
    steps: steps.map((s, i) => ({
      from: PAGE[arm(job)],
      eventName: s.eventName ?? undefined,
      edit: (devtools) => {
        // The step's own page; the same connection as the first step's (one browser, one test).
        for (const r of devtools.requests) {
          for (const f of ['full_url', 'url']) if (typeof r[f] === 'string') r[f] = r[f].replace(`${ORIGIN}/slow/`, PAGES[i])
        }
        devtools.pageData.final_url = PAGES[i]
        edit(devtools, i + 1, arm(job))
      }
    }))
  })
}

test('a journey round at a WPT location: each arm gets the journey as a script, and its steps come back as per-step results compared per step', async () => {
  const m = await monitorWithRounds({ journey: JOURNEY }, 3)
  assert.deepEqual(m.probes, ['journey'])
  const { jobs } = await replayAgent({ server, records: AGENT, location: LOCATION, key, pc: 'wpt-j1', result: async (job) => ({ zip: await agentUpload(job) }) })
  assert.equal(jobs.length, 6, 'one WPT test per arm and round')
  for (const job of jobs) {
    assert.deepEqual(recordedSteps(job.script).map((s) => [s.command, s.eventName]),
      [['navigate', 'open'], ['execAndWait', 'login'], ['execAndWait', 'search']], 'a recorded step per navigation and click')
    assert.match(job.script, /^navigate\thttps:\/\/localhost:18443\/slow\/$/m)
    assert.match(job.script, /^exec\t.*document\.querySelector\("#user"\)\)$/m, 'typing runs between recorded steps')
    assert.equal(job.fvonly, 1)
    assert.match(job.label, /journey, h[23] arm/)
  }
  assert.equal(jobs.filter((j) => arm(j) === 'h3').length, 3)
  assert.equal(jobs.find((j) => arm(j) === 'h3')?.addCmdLine, '--enable-quic --origin-to-force-quic-on=localhost:18443')
  assert.equal(jobs.find((j) => arm(j) === 'h2')?.addCmdLine, '--disable-quic')

  const { items } = await api(`/api/v1/monitors/${m.id}/results?limit=100`)
  for (const probe of ['journey', 'journey:open', 'journey:login', 'journey:search']) {
    for (const mode of ['h2', 'h3']) {
      const rs = items.filter((r) => r.probe === probe && r.mode === mode)
      assert.equal(rs.length, 3, `${probe} ${mode}: one result per round`)
      for (const r of rs) {
        assert.equal(r.status, 'ok', `${probe} ${mode}: ${r.error}`)
        assert.equal(r.observed_protocol, mode)
        assert.equal(r.location_id, LOCATION)
        assert.equal(r.requests, probe === 'journey' ? 42 : 14, `${probe}: its own steps' requests`)
      }
    }
  }
  const detailOf = (probe, mode) => api(`/api/v1/results/${resultOf(items, probe, mode).id}`)
  // A step lasts from its start to its load event, and has the page timings of the page it loaded.
  const open = await detailOf('journey:open', 'h3')
  assert.deepEqual(open.details.samples, [629], 'the agent\'s load time of the step')
  // Read as a page's is at a WPT location: the TTFB of the step's navigation from its trace, QUIC
  // handshake included (the agent's own figure is 297, from its first activity).
  assert.equal(open.ttfb_ms, 312.2, 'the step\'s TTFB')
  // The load event from the navigation's start (the agent's own load time, 629, from its first activity).
  assert.equal(open.load_ms, 613)
  assert.equal(open.details.repeat.document_connection_reused, false, 'the first step opens the connection')
  const login = await detailOf('journey:login', 'h2')
  assert.deepEqual(login.details.step, { name: 'login', steps: [3, 3], navigations: [`${ORIGIN}/account/`] })
  assert.ok(login.details.requests.every((q) => q.url.startsWith(`${ORIGIN}/account/`) || !q.url.includes('/slow/')))
  assert.equal(login.details.repeat.requests_on_reused_connections, 14, 'the login step rides the connection the first step opened')
  const whole = await detailOf('journey', 'h2')
  assert.deepEqual(whole.details.samples, [519 * 3], 'the whole journey lasts its recorded steps')
  assert.equal(whole.details.journey.steps.length, JOURNEY.steps.length)
  assert.equal(whole.details.journey.failed_step, null)
  assert.equal(whole.details.journey.steps[1].ms, null, 'typing is timed by nobody at a WPT location')
  assert.deepEqual(whole.details.wpt.steps.map((s) => s.event_name), ['open', 'login', 'search'])

  // The per-step comparison has the WPT location, every round matched.
  for (const probe of ['journey', 'journey:open', 'journey:login', 'journey:search']) {
    const answer = await api(`/api/v1/monitors/${m.id}/comparison?probe=${encodeURIComponent(probe)}&metric=step_ms&percentiles=50`)
    const loc = answer.locations.find((l) => l.location_id === LOCATION) ?? assert.fail(`${probe}: no row for ${LOCATION}`)
    assert.equal(loc.rounds.used, 3, probe)
    const [row] = loc.rows
    assert.equal(row.h2_ms, probe === 'journey' ? 1557 : 519, probe)
    assert.equal(row.h3_ms, probe === 'journey' ? 1887 : 629, probe)
  }
  const { rows: done } = await t.db.query('SELECT state FROM jobs WHERE monitor_id = $1', [m.id])
  assert.deepEqual(done.map((j) => j.state), ['done', 'done', 'done'])
})

test('a failed step ends the arm\'s run with the step named: a result the agent gives for the step, or the agent stopping before it', async () => {
  const m = await monitorWithRounds({ journey: JOURNEY }, 1)
  await replayAgent({
    server,
    records: AGENT,
    location: LOCATION,
    key,
    pc: 'wpt-j2',
    result: async (job) => {
      if (arm(job) === 'h2') {
        // The login click loaded nothing: what the agent writes for such a step (and it runs the next one).
        return {
          zip: await agentUpload(job, (devtools, n) => {
            if (n !== 2) return
            devtools.requests = []
            Object.assign(devtools.pageData, { result: 12999, loadTime: 0, docTime: 0, fullyLoaded: 0 })
            delete devtools.pageData.final_base_page_request
          })
        }
      }
      // The H3 arm's search did not run: the agent stopped after the second step, and says why.
      const zip = await agentUpload(job)
      const steps = await readResultZip(zip)
      assert.deepEqual(steps.map((v) => v.step), [1, 2, 3], 'the upload has each step\'s files')
      const two = await scriptResultZip({ testId: job['Test ID'], steps: recordedSteps(job.script).slice(0, 2).map((s) => ({ from: PAGE.h3, eventName: s.eventName ?? undefined })) })
      return { zip: two, error: 'net::ERR_QUIC_PROTOCOL_ERROR' }
    }
  })
  const { items } = await api(`/api/v1/monitors/${m.id}/results?limit=100`)
  const of = (/** @type {string} */ probe, /** @type {string} */ mode) => resultOf(items, probe, mode)

  const h2 = of('journey', 'h2')
  assert.equal(h2.status, 'error')
  assert.equal(h2.error, 'step 4 (click #login): the WebPageTest agent reported result 12999 (no page loaded and no request succeeded)')
  assert.equal(of('journey:open', 'h2').status, 'ok', 'the steps before it stand')
  assert.equal(of('journey:login', 'h2').error, h2.error, 'the named step it was in fails with it')
  assert.equal(of('journey:search', 'h2').error, `not run: ${h2.error}`, 'the agent ran it, but the journey ended before it')
  const detail = await api(`/api/v1/results/${h2.id}`)
  assert.equal(detail.details.journey.failed_step, 3)

  const h3 = of('journey', 'h3')
  assert.equal(h3.error, 'step 7 (click #search, "search"): the WebPageTest agent stopped before it recorded this step: net::ERR_QUIC_PROTOCOL_ERROR')
  assert.equal(of('journey:login', 'h3').status, 'ok')
  assert.equal(of('journey:search', 'h3').error, h3.error)

  // Failures are data: the comparison counts the failed arms.
  const answer = await api(`/api/v1/monitors/${m.id}/comparison?probe=journey:search&metric=step_ms&percentiles=50`)
  const loc = answer.locations.find((l) => l.location_id === LOCATION) ?? assert.fail('no row for the WPT location')
  assert.equal(loc.arms.h2.failed, 1)
  assert.equal(loc.arms.h3.failed, 1)
})

test('an agent\'s error of the longest kind, with a step\'s words added, is stored cut to 4,000 characters, and its export imports', async () => {
  const m = await monitorWithRounds({ journey: JOURNEY }, 1)
  const said = `net::ERR_QUIC_PROTOCOL_ERROR ${'x'.repeat(3971)}`
  await replayAgent({
    server,
    records: AGENT,
    location: LOCATION,
    key,
    pc: 'wpt-j5',
    result: async (job) => {
      const two = await scriptResultZip({ testId: job['Test ID'], steps: recordedSteps(job.script).slice(0, 2).map((s) => ({ from: arm(job) === 'h2' ? PAGE.h2 : PAGE.h3, eventName: s.eventName ?? undefined })) })
      return { zip: two, error: said }
    }
  })
  const { items } = await api(`/api/v1/monitors/${m.id}/results?limit=100`)
  const search = resultOf(items, 'journey:search', 'h3')
  assert.equal(search.error.length, 4000)
  assert.match(search.error, /^step 7 \(click #search, "search"\): the WebPageTest agent stopped before it recorded this step: net::ERR_QUIC_PROTOCOL_ERROR x+$/)
  const exported = await fetch(`${server}/api/v1/results?monitor=${m.id}&format=ndjson`, { headers: { authorization: `Bearer ${t.readKey}` } })
  const copy = await api('/api/v1/monitors', { method: 'POST', json: { url: `${ORIGIN}/slow/`, interval_s: 60, locations: [LOCATION], modes: ['h2', 'h3'], journey: JOURNEY, paused: true } })
  const imported = await fetch(`${server}/api/v1/monitors/${copy.id}/results/import`, {
    method: 'POST', headers: { authorization: `Bearer ${t.writeKey}`, 'content-type': 'application/x-ndjson' }, body: await exported.text()
  })
  assert.equal(imported.status, 200, await imported.text())
})

test('each step\'s protocol is checked against the arm: a step whose navigation came over H2 in the H3 arm is a fallback', async () => {
  const m = await monitorWithRounds({ journey: JOURNEY }, 1)
  await replayAgent({
    server,
    records: AGENT,
    location: LOCATION,
    key,
    pc: 'wpt-j3',
    result: async (job) => ({ zip: await agentUpload(job, (devtools, n, mode) => { if (mode === 'h3' && n === 2) for (const r of devtools.requests) r.protocol = 'HTTP/2' }) })
  })
  const { items } = await api(`/api/v1/monitors/${m.id}/results?limit=100`)
  const of = (/** @type {string} */ probe, /** @type {string} */ mode) => resultOf(items, probe, mode)
  assert.equal(of('journey:open', 'h3').status, 'ok')
  assert.equal(of('journey:login', 'h3').status, 'protocol_mismatch')
  assert.equal(of('journey:login', 'h3').observed_protocol, 'h2')
  assert.equal(of('journey:search', 'h3').status, 'ok')
  assert.equal(of('journey', 'h3').status, 'protocol_mismatch', 'the whole journey did not stay on H3')
  assert.equal(of('journey', 'h2').status, 'ok')
})

test('a journey with a step WPT cannot run is not sent to a WPT agent, and the location says why', async () => {
  const steps = [{ action: 'navigate', url: `${ORIGIN}/slow/`, name: 'home' }, { action: 'type', selector: '#pw', secret: 'hunter2-wpt' }, { action: 'click', selector: '#login', name: 'login' }]
  const only = await monitorWithRounds({ journey: { steps } }, 1)
  const asked = await replayAgent({ server, records: AGENT, location: LOCATION, key, pc: 'wpt-j4', result: async () => assert.fail('no test for this journey') })
  assert.equal(asked.jobs.length, 0, 'no WPT test for the journey')
  const why = `WebPageTest location ${LOCATION} does not run this journey, which runs on Puppeteer agents only: step 2 (type #pw) has no WebPageTest form: ` +
    'it types a secret, and a WebPageTest script travels to the agent in the clear and stays in its test record'
  const { rows: [skipped] } = await t.db.query('SELECT state, last_error FROM jobs WHERE monitor_id = $1', [only.id])
  assert.equal(skipped.state, 'skipped')
  assert.equal(skipped.last_error, `skipped: ${why}`)

  // A monitor that runs the page too gets its page loads there, each saying why its journey is not among them.
  const both = await monitorWithRounds({ probes: ['page', 'journey'], journey: { steps } }, 1)
  const { jobs } = await replayAgent({ server, records: AGENT, location: LOCATION, key, pc: 'wpt-j4', result: async (job) => ({ zip: await scriptResultZip({ testId: job['Test ID'], steps: [{ from: PAGE[arm(job)] }] }) }) })
  assert.equal(jobs.length, 2, 'the page\'s two arms only')
  for (const job of jobs) assert.equal(job.script, undefined)
  const { items } = await api(`/api/v1/monitors/${both.id}/results?limit=100`)
  assert.deepEqual(items.map((r) => r.probe).sort(), ['page', 'page'])
  for (const r of items) {
    assert.equal(r.status, 'ok', r.error)
    const detail = await api(`/api/v1/results/${r.id}`)
    assert.deepEqual(detail.notes.find((n) => n.code === 'journey_not_sent'), { code: 'journey_not_sent', message: why })
  }
})

test('a monitor that runs the page and a journey gets both at a WPT location: two page tests and two journey tests per round', async () => {
  const m = await monitorWithRounds({ probes: ['page', 'journey'], journey: JOURNEY }, 1)
  const { jobs } = await replayAgent({
    server,
    records: AGENT,
    location: LOCATION,
    key,
    pc: 'wpt-j5',
    result: async (job) => ({ zip: job.script ? await agentUpload(job) : await scriptResultZip({ testId: job['Test ID'], steps: [{ from: PAGE[arm(job)] }] }) })
  })
  const sent = jobs.map((j) => `${j.script ? 'journey' : 'page'} ${arm(j)}`)
  assert.deepEqual(sent.slice(0, 2).map((s) => s.split(' ')[0]), ['page', 'page'], 'the page\'s arms first, then the journey\'s')
  assert.deepEqual(sent.sort(), ['journey h2', 'journey h3', 'page h2', 'page h3'])
  const { items } = await api(`/api/v1/monitors/${m.id}/results?limit=100`)
  assert.deepEqual(items.map((r) => `${r.probe} ${r.mode}`).sort(), [
    'journey h2', 'journey h3', 'journey:login h2', 'journey:login h3', 'journey:open h2', 'journey:open h3',
    'journey:search h2', 'journey:search h3', 'page h2', 'page h3'
  ])
  for (const r of items) assert.equal(r.status, 'ok', `${r.probe} ${r.mode}: ${r.error}`)
  const { rows: [job] } = await t.db.query('SELECT state FROM jobs WHERE monitor_id = $1', [m.id])
  assert.equal(job.state, 'done', 'done once all four tests are in')
})

test('an upload whose steps are not the script\'s is refused, naming the step, and the round\'s attempt fails with the reason', async () => {
  const m = await monitorWithRounds({ journey: JOURNEY }, 1)
  const { jobs, sent } = await replayAgent({
    server,
    records: AGENT,
    location: LOCATION,
    key,
    pc: 'wpt-j6',
    maxJobs: 1,
    // Steps named as another script would name them: the agent ran something else.
    result: async (job) => ({ zip: await scriptResultZip({ testId: job['Test ID'], steps: ['open', 'search', 'login'].map((eventName) => ({ from: PAGE[arm(job)], eventName })) }) })
  })
  assert.equal(jobs.length, 1)
  const upload = sent.find((s) => s.url.includes('/workdone.php')) ?? assert.fail('no upload')
  assert.equal(upload.status, 400)
  assert.match(JSON.parse(upload.body).message, /step 2 is "search", but the script's step 2 is "login"/)
  const { items } = await api(`/api/v1/monitors/${m.id}/results?limit=100`)
  assert.equal(items.length, 0, 'nothing of it is stored')
  const { rows: [job] } = await t.db.query('SELECT state, last_error FROM jobs WHERE monitor_id = $1', [m.id])
  assert.equal(job.state, 'queued', 'retried with back-off')
  assert.match(job.last_error, /the upload of test h3l_\d+_h[23]_journey_[0-9a-f]+ was refused \(400\): .*step 2 is "search"/)
})
