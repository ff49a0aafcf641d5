// The Alerts page and the firing badges in real Chromium, against the real
// API over the dashboard's demo data with an h3_failure rule that fires on
// the lossy Asia path.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestDatabase } from './helpers/db.js'
import { seedDemo, startDashboard, launchBrowser, openRoute, waitUntilSettled as settled } from './helpers/ui.js'
import { seedAlerts } from './helpers/alerts-ui.js'

/* global document, location -- used inside functions that run in the page */

let database, seeded, server, chromium
const apiGet = async (path) => (await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${seeded.apiKey}` } })).json()

before(async () => {
  database = await createTestDatabase()
  seeded = await seedDemo(database.pool, { hours: 6, stepMinutes: 5 })
  const { changes } = await seedAlerts(database.pool, { hours: 6 })
  assert.ok(changes > 0)
  server = await startDashboard(database.pool)
  chromium = await launchBrowser()
})

after(async () => {
  await chromium?.close()
  await server?.close()
  await database?.drop()
})

/** @param {string} hash @param {{ allow?: RegExp[] }} [opts] */
const open = (hash, opts) => openRoute(chromium, server, seeded.apiKey, hash, opts)

test('the Alerts page shows what fires now with its evidence, the history and the rules', async () => {
  const firing = (await apiGet('/api/v1/alerts?state=firing')).current
  assert.ok(firing.length >= 1, 'the demo data trips the rule')
  assert.ok(firing.every((a) => a.location_id === 'lab-asia' && a.kind === 'h3_failure'), JSON.stringify(firing.map((a) => [a.monitor_id, a.location_id])))

  const { page, done } = await open('#/alerts')
  assert.equal(await page.$eval('h1', (e) => e.textContent), 'Alerts')
  const rows = await page.$$eval('#firing tbody tr', (trs) => trs.map((tr) => ({
    state: tr.querySelector('.badge').textContent, text: tr.textContent, evidence: tr.querySelector('a.evidence-link')?.getAttribute('href')
  })))
  assert.equal(rows.length, firing.length)
  for (const r of rows) {
    assert.equal(r.state, 'firing')
    assert.match(r.text, /H3 failing · lab-asia/)
    assert.match(r.text, /H3 lost \d+\.\d% of \d+ loads; failure test: h3_fails_more/)
    assert.match(r.evidence, /^#\/monitors\/\d+\?window=custom&from=.*&metric=ttfb_ms&analysis=matched$/)
  }
  assert.equal(await page.$$eval('#history tbody tr', (trs) => trs.length), firing.length, 'one ok→firing change each')
  const rules = await page.$$eval('#rules tbody tr', (trs) => trs.map((tr) => tr.querySelector('b').textContent))
  assert.deepEqual(rules.slice(0, 3), ['p95 TTFB H3 regression ≥ 10% over 1 h, 3 evaluations', 'H3 failure ≥ 5% over 1 h, 3 evaluations', 'Location silent for 15 min'])
  assert.ok(rules.includes('H3 failure ≥ 5% over 6 h'))

  // The evidence link opens the monitor page on the window that tripped it.
  await Promise.all([page.waitForFunction(() => location.hash.startsWith('#/monitors/')), page.click('#firing a.evidence-link')])
  await settled(page)
  assert.match(await page.$eval('.alert-notice', (e) => e.textContent), /1 alert firing:.*H3 failing · lab-asia/)
  const asia = await page.$$eval('#rates tbody tr', (trs) => trs.map((tr) => tr.textContent).find((t) => /Asia/.test(t)))
  assert.match(asia, /H3 fails more/i)
  // A regression's evidence names its percentile: that row of the table is marked.
  await page.goto(`${server.url}/${firing[0].evidence.link}&percentile=95`, { waitUntil: 'networkidle0' })
  await settled(page)
  assert.deepEqual(await page.$$eval('#comparison .evidence-row > th', (ths) => ths.map((t) => t.textContent)), ['p95'])
  await done()
})

test('firing alerts are badged on the overview, linking to their evidence', async () => {
  const firing = (await apiGet('/api/v1/alerts?state=firing')).current
  const { page, done } = await open('#/')
  const badges = await page.$$eval('.heat .badge.alert', (els) => els.map((e) => ({ text: e.textContent, href: e.getAttribute('href') })))
  assert.equal(badges.length, firing.length)
  for (const b of badges) {
    assert.equal(b.text, '● H3 failing · lab-asia')
    assert.ok(firing.some((a) => a.evidence.link === b.href))
  }
  await done()
})

test('the rule and webhook forms check each field inline, and show the API\'s refusal next to its field', async () => {
  const before = (await apiGet('/api/v1/alert-rules')).items.length
  const { page, done } = await open('#/alerts', { allow: [/400 \(Bad Request\)/] })
  await page.click('#add-rule summary')
  await page.select('#rule-kind', 'error_rate')
  assert.equal(await page.$eval('[data-field="percentile"]', (e) => e.hidden), true, 'a percentile is for regressions only')
  const threshold = await page.$('#rule-threshold_pct')
  await threshold.click({ clickCount: 3 })
  await threshold.type('150')
  await page.click('#rule-form button[type="submit"]')
  assert.match(await page.$eval('#threshold_pct-error', (e) => e.hidden ? '' : e.textContent), /below 100%/)
  assert.equal(await page.$eval('#rule-threshold_pct', (e) => e.getAttribute('aria-invalid')), 'true')
  assert.equal((await apiGet('/api/v1/alert-rules')).items.length, before, 'nothing was sent')

  await threshold.click({ clickCount: 3 })
  await threshold.type('7')
  await page.click('#rule-form button[type="submit"]')
  await page.waitForFunction(() => [...document.querySelectorAll('#rules tbody b')].some((b) => b.textContent === 'Error rate > 7% over 1 h, 3 evaluations'))
  assert.equal((await apiGet('/api/v1/alert-rules')).items.length, before + 1)

  await page.click('#add-channel summary')
  await page.type('#channel-name', 'Internal')
  await page.type('#channel-url', 'http://10.0.0.5/hook')
  await page.type('#channel-secret', 'short')
  await page.click('#channel-form button[type="submit"]')
  assert.match(await page.$eval('#secret-error', (e) => e.textContent), /16 characters/)
  await page.type('#channel-secret', '-but-now-long-enough')
  await page.click('#channel-form button[type="submit"]')
  await page.waitForFunction(() => !(/** @type {HTMLElement} */ (document.querySelector('#url-error'))).hidden)
  assert.match(await page.$eval('#url-error', (e) => e.textContent), /non-public address 10\.0\.0\.5.*H3LENS_ALLOW_PRIVATE_TARGETS/)
  await done()
})
