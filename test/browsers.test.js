// Browser as a dimension, through the API against real PostgreSQL: a
// monitor chooses its browsers, a location gets rounds of the browsers its
// agents have, an agent claims rounds of its own browsers only, and each
// browser's rounds land in that browser's comparison, trends and export.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from './helpers/app.js'
import { scheduleDueJobs } from '../lib/store/jobs.js'
import { upsertLocation } from '../lib/store/locations.js'
import { crossBrowser, gainsApart } from '../lib/analysis/browsers.js'

/** @type {Awaited<ReturnType<typeof createTestApp>>} */
let t
before(async () => { t = await createTestApp() })
after(async () => { await t.close() })

const auth = (/** @type {string} */ token) => ({ authorization: `Bearer ${token}` })
/**
 * @param {string} token
 * @param {string[] | undefined} browsers
 */
const claim = (token, browsers, limit = 20) => t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: auth(token), payload: { limit, version: 'test', ...(browsers ? { browsers } : {}) } })

/** @param {Record<string, any>} body */
async function monitor (body) {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload: { url: 'https://lab.h3lens.test:8443/page-15k.html', interval_s: 10, ...body } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

async function clearQueue () {
  await t.db.query("UPDATE jobs SET state = 'cancelled' WHERE state IN ('queued', 'leased')")
  await t.db.query('UPDATE monitors SET paused = true')
}

test('a monitor runs in Chromium unless it chooses; an unknown or empty browser list is a 400 naming browsers', async () => {
  const plain = await monitor({ locations: ['local'] })
  assert.deepEqual(plain.browsers, ['chromium'])
  const both = await monitor({ locations: ['local'], browsers: ['firefox', 'chromium'] })
  assert.deepEqual(both.browsers, ['chromium', 'firefox'])
  for (const browsers of [['safari'], []]) {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload: { url: 'https://lab.h3lens.test:8443/', locations: ['local'], browsers } })
    assert.equal(res.statusCode, 400, res.body)
    assert.match(res.json().field, /^browsers/)
  }
  const patched = await t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${plain.id}`, payload: { browsers: ['firefox'] } })
  assert.equal(patched.statusCode, 200, patched.body)
  assert.deepEqual(patched.json().browsers, ['firefox'])
})

test('a location gets Firefox rounds once an agent there has Firefox, and only that agent claims them', async () => {
  await clearQueue()
  await upsertLocation(t.db, { id: 'br-eu', name: 'EU', region: 'Europe', kind: 'lab' })
  await upsertLocation(t.db, { id: 'br-us', name: 'US', region: 'America', kind: 'lab' })
  const chromiumOnly = await t.agentToken('br-us')
  const withFirefox = await t.agentToken('br-eu')
  const chromiumAtEu = await t.agentToken('br-eu')
  // Each agent says what it has when it claims (nothing is queued yet).
  assert.equal((await claim(chromiumOnly, ['chromium'])).statusCode, 200)
  assert.equal((await claim(withFirefox, ['chromium', 'firefox'])).statusCode, 200)
  assert.equal((await claim(chromiumAtEu, undefined)).statusCode, 200)
  const locations = (await t.app.inject({ method: 'GET', url: '/api/v1/locations' })).json()
  const browsersOf = (/** @type {string} */ id) => (locations.items ?? locations).find((/** @type {any} */ l) => l.id === id).browsers
  assert.deepEqual(browsersOf('br-eu'), ['chromium', 'firefox'])
  assert.deepEqual(browsersOf('br-us'), ['chromium'])

  const m = await monitor({ locations: ['br-eu', 'br-us'], browsers: ['chromium', 'firefox'] })
  await scheduleDueJobs(t.db, { maxAttempts: 3 })
  const { rows } = await t.db.query('SELECT location_id, browser, state FROM jobs WHERE monitor_id = $1 ORDER BY 1, 2', [m.id])
  assert.deepEqual(rows.map((r) => `${r.location_id} ${r.browser} ${r.state}`), ['br-eu chromium queued', 'br-eu firefox queued', 'br-us chromium queued'])

  // The Chromium-only agent at br-eu never gets the Firefox round.
  const first = (await claim(chromiumAtEu, undefined)).json().jobs
  assert.deepEqual(first.map((/** @type {any} */ j) => j.browser), ['chromium'])
  assert.deepEqual((await claim(chromiumAtEu, undefined)).json().jobs, [])
  const second = (await claim(withFirefox, ['chromium', 'firefox'])).json().jobs
  assert.deepEqual(second.map((/** @type {any} */ j) => [j.monitor_id, j.browser]), [[m.id, 'firefox']])

  // The Firefox comparison says why br-us has no rounds: no agent there runs Firefox.
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/monitors/${m.id}/comparison?browser=firefox`, headers: { 'cache-control': 'no-cache' } })
  assert.equal(res.statusCode, 200, res.body)
  const reasons = Object.fromEntries(res.json().locations.map((/** @type {any} */ l) => [l.location_id, l.reason]))
  assert.equal(reasons['br-us'], 'no agent at US runs Firefox, so no round of it is scheduled there')
  assert.equal(reasons['br-eu'], 'no round in which both arms loaded')
})

test('each browser\'s rounds land in that browser\'s comparison, trends and export, side by side in the cross-browser view', async () => {
  await clearQueue()
  await upsertLocation(t.db, { id: 'br-asia', name: 'Asia', region: 'Asia', kind: 'lab' })
  const token = await t.agentToken('br-asia')
  await claim(token, ['chromium', 'firefox'])
  const m = await monitor({ locations: ['br-asia'], browsers: ['chromium', 'firefox'], modes: ['h2', 'h3'] })
  await t.db.query('UPDATE monitors SET paused = true WHERE id = $1', [m.id])
  const ROUNDS = 30
  // Chromium: H3 40 ms faster; Firefox: H3 as fast as H2. Rounds a minute apart.
  await t.db.query(`INSERT INTO jobs (monitor_id, location_id, browser, due_at)
    SELECT $1, 'br-asia', b, date_trunc('minute', now()) - make_interval(mins => g)
      FROM generate_series(1, $2) g, unnest(ARRAY['chromium', 'firefox']) b`, [m.id, ROUNDS])
  await t.db.query('UPDATE monitors SET paused = false WHERE id = $1', [m.id])
  const jobs = []
  for (;;) {
    const got = (await claim(token, ['chromium', 'firefox'])).json().jobs
    if (!got.length) break
    jobs.push(...got)
  }
  assert.equal(jobs.length, 2 * ROUNDS)
  for (const [i, job] of jobs.entries()) {
    const h3 = job.browser === 'chromium' ? 160 : 200
    const noise = (i % 7) - 3
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/v1/agent/jobs/${job.id}/results`,
      headers: auth(token),
      payload: {
        results: [
          { mode: 'h2', status: 'ok', protocol_ok: true, observed_protocol: 'h2', ttfb_ms: 200 + noise, load_ms: 400 + noise, browser_version: `${job.browser}/1` },
          { mode: 'h3', status: 'ok', protocol_ok: true, observed_protocol: 'h3', ttfb_ms: h3 + noise, load_ms: 2 * h3 + noise, browser_version: `${job.browser}/1` }
        ]
      }
    })
    assert.equal(res.statusCode, 200, res.body)
  }
  const window = `from=${encodeURIComponent(new Date(Date.now() - 3 * 3600e3).toISOString())}`
  const get = async (/** @type {string} */ url) => {
    const res = await t.app.inject({ method: 'GET', url, headers: { 'cache-control': 'no-cache' } })
    assert.equal(res.statusCode, 200, res.body)
    return res.json()
  }
  const median = (/** @type {any} */ answer) => answer.locations.find((/** @type {any} */ l) => l.location_id === 'br-asia').rows.find((/** @type {any} */ r) => r.percentile === 50)
  const chromium = await get(`/api/v1/monitors/${m.id}/comparison?metric=ttfb_ms&${window}`)
  const firefox = await get(`/api/v1/monitors/${m.id}/comparison?metric=ttfb_ms&browser=firefox&${window}`)
  assert.equal(chromium.browser, 'chromium')
  assert.equal(firefox.browser, 'firefox')
  assert.equal(median(chromium).rounds, ROUNDS)
  assert.equal(median(firefox).rounds, ROUNDS)
  assert.equal(median(chromium).delta_ms, -40)
  assert.equal(median(chromium).verdict, 'h3_faster')
  assert.equal(median(firefox).delta_ms, 0)
  assert.equal(median(firefox).verdict, 'no_clear_difference')

  const cross = await get(`/api/v1/monitors/${m.id}/browsers?metric=ttfb_ms&${window}`)
  const asia = cross.locations.find((/** @type {any} */ l) => l.location_id === 'br-asia')
  assert.equal(asia.gains.chromium.delta_ms, -40)
  assert.ok(asia.gains.chromium.ci_low_ms <= -40 && asia.gains.chromium.ci_high_ms >= -40 && asia.gains.chromium.ci_high_ms < 0, JSON.stringify(asia.gains.chromium))
  assert.equal(asia.gains.firefox.delta_ms, 0)
  assert.equal(asia.reading.code, 'browser')
  assert.deepEqual(asia.difference.browsers, ['chromium', 'firefox'])
  assert.equal(asia.difference.delta_ms, -40)
  assert.ok(asia.difference.p_adjusted <= 0.05, JSON.stringify(asia.difference))

  // Trends: each browser's H3 median is its own (sketches: within 2%).
  const h3Median = async (/** @type {string} */ browser) => {
    const trend = await get(`/api/v1/monitors/${m.id}/trends?metric=ttfb_ms&bucket=1d&percentiles=50&browser=${browser}&${window}`)
    assert.equal(trend.browser, browser)
    const points = trend.series.filter((/** @type {any} */ s) => s.mode === 'h3').flatMap((/** @type {any} */ s) => s.points)
    assert.equal(points.reduce((sum, /** @type {any} */ p) => sum + p.count, 0), ROUNDS, `${browser}: every round's H3 TTFB, no other browser's`)
    return points.map((/** @type {any} */ p) => p.p50)
  }
  // One day bucket, or two when the half hour of rounds spans midnight.
  for (const p50 of await h3Median('chromium')) assert.ok(Math.abs(p50 - 160) <= 3.2, `Chromium H3 p50 ${p50}`)
  for (const p50 of await h3Median('firefox')) assert.ok(Math.abs(p50 - 200) <= 4, `Firefox H3 p50 ${p50}`)

  // The export says each result's browser; importing it into a new monitor keeps them apart.
  const exported = await t.app.inject({ method: 'GET', url: `/api/v1/results?monitor=${m.id}&format=ndjson&${window}` })
  assert.equal(exported.statusCode, 200, exported.body)
  const lines = exported.body.trim().split('\n').map((l) => JSON.parse(l))
  assert.deepEqual([...new Set(lines.map((l) => l.browser))].sort(), ['chromium', 'firefox'])
  const copy = await monitor({ locations: ['br-asia'], browsers: ['chromium', 'firefox'], modes: ['h2', 'h3'], paused: true })
  const imported = await t.app.inject({ method: 'POST', url: `/api/v1/monitors/${copy.id}/results/import`, headers: { 'content-type': 'application/x-ndjson' }, payload: exported.body })
  assert.equal(imported.statusCode, 200, imported.body)
  assert.equal(imported.json().rounds, 2 * ROUNDS)
  assert.equal(median(await get(`/api/v1/monitors/${copy.id}/comparison?metric=ttfb_ms&browser=firefox&${window}`)).delta_ms, 0)
  assert.equal(median(await get(`/api/v1/monitors/${copy.id}/comparison?metric=ttfb_ms&${window}`)).delta_ms, -40)

  // A monitor that ran Firefox before is still compared in both over the
  // windows that hold Firefox's rounds.
  await t.db.query("UPDATE monitors SET browsers = ARRAY['chromium'] WHERE id = $1", [copy.id])
  const before = await get(`/api/v1/monitors/${copy.id}/browsers?metric=ttfb_ms&${window}`)
  assert.deepEqual(before.browsers, ['chromium', 'firefox'])
  assert.equal(before.locations.find((/** @type {any} */ l) => l.location_id === 'br-asia').reading.code, 'browser')
  const older = `from=${encodeURIComponent(new Date(Date.now() - 6 * 3600e3).toISOString())}&to=${encodeURIComponent(new Date(Date.now() - 3 * 3600e3).toISOString())}`
  assert.deepEqual((await get(`/api/v1/monitors/${copy.id}/browsers?metric=ttfb_ms&${older}`)).browsers, ['chromium'], 'a window without its rounds leaves it out')

  // A monitor that runs in one browser is compared in that one, and says so.
  const chromiumOnly = await monitor({ locations: ['br-asia'], browsers: ['chromium'], modes: ['h2', 'h3'], paused: true })
  const chromiumLines = lines.filter((l) => l.browser === 'chromium').map((l) => JSON.stringify(l)).join('\n')
  assert.equal((await t.app.inject({ method: 'POST', url: `/api/v1/monitors/${chromiumOnly.id}/results/import`, headers: { 'content-type': 'application/x-ndjson' }, payload: chromiumLines })).statusCode, 200)
  const single = await get(`/api/v1/monitors/${chromiumOnly.id}/browsers?metric=ttfb_ms&${window}`)
  assert.deepEqual(single.browsers, ['chromium'])
  const alone = single.locations.find((/** @type {any} */ l) => l.location_id === 'br-asia')
  assert.deepEqual(Object.keys(alone.gains), ['chromium'])
  assert.equal(alone.gains.chromium.delta_ms, -40)
  assert.deepEqual(alone.reading, { code: 'one_browser', text: 'The monitor runs in one browser: add another to its browsers to compare them' })
})

test('a comparison asked of a probe or browser the monitor neither runs nor ran is a 400 naming the field; one it ran before answers', async () => {
  const m = await monitor({ locations: ['local'], browsers: ['chromium'], probes: ['page'], paused: true })
  const read = (/** @type {string} */ query) => t.app.inject({ url: `/api/v1/monitors/${m.id}/comparison?${query}` })
  const refused = async (/** @type {string} */ query) => {
    const res = await read(query)
    assert.equal(res.statusCode, 400, `${query}: ${res.body}`)
    return [res.json().field, res.json().message]
  }
  assert.deepEqual(await refused('probe=upload'), ['probe', `monitor ${m.id} runs no upload probe (its probes: page), nor has rounds of one`])
  assert.deepEqual(await refused('metric=upload_ms'), ['metric', `monitor ${m.id} runs no upload probe (its probes: page), nor has rounds of one: that metric is the upload probe's`])
  assert.deepEqual(await refused('browser=firefox'), ['browser', `monitor ${m.id} does not run in firefox (its browsers: chromium), nor has rounds there`])
  assert.equal((await t.app.inject({ url: `/api/v1/monitors/${m.id}/trends?probe=parallel` })).json().field, 'probe')
  assert.equal((await t.app.inject({ url: `/api/v1/monitors/${m.id}/distribution?browser=firefox` })).json().field, 'browser')
  for (const query of ['', 'probe=page', 'browser=chromium', 'metric=load_ms']) assert.equal((await read(query)).statusCode, 200, query)

  // Rounds of a browser and a probe it ran before are data: they answer.
  const hour = new Date(Date.now() - 3600e3).toISOString()
  const rows = ['h2', 'h3'].map((mode) => JSON.stringify({ time: hour, location_id: 'local', browser: 'firefox', probe: 'upload', mode, samples: [50] }))
  const imported = await t.app.inject({ method: 'POST', url: `/api/v1/monitors/${m.id}/results/import`, headers: { 'content-type': 'application/x-ndjson' }, payload: rows.join('\n') })
  assert.equal(imported.statusCode, 200, imported.body)
  for (const query of ['probe=upload', 'metric=upload_ms', 'browser=firefox', 'browser=firefox&metric=upload_ms']) assert.equal((await read(query)).statusCode, 200, query)
  assert.equal((await read('probe=parallel')).statusCode, 400, 'a probe still neither run nor ran')
})

test('verdicts that differ are "the browsers disagree" only when their gains are clearly apart', () => {
  /** @param {number} delta @param {number} lo @param {number} hi @param {string} verdict */
  const gain = (delta, lo, hi, verdict) => ({ rounds: 300, h2_ms: 100, h3_ms: 100 + delta, delta_ms: delta, delta_pct: delta, ci_low_ms: lo, ci_high_ms: hi, verdict, reason: null })
  // The same true gain in both browsers, one interval just reaching 0.
  const close = crossBrowser({
    chromium: { locations: [{ location_id: 'x', name: 'X', rows: [{ percentile: 50, ...gain(-5.7, -13, 0.1, 'no_clear_difference') }] }] },
    firefox: { locations: [{ location_id: 'x', name: 'X', rows: [{ percentile: 50, ...gain(-7.8, -13, -2.4, 'h3_faster') }] }] }
  }, 50)[0]
  assert.equal(close.reading.code, 'inconclusive')
  assert.match(close.reading.text, /not clearly apart/)
  assert.ok(Number(close.difference?.p_adjusted) > 0.5, JSON.stringify(close.difference))
  // A gain in one browser, none in the other, intervals far apart.
  const apart = crossBrowser({
    chromium: { locations: [{ location_id: 'x', name: 'X', rows: [{ percentile: 50, ...gain(-40, -48, -32, 'h3_faster') }] }] },
    firefox: { locations: [{ location_id: 'x', name: 'X', rows: [{ percentile: 50, ...gain(0, -8, 8, 'no_clear_difference') }] }] }
  }, 50)[0]
  assert.equal(apart.reading.code, 'browser')
  assert.ok(Number(apart.difference?.p_adjusted) < 0.001, JSON.stringify(apart.difference))
  // Both faster, by clearly different amounts: not "both agree".
  const sizes = crossBrowser({
    chromium: { locations: [{ location_id: 'x', name: 'X', rows: [{ percentile: 50, ...gain(-44, -53, -32, 'h3_faster') }] }] },
    firefox: { locations: [{ location_id: 'x', name: 'X', rows: [{ percentile: 50, ...gain(-12, -18, -6, 'h3_faster') }] }] }
  }, 50)[0]
  assert.equal(sizes.reading.code, 'same_apart', JSON.stringify(sizes.difference))
  assert.match(sizes.reading.text, /by clearly different amounts/)
  // Both faster by about as much: they agree.
  const agree = crossBrowser({
    chromium: { locations: [{ location_id: 'x', name: 'X', rows: [{ percentile: 50, ...gain(-40, -48, -32, 'h3_faster') }] }] },
    firefox: { locations: [{ location_id: 'x', name: 'X', rows: [{ percentile: 50, ...gain(-38, -46, -30, 'h3_faster') }] }] }
  }, 50)[0]
  assert.equal(agree.reading.code, 'same')
  // Both 10% faster, Firefox loading half as slow again: the same gain, more ms in the slower browser.
  const /** @type {(h2: number, delta: number, lo: number, hi: number) => any} */ row = (h2, delta, lo, hi) => ({ percentile: 50, rounds: 300, h2_ms: h2, h3_ms: h2 + delta, delta_ms: delta, delta_pct: 100 * delta / h2, ci_low_ms: lo, ci_high_ms: hi, verdict: 'h3_faster', reason: null })
  const slower = crossBrowser({
    chromium: { locations: [{ location_id: 'x', name: 'X', rows: [row(100, -10, -11, -9)] }] },
    firefox: { locations: [{ location_id: 'x', name: 'X', rows: [row(150, -15, -16.5, -13.5)] }] }
  }, 50)[0]
  assert.equal(slower.reading.code, 'same', JSON.stringify(slower.difference))
  assert.deepEqual([slower.difference?.delta_ms, slower.difference?.delta_pct], [5, 0])
  // A browser without an interval: nothing to test, the reading waits.
  assert.equal(gainsApart({ chromium: gain(-40, -48, -32, 'h3_faster'), firefox: { ...gain(0, 0, 0, 'insufficient_data'), ci_low_ms: null, ci_high_ms: null } }), null)
})
