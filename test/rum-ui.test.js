// The Real users pages in real Chromium against the real API: a day of lab
// results and a day of real users' beacons on the same origin.
// run-tests: side — its browser looks at the dashboard over seeded results, and times no page load
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestDatabase } from './helpers/db.js'
import { seedDemo } from '../dev/demo-data.js'
import { startDashboard } from '../dev/dashboard.js'
import { launchBrowser } from '../dev/browser.js'
import { openRoute } from './helpers/ui.js'
import { seedRealUsers } from '../dev/demo-real-users.js'

/* global document -- used inside functions that run in the page */

let database, seeded, server, chromium, site
before(async () => {
  database = await createTestDatabase()
  seeded = await seedDemo(database.pool, { hours: 6, stepMinutes: 10 })
  // 23 h: all of it inside the page's "last 24 h" and the test's own, read a moment apart.
  site = await seedRealUsers(database.pool, { origin: new URL(seeded.monitors[0].url).origin, hours: 23, views: 4000, monitor: seeded.monitors[0] })
  server = await startDashboard(database.pool)
  chromium = await launchBrowser()
})
after(async () => {
  await chromium?.close()
  await server?.close()
  await database?.drop()
})

const open = (hash, opts) => openRoute(chromium, server, seeded.apiKey, hash, opts)

test('the Real users page: regions with their share over H3 beside the lab, labelled associations, the share over time and metrics by protocol', async () => {
  const { page, done } = await open(`#/rum/${site.id}`)
  assert.match(await page.$eval('h1', (e) => e.textContent), /Lab shop: real users/)
  assert.match(await page.$eval('.notice.association', (e) => e.textContent), /An association, not a controlled comparison\. Real users choose neither/)
  const rows = await page.$$eval('.rum-regions tbody tr', (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent.trim())))
  assert.deepEqual(rows.map((r) => r[0].split(' ')[0]), ['All', 'Lab', 'Lab', 'Lab', 'Other', 'Unknown'])
  const asia = rows.find((r) => r[0].startsWith('Lab Asia'))
  assert.match(asia[2], /^\d+(\.\d)?% \(\d+(\.\d)?–\d+(\.\d)?%\) of \d/, 'share with its interval')
  assert.match(asia[3], /%/, 'the lab\'s returning-visit share beside it')
  // A cell is coloured exactly when the API's verdict (the synthetic table's rules) is a difference.
  const summary = await (await fetch(`${server.url}/api/v1/rum/sites/${site.id}/summary?from=${encodeURIComponent(new Date(Date.now() - 86400e3).toISOString())}`, { headers: { authorization: `Bearer ${seeded.apiKey}` } })).json()
  const classes = await page.$$eval('.rum-regions tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td.assoc')].map((td) => td.className)))
  summary.regions.forEach((r, i) => {
    const verdicts = ['ttfb_ms', 'lcp_ms'].flatMap((m) => [50, 75].map((p) => r.comparison[m].find((row) => row.percentile === p).verdict))
    verdicts.forEach((v, k) => {
      const coloured = /v-faster|v-slower/.test(classes[i][k])
      assert.equal(coloured, v === 'h3_faster' || v === 'h3_slower', `${r.name} cell ${k}: ${v} shown as ${classes[i][k]}`)
    })
  })
  assert.ok(classes.flat().some((c) => c.includes('v-faster')), 'the handshake H3 saves shows somewhere')
  // Each cell says the page views it rests on: its strata's, not the region's total.
  const titles = await page.$$eval('.rum-regions tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td.assoc')].map((td) => td.getAttribute('title'))))
  const first = summary.regions[0].comparison.ttfb_ms.find((row) => row.percentile === 50)
  assert.match(titles[0][0], new RegExp(`rests on ${first.page_views.h3.toLocaleString('en-US')} page views over H3 and ${first.page_views.h2.toLocaleString('en-US')} over H2`))
  await page.waitForSelector('#rum-trend canvas')
  assert.ok(await page.$$eval('.rum-protocols tbody tr', (trs) => trs.length) >= 9, 'regions × browsers by protocol')
  // Side by side as they came, said to be no comparison; each value says the page views it rests on.
  assert.match(await page.$eval('#rum-ttfb', (e) => e.textContent), /TTFB by protocol, as observed.*Not a comparison/)
  const row = summary.regions.find((r) => r.region_id !== null && r.browsers.length)
  const h2 = row.browsers[0].metrics.ttfb_ms.h2[0]
  const cells = await page.$$eval('#rum-ttfb .rum-protocols tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)))
  assert.ok(cells.some((c) => c[2]?.endsWith(` of ${h2.n.toLocaleString('en-US')}`)), `a cell says its ${h2.n} page views: ${JSON.stringify(cells[0])}`)
  // Every value, and every "—" where no view gave one, says how many it rests on.
  const bare = cells.flatMap((c) => c.slice(2)).filter((v) => !/ of [\d,]+$/.test(v))
  assert.deepEqual(bare, [], 'no cell without its page views')
  await done()
})

test('a site is added from the dashboard and its install tag shown; bad origins are refused with the field named', async () => {
  const { page, done } = await open('#/rum', { allow: [/status of 400/] })
  assert.match(await page.$eval('.rum-sites', (e) => e.textContent), /Lab shop/)
  await page.type('#rum-name', 'blog')
  await page.type('#rum-origins', 'https://blog.example/posts')
  await page.click('.rum-form button[type=submit]')
  await page.waitForSelector('.rum-form .form-error:not([hidden])')
  assert.match(await page.$eval('.rum-form .form-error', (e) => e.textContent), /origins\.0.*origin only/)
  // A line is one origin as typed, and the field is named once.
  await page.$eval('#rum-origins', (e) => { e.value = '' })
  await page.type('#rum-origins', 'not a url')
  await page.click('.rum-form button[type=submit]')
  await page.waitForFunction(() => /"not a url"/.test(document.querySelector('.rum-form .form-error')?.textContent ?? ''))
  assert.doesNotMatch(await page.$eval('.rum-form .form-error', (e) => e.textContent), /origins\.0: origins\.0/)
  await page.$eval('#rum-origins', (e) => { e.value = '' })
  await page.type('#rum-origins', 'https://blog.example')
  await page.click('.rum-form button[type=submit]')
  await page.waitForSelector('.install:not([hidden]) pre.tag')
  assert.match(await page.$eval('pre.tag', (e) => e.textContent), /^<script async src="http:\/\/127\.0\.0\.1:\d+\/rum\/v1\/h3lens\.js\?v=[0-9a-f]+" integrity="sha384-[^"]+" crossorigin="anonymous" data-key="h3s_[\w-]+" data-sample="1"><\/script>$/)
  // The list above shows the new site at once, the tag still shown below.
  await page.waitForFunction(() => /blog/.test(document.querySelector('.rum-sites')?.textContent ?? ''))
  assert.ok(await page.$('.install:not([hidden]) pre.tag'))
  await done()
})

test('a monitor on the site\'s origin has a Real users row under each region of its table', async () => {
  const { page, done } = await open(`#/monitors/${seeded.monitors[0].id}?window=24h`)
  await page.waitForSelector('.compare tr.real-users')
  const cells = await page.$$eval('.compare tr.real-users > *', (els) => els.map((e) => e.textContent))
  assert.equal(cells[0], 'Real users')
  assert.ok(cells.slice(1).some((c) => /H3 share \d/.test(c) && /lab, returning visit: \d/.test(c) && /association/.test(c)), cells.join(' | '))
  assert.equal(await page.$eval('.compare tr.real-users a', (a) => a.getAttribute('href')), `#/rum/${site.id}`)
  await done()
})
