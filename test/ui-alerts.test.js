// The Alerts page and the firing badges in real Chromium, against the real
// API over the dashboard's demo data with an h3_failure rule that fires on
// the lossy Asia path.
// run-tests: side — its browser looks at the dashboard over seeded results, and times no page load
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestDatabase } from './helpers/db.js'
import { seedDemo } from '../dev/demo-data.js'
import { startDashboard } from '../dev/dashboard.js'
import { goHash, launchBrowser, whenRedrawn } from '../dev/browser.js'
import { openRoute } from './helpers/ui.js'
import { seedAlerts } from '../dev/demo-alerts.js'
import { createMonitor } from '../lib/store/monitors.js'
import { evaluateAlerts } from '../lib/analysis/alerts.js'

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
  assert.deepEqual(rules.slice(0, 3), ['p95 TTFB H3 regression ≥ 10% over 24 h, 3 evaluations', 'H3 failure ≥ 5% over 1 h, 3 evaluations', 'Location silent for 15 min'])
  assert.ok(rules.includes('H3 failure ≥ 5% over 6 h'))

  // The evidence link opens the monitor page on the window that tripped it.
  await whenRedrawn(page, () => page.click('#firing a.evidence-link'))
  assert.match(await page.evaluate(() => location.hash), /^#\/monitors\//)
  assert.match(await page.$eval('.alert-notice', (e) => e.textContent), /1 alert firing:.*H3 failing · lab-asia/)
  const asia = await page.$$eval('#rates tbody tr', (trs) => trs.map((tr) => tr.textContent).find((t) => /Asia/.test(t)))
  assert.match(asia, /H3 fails or falls back more/i)
  // A regression's evidence names its percentile: that row of the table is marked.
  assert.match(firing[0].evidence.link, /^#\//)
  await goHash(page, `${firing[0].evidence.link}&percentile=95`)
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
  // A regression starts from a day's window, which its p95 can fill at the default interval; each kind from its own.
  const windowOf = () => page.$eval('#rule-window', (e) => /** @type {HTMLInputElement} */ (e).value)
  assert.equal(await windowOf(), '1440')
  await page.select('#rule-kind', 'location_silent')
  assert.equal(await windowOf(), '15')
  await page.select('#rule-kind', 'error_rate')
  assert.equal(await windowOf(), '60')
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

test('an H3 share rule: its fields, checks inline against the monitor, the rule listed, and its alert in words', async () => {
  const before = (await apiGet('/api/v1/alert-rules')).items.length
  const forced = await createMonitor(database.pool, { url: 'https://forced-only.example.com/', label: 'Forced arms only', interval_s: 300, locations: ['lab-eu'], modes: ['h2', 'h3'] }, { allowPrivateTargets: true })
  const watched = seeded.monitors[0]
  // The demo monitors declare the forced arms their data has; this one runs the auto arm too.
  await database.pool.query("UPDATE monitors SET modes = '{h2,h3,auto}' WHERE id = $1", [watched.id])
  assert.equal(watched.interval_s, 300)
  const { page, done } = await open('#/alerts')
  await page.click('#add-rule summary')
  await page.select('#rule-kind', 'h3_share_drop')
  const shown = await page.$$eval('#rule-form [data-field]', (els) => Object.fromEntries(els.map((e) => [e.getAttribute('data-field'), !(/** @type {HTMLElement} */ (e)).hidden])))
  assert.deepEqual([shown.threshold_pct, shown.min_drop_points, shown.percentile, shown.metric], [true, true, false, false])
  assert.equal(await page.$eval('[data-field="threshold_pct"] label', (e) => e.textContent), 'Fire below (% over H3)')
  assert.deepEqual(await page.$$eval(['#rule-threshold_pct', '#rule-min_drop_points'].join(','), (els) => els.map((e) => (/** @type {HTMLInputElement} */ (e)).value)), ['50', '20'])

  const submitAndRead = async (/** @type {string} */ field) => {
    await page.click('#rule-form button[type="submit"]')
    return page.$eval(`#${field}-error`, (e) => (/** @type {HTMLElement} */ (e)).hidden ? '' : e.textContent)
  }
  const clear = (/** @type {string} */ selector) => page.$eval(selector, (e) => {
    (/** @type {HTMLInputElement} */ (e)).value = ''
    e.dispatchEvent(new Event('input', { bubbles: true }))
  })
  await page.select('#rule-monitor', String(forced.id))
  assert.match(await submitAndRead('monitor_id'), /does not run the auto arm \(its modes: h2, h3\)/)
  await page.select('#rule-monitor', String(watched.id))
  await clear('#rule-window')
  await page.type('#rule-window', '9999999')
  assert.equal(await submitAndRead('window_s'), 'A whole number of minutes from 1 to 43,200 (30 days).', 'said in the field\'s own unit')
  await clear('#rule-window')
  await page.type('#rule-window', '30')
  assert.match(await submitAndRead('window_s'), /runs every 5 min: the window needs at least 50 minutes for 10 returning visits/)
  await clear('#rule-window')
  await page.type('#rule-window', '60')
  await clear('#rule-threshold_pct')
  await clear('#rule-min_drop_points')
  assert.deepEqual(await page.$$eval('#rule-form input[type="number"]', (els) => els.filter((e) => !e.closest('[hidden]')).map((e) => [e.id, (/** @type {HTMLInputElement} */ (e)).value])),
    [['rule-threshold_pct', ''], ['rule-min_drop_points', ''], ['rule-window', '60'], ['rule-evaluations', '3']])
  assert.match(await submitAndRead('threshold_pct'), /a share to fire below, a drop in points, or both/)
  assert.equal((await apiGet('/api/v1/alert-rules')).items.length, before, 'nothing was sent')

  await page.type('#rule-threshold_pct', '50')
  await page.type('#rule-min_drop_points', '20')
  await clear('#rule-evaluations')
  await page.type('#rule-evaluations', '1')
  await page.click('#rule-form button[type="submit"]')
  const listed = 'H3 share of returning visits below 50% or down ≥ 20 points over 1 h'
  await page.waitForFunction((text) => [...document.querySelectorAll('#rules tbody b')].some((b) => b.textContent === text), {}, listed)
  const rule = (await apiGet('/api/v1/alert-rules')).items.at(-1)
  assert.deepEqual([rule.kind, rule.monitor_id, rule.threshold_pct, rule.min_drop_points, rule.window_s, rule.evaluations], ['h3_share_drop', watched.id, 50, 20, 3600, 1])
  await done()

  // A week of returning visits at lab-eu over H3 (96%), then an hour of none.
  const now = Date.now()
  const lines = []
  const row = (/** @type {number} */ t, /** @type {boolean} */ h3) => JSON.stringify({
    time: new Date(t).toISOString(), location_id: 'lab-eu', mode: 'auto', view: 'returning', status: 'ok', observed_protocol: h3 ? 'h3' : 'h2', ttfb_ms: 50
  })
  for (let j = 0; j < 336; j++) lines.push(row(now - 75 * 60e3 - j * 30 * 60e3 + 13e3, j % 25 !== 0))
  for (let k = 1; k <= 11; k++) lines.push(row(now - k * 5 * 60e3 + 13e3, false))
  const imported = await fetch(`${server.url}/api/v1/monitors/${watched.id}/results/import`, {
    method: 'POST', body: lines.join('\n') + '\n', headers: { authorization: `Bearer ${seeded.apiKey}`, 'content-type': 'application/x-ndjson' }
  })
  assert.equal(imported.status, 200, await imported.text())
  await evaluateAlerts(database.pool, { now: new Date(now), intervalS: 0 })

  const again = await open('#/alerts')
  const row2 = await again.page.$$eval('#firing tbody tr', (trs) => trs.map((tr) => tr.textContent).filter((t) => /H3 share down/.test(t ?? '')))
  assert.equal(row2.length, 1, JSON.stringify(row2))
  assert.match(row2[0], /H3 share down · lab-eu/)
  assert.match(row2[0], /returning visits over H3 fell from 96% of 336 to 0% of 11 \(96 points, p = \d\.\de-\d+\), below 50% \(Wilson 99\.8%: 0–46%\)/)
  await again.done()
})
