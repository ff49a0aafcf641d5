import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from './helpers/app.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createAgentToken } from '../lib/store/agents.js'
import { effectiveOptions } from '../lib/measurement/probes/index.js'

let t
before(async () => { t = await createTestApp() })
after(async () => { await t.close() })

const post = (payload) => t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload })

test('a monitor is created, read, listed, patched and deleted', async () => {
  const created = await post({ url: 'https://example.com/', label: 'Example', interval_s: 120, locations: ['local'] })
  assert.equal(created.statusCode, 201, created.body)
  const m = created.json()
  assert.equal(m.url, 'https://example.com/')
  assert.deepEqual(m.modes, ['h2', 'h3', 'auto'], 'new monitors get both forced arms and the auto arm')
  assert.deepEqual(m.locations, ['local'])
  assert.equal(m.interval_s, 120)

  const one = await t.app.inject({ url: `/api/v1/monitors/${m.id}` })
  assert.equal(one.json().label, 'Example')
  const list = await t.app.inject({ url: '/api/v1/monitors' })
  assert.ok(list.json().items.some((x) => x.id === m.id))

  const patched = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { paused: true, modes: ['h3'] } })
  assert.equal(patched.statusCode, 200, patched.body)
  assert.equal(patched.json().paused, true)
  assert.deepEqual(patched.json().modes, ['h3'])

  const del = await t.app.inject({ method: 'DELETE', url: `/api/v1/monitors/${m.id}` })
  assert.equal(del.statusCode, 204)
  const gone = await t.app.inject({ url: `/api/v1/monitors/${m.id}` })
  assert.equal(gone.statusCode, 404)
  assert.match(gone.json().message, /does not exist/)
})

test('defaults: all known locations, both modes, five-minute interval', async () => {
  const res = await post({ url: 'http://example.org/page' })
  assert.equal(res.statusCode, 201, res.body)
  assert.deepEqual(res.json().locations, ['local'])
  assert.equal(res.json().interval_s, 300)
})

test('defaults: a lab page gets the lab\'s locations among those with agents, the ones that reach it', async () => {
  await upsertLocation(t.db, { id: 'real-x', name: 'Real X', region: 'Europe', kind: 'real' })
  await createAgentToken(t.db, { location: 'real-x' })
  await createAgentToken(t.db, { location: 'local' })
  try {
    const lab = await post({ url: 'https://lab.h3lens.test:8443/page-15k.html' })
    assert.equal(lab.statusCode, 201, lab.body)
    assert.deepEqual(lab.json().locations, ['local'])
    const real = await post({ url: 'https://example.com/both' })
    assert.deepEqual(real.json().locations, ['local', 'real-x'])
  } finally {
    await t.db.query("DELETE FROM agents WHERE location_id IN ('real-x', 'local')")
    await t.db.query("DELETE FROM locations WHERE id = 'real-x'")
  }
})

test('every arm of a monitor is run by one of its probes: the defaults follow the probes, a change that leaves an arm idle is refused', async () => {
  const parallel = await post({ url: 'https://example.com/p', probes: ['parallel'] })
  assert.equal(parallel.statusCode, 201, parallel.body)
  assert.deepEqual(parallel.json().modes, ['h2', 'h3'], 'the parallel probe runs the forced arms only')
  assert.deepEqual((await post({ url: 'https://example.com/q' })).json().modes, ['h2', 'h3', 'auto'])
  const page = (await post({ url: 'https://example.com/r' })).json()
  const patched = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${page.id}`, payload: { probes: ['parallel'] } })
  assert.equal(patched.statusCode, 400, patched.body)
  assert.equal(patched.json().field, 'probes')
  assert.match(patched.json().message, /add one of them to probes, or remove auto from modes/)
  const both = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${page.id}`, payload: { probes: ['parallel'], modes: ['h2', 'h3'] } })
  assert.equal(both.statusCode, 200, both.body)
})

test('bad input gets a 400 that names the problem', async (s) => {
  /** @type {[object, RegExp, string | undefined][]} */
  const cases = [
    [{ url: 'not a url' }, /not a valid URL/, 'url'],
    [{ url: 'ftp://example.com/' }, /http or https/, 'url'],
    [{ url: 'https://user:pw@example.com/' }, /user name or password/, 'url'],
    // Ports browsers refuse: every run would fail with net::ERR_UNSAFE_PORT.
    [{ url: 'http://example.com:0/' }, /^url: port 0 is one browsers refuse to load/, 'url'],
    [{ url: 'https://example.com:6000/' }, /^url: port 6000 is one browsers refuse to load \(net::ERR_UNSAFE_PORT\)/, 'url'],
    [{ url: 'https://example.com/', probes: ['page', 'upload'], options: { upload_url: 'https://example.com:25/up' } }, /port 25 is one browsers refuse/, 'options.upload_url'],
    [{ url: `https://example.com/${'€'.repeat(700)}` }, /url is 6320 characters once percent-encoded, longer than 2048/, 'url'],
    [{ url: 'https://example.com/', interval_s: 30 }, /at least 60 seconds/, 'interval_s'],
    [{ url: 'https://example.com/', locations: ['mars'] }, /unknown location "mars".*known locations are local/, 'locations'],
    [{ url: 'https://example.com/', colour: 'red' }, /unknown field "colour"/, 'colour'],
    [{ url: 'https://example.com/', modes: ['h4'] }, /must be one of h2, h3/, 'modes.0'],
    [{ url: 'https://lab.h3lens.test./page-15k.html' }, /^url names the lab host with a trailing dot; write lab\.h3lens\.test$/, 'url'],
    // A nullable choice names null, not an empty item.
    [{ url: 'https://example.com/', aa_protocol: 'h9' }, /aa_protocol must be one of h2, h3, null$/, 'aa_protocol'],
    [{ url: 'https://example.com/', interval_s: 'often' }, /integer/, 'interval_s'],
    [{ url: 'https://example.com/', modes: ['auto'], probes: ['parallel'] }, /no probe of this monitor runs the auto arm, which only the page and journey probes run/, 'modes'],
    [{}, /url is required/, 'url']
  ]
  for (const [payload, message, field] of cases) {
    await s.test(JSON.stringify(payload), async () => {
      const res = await post(payload)
      assert.equal(res.statusCode, 400, res.body)
      assert.match(res.json().message, message)
      assert.equal(res.json().field, field)
    })
  }
})

test('lab monitors may run every 10 s, on either lab origin, real ones not; a lab page\'s upload probe sends to the lab\'s sink on its own origin', async () => {
  const lab = await post({ url: 'https://lab.h3lens.test:8443/page-15k.html', interval_s: 10 })
  assert.equal(lab.statusCode, 201, lab.body)
  const second = await post({ url: 'https://lab2.h3lens.test:8443/page-15k.html', interval_s: 10, probes: ['page', 'upload'] })
  assert.equal(second.statusCode, 201, second.body)
  assert.equal(effectiveOptions(second.json().url, second.json().options).upload_url, 'https://lab2.h3lens.test:8443/upload')
  const real = await post({ url: 'https://example.com/', interval_s: 10 })
  assert.equal(real.statusCode, 400)
  assert.match(real.json().message, /only lab monitors, on lab\.h3lens\.test or lab2\.h3lens\.test, may run every 10 s/)
})

test('unknown monitors get 404, malformed ids 400', async () => {
  assert.equal((await t.app.inject({ url: '/api/v1/monitors/999999' })).statusCode, 404)
  assert.equal((await t.app.inject({ method: 'PATCH', url: '/api/v1/monitors/999999', payload: { label: 'x' } })).statusCode, 404)
  assert.equal((await t.app.inject({ method: 'DELETE', url: '/api/v1/monitors/999999' })).statusCode, 404)
  assert.equal((await t.app.inject({ url: '/api/v1/monitors/abc' })).statusCode, 400)
})

test('locations list the unshaped local location; healthz checks the database', async () => {
  const locs = (await t.app.inject({ url: '/api/v1/locations' })).json().items
  assert.ok(locs.some((l) => l.id === 'local' && l.kind === 'lab'))
  const health = await t.app.inject({ url: '/healthz' })
  assert.equal(health.statusCode, 200)
  assert.equal(health.json().database, 'ok')
})

test('A/A calibration and the minimum effect are monitor settings with defaults', async () => {
  const plain = (await post({ url: 'https://example.com/' })).json()
  assert.deepEqual([plain.aa_protocol, plain.min_effect_pct, plain.min_effect_ms], [null, 2, 1])

  const created = await post({ url: 'https://example.com/', aa_protocol: 'h2', min_effect_pct: 5, min_effect_ms: 2.5 })
  assert.equal(created.statusCode, 201, created.body)
  const m = created.json()
  assert.deepEqual([m.aa_protocol, m.min_effect_pct, m.min_effect_ms, m.modes], ['h2', 5, 2.5, ['h2', 'h3']])
  const read = (await t.app.inject({ url: `/api/v1/monitors/${m.id}` })).json()
  assert.deepEqual([read.aa_protocol, read.min_effect_pct, read.min_effect_ms], ['h2', 5, 2.5])

  const patched = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { aa_protocol: 'h3', min_effect_pct: 0 } })
  assert.equal(patched.statusCode, 200, patched.body)
  assert.deepEqual([patched.json().aa_protocol, patched.json().min_effect_pct, patched.json().min_effect_ms], ['h3', 0, 2.5])
  const off = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { aa_protocol: null } })
  assert.equal(off.json().aa_protocol, null)

  // The agent gets the A/A protocol with the job.
  await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${m.id}`, payload: { aa_protocol: 'h2', interval_s: 60 } })
  await t.db.query('UPDATE monitors SET paused = true WHERE id <> $1', [m.id])
  await t.db.query("INSERT INTO jobs (monitor_id, location_id, due_at) VALUES ($1, 'local', now())", [m.id])
  const token = await t.agentToken('local')
  const claim = await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: { authorization: `Bearer ${token}` }, payload: { limit: 5 } })
  assert.equal(claim.statusCode, 200, claim.body)
  const job = claim.json().jobs.find((j) => j.monitor_id === m.id)
  assert.equal(job?.aa_protocol, 'h2')
})

test('bad A/A and minimum-effect settings get a 400 naming the field', async (s) => {
  const { id } = (await post({ url: 'https://example.com/', aa_protocol: 'h2' })).json()
  /** @type {[string, string, object, RegExp, string][]} */
  const cases = [
    ['POST', '/api/v1/monitors', { url: 'https://example.com/', aa_protocol: 'h1' }, /aa_protocol must be one of/, 'aa_protocol'],
    ['POST', '/api/v1/monitors', { url: 'https://example.com/', aa_protocol: 'h2', modes: ['h2'] }, /modes must be exactly h2 and h3/, 'aa_protocol'],
    ['POST', '/api/v1/monitors', { url: 'https://example.com/', aa_protocol: 'h2', modes: ['h2', 'h3', 'auto'] }, /modes must be exactly h2 and h3/, 'aa_protocol'],
    ['POST', '/api/v1/monitors', { url: 'https://example.com/', min_effect_pct: 101 }, /min_effect_pct must be <= 100/, 'min_effect_pct'],
    ['POST', '/api/v1/monitors', { url: 'https://example.com/', min_effect_pct: -1 }, /min_effect_pct must be >= 0/, 'min_effect_pct'],
    ['POST', '/api/v1/monitors', { url: 'https://example.com/', min_effect_ms: -0.5 }, /min_effect_ms must be >= 0/, 'min_effect_ms'],
    ['POST', '/api/v1/monitors', { url: 'https://example.com/', min_effect_ms: '1' }, /min_effect_ms must be a finite number/, 'min_effect_ms'],
    ['PATCH', `/api/v1/monitors/${id}`, { modes: ['h3'] }, /modes must be exactly h2 and h3/, 'modes'],
    ['PATCH', `/api/v1/monitors/${id}`, { modes: ['h2', 'h3', 'auto'] }, /modes must be exactly h2 and h3/, 'modes']
  ]
  for (const [method, url, payload, message, field] of cases) {
    await s.test(`${method} ${JSON.stringify(payload)}`, async () => {
      const res = await t.app.inject({ method, url, payload })
      assert.equal(res.statusCode, 400, res.body)
      assert.match(res.json().message, message)
      assert.equal(res.json().field, field)
    })
  }
})
