// A journey through the monitors API: every bad journey gets a 400 that
// names the step and field, YAML is accepted as well as JSON, the journey
// probe and its journey go together, and a secret is sealed on the way in
// and never comes back out.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from './helpers/app.js'
import { evaluateAlerts } from '../lib/analysis/alerts.js'
import { upsertLocation } from '../lib/store/locations.js'
import { ACTION_RUNNERS, StepError } from '../agents/journey/actions.js'

let t
before(async () => { t = await createTestApp() })
after(async () => { await t.close() })

const URL_ = 'https://example.com/'
const post = (payload) => t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload })
const nav = { action: 'navigate', url: '/login' }
const journey = (...steps) => ({ url: URL_, locations: ['local'], journey: { steps } })

test('every bad journey gets a 400 naming the step and field', async (s) => {
  const many = Array.from({ length: 31 }, () => nav)
  /** @type {[string, object, string, RegExp][]} */
  const cases = [
    ['click without a selector', journey(nav, { action: 'click' }), 'journey.steps[1].selector', /^journey\.steps\[1\]\.selector: required for click$/],
    ['type without text or secret', journey(nav, { action: 'type', selector: '#q' }), 'journey.steps[1].text', /type takes exactly one of text, secret/],
    ['type with both text and secret', journey(nav, { action: 'type', selector: '#q', text: 'a', secret: 'b' }), 'journey.steps[1].secret', /exactly one of text, secret \(text and secret given\)/],
    ['an unknown action', journey(nav, { action: 'hover', selector: 'a' }), 'journey.steps[1].action', /"hover" is not an action; one of navigate, click/],
    ['no action', journey(nav, { selector: 'a' }), 'journey.steps[1].action', /required; one of navigate/],
    ['a field the action does not take', journey(nav, { action: 'click', selector: 'a', url: '/x' }), 'journey.steps[1].url', /not a field of click \(click takes selector, name\)/],
    ['navigate without a URL', journey({ action: 'navigate' }), 'journey.steps[0].url', /required for navigate/],
    ['navigate to another scheme', journey({ action: 'navigate', url: 'ftp://example.com/' }), 'journey.steps[0].url', /http or https, not ftp/],
    ['navigate with credentials', journey({ action: 'navigate', url: 'https://u:p@example.com/' }), 'journey.steps[0].url', /user name or password/],
    ['navigate to a port browsers refuse', journey(nav, { action: 'navigate', url: 'https://example.com:6667/' }), 'journey.steps[1].url', /port 6667 is one browsers refuse to load/],
    ['navigate to a private address', journey(nav, { action: 'navigate', url: 'http://10.0.0.5/admin' }), 'journey.steps[1].url', /10\.0\.0\.5/],
    ['navigate to loopback', journey({ action: 'navigate', url: 'http://127.0.0.1:8080/' }), 'journey.steps[0].url', /127\.0\.0\.1/],
    ['a first step that is not navigate', journey({ action: 'click', selector: '#go' }), 'journey.steps[0].action', /first action must be navigate/],
    ['select without a value', journey(nav, { action: 'select', selector: '#size' }), 'journey.steps[1].value', /required for select/],
    ['wait_for with two conditions', journey(nav, { action: 'wait_for', selector: '#a', ms: 100 }), 'journey.steps[1].ms', /exactly one of selector, network_idle, ms/],
    ['wait_for with nothing', journey(nav, { action: 'wait_for' }), 'journey.steps[1].selector', /exactly one of selector, network_idle, ms/],
    ['wait_for longer than a step may take', journey(nav, { action: 'wait_for', ms: 20000 }), 'journey.steps[1].ms', /from 1 to 14999/],
    ['network_idle that is not true', journey(nav, { action: 'wait_for', network_idle: 'yes' }), 'journey.steps[1].network_idle', /must be true/],
    ['an empty selector', journey(nav, { action: 'click', selector: '' }), 'journey.steps[1].selector', /must not be empty/],
    ['a selector that is not text', journey(nav, { action: 'click', selector: ['#a'] }), 'journey.steps[1].selector', /must be text/],
    ['eval without a script', journey(nav, { action: 'eval' }), 'journey.steps[1].script', /required for eval/],
    ['a bad step name', journey({ ...nav, name: 'log in' }), 'journey.steps[0].name', /1 to 40 letters/],
    ['a name used twice', journey({ ...nav, name: 'a' }, { action: 'click', selector: 'b', name: 'a' }), 'journey.steps[1].name', /"a" already names journey\.steps\[0\]/],
    ['measure_end of nothing open', journey(nav, { action: 'measure_end', name: 'x' }), 'journey.steps[1].name', /no measure_start "x" is open/],
    ['measure_start never ended', journey({ action: 'measure_start', name: 'x' }, nav), 'journey.steps[0].name', /measure "x" is never ended/],
    ['measure_start without a name', journey({ action: 'measure_start' }, nav), 'journey.steps[0].name', /required for measure_start/],
    ['more than 30 steps', journey(...many), 'journey.steps', /at most 30 steps \(31 given\)/],
    ['no steps', journey(), 'journey.steps', /at least one step/],
    ['a step that is not an object', journey(nav, 'click #a'), 'journey.steps[1]', /must be an object/],
    ['an unknown journey field', { url: URL_, journey: { steps: [nav], retries: 3 } }, 'journey.retries', /not a field of a journey/],
    ['a step budget out of range', { url: URL_, journey: { steps: [nav], step_timeout_ms: 10 } }, 'journey.step_timeout_ms', /from 1000 to 60000/],
    ['a journey budget out of range', { url: URL_, journey: { steps: [nav], timeout_ms: 10_000_000 } }, 'journey.timeout_ms', /from 1000 to 180000/],
    ['a step budget above the journey\'s', { url: URL_, journey: { steps: [nav], step_timeout_ms: 60_000, timeout_ms: 1000 } }, 'journey.step_timeout_ms', /at most the journey's timeout_ms \(1000\)/],
    ['a wait longer than the journey', { url: URL_, journey: { steps: [nav, { action: 'wait_for', ms: 50_000 }], timeout_ms: 2000 } }, 'journey.steps[1].ms', /from 1 to 1999 \(under the step's budget, journey\.step_timeout_ms 2000\)/],
    ['a secret reference never stored', journey(nav, { action: 'type', selector: '#pw', secret: { stored: 's0123456789ab' } }), 'journey.steps[1].secret', /no secret s0123456789ab is stored/],
    ['a secret that is a number', journey(nav, { action: 'type', selector: '#pw', secret: 42 }), 'journey.steps[1].secret', /the secret as text/],
    ['YAML that does not parse', { url: URL_, journey: 'steps:\n  - action: navigate\n   url: /' }, 'journey', /not valid YAML or JSON at line 3/],
    ['YAML with a bad step', { url: URL_, journey: 'steps:\n  - action: navigate\n    url: /\n  - action: click\n' }, 'journey.steps[1].selector', /required for click/],
    ['the journey probe without a journey', { url: URL_, probes: ['journey'] }, 'probes', /journey probe needs a journey/]
  ]
  for (const [name, payload, field, message] of cases) {
    await s.test(name, async () => {
      const res = await post(payload)
      assert.equal(res.statusCode, 400, res.body)
      assert.equal(res.json().field, field, res.body)
      assert.match(res.json().message, message)
    })
  }
})

test('journey text nested hundreds of levels deep is a 400 on every route that parses it, and the API goes on', async () => {
  // A few KB each: a V8 stack the YAML parser once overflowed, and at the second such request the process aborted.
  const deep = ['['.repeat(1000) + ']'.repeat(1000), `${'- '.repeat(1000)}x`, `${'{a: '.repeat(600)}1${'}'.repeat(600)}`]
  // A trial needs an agent seen at its location: one claims (nothing), at a location of this test's own.
  await upsertLocation(t.db, { id: 'deep-text', name: 'Deep text', region: 'Europe', kind: 'real' })
  const claim = await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: { authorization: `Bearer ${await t.agentToken('deep-text')}` }, payload: { limit: 1 } })
  assert.equal(claim.statusCode, 200, claim.body)
  for (const text of deep) {
    for (const [url, payload] of /** @type {[string, object][]} */ ([
      ['/api/v1/journeys/check', { url: URL_, journey: text }],
      ['/api/v1/monitors', { url: URL_, locations: ['local'], journey: text }],
      ['/api/v1/journeys/trials', { location_id: 'deep-text', url: URL_, journey: text }],
      ['/api/v1/journeys/check', { url: URL_, journey: text }]
    ])) {
      const res = await t.app.inject({ method: 'POST', url, payload })
      assert.equal(res.statusCode, 400, `${url}: ${res.body}`)
      assert.equal(res.json().field, 'journey', res.body)
      assert.match(res.json().message, /^journey: nested more than 64 levels deep at line 1; a journey is a list of steps/)
    }
  }
  // Deep enough for any journey, and brackets in quotes or in a script are text.
  const fine = 'steps:\n  - action: navigate\n    url: /\n  - action: click\n    selector: "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["\n' +
    '  - action: eval\n    script: |\n      const a = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n'
  const ok = await t.app.inject({ method: 'POST', url: '/api/v1/journeys/check', payload: { url: URL_, journey: fine } })
  assert.equal(ok.statusCode, 200, ok.body)
})

test('a journey in YAML is stored with absolute URLs, its named steps and its budgets', async () => {
  const yaml = `
steps:
  - action: measure_start
    name: login
  - action: navigate
    url: /shop/login.html
  - action: type
    selector: "#user"
    text: lab
  - action: click
    selector: "#submit"
  - action: measure_end
    name: login
  - { action: assert, selector: h1, text: Account }
  - action: type
    selector: "#q"
    text: 42
  - { action: click, selector: "#search", name: search }
`
  const res = await post({ url: URL_, locations: ['local'], journey: yaml })
  assert.equal(res.statusCode, 201, res.body)
  const m = res.json()
  assert.deepEqual(m.probes, ['journey'], 'a monitor given a journey and no probes runs its journey')
  assert.equal(m.journey.steps.length, 8)
  assert.equal(m.journey.steps[1].url, 'https://example.com/shop/login.html')
  assert.equal(m.journey.steps[6].text, '42', 'a field YAML reads as a number is text')
  assert.equal(m.journey.step_timeout_ms, 15000)
  assert.equal(m.journey.timeout_ms, 60000)
  // Removing the journey while the probe runs it is refused; removing both is not.
  const orphan = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { journey: null } })
  assert.equal(orphan.statusCode, 400)
  assert.equal(orphan.json().field, 'journey')
  // Journeys run in Chromium only: Firefox beside one is refused, naming the
  // field the request changed, and a monitor without the journey takes it.
  const firefox = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { browsers: ['chromium', 'firefox'] } })
  assert.equal(firefox.statusCode, 400, firefox.body)
  assert.deepEqual([firefox.json().field, firefox.json().message], ['browsers', 'the journey probe runs in chromium only, not firefox: measure firefox in a monitor of its own'])
  const created = await post({ url: URL_, locations: ['local'], browsers: ['firefox'], journey: yaml })
  assert.equal(created.statusCode, 400, created.body)
  assert.equal(created.json().field, 'browsers')
  const off = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { journey: null, probes: ['page'] } })
  assert.equal(off.statusCode, 200, off.body)
  assert.equal(off.json().journey, null)
  const both = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { browsers: ['chromium', 'firefox'] } })
  assert.equal(both.statusCode, 200, both.body)
  const back = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { probes: ['page', 'journey'], journey: yaml } })
  assert.equal(back.statusCode, 400, back.body)
  assert.equal(back.json().field, 'probes')
})

test('a secret is stored sealed, shown only as a reference, kept by reference and never returned', async () => {
  const secret = 'pa55-Wörd-only-in-the-vault'
  const res = await post(journey(nav, { action: 'type', selector: '#pw', secret }, { action: 'click', selector: '#go', name: 'login' }))
  assert.equal(res.statusCode, 201, res.body)
  const m = res.json()
  assert.ok(!res.body.includes(secret))
  const ref = m.journey.steps[1].secret.stored
  assert.match(ref, /^s[0-9a-f]{12}$/)
  const { rows: [row] } = await t.db.query('SELECT journey::text AS journey, journey_secrets::text AS sealed FROM monitors WHERE id = $1', [m.id])
  assert.ok(!row.journey.includes(secret) && !row.sealed.includes(secret), 'the database holds the secret sealed only')
  assert.match(row.sealed, /"v1\.[0-9a-f]{8}\./)

  for (const url of [`/api/v1/monitors/${m.id}`, '/api/v1/monitors']) {
    const read = await t.app.inject({ url })
    assert.equal(read.statusCode, 200)
    assert.ok(!read.body.includes(secret), `${url} returns no secret`)
  }
  // Sent back as shown (an edit of another step), the secret is kept...
  const steps = m.journey.steps.map((s) => (s.action === 'click' ? { ...s, selector: '#login' } : s))
  const kept = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { journey: { steps } } })
  assert.equal(kept.statusCode, 200, kept.body)
  assert.equal(kept.json().journey.steps[1].secret.stored, ref)
  const { rows: [after] } = await t.db.query('SELECT journey_secrets FROM monitors WHERE id = $1', [m.id])
  assert.deepEqual(Object.keys(after.journey_secrets), [ref])
  // ...and a new value replaces it under a new reference.
  const changed = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { journey: { steps: [nav, { action: 'type', selector: '#pw', secret: 'another' }] } } })
  assert.equal(changed.statusCode, 200, changed.body)
  assert.notEqual(changed.json().journey.steps[1].secret.stored, ref)
  // A reference from another monitor is not this one's secret.
  const other = await post(journey(nav, { action: 'type', selector: '#pw', secret: { stored: ref } }))
  assert.equal(other.statusCode, 400)
  assert.equal(other.json().field, 'journey.steps[1].secret')
})

test('a stored secret goes only to the origins it was given for: a journey edited, or a trial, that navigates elsewhere must give it again', async () => {
  const res = await post(journey(nav, { action: 'type', selector: '#pw', secret: 'only-for-example-com' }, { action: 'click', selector: '#go' }))
  assert.equal(res.statusCode, 201, res.body)
  const m = res.json()
  const typed = m.journey.steps[1]
  // An edit that sends the stored secret to another site is refused, naming the secret's step.
  for (const [url, steps] of /** @type {[string | undefined, object[]][]} */ ([
    [undefined, [{ action: 'navigate', url: 'https://example.org/login' }, typed]],
    [undefined, [nav, typed, { action: 'navigate', url: 'https://example.net/' }]],
    ['https://example.org/', [nav, typed]]
  ])) {
    const edited = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { ...(url ? { url } : {}), journey: { steps } } })
    assert.equal(edited.statusCode, 400, edited.body)
    assert.equal(edited.json().field, `journey.steps[${steps.indexOf(typed)}].secret`)
    assert.match(edited.json().message, /the stored secret s[0-9a-f]{12} goes only to https:\/\/example\.com, where it was given for, and this journey also goes to https:\/\/example\.(org|net); give the secret as text again/)
  }
  // So is one that types it into another field of the same site, where the page could show it or an assert tell what it holds.
  const retargeted = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { journey: { steps: [nav, { ...typed, selector: '#q' }, { action: 'assert', selector: '#results', text: 'a' }] } } })
  assert.equal(retargeted.statusCode, 400, retargeted.body)
  assert.equal(retargeted.json().field, 'journey.steps[1].secret')
  assert.match(retargeted.json().message, /the stored secret s[0-9a-f]{12} is typed only into #pw, and this step types it into #q; give the secret as text again/)
  // So is a trial of the monitor's journey on a page of its own.
  await upsertLocation(t.db, { id: 'secret-trial', name: 'Secret trial', region: 'Europe', kind: 'real' })
  const claim = await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: { authorization: `Bearer ${await t.agentToken('secret-trial')}` }, payload: { limit: 1 } })
  assert.equal(claim.statusCode, 200, claim.body)
  const trial = (/** @type {string} */ url) => t.app.inject({ method: 'POST', url: '/api/v1/journeys/trials', payload: { location_id: 'secret-trial', monitor_id: m.id, url, journey: { steps: [{ action: 'navigate', url: '/login' }, typed] } } })
  const away = await trial('https://example.org/')
  assert.equal(away.statusCode, 400, away.body)
  assert.equal(away.json().field, 'journey.steps[1].secret')
  const elsewhereOnSite = await t.app.inject({ method: 'POST', url: '/api/v1/journeys/trials', payload: { location_id: 'secret-trial', monitor_id: m.id, url: 'https://example.com/', journey: { steps: [nav, { ...typed, selector: '#comment' }] } } })
  assert.equal(elsewhereOnSite.statusCode, 400, elsewhereOnSite.body)
  assert.equal(elsewhereOnSite.json().field, 'journey.steps[1].secret')
  // Where it was given for, both work; a secret given as text goes anywhere.
  assert.equal((await trial('https://example.com/')).statusCode, 202)
  await t.db.query("DELETE FROM journey_trials WHERE location_id = 'secret-trial'")
  const kept = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { journey: { steps: [nav, typed, { action: 'click', selector: '#login' }] } } })
  assert.equal(kept.statusCode, 200, kept.body)
  const retyped = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { url: 'https://example.org/', journey: { steps: [nav, { ...typed, secret: 'given-again' }] } } })
  assert.equal(retyped.statusCode, 200, retyped.body)
})

test('a journey that types a secret runs no script: a script could read the field and put the secret where a read key sees it', async () => {
  const leak = { action: 'eval', script: 'throw new Error(btoa(document.querySelector("#pw").value))' }
  // As text, when stored: refused at the script's step.
  const given = await post(journey(nav, { action: 'type', selector: '#pw', secret: 'hunter2' }, leak))
  assert.equal(given.statusCode, 400, given.body)
  assert.equal(given.json().field, 'journey.steps[2].action')
  assert.match(given.json().message, /a journey that types a secret runs no script \(eval\).*assert steps/)
  // A stored secret, with a script added by an edit or in a trial on its own origin: refused too.
  const m = (await post(journey(nav, { action: 'type', selector: '#pw', secret: 'hunter2' }, { action: 'click', selector: '#go' }))).json()
  const typed = m.journey.steps[1]
  for (const steps of [[nav, typed, leak], [nav, leak, typed]]) {
    const edited = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { journey: { steps } } })
    assert.equal(edited.statusCode, 400, edited.body)
    assert.equal(edited.json().field, `journey.steps[${steps.indexOf(leak)}].action`)
  }
  await upsertLocation(t.db, { id: 'script-trial', name: 'Script trial', region: 'Europe', kind: 'real' })
  const claim = await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: { authorization: `Bearer ${await t.agentToken('script-trial')}` }, payload: { limit: 1 } })
  assert.equal(claim.statusCode, 200, claim.body)
  const trial = await t.app.inject({ method: 'POST', url: '/api/v1/journeys/trials', payload: { location_id: 'script-trial', monitor_id: m.id, url: URL_, journey: { steps: [nav, typed, leak] } } })
  assert.equal(trial.statusCode, 400, trial.body)
  assert.equal(trial.json().field, 'journey.steps[2].action')
  // A script beside typed text is a journey like any other.
  assert.equal((await post(journey(nav, { action: 'type', selector: '#q', text: 'shoes' }, leak))).statusCode, 201)
  // A journey stored before the rule: its round's claim sends no secret, and fails the round saying why...
  const before = (await post({ ...journey(nav, { action: 'type', selector: '#pw', secret: 'stored-before-the-rule' }), probes: ['journey'] })).json()
  const withScript = { ...before.journey, steps: [...before.journey.steps, leak] }
  await t.db.query('UPDATE monitors SET journey = $2 WHERE id = $1', [before.id, withScript])
  await t.db.query("UPDATE jobs SET state = 'cancelled' WHERE state IN ('queued', 'leased')")
  // At a location of its own: an agent claiming at local would make it alive for the tests after this one.
  await t.db.query("UPDATE monitors SET locations = array_append(locations, 'script-trial') WHERE id = $1", [before.id])
  const { rows: [queued] } = await t.db.query("INSERT INTO jobs (monitor_id, location_id, due_at) VALUES ($1, 'script-trial', now() - interval '1 minute') RETURNING id", [before.id])
  const claimed = await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: { authorization: `Bearer ${await t.agentToken('script-trial')}` }, payload: { limit: 5 } })
  assert.equal(claimed.statusCode, 200, claimed.body)
  assert.ok(!claimed.body.includes('stored-before-the-rule'), 'no secret leaves the API')
  assert.deepEqual(claimed.json().jobs.map((/** @type {any} */ j) => j.id), [])
  const { rows: [failed] } = await t.db.query('SELECT last_error FROM jobs WHERE id = $1', [queued.id])
  assert.match(failed.last_error, /the journey's secrets cannot be opened: step 3 runs a script \(eval\) in a journey that types a secret/)
  // ...and an agent runs no script in one, before touching the page.
  await assert.rejects(ACTION_RUNNERS.eval({ action: 'eval', script: 'return true' }, { page: /** @type {any} */ (null), timeoutMs: 1000, hasSecret: true }),
    (/** @type {any} */ err) => err instanceof StepError && /types a secret runs no script/.test(err.message))
})

/**
 * Rounds of a journey at `local` in both arms: the login step H3 is half
 * again as slow, the search step is the same in both.
 * @param {number} n
 */
function journeyRounds (n) {
  const base = Date.now() - (n + 5) * 60e3
  return Array.from({ length: n }, (_, i) => {
    const time = new Date(base + i * 60e3).toISOString()
    const noise = (i * 37) % 50
    return ['h2', 'h3'].flatMap((mode) => {
      const login = (mode === 'h3' ? 450 : 300) + noise
      const search = 200 + noise
      return [['journey', login + search], ['journey:login', login], ['journey:search', search]].map(([probe, ms]) => ({
        time, location_id: 'local', mode, probe, status: 'ok', observed_protocol: mode, protocol_ok: true, details: { samples: [ms] }
      }))
    })
  }).flat()
}

test('a journey\'s steps are compared, exported and alerted on step by step', async () => {
  const steps = [nav, { action: 'type', selector: '#user', text: 'lab', name: 'login' }, { action: 'click', selector: '#search', name: 'search' }]
  const created = await post(journey(...steps))
  assert.equal(created.statusCode, 201, created.body)
  const m = created.json()
  const body = journeyRounds(40).map((l) => JSON.stringify(l)).join('\n') + '\n'
  const imported = await t.app.inject({ method: 'POST', url: `/api/v1/monitors/${m.id}/results/import`, headers: { 'content-type': 'application/x-ndjson' }, payload: body })
  assert.equal(imported.statusCode, 200, imported.body)

  const verdict = async (probe) => {
    const res = await t.app.inject({ url: `/api/v1/monitors/${m.id}/comparison?probe=${encodeURIComponent(probe)}&metric=step_ms&percentiles=50` })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().probe, probe)
    const [row] = res.json().locations.find((l) => l.location_id === 'local').rows
    return row
  }
  const login = await verdict('journey:login')
  assert.equal(login.verdict, 'h3_slower', JSON.stringify(login))
  assert.ok(login.h3_ms - login.h2_ms > 100, JSON.stringify(login))
  assert.equal((await verdict('journey:search')).verdict, 'no_clear_difference')
  assert.equal((await verdict('journey')).verdict, 'h3_slower')

  const trends = await t.app.inject({ url: `/api/v1/monitors/${m.id}/trends?probe=journey:search&metric=step_ms&percentiles=50` })
  assert.equal(trends.statusCode, 200, trends.body)
  assert.ok(trends.json().series.length > 0, 'the step has a trend')

  const exported = await t.app.inject({ url: `/api/v1/results?monitor=${m.id}&format=ndjson&probe=journey:login` })
  const lines = exported.body.trim().split('\n').map((l) => JSON.parse(l))
  assert.equal(lines.length, 80)
  assert.ok(lines.every((l) => l.probe === 'journey:login'))

  // An h3_regression rule on one step fires for that step only.
  const rule = (probe) => t.app.inject({
    method: 'POST', url: '/api/v1/alert-rules',
    payload: { kind: 'h3_regression', monitor_id: m.id, metric: 'step_ms', probe, percentile: 50, min_effect_pct: 10, window_s: 86400 }
  })
  const onLogin = await rule('journey:login')
  assert.equal(onLogin.statusCode, 201, onLogin.body)
  assert.equal(onLogin.json().probe, 'journey:login')
  const onSearch = await rule('journey:search')
  assert.equal(onSearch.statusCode, 201, onSearch.body)
  const noSuchStep = await rule('journey:checkout')
  assert.equal(noSuchStep.statusCode, 400, noSuchStep.body)
  assert.equal(noSuchStep.json().field, 'probe')
  assert.match(noSuchStep.json().message, /has no step named checkout \(its named steps: .*login.*search/)
  const wrong = await t.app.inject({ method: 'POST', url: '/api/v1/alert-rules', payload: { kind: 'h3_regression', metric: 'request_ms', probe: 'journey:login', min_effect_pct: 10, window_s: 3600 } })
  assert.equal(wrong.statusCode, 400)
  assert.equal(wrong.json().field, 'probe')
  const notAProbe = await t.app.inject({ method: 'POST', url: '/api/v1/alert-rules', payload: { kind: 'h3_regression', probe: 'journey:a b', min_effect_pct: 10, window_s: 3600 } })
  assert.equal(notAProbe.statusCode, 400)
  assert.equal(notAProbe.json().field, 'probe')

  await evaluateAlerts(t.db, { log: t.app.log })
  const stateOf = async (id, state) => (await t.app.inject({ url: `/api/v1/alerts?rule_id=${id}&state=${state}` })).json().current.map((a) => a.location_id)
  assert.deepEqual(await stateOf(onLogin.json().id, 'firing'), ['local'])
  assert.deepEqual(await stateOf(onSearch.json().id, 'firing'), [])
  assert.deepEqual(await stateOf(onSearch.json().id, 'ok'), ['local'], 'the search step was evaluated, and holds')
  const [firing] = (await t.app.inject({ url: `/api/v1/alerts?rule_id=${onLogin.json().id}` })).json().current
  assert.equal(firing.evidence.probe, 'journey:login')
  assert.match(firing.evidence.link, /probe=journey%3Alogin/)

  // A mistyped step is a 400 naming probe, not an empty answer; a step
  // renamed since keeps its rounds under its old name, which still answers.
  const read = (probe) => t.app.inject({ url: `/api/v1/monitors/${m.id}/comparison?probe=${encodeURIComponent(probe)}&metric=step_ms&percentiles=50` })
  const typo = await read('journey:serch')
  assert.equal(typo.statusCode, 400, typo.body)
  assert.deepEqual([typo.json().field, typo.json().message], ['probe', `monitor ${m.id} has no journey step named serch (its named steps: login, search), nor rounds of one`])
  assert.equal((await t.app.inject({ url: `/api/v1/monitors/${m.id}/trends?probe=journey:serch&metric=step_ms` })).json().field, 'probe')
  const renamed = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: journey(nav, steps[1], { ...steps[2], name: 'find' }) })
  assert.equal(renamed.statusCode, 200, renamed.body)
  const old = await read('journey:search')
  assert.equal(old.statusCode, 200, old.body)
  assert.equal(old.json().locations.find((l) => l.location_id === 'local').rows[0].rounds, 40)
  assert.equal((await read('journey:find')).statusCode, 200, 'the new name, not yet measured')
})

test('the editor\'s check answers a journey\'s named steps, or a 400 naming the step and field, and stores nothing', async () => {
  const check = (payload) => t.app.inject({ method: 'POST', url: '/api/v1/journeys/check', payload })
  const ok = await check({ url: URL_, journey: 'steps:\n  - { action: navigate, url: /, name: home }\n  - { action: click, selector: "#buy", name: buy }\n' })
  assert.equal(ok.statusCode, 200, ok.body)
  assert.deepEqual(ok.json(), { steps: 2, named_steps: ['home', 'buy'], step_timeout_ms: 15000, timeout_ms: 60000 })
  const bad = await check({ url: URL_, journey: { steps: [nav, nav, nav, { action: 'click' }] } })
  assert.equal(bad.statusCode, 400)
  assert.equal(bad.json().field, 'journey.steps[3].selector')
  assert.equal(bad.json().message, 'journey.steps[3].selector: required for click')
  const noUrl = await check({ journey: { steps: [nav] } })
  assert.equal(noUrl.statusCode, 400)
  assert.equal(noUrl.json().field, 'url')
  // The base URL is checked as a monitor's: scheme, credentials, a port browsers refuse.
  for (const { url, message } of [{ url: 'javascript:alert(1)', message: /must use http or https/ }, { url: 'https://u:p@example.com/', message: /must not contain a user name or password/ }, { url: 'https://example.com:6000/', message: /port 6000 is one browsers refuse/ }]) {
    const refused = await check({ url, journey: { steps: [{ action: 'navigate', url: 'https://example.com/' }] } })
    assert.deepEqual([refused.statusCode, refused.json().field], [400, 'url'], refused.body)
    assert.match(refused.json().message, message)
  }
  const { rows } = await t.db.query('SELECT count(*)::int AS n FROM journey_trials')
  assert.equal(rows[0].n, 0)
})

test('a trial needs an agent at its location; its answer is checked before it is stored: a screenshot that is not padded base64 is a 400 naming it, and the trial waits for a good answer', async () => {
  const trial = () => t.app.inject({ method: 'POST', url: '/api/v1/journeys/trials', payload: { location_id: 'local', url: URL_, journey: { steps: [nav] } } })
  // No agent at the location: nothing would take the trial, so it is refused rather than left to expire.
  const unstaffed = await trial()
  assert.equal(unstaffed.statusCode, 400, unstaffed.body)
  // A WebPageTest location's agents never ask for a trial: one there is refused too.
  await t.db.query("INSERT INTO locations (id, name, region, kind) VALUES ('wpt-trial', 'WPT', 'Europe', 'wpt')")
  await t.db.query("INSERT INTO agents (location_id, name, kind, version, last_seen_at) VALUES ('wpt-trial', 'pc-1', 'wpt', '1', now())")
  const atWpt = await t.app.inject({ method: 'POST', url: '/api/v1/journeys/trials', payload: { location_id: 'wpt-trial', url: URL_, journey: { steps: [nav] } } })
  assert.deepEqual([atWpt.statusCode, atWpt.json().field], [400, 'location_id'], atWpt.body)
  const credentials = await t.app.inject({ method: 'POST', url: '/api/v1/journeys/trials', payload: { location_id: 'local', url: 'https://u:p@example.com:6000/', journey: { steps: [nav] } } })
  assert.deepEqual([credentials.statusCode, credentials.json().field], [400, 'url'], credentials.body)
  assert.doesNotMatch(credentials.body, /u:p@/)
  assert.deepEqual([unstaffed.json().field, unstaffed.json().message], ['location_id', 'location_id: location local has no agent running to take the trial (none seen in the last 60 s); start one, or choose a location with one (the Locations page shows them)'])
  const agent = { authorization: `Bearer ${await t.agentToken('local')}` }
  // An agent registered but not running (never seen) takes no trial either.
  const notRunning = await trial()
  assert.deepEqual([notRunning.statusCode, notRunning.json().field], [400, 'location_id'], notRunning.body)
  assert.equal((await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: agent, payload: { limit: 1 } })).statusCode, 200, 'the agent polls: it is seen')
  // A stored secret's reference needs the monitor it was stored with.
  const byRef = await t.app.inject({ method: 'POST', url: '/api/v1/journeys/trials', payload: { location_id: 'local', url: URL_, journey: { steps: [nav, { action: 'type', selector: '#pw', secret: { stored: 's0123456789ab' } }] } } })
  assert.equal(byRef.statusCode, 400, byRef.body)
  assert.deepEqual([byRef.json().field, byRef.json().message], ['journey.steps[1].secret', 'journey.steps[1].secret: the secret s0123456789ab is a monitor\'s, and this names no monitor (monitor_id) to take it from; give monitor_id, or the secret as text'])
  const queued = await trial()
  assert.equal(queued.statusCode, 202, queued.body)
  const { id } = queued.json()
  const claimed = await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: agent, payload: { limit: 1, trials: 1 } })
  assert.equal(claimed.statusCode, 200, claimed.body)
  assert.deepEqual(claimed.json().trials.map((x) => x.id), [id])
  const outcome = { status: 'ok', steps: [] }
  const answer = (screenshot) => t.app.inject({ method: 'POST', url: `/api/v1/agent/trials/${id}`, headers: agent, payload: { outcome, screenshot } })
  for (const bad of ['0O3pUm', 'abc=d', '====']) {
    const res = await answer(bad)
    assert.equal(res.statusCode, 400, `${bad}: ${res.body}`)
    assert.equal(res.json().field, 'screenshot')
  }
  // An outcome without its steps (the editor lists them) is refused, naming the field.
  const stepless = await t.app.inject({ method: 'POST', url: `/api/v1/agent/trials/${id}`, headers: agent, payload: { outcome: { status: 'error', error: 'x' } } })
  assert.equal(stepless.statusCode, 400, stepless.body)
  assert.match(stepless.json().message, /steps/)
  assert.equal((await t.app.inject({ url: `/api/v1/journeys/trials/${id}` })).json().state, 'running')
  const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]).toString('base64')
  assert.equal((await answer(jpeg)).statusCode, 200)
  const done = (await t.app.inject({ url: `/api/v1/journeys/trials/${id}` })).json()
  assert.equal(done.state, 'done')
  assert.equal(done.screenshot, jpeg)
  assert.equal((await answer(jpeg)).statusCode, 404, 'a trial is answered once')
})
