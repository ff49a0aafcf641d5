// Real users through /api/v1/rum over stored beacons: sites and their keys,
// countries per location, the per-region summary (counts, H3 share, the
// stratified association and its verdicts), the trend, the NDJSON export,
// and the real users beside a monitor with the lab's returning-visit share.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createTestApp } from './helpers/app.js'
import { upsertLocation } from '../lib/store/locations.js'
import { insertBeacons } from '../lib/store/rum-beacons.js'
import { insertResults } from '../lib/store/results.js'
import { createMonitor } from '../lib/store/monitors.js'
import { storedBeacon } from '../lib/measurement/rum/beacon.js'
import { createRandom, randomNormal } from '../lib/analysis/stats/index.js'
import { pooledContrast, stratifiedContrast } from '../lib/analysis/rum-strata.js'

const ORIGIN = 'https://shop.example'
let t, site
const END = Date.now() - 60_000
before(async () => {
  t = await createTestApp()
  await upsertLocation(t.db, { id: 'lab-eu', name: 'Lab Europe', region: 'Europe', kind: 'lab' })
  await upsertLocation(t.db, { id: 'lab-na', name: 'Lab North America', region: 'North America', kind: 'lab' })
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/rum/sites', payload: { name: 'shop', origins: [`${ORIGIN}/`], sample_rate: 0.5 } })
  assert.equal(res.statusCode, 201, res.body)
  site = res.json()
})
after(async () => { await t.close() })

/**
 * Page views where returning visitors are faster and mostly on H3, and the
 * protocol itself does nothing (bench/rum-confounding.js at a small scale).
 * @param {number} n
 * @param {string | null} country
 */
function confounded (n, country, seed) {
  const random = createRandom(seed)
  return Array.from({ length: n }, (_, i) => {
    const visit = random() < 0.5 ? 'cached' : 'first'
    const h3 = random() < (visit === 'cached' ? 0.9 : 0.15)
    const ttfb = (visit === 'cached' ? 100 : 300) * Math.exp(0.3 * randomNormal(random))
    const b = {
      key: site.key, v: 1, id: randomBytes(16).toString('hex'), t0: END - i * 20_000, sample: 0.5, nav: 'navigate', protocol: h3 ? 'h3' : 'h2',
      dns_ms: 0, connect_ms: 0, tls_ms: 0, waiting_ms: ttfb / 2, ttfb_ms: Math.round(ttfb * 10) / 10, fcp_ms: ttfb + 50, lcp_ms: ttfb + (visit === 'cached' ? 200 : 600),
      doc_cached: false, resources: 5, cached_resources: visit === 'cached' ? 3 : 0
    }
    return storedBeacon(b, { siteId: site.id, origin: ORIGIN, country, browser: { family: 'chrome', major: 156 } })
  })
}

test('sites: origins are checked and normalised, the key and install tag come back, revoked sites are listed only on request', async () => {
  assert.deepEqual(site.origins, [ORIGIN])
  assert.match(site.key, /^h3s_[\w-]{32}$/)
  assert.match(site.install.tag, /data-sample="0\.5"/)
  // Without H3LENS_PUBLIC_URL the tag points at the address the request came
  // to; a Host header that makes no URL is refused, never written into it.
  const hostile = await t.app.inject({ method: 'GET', url: `/api/v1/rum/sites/${site.id}`, headers: { host: 'a"><b>' } })
  assert.equal(hostile.statusCode, 400, hostile.body)
  assert.equal(hostile.json().field, 'host')
  assert.equal(hostile.json().install, undefined)
  // Checked before anything changes: a refused address creates, renames and revokes nothing.
  const sitesBefore = (await t.db.query('SELECT count(*)::int AS n FROM rum_sites')).rows[0].n
  const refusedCreate = await t.app.inject({ method: 'POST', url: '/api/v1/rum/sites', headers: { host: 'a"><b>' }, payload: { name: 'not made', origins: ['https://never.example'] } })
  assert.deepEqual([refusedCreate.statusCode, refusedCreate.json().field], [400, 'host'])
  assert.equal((await t.db.query('SELECT count(*)::int AS n FROM rum_sites')).rows[0].n, sitesBefore)
  const refusedRevoke = await t.app.inject({ method: 'DELETE', url: `/api/v1/rum/sites/${site.id}`, headers: { host: 'a"><b>' } })
  assert.equal(refusedRevoke.statusCode, 400)
  assert.equal((await t.db.query('SELECT revoked_at FROM rum_sites WHERE id = $1', [site.id])).rows[0].revoked_at, null)
  const bad = await t.app.inject({ method: 'POST', url: '/api/v1/rum/sites', payload: { name: 'x', origins: ['https://ok.example', 'ftp://nope.example'] } })
  assert.equal(bad.statusCode, 400)
  assert.equal(bad.json().field, 'origins.1')
  const path = await t.app.inject({ method: 'POST', url: '/api/v1/rum/sites', payload: { name: 'x', origins: ['https://ok.example/shop'] } })
  assert.match(path.json().message, /origin only/)
  const wildcard = await t.app.inject({ method: 'POST', url: '/api/v1/rum/sites', payload: { name: 'x', origins: ['https://*.example.com'] } })
  assert.deepEqual([wildcard.statusCode, wildcard.json().field], [400, 'origins.0'])
  assert.match(wildcard.json().message, /must name one host \(no wildcard\)/)
  const idn = await t.app.inject({ method: 'POST', url: '/api/v1/rum/sites', payload: { name: 'idn', origins: ['https://bücher.example', 'http://127.0.0.1:8080', 'https://[::1]'] } })
  assert.equal(idn.statusCode, 201, idn.body)
  assert.deepEqual(idn.json().origins, ['https://xn--bcher-kva.example', 'http://127.0.0.1:8080', 'https://[::1]'])
  await t.app.inject({ method: 'DELETE', url: `/api/v1/rum/sites/${idn.json().id}` })
  const other = (await t.app.inject({ method: 'POST', url: '/api/v1/rum/sites', payload: { name: 'other', origins: ['https://other.example'] } })).json()
  const patched = await t.app.inject({ method: 'PATCH', url: `/api/v1/rum/sites/${other.id}`, payload: { sample_rate: 0.1 } })
  assert.equal(patched.json().sample_rate, 0.1)
  assert.equal((await t.app.inject({ method: 'DELETE', url: `/api/v1/rum/sites/${other.id}` })).statusCode, 200)
  const listed = (await t.app.inject({ url: '/api/v1/rum/sites' })).json().items.map((s) => s.id)
  assert.ok(listed.includes(site.id) && !listed.includes(other.id))
  assert.ok((await t.app.inject({ url: '/api/v1/rum/sites?all=true' })).json().items.some((s) => s.id === other.id))
  const readOnly = await t.app.inject({ method: 'POST', url: '/api/v1/rum/sites', headers: { authorization: `Bearer ${t.readKey}` }, payload: { name: 'y', origins: [ORIGIN] } })
  assert.equal(readOnly.statusCode, 403, 'managing sites needs a write key')
})

test('locations take a list of countries; a country stands under one location', async () => {
  const res = await t.app.inject({ method: 'PATCH', url: '/api/v1/locations/lab-eu', payload: { countries: ['gb', 'DE'] } })
  assert.equal(res.statusCode, 200, res.body)
  assert.deepEqual(res.json().countries, ['GB', 'DE'])
  const taken = await t.app.inject({ method: 'PATCH', url: '/api/v1/locations/lab-na', payload: { countries: ['US', 'GB'] } })
  assert.equal(taken.statusCode, 400)
  assert.match(taken.json().message, /GB stands under lab-eu/)
  const bad = await t.app.inject({ method: 'PATCH', url: '/api/v1/locations/lab-na', payload: { countries: ['U1'] } })
  assert.equal(bad.json().field, 'countries.0')
  // Two letters are not enough: no country has XX, the United Kingdom's
  // visitors are counted under GB, and EU is not one country. The field
  // is the code's place in the list as given, repeats counted.
  for (const { countries, field, message } of [
    { countries: ['US', 'XX'], field: 'countries.1', message: /"XX" is no country's code/ },
    { countries: ['US', 'us', 'uk'], field: 'countries.2', message: /"UK" is reserved: IP databases give its visitors GB \(United Kingdom\); write GB/ },
    { countries: ['EU'], field: 'countries.0', message: /"EU" \(European Union\) names no one country/ },
    // Withdrawn codes and ICU's test regions, which Node's region names still know.
    { countries: ['SU'], field: 'countries.0', message: /"SU" is a withdrawn or test code/ },
    { countries: ['DE', 'XA'], field: 'countries.1', message: /"XA" is a withdrawn or test code/ }
  ]) {
    const refused = await t.app.inject({ method: 'PATCH', url: '/api/v1/locations/lab-na', payload: { countries } })
    assert.equal(refused.statusCode, 400, refused.body)
    assert.equal(refused.json().field, field)
    assert.match(refused.json().message, message)
  }
  assert.deepEqual((await t.app.inject({ method: 'PATCH', url: '/api/v1/locations/lab-na', payload: { countries: ['XK'] } })).json().countries, ['XK'], 'Kosovo, as IP databases name it')
  assert.equal((await t.app.inject({ method: 'PATCH', url: '/api/v1/locations/lab-na', payload: { countries: ['US'] } })).statusCode, 200)
  assert.equal((await t.app.inject({ method: 'PATCH', url: '/api/v1/locations/nowhere', payload: { countries: ['FR'] } })).statusCode, 404)
})

test('the summary: page views per region, the H3 share with its interval, and a confounded split that stratification does not call a difference', async () => {
  const gb = confounded(1200, 'GB', 'gb')
  const us = confounded(300, 'US', 'us')
  const elsewhere = confounded(40, 'JP', 'jp')
  const unknown = confounded(30, null, 'unknown')
  /** @type {[string, Record<string, any>][]} */
  const kinds = [['prerender', {}], ['back-forward-cache', {}], ['navigate', { doc_cached: true, transfer_bytes: 0 }]]
  const special = kinds.map(([nav, extra], i) => storedBeacon({
    key: site.key, v: 1, id: randomBytes(16).toString('hex'), t0: END - i * 1000, nav, protocol: 'h2', ttfb_ms: 1, ...extra
  }, { siteId: site.id, origin: ORIGIN, country: 'GB', browser: { family: 'safari', major: 18 } }))
  await insertBeacons(t.db, [...gb, ...us, ...elsewhere, ...unknown, ...special])

  const from = new Date(END - 24 * 3600e3).toISOString()
  const to = new Date(END + 60_000).toISOString()
  const res = await t.app.inject({ url: `/api/v1/rum/sites/${site.id}/summary?from=${from}&to=${to}` })
  assert.equal(res.statusCode, 200, res.body)
  const s = res.json()
  assert.match(s.association, /association, not a controlled comparison/)
  const region = (id) => s.regions.find((r) => r.region_id === id)
  assert.deepEqual(s.regions.map((r) => r.region_id), [null, 'lab-eu', 'lab-na', 'other', 'unknown'])
  const eu = region('lab-eu')
  assert.equal(eu.page_views, 1203)
  assert.deepEqual(eu.kinds, { network: 1200, prerender: 1, 'back-forward-cache': 1, cached: 1 })
  const h3 = gb.filter((b) => b.protocol === 'h3').length
  assert.equal(eu.h3_share.h3, h3)
  assert.equal(eu.h3_share.known, 1200, 'prerendered, restored and cached documents are not in the share')
  assert.ok(eu.h3_share.lo < h3 / 1200 && h3 / 1200 < eu.h3_share.hi)
  assert.deepEqual(eu.browsers.map((b) => [b.family, b.page_views]), [['chrome', 1200], ['safari', 3]])
  const chromeTtfb = eu.browsers[0].metrics.ttfb_ms
  assert.ok(chromeTtfb.h3[0].value < chromeTtfb.h2[0].value, 'by protocol alone, H3 page views look faster')
  assert.ok(chromeTtfb.h2[0].ci_low < chromeTtfb.h2[0].value && chromeTtfb.h2[0].value < chromeTtfb.h2[0].ci_high)
  assert.equal(region('other').countries.JP, 40)

  // The naive split claims a large H3 gain where there is none.
  const naive = pooledContrast({ h2: gb.filter((b) => b.protocol === 'h2').map((b) => b.ttfb_ms), h3: gb.filter((b) => b.protocol === 'h3').map((b) => b.ttfb_ms), percentiles: [50], iterations: 200, seed: 'x' })
  const [row] = naive.rows
  assert.ok(Number(row.delta_pct) < -30 && Number(row.ci_high_ms) < 0, `naive Δ ${row.delta_pct}%`)
  for (const r of s.regions) {
    for (const row of [...r.comparison.ttfb_ms, ...r.comparison.lcp_ms]) {
      assert.ok(['no_clear_difference', 'insufficient_data'].includes(row.verdict), `${r.name} p${row.percentile}: ${row.verdict} (Δ ${row.delta_pct}%)`)
    }
  }
  const p50 = eu.comparison.ttfb_ms.find((row) => row.percentile === 50)
  assert.deepEqual(p50.strata.sort(), ['GB|reused|cached|chrome', 'GB|reused|first|chrome'])
  assert.ok(Math.abs(p50.delta_pct) < 15 && p50.ci_low_ms < 0 && p50.ci_high_ms > 0, `stratified Δ ${p50.delta_pct}%`)
  assert.equal(region(null).stratified, true)
  assert.equal(region('unknown').page_views, 30)

  // A window of no length is answered, and empty; a reversed one is refused, naming from.
  const empty = await t.app.inject({ url: `/api/v1/rum/sites/${site.id}/summary?from=${to}&to=${to}` })
  assert.equal(empty.statusCode, 200, empty.body)
  assert.equal(empty.json().regions.reduce((n, r) => n + r.page_views, 0), 0)
  const reversed = await t.app.inject({ url: `/api/v1/rum/sites/${site.id}/summary?from=${to}&to=${from}` })
  assert.equal(reversed.statusCode, 400)
  assert.deepEqual([reversed.json().message, reversed.json().field], ['from must not be after to', 'from'])
})

test('countries of one region are strata: a fast country mostly on H3 beside a slow one mostly on H2 is no H3 gain', async () => {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/rum/sites', payload: { name: 'two countries', origins: ['https://two.example/'] } })
  assert.equal(res.statusCode, 201, res.body)
  const two = res.json()
  const random = createRandom('two-countries')
  // GB and DE both stand under lab-eu; DE's views take twice as long and get H3 less often. The protocol changes nothing.
  const views = ['GB', 'DE'].flatMap((country) => Array.from({ length: 800 }, (_, i) => {
    const h3 = random() < (country === 'GB' ? 0.7 : 0.3)
    const ttfb = (country === 'GB' ? 150 : 300) * Math.exp(0.3 * randomNormal(random))
    return storedBeacon({
      key: two.key, v: 1, id: randomBytes(16).toString('hex'), t0: END - i * 20_000, sample: 1, nav: 'navigate', protocol: h3 ? 'h3' : 'h2',
      dns_ms: 0, connect_ms: 0, tls_ms: 0, waiting_ms: ttfb / 2, ttfb_ms: Math.round(ttfb * 10) / 10, fcp_ms: ttfb + 50, lcp_ms: ttfb + 400, doc_cached: false, resources: 5, cached_resources: 0
    }, { siteId: two.id, origin: 'https://two.example', country, browser: { family: 'chrome', major: 156 } })
  }))
  await insertBeacons(t.db, views)
  const summary = await t.app.inject({ url: `/api/v1/rum/sites/${two.id}/summary?from=${new Date(END - 24 * 3600e3).toISOString()}&to=${new Date(END + 60_000).toISOString()}` })
  assert.equal(summary.statusCode, 200, summary.body)
  const eu = summary.json().regions.find((r) => r.region_id === 'lab-eu')
  assert.deepEqual(eu.countries, { GB: 800, DE: 800 })
  // Pooled over the region, H3's views look a fifth faster.
  const naive = pooledContrast({ h2: views.filter((b) => b.protocol === 'h2').map((b) => b.ttfb_ms), h3: views.filter((b) => b.protocol === 'h3').map((b) => b.ttfb_ms), percentiles: [50], iterations: 200, seed: 'x' })
  assert.ok(Number(naive.rows[0].delta_pct) < -15 && Number(naive.rows[0].ci_high_ms) < 0, `pooled Δ ${naive.rows[0].delta_pct}%`)
  for (const row of [...eu.comparison.ttfb_ms, ...eu.comparison.lcp_ms]) {
    assert.ok(['no_clear_difference', 'insufficient_data'].includes(row.verdict), `p${row.percentile}: ${row.verdict} (Δ ${row.delta_pct}%)`)
  }
  const p50 = eu.comparison.ttfb_ms.find((row) => row.percentile === 50)
  assert.deepEqual(p50.strata.sort(), ['DE|reused|first|chrome', 'GB|reused|first|chrome'])
  // What a cell rests on: each stratum's views, all of them below 2,000 a protocol.
  assert.deepEqual(p50.page_views, { h2: views.filter((b) => b.protocol === 'h2').length, h3: views.filter((b) => b.protocol === 'h3').length })
})

test('a cell says it rests on the page views its estimate used: at most 2,000 per stratum and protocol', () => {
  const many = Array.from({ length: 2500 }, (_, i) => 100 + (i % 50))
  const { rows } = stratifiedContrast({ strata: [{ id: 'GB|new|first|chrome', h2: many, h3: many.slice(0, 1500) }], percentiles: [50], iterations: 50, seed: 's' })
  assert.deepEqual(rows[0].page_views, { h2: 2000, h3: 1500 })
})

test('the trend, the NDJSON export and the real users beside a monitor with the lab\'s returning-visit share', async () => {
  const from = new Date(END - 24 * 3600e3).toISOString()
  const to = new Date(END + 60_000).toISOString()
  const trend = (await t.app.inject({ url: `/api/v1/rum/sites/${site.id}/trends?from=${from}&to=${to}&bucket=1h` })).json()
  const all = trend.series.find((x) => x.region_id === null)
  assert.ok(all.points.length >= 8, `${all.points.length} hourly points`)
  assert.equal(all.points.reduce((n, p) => n + p.page_views, 0), 1570, 'network page views of every region')
  assert.ok(trend.series.some((x) => x.region_id === 'lab-eu'))

  const ndjson = await t.app.inject({ url: `/api/v1/rum/sites/${site.id}/beacons?from=${from}&to=${to}` })
  assert.match(ndjson.headers['content-type'], /application\/x-ndjson/)
  const lines = ndjson.body.trim().split('\n').map((l) => JSON.parse(l))
  assert.equal(lines.length, 1573)
  assert.ok(lines.every((l) => !('ip' in l) && !('user_agent' in l) && l.site_id === site.id))

  const monitor = await createMonitor(t.db, { url: `${ORIGIN}/checkout`, interval_s: 300, locations: ['lab-eu'], paused: true }, { allowPrivateTargets: true })
  const { rows: [job] } = await t.db.query("INSERT INTO jobs (monitor_id, location_id, due_at, state) VALUES ($1, 'lab-eu', $2, 'done') RETURNING id, monitor_id, location_id, due_at", [monitor.id, new Date(END - 3600e3)])
  const auto = (view, protocol) => ({ mode: 'auto', view, status: 'ok', protocol_ok: true, observed_protocol: protocol, ttfb_ms: 50, load_ms: 90 })
  await insertResults(t.db, { job, agentId: null, results: [auto('first', 'h2'), auto('returning', 'h3')] })
  const beside = (await t.app.inject({ url: `/api/v1/rum/monitors/${monitor.id}?from=${from}&to=${to}` })).json()
  assert.equal(beside.site.id, site.id)
  const eu = beside.summary.regions.find((r) => r.region_id === 'lab-eu')
  assert.equal(eu.lab.monitor_id, monitor.id)
  assert.deepEqual([eu.lab.returning.rate, eu.lab.first.rate], [1, 0])
  assert.ok(eu.h3_share.rate > 0.4 && eu.h3_share.rate < 0.7, 'real users\' share, beside the lab\'s')
  // Beside another monitor of the origin, its own auto arm's share, or none when it runs no auto arm.
  const other = await createMonitor(t.db, { url: `${ORIGIN}/cart`, interval_s: 300, locations: ['lab-eu'], paused: true }, { allowPrivateTargets: true })
  const { rows: [otherJob] } = await t.db.query("INSERT INTO jobs (monitor_id, location_id, due_at, state) VALUES ($1, 'lab-eu', $2, 'done') RETURNING id, monitor_id, location_id, due_at", [other.id, new Date(END - 3600e3)])
  await insertResults(t.db, { job: otherJob, agentId: null, results: [auto('first', 'h2'), auto('returning', 'h2')] })
  const besideOther = (await t.app.inject({ url: `/api/v1/rum/monitors/${other.id}?from=${from}&to=${to}` })).json()
  assert.equal(besideOther.summary.lab_monitor.id, other.id)
  const otherEu = besideOther.summary.regions.find((r) => r.region_id === 'lab-eu')
  assert.deepEqual([otherEu.lab.monitor_id, otherEu.lab.returning.rate], [other.id, 0])
  const forced = await createMonitor(t.db, { url: `${ORIGIN}/forced`, interval_s: 300, locations: ['lab-eu'], modes: ['h2', 'h3'], paused: true }, { allowPrivateTargets: true })
  const besideForced = (await t.app.inject({ url: `/api/v1/rum/monitors/${forced.id}?from=${from}&to=${to}` })).json()
  assert.equal(besideForced.summary.lab_monitor, null)
  assert.ok(besideForced.summary.regions.every((r) => r.lab === null), 'no lab share beside a monitor without the auto arm')
  const elsewhere = await createMonitor(t.db, { url: 'https://elsewhere.example/', interval_s: 300, locations: ['lab-eu'], paused: true }, { allowPrivateTargets: true })
  assert.deepEqual((await t.app.inject({ url: `/api/v1/rum/monitors/${elsewhere.id}` })).json(), { site: null, summary: null })
})
