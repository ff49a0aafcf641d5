// The dashboard in real Chromium, against the real API over a database that
// holds six hours of realistic results (72 rounds per location; on the lossy
// Asia path one H3 load in six times out; one origin refuses QUIC): what a
// user sees and can do.
// run-tests: side — its browser looks at the dashboard over seeded results, and times no page load
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { eventually } from './helpers/process.js'
import { insertResults } from '../lib/store/results.js'
import { createTestDatabase } from './helpers/db.js'
import { seedDemo } from '../dev/demo-data.js'
import { startDashboard } from '../dev/dashboard.js'
import { launchBrowser, collectPageErrors, goHash, useApiKey, waitUntilSettled as settled, whenRedrawn } from '../dev/browser.js'
import { openRoute, inkOf } from './helpers/ui.js'

/* global document, location, MouseEvent, NodeFilter -- used inside functions that run in the page */

let database, seeded, server, chromium

/** GET from the API with the test's key, as a script would. */
const apiGet = (path) => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${seeded.apiKey}` } })

before(async () => {
  database = await createTestDatabase()
  seeded = await seedDemo(database.pool, { hours: 6, stepMinutes: 5 })
  server = await startDashboard(database.pool)
  chromium = await launchBrowser()
})

after(async () => {
  await chromium?.close()
  await server?.close()
  await database?.drop()
})

/** @param {string} hash @param {{ allow?: RegExp[], width?: number }} [opts] */
const open = (hash, opts) => openRoute(chromium, server, seeded.apiKey, hash, opts)

test('the overview shows a verdict for every monitor and location, with failure and H3-not-supported badges', async () => {
  const { page, done } = await open('#/')
  const monitors = await page.$$eval('.heat tbody tr', (rows) => rows.map((r) => r.querySelector('th a')?.textContent))
  assert.deepEqual(monitors, ['Lab page-15k', 'Lab page-1m', 'Lab page-many', 'Lab h2-only origin', 'example.com'])
  const chips = await page.$$eval('.heat .chip', (els) => els.map((e) => e.textContent))
  // 3 measured monitors × (4 locations + all) × (p50, p95)
  assert.equal(chips.length, 30)
  // 72 rounds: p50 (needs 20) is tested, p95 (needs 200) is not.
  for (const c of chips.filter((c) => c.startsWith('p50'))) assert.match(c, /^p50.*\d+(\.\d)?%/)
  for (const c of chips.filter((c) => c.startsWith('p95'))) assert.match(c, /^p95.*few rounds/)
  const row = (label) => page.$$eval('.heat tbody tr', (rows, l) => rows.find((r) => r.querySelector('th a')?.textContent === l).textContent, label)
  assert.match(await row('example.com'), /Not enough data.*no rounds yet/)
  const h2Only = await row('Lab h2-only origin')
  assert.equal(h2Only.match(/H3 not supported/g)?.length, 3, 'all locations, Europe and North America')
  assert.doesNotMatch(h2Only, /errors/, 'a refused QUIC handshake is not an error rate')
  assert.match(await row('Lab page-1m'), /H3 fails more: \d+ vs \d+/)
  assert.match(await page.$eval('.heat', (t) => t.textContent), /fallback/, 'fallback badge for the lossy location')
  const legend = await page.$eval('.legend-block', (e) => e.textContent)
  assert.match(legend, /No clear difference/)
  assert.match(legend, /Benjamini–Hochberg/)
  assert.match(await page.$eval('.stats', (e) => e.textContent), /no clear difference/)
  await done()
})

test('the time window is kept in the URL and switching it reloads the view', async () => {
  const { page, done } = await open('#/?metric=load')
  assert.equal(await page.$eval('#metric-load_ms', (i) => i.checked), true)
  await page.click('label[for="window-7d"]')
  await page.waitForFunction(() => location.hash.includes('window=7d'))
  // The view reloads its data for the new window; under load that outlasts a settled DOM.
  await page.waitForFunction(() => /last 7 days/.test(document.querySelector('.page-head .sub')?.textContent ?? ''), { timeout: 30_000 }).catch(() => {})
  await settled(page)
  assert.match(await page.$eval('.page-head .sub', (p) => p.textContent), /Load at p50 and p95, last 7 days/)
  assert.match(await page.evaluate(() => location.hash), /metric=load/, 'the metric survives the window change')
  const monitorHref = await page.$eval('.heat tbody tr th a', (a) => a.getAttribute('href'))
  assert.match(monitorHref, /^#\/monitors\/\d+\?.*window=7d/, 'links carry the window along')
  await done()
})

test('adding a monitor through the form lands on its page', async () => {
  const { page, done } = await open('#/new')
  // A new monitor gets the auto arm unless the user unticks it; the form says what it costs.
  assert.equal(await page.$eval('input[name="modes"][value="auto"]', (i) => i.checked), true)
  assert.match(await page.$eval('#modes-group', (e) => e.textContent), /As users get it \(auto\).*two more page loads and two browser starts per round/)
  // The locations ticked are those with an agent, as the API's default; the others say they have none.
  const locs = await apiGet('/api/v1/locations').then((r) => r.json())
  const withAgent = locs.items.filter((l) => l.capacity.agents_alive > 0).map((l) => l.id).sort()
  assert.ok(withAgent.length > 0 && withAgent.length < locs.items.length, `agents at ${withAgent}`)
  const boxes = await page.$$eval('input[name="locations"]', (is) => is.map((i) => ({ id: i.value, checked: i.checked, text: i.closest('label').textContent })))
  assert.deepEqual(boxes.filter((b) => b.checked).map((b) => b.id).sort(), withAgent)
  for (const b of boxes) assert.equal(/no agent/.test(b.text), !withAgent.includes(b.id), b.text)
  await page.type('#url', 'https://example.org/landing')
  await page.type('#label', 'Landing page')
  await page.$eval('#interval_s', (i) => { i.value = '' })
  await page.type('#interval_s', '120')
  await whenRedrawn(page, () => page.click('form.card-form button[type="submit"]'))
  assert.match(await page.evaluate(() => location.hash.split('?')[0]), /^#\/monitors\/\d+$/)
  assert.equal(await page.$eval('h1', (e) => e.textContent), 'Landing page')
  const id = Number(await page.evaluate(() => location.hash.match(/monitors\/(\d+)/)?.[1]))
  const stored = await (await apiGet(`/api/v1/monitors/${id}`)).json()
  assert.equal(stored.url, 'https://example.org/landing')
  assert.equal(stored.interval_s, 120)
  assert.deepEqual(stored.modes, ['h2', 'h3', 'auto'])
  await done()
})

test('bad input shows the error next to its field', async () => {
  const { page, done } = await open('#/new', { allow: [/status of 400/] })
  await page.type('#url', 'ftp://x')
  await page.$eval('#interval_s', (i) => { i.value = '' })
  await page.type('#interval_s', '5')
  await page.click('form.card-form button[type="submit"]')
  const errorOf = (name) => page.$eval(`#${name}`, (input) => {
    const field = input.closest('.field')
    const err = field.querySelector('.field-error')
    return { invalid: input.getAttribute('aria-invalid'), hidden: err.hidden, text: err.textContent, describedBy: input.getAttribute('aria-describedby') }
  })
  const url = await errorOf('url')
  assert.equal(url.hidden, false)
  assert.equal(url.invalid, 'true')
  assert.match(url.text, /http:\/\/ or https:\/\//)
  assert.match(url.describedBy, /url-error/)
  const interval = await errorOf('interval_s')
  assert.equal(interval.hidden, false)
  assert.match(interval.text, /at least 60 seconds/)
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'url', 'focus moves to the first problem')
  // A page on either lab origin may run every 10 s: its floor is 10.
  await page.$eval('#url', (i) => { i.value = '' })
  await page.type('#url', 'https://lab2.h3lens.test:8443/page-15k.html')
  await page.click('form.card-form button[type="submit"]')
  await page.waitForFunction(() => /at least 10 seconds/.test(document.getElementById('interval_s-error')?.textContent ?? ''))

  // What only the server knows also lands next to its field.
  await page.$eval('#url', (i) => { i.value = '' })
  await page.type('#url', 'https://user:secret@example.com/')
  await page.$eval('#interval_s', (i) => { i.value = '' })
  await page.type('#interval_s', '300')
  await page.click('form.card-form button[type="submit"]')
  await page.waitForFunction(() => /user name or password/.test(document.getElementById('url-error')?.textContent ?? ''))
  assert.equal(await page.evaluate(() => location.hash), '#/new', 'stays on the form')

  // The minimum effect is a percentage; an A/A monitor runs exactly h2 and
  // h3, which the server says next to the field.
  await page.$eval('#url', (i) => { i.value = '' })
  await page.type('#url', 'https://example.org/aa')
  await page.select('#aa_protocol', 'h2')
  await page.click('input[name="modes"][value="h3"]')
  await page.$eval('#min_effect_pct', (i) => { i.value = '' })
  await page.type('#min_effect_pct', '150')
  await page.click('form.card-form button[type="submit"]')
  assert.match((await errorOf('min_effect_pct')).text, /from 0 to 100/)
  await page.$eval('#min_effect_pct', (i) => { i.value = '' })
  await page.type('#min_effect_pct', '5')
  await page.click('form.card-form button[type="submit"]')
  await page.waitForFunction(() => /modes must be exactly h2 and h3/.test(document.getElementById('aa_protocol-error')?.textContent ?? ''))
  const aaError = await errorOf('aa_protocol')
  assert.equal(aaError.hidden, false)
  assert.equal(aaError.invalid, 'true')
  await page.click('input[name="modes"][value="h3"]')
  await page.click('input[name="modes"][value="auto"]')
  await page.click('form.card-form button[type="submit"]')
  await page.waitForFunction(() => /^#\/monitors\/\d+$/.test(location.hash.split('?')[0]))
  const id = Number(await page.evaluate(() => location.hash.match(/monitors\/(\d+)/)?.[1]))
  const stored = await (await apiGet(`/api/v1/monitors/${id}`)).json()
  assert.deepEqual([stored.aa_protocol, stored.min_effect_pct, stored.min_effect_ms, stored.modes], ['h2', 5, 1, ['h2', 'h3']])
  await done()
})

/** The comparison table as the user reads it: head and cells by column name. */
function readTable (page) {
  return page.$eval('#comparison table.compare', (t) => {
    const names = [...t.querySelectorAll('thead th .loc-name')].map((e) => e.firstChild.textContent)
    const heads = Object.fromEntries([...t.querySelectorAll('thead th:not(.pcol)')].map((th, i) => [names[i], th.textContent]))
    const cells = {}
    for (const tr of t.querySelectorAll('tbody tr')) {
      const p = tr.querySelector('th').textContent
      const tds = [...tr.querySelectorAll('td')]
      // Columns covered by a rowspan have no cell in later rows.
      if (tds.length !== names.length) continue
      tds.forEach((td, i) => { cells[`${names[i]} ${p}`] = { text: td.textContent, cls: td.className } })
    }
    const foot = [...t.querySelectorAll('tfoot tr')].map((tr) => [...tr.children].map((c) => c.textContent))
    return { analysis: t.dataset.analysis, names, heads, cells, foot }
  })
}

test('the monitor page shows the rounds behind each location, the verdict of every cell and why it is not one', async () => {
  const id = seeded.monitors[1].id
  const { page, done } = await open(`#/monitors/${id}?window=24h&metric=ttfb`)
  await page.waitForSelector('#comparison table.compare')
  const rows = await page.$$eval('.compare tbody tr', (trs) => trs.map((tr) => tr.querySelector('th').textContent))
  assert.deepEqual(rows, ['p25', 'p50', 'p75', 'p90', 'p95', 'p99'])
  const t = await readTable(page)
  assert.equal(t.analysis, 'matched')
  assert.deepEqual(t.names, ['All locations', 'Local (unshaped loopback)', 'Lab North America', 'Lab Europe', 'Lab Asia'])
  assert.match(t.heads['All locations'], /stratified: equal-weight average of 4 locations/)
  assert.match(t.heads['All locations'], /\d+ matched rounds of 288/)
  // Asia: one H3 load in six timed out; those rounds are out of both arms.
  assert.match(t.heads['Lab Asia'], /(\d+) matched rounds of 72(\d+) excluded: (\d+ H3 failed)/)
  const [, matched, excluded] = t.heads['Lab Asia'].match(/(\d+) matched rounds of 72(\d+) excluded/)
  assert.equal(Number(matched) + Number(excluded), 72)

  for (const name of t.names) {
    for (const p of ['p25', 'p50', 'p75']) {
      const c = t.cells[`${name} ${p}`]
      assert.match(c.text, /H2 \d+(\.\d)? ms.*H3 \d+(\.\d)? ms/, `${name} ${p}: ${c.text}`)
      assert.match(c.text, /95% CI [−+]?\d/, `${name} ${p}`)
      assert.match(c.text, /H3 faster|H3 slower|No clear difference/, `${name} ${p}`)
      // The colour says what the words say.
      const verdict = c.text.match(/H3 faster|H3 slower|No clear difference/)[0]
      assert.match(c.cls, { 'H3 faster': /v-faster/, 'H3 slower': /v-slower/, 'No clear difference': /v-same/ }[verdict], `${name} ${p}`)
      if (verdict === 'No clear difference') {
        assert.match(c.text, /interval includes 0|not significant after correction|\|Δ\| below the .* minimum|H3 faster, but fails more: see intention to treat/, `${name} ${p} says why`)
        // In the cell's few words (from the API's reason_code); the API's
        // whole sentence is the tooltip's.
        assert.doesNotMatch(c.text, /the 95% interval includes 0|false-discovery-rate|is below the practical minimum/, `${name} ${p}: ${c.text}`)
      }
    }
    for (const p of ['p90', 'p95', 'p99']) {
      const c = t.cells[`${name} ${p}`]
      if (!c) continue
      assert.match(c.cls, /v-none/, `${name} ${p} is hatched`)
      assert.match(c.text, /Not enough data/)
      assert.doesNotMatch(c.text, /95% CI/, 'an untested cell has no interval')
    }
  }
  assert.match(t.cells['Lab Asia p99'].text, /p99 needs at least 1,000 rounds; have \d+/)
  assert.match(t.cells['All locations p95'].text, /no location has the 200 rounds p95 needs/)
  assert.match(t.cells['All locations p50'].text, /average of 4 locations, \d+ rounds/, 'a verdict of all locations says what it rests on')
  // H3 is faster on the high-RTT lab paths; on the lossy Asia path, where one H3 load in six
  // times out, faster among the loads that completed is no verdict: H3 fails more there.
  const faster = await page.$$eval('.compare td.v-faster', (tds) => tds.length)
  assert.ok(faster >= 4, `${faster} cells H3 faster`)
  for (const p of ['p25', 'p50', 'p75']) {
    const c = t.cells[`Lab Asia ${p}`]
    assert.match(c.text, /No clear differenceH3 faster, but fails more: see intention to treat/, `Lab Asia ${p}: ${c.text}`)
  }

  const [paired, unpaired] = t.foot
  assert.equal(paired[0], 'Paired')
  assert.match(paired[4], /shift [−+]\d+ ms \(95% [−+]\d+ ms … [−+]\d+ ms\) · Wilcoxon p [<=] [\d.]+ · H3 faster/)
  assert.match(paired[1], /Stouffer/)
  assert.equal(unpaired[0], 'Unpaired')
  // How many rounds the unpaired figures rest on, as every inferential number says.
  assert.match(unpaired[4], /Cliff's δ −?\d\.\d\d · Mann–Whitney p [<=] [\d.]+ \(unpaired, [\d,]+ rounds\)/)

  const legend = await page.$eval('#comparison .legend-block', (e) => e.textContent)
  assert.match(legend, /H3 faster.*H3 slower.*No clear difference.*Not enough data/)
  assert.match(legend, /Green or red only when Δ is significant after correcting for the \d+ cells tested in this view \(a screen per location column, then Benjamini–Hochberg within it\), its 95% interval excludes 0 and \|Δ\| is at least max\(2% of H2, 1 ms\)/)
  assert.match(legend, /p99 1,000/)
  assert.match(await page.$eval('#comparison .headline', (e) => e.textContent),
    /HTTP\/3 is \d+% faster at p50 among the loads that completed, which is no verdict while it is failing more.*not yet measurable at p95.*H3 fails or falls back more often than H2/)

  const runs = await page.$$eval('#runs tbody tr a', (as) => as.map((a) => a.getAttribute('href')))
  assert.ok(runs.length > 0 && runs.every((h) => /^#\/results\/\d+/.test(h)))
  await done()
})

test('the table says when it was computed, and ↻ computes it anew with the rounds stored since', async () => {
  const m = seeded.monitors[0]
  const { page, done } = await open(`#/monitors/${m.id}?window=24h&metric=ttfb`)
  await page.waitForSelector('#comparison .computed-at')
  const computed = () => page.$eval('#comparison .computed-at', (e) => e.textContent)
  const matched = async () => Number((await readTable(page)).heads['Local (unshaped loopback)'].match(/(\d+) matched rounds? of/)[1])
  const before = { at: await computed(), matched: await matched() }
  assert.match(before.at, /^Computed at .+ from the rounds stored by then\.$/)

  // A new round arrives, as from an agent; the answer kept by the API does not have it yet.
  const { rows: [job] } = await database.pool.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at, state) VALUES ($1, 'local', now() - interval '1 minute', 'done') RETURNING id, monitor_id, location_id, due_at`, [m.id])
  await insertResults(database.pool, {
    job,
    agentId: null,
    results: ['h2', 'h3'].map((mode) => ({ mode, status: 'ok', protocol_ok: true, observed_protocol: mode, ttfb_ms: 42 }))
  })
  // A new second on the clock, so that the time the table shows (in whole
  // seconds) can change: the table above was computed before now.
  await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 20))
  await page.click('#refresh-now')
  await eventually(async () => (await computed()) !== before.at, { what: 'a newly computed table' })
  assert.equal(await matched(), before.matched + 1, 'the refreshed table counts the new round')
  await done()
})

test('failures are data: rates with intervals per arm and the paired failure verdict', async () => {
  const id = seeded.monitors[1].id
  const cmp = await (await apiGet(`/api/v1/monitors/${id}/comparison?metric=ttfb`)).json()
  const asia = cmp.locations.find((l) => l.location_id === 'lab-asia')
  const { page, done } = await open(`#/monitors/${id}?window=24h&metric=ttfb`)
  await page.waitForSelector('#rates table')
  const rows = await page.$$eval('#rates tbody tr', (trs) => Object.fromEntries(trs.map((tr) => [tr.dataset.location, {
    cells: [...tr.children].map((c) => c.textContent),
    verdict: tr.querySelector('.failure-verdict').dataset.verdict
  }])))
  assert.deepEqual(Object.keys(rows), ['local', 'lab-na', 'lab-eu', 'lab-asia', 'all'])
  const [name, rounds, h2Failed, h3Failed] = rows['lab-asia'].cells
  assert.equal(name, 'Lab Asia')
  assert.equal(rounds, '72')
  assert.match(h3Failed, /^\d+(\.\d+)?% \(\d+(\.\d+)?–\d+(\.\d+)?%\) \d+ of 72$/, h3Failed)
  assert.match(h3Failed, new RegExp(` ${asia.arms.h3.failed} of 72$`))
  assert.match(h2Failed, /^0 \(≤ /)
  assert.equal(rows['lab-asia'].verdict, 'h3_fails_more')
  assert.match(rows['lab-asia'].cells[6], new RegExp(`^H3 fails or falls back more often than H2: ${asia.failure.h3_only} vs ${asia.failure.h2_only} rounds, p [=<] 0\\.\\d+$`))
  assert.equal(rows['lab-eu'].verdict, 'no_clear_difference')
  await done()

  // An origin that refuses QUIC: "H3 not supported", not an error rate or "Not enough data".
  const other = await open(`#/monitors/${seeded.h2Only.id}?window=24h&metric=ttfb`)
  await other.page.waitForSelector('#comparison table.compare')
  const heads = await other.page.$$eval('.compare thead th .loc-name', (ths) => ths.map((t) => t.textContent))
  assert.deepEqual(heads, ['All locationsH3 not supported', 'Lab EuropeH3 not supported', 'Lab North AmericaH3 not supported'])
  const body = await other.page.$eval('.compare tbody', (e) => e.textContent)
  assert.match(body, /H3 not supported.*refused QUIC/)
  assert.doesNotMatch(body, /Not enough data/)
  assert.match(await other.page.$eval('#comparison .headline', (e) => e.textContent), /H3 not supported/)
  const verdicts = await other.page.$$eval('#rates .failure-verdict', (tds) => tds.map((td) => td.textContent))
  assert.ok(verdicts.length === 3 && verdicts.every((v) => /^H3 not supported/.test(v)), verdicts.join(' | '))
  await other.done()
})

test('the analysis toggle re-queries with intention to treat and keeps it in the URL', async () => {
  const id = seeded.monitors[1].id
  const { page, done } = await open(`#/monitors/${id}?window=24h&metric=ttfb`)
  await page.waitForSelector('#comparison table.compare')
  assert.equal(await page.$eval('#analysis-matched', (i) => i.checked), true)
  assert.match(await page.$eval('#analysis-note', (e) => e.textContent), /^Matched rounds: Only rounds in which both arms loaded/)
  const before = await readTable(page)

  const asked = []
  page.on('request', (req) => { if (req.url().includes('/comparison?')) asked.push(new URL(req.url()).searchParams.get('analysis')) })
  await page.click('label[for="analysis-itt"]')
  await page.waitForFunction(() => location.hash.includes('analysis=itt'))
  await page.waitForSelector('#comparison table.compare[data-analysis="itt"]')
  await settled(page)
  assert.deepEqual(asked, ['itt'])
  assert.match(await page.evaluate(() => location.hash), /window=24h.*metric=ttfb|metric=ttfb.*window=24h/, 'the other parameters stay')
  assert.match(await page.$eval('#analysis-note', (e) => e.textContent), /^Intention to treat: Every round in which both arms ran; a failed load counts at the page timeout/)

  const after = await readTable(page)
  // Every Asia round counts now; the timed-out H3 loads at the 30 s timeout.
  assert.match(after.heads['Lab Asia'], /72 rounds of 72incl\. \d+ where an arm did not load \(failures at the timeout\): \d+ H3 failed/)
  assert.match(after.cells['Lab Asia p90'].text, /H3 30\.0 s/)
  assert.doesNotMatch(before.cells['Lab Asia p90'].text, /30\.0 s/)
  assert.notEqual(after.heads['All locations'], before.heads['All locations'])

  // The numbers on screen are the API's intention-to-treat numbers.
  const itt = await (await apiGet(`/api/v1/monitors/${id}/comparison?metric=ttfb&analysis=itt&from=${encodeURIComponent(new Date(Date.now() - 86400e3).toISOString())}`)).json()
  const p50 = itt.locations.find((l) => l.location_id === 'lab-asia').rows.find((r) => r.percentile === 50)
  assert.match(after.cells['Lab Asia p50'].text, new RegExp(`H3 ${Math.round(p50.h3_ms)} ms`))

  // A reload keeps the choice, and links carry it along.
  await page.reload({ waitUntil: 'networkidle0' })
  await settled(page)
  assert.equal(await page.$eval('#analysis-itt', (i) => i.checked), true)
  assert.match(await page.$eval('.crumbs a', (a) => a.getAttribute('href')), /analysis=itt/)
  await page.click('label[for="analysis-matched"]')
  await page.waitForSelector('#comparison table.compare[data-analysis="matched"]')
  await done()
})

test('an A/A calibration monitor labels its arms A and B and the overview shows its share of flagged cells', async () => {
  // The demo monitor is made an A/A monitor through the API for this test
  // (its stored arms stay as they were: this checks what the page calls them).
  const id = seeded.monitors[0].id
  const patched = await fetch(`${server.url}/api/v1/monitors/${id}`, {
    method: 'PATCH', headers: { authorization: `Bearer ${seeded.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ aa_protocol: 'h2' })
  })
  assert.equal(patched.status, 200, await patched.text())
  const page = await chromium.browser.newPage()
  const errors = collectPageErrors(page)
  await useApiKey(page, seeded.apiKey)
  await page.goto(`${server.url}/#/monitors/${id}?window=24h&metric=ttfb`, { waitUntil: 'networkidle0' })
  await settled(page)
  const cell = await page.$eval('.compare tbody td.cmp-cell', (td) => td.textContent)
  assert.match(cell, /A \(h2\) \d+(\.\d)? ms.*B \(h2\) \d+(\.\d)? ms/)
  const sub = await page.$eval('.page-head .sub', (e) => e.textContent)
  assert.match(sub, / · A\/A, both arms H2 · /)
  assert.doesNotMatch(sub, /H3/, 'the page head names no H3 arm')
  assert.doesNotMatch(await page.$eval('.compare tbody', (e) => e.textContent), /H2 \d|H3 \d|H3 faster|H3 slower/)
  assert.match(await page.$eval('#comparison .headline', (e) => e.textContent), /A\/A calibration monitor.*\d+ of \d+ cells tested are flagged/)
  assert.match(await page.$eval('#rates thead', (e) => e.textContent), /A \(h2\) failed.*B \(h2\) failed/)
  assert.match(await page.$eval('#trends .legend', (e) => e.textContent), /A \(h2\) p50.*B \(h2\) p95/)
  assert.match(await page.$eval('#cdf .legend', (e) => e.textContent), /A \(h2\).*B \(h2\)/)

  await goHash(page, '#/?window=24h&metric=ttfb')
  const row = await page.$$eval('.heat tbody tr', (rows) => rows.find((r) => r.querySelector('th a')?.textContent === 'Lab page-15k').textContent)
  assert.match(row, /A\/A h2/)
  assert.equal(row.match(/calibration: \d+(\.\d)?% of cells flagged/g)?.length, 5, 'all locations and each of the 4')
  assert.doesNotMatch(row, /p50/, 'no H3 faster/slower chips for an A/A monitor')
  await page.close()
  assert.deepEqual(errors, [])
  await fetch(`${server.url}/api/v1/monitors/${id}`, {
    method: 'PATCH', headers: { authorization: `Bearer ${seeded.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ aa_protocol: null })
  })
})

test('trend and CDF charts draw the data', async () => {
  const id = seeded.monitors[1].id
  const { page, done } = await open(`#/monitors/${id}?window=24h`)
  await page.waitForSelector('#trends canvas')
  await page.waitForSelector('#cdf canvas')
  for (const selector of ['#trends canvas', '#cdf canvas']) {
    const charts = await inkOf(page, selector, '--h3')
    assert.equal(charts.length, 4, `${selector}: one chart per location`)
    for (const c of charts) {
      assert.ok(c.width > 100 && c.height > 100, `${selector} has a size: ${c.width}×${c.height}`)
      assert.ok(c.painted > 1000, `${selector} is not blank`)
      assert.ok(c.near > 50, `${selector} draws the H3 series (${c.near} pixels)`)
    }
    const h2 = await inkOf(page, selector, '--h2')
    assert.ok(h2.every((c) => c.near > 50), `${selector} draws the H2 series`)
  }
  await done()
})

test('the export links download CSV with the current filters', async () => {
  const id = seeded.monitors[0].id
  const { page, done } = await open(`#/monitors/${id}?window=24h&metric=load`)
  await page.click('.menu summary')
  const links = await page.$$eval('.menu-list a', (as) => Object.fromEntries(as.map((a) => [a.textContent, a.href])))
  const raw = links['Raw results as CSV']
  assert.match(raw, new RegExp(`/api/v1/results\\?monitor=${id}&from=.*&to=.*&format=csv`))
  const res = await fetch(raw, { headers: { authorization: `Bearer ${seeded.apiKey}` } })
  assert.equal(res.status, 200, await res.clone().text())
  assert.match(res.headers.get('content-type') ?? '', /text\/csv/)
  const lines = (await res.text()).trim().split('\n')
  assert.match(lines[0], /ttfb_ms/)
  assert.ok(lines.length > 100, `${lines.length} lines`)

  const trends = links['Trends as CSV']
  assert.match(trends, /metric=load/)
  const t = await fetch(trends, { headers: { authorization: `Bearer ${seeded.apiKey}` } })
  assert.equal(t.status, 200, await t.clone().text())
  assert.match(t.headers.get('content-type') ?? '', /text\/csv/)
  assert.match((await t.text()).split('\n')[0], /p50/)

  // A plain link cannot send the key; the click fetches with it and saves the file.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-ui-download-'))
  const cdp = await page.createCDPSession()
  await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: dir })
  await page.evaluate(() => [...document.querySelectorAll('.menu-list a')].find((a) => a.textContent === 'Raw results as CSV')?.dispatchEvent(new MouseEvent('click', { bubbles: true, cancelable: true })))
  const file = path.join(dir, `h3lens-results-${id}.csv`)
  await eventually(() => fs.existsSync(file) && fs.statSync(file).size > 0, { timeoutMs: 15000, what: 'the downloaded CSV' })
  assert.match(fs.readFileSync(file, 'utf8').split('\n')[0], /ttfb_ms/)
  fs.rmSync(dir, { recursive: true, force: true })
  await done()
})

test('the run detail shows each request with its protocol, and TTFB in RTT units', async () => {
  const id = seeded.latestResultId
  const detail = await (await apiGet(`/api/v1/results/${id}`)).json()
  const { page, done } = await open(`#/results/${id}`)
  const protocols = await page.$$eval('.waterfall tbody tr', (trs) => trs.map((tr) => tr.querySelector('.proto').textContent))
  assert.equal(protocols.length, detail.details.requests.length)
  assert.deepEqual(protocols, detail.details.requests.map((r) => r.protocol))
  const timings = await page.$eval('.timings', (e) => e.textContent)
  assert.match(timings, /TTFB.*\d+ ms = \d+\.\d RTT/)
  const facts = await page.$eval('.facts', (e) => e.textContent)
  assert.match(facts, /Chrome\/156/)
  assert.match(facts, /--origin-to-force-quic-on=lab\.h3lens\.test:8443/)
  await done()
})

test('locations show their network profile and agent health', async () => {
  // The running agents report now, as they would every few seconds: the
  // seed's report can be more than a minute old by the time this test runs
  // on a loaded machine. lab-asia's agent stays silent (42 minutes).
  await database.pool.query("UPDATE agents SET last_seen_at = now() WHERE location_id <> 'lab-asia'")
  const { page, done } = await open('#/locations')
  const text = await page.$eval('#view', (e) => e.textContent)
  assert.match(text, /Lab Asia.*90 ms.*1\.5%.*Gilbert/s)
  assert.match(text, /25 Mbit\/s/)
  assert.match(text, /not seen recently/, 'the silent agent is called out')
  assert.match(text, /healthy/)
  // Capacity: what each location is asked for; Asia's only agent is silent.
  assert.match(text, /Capacity.*Asked\d+ rounds\/h/s)
  const asia = await page.$eval('[aria-labelledby="loc-lab-asia"]', (e) => e.textContent)
  assert.match(asia, /Demand exceeds capacity: no agent is running here/)
  const local = await page.$eval('[aria-labelledby="loc-local"]', (e) => e.textContent)
  assert.doesNotMatch(local, /Demand exceeds capacity/)
  // The browsers its agents have, named as the catalogue names them.
  assert.equal(await page.$eval('[aria-labelledby="loc-local"] .browsers', (e) => e.textContent), ' · Chromium')
  await done()
})

test('without a key the dashboard asks for one, stores it and retries', async () => {
  // A fresh context: other tests' pages stored a key in this origin's localStorage.
  const context = await chromium.browser.createBrowserContext()
  const page = await context.newPage()
  const errors = collectPageErrors(page)
  const sent = []
  page.on('request', (req) => { if (req.url().includes('/api/v1/')) sent.push(req.headers().authorization ?? null) })
  await page.goto(`${server.url}/#/locations`)

  // A wrong key is refused and the page says so instead of going blank.
  await page.waitForSelector('dialog[open] #api-key')
  assert.match(await page.$eval('dialog label[for="api-key"]', (l) => l.textContent), /API key/)
  await page.type('#api-key', 'h3k_not-a-real-key')
  await page.keyboard.press('Enter')
  await page.waitForSelector('#view .state.error')
  assert.match(await page.$eval('#view .state.error', (e) => e.textContent), /API key/)
  await page.click('#view .state.error button')

  await page.waitForSelector('dialog[open] #api-key')
  assert.match(await page.$eval('dialog', (d) => d.textContent), /refused/)
  await page.type('#api-key', seeded.apiKey)
  await page.keyboard.press('Enter')
  await page.waitForSelector('.loc-card')
  assert.equal(await page.evaluate(() => localStorage.getItem('h3lens.apiKey')), seeded.apiKey)
  assert.ok(sent.includes(`Bearer ${seeded.apiKey}`), 'requests are retried with the key')
  assert.equal(await page.$('dialog[open]'), null)
  await context.close()
  assert.deepEqual(errors.filter((e) => !/status of 401/.test(e)), [])
})

test('every page works under a strict Content-Security-Policy', async () => {
  const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'"
  const page = await chromium.browser.newPage()
  const errors = collectPageErrors(page)
  await useApiKey(page, seeded.apiKey)
  await page.evaluateOnNewDocument(() => {
    document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`))
  })
  await page.setRequestInterception(true)
  page.on('request', async (req) => {
    if (req.resourceType() !== 'document') return req.continue()
    const res = await fetch(req.url())
    return req.respond({ status: res.status, headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': csp }, body: await res.text() })
  })
  await page.goto(`${server.url}/#/`, { waitUntil: 'networkidle0' })
  await settled(page)
  for (const hash of [`#/monitors/${seeded.monitors[0].id}?analysis=itt`, `#/monitors/${seeded.h2Only.id}`, `#/results/${seeded.latestResultId}`, '#/new', '#/locations', '#/']) {
    await goHash(page, hash)
    if (hash.startsWith('#/monitors')) await page.waitForSelector('#cdf canvas')
  }
  assert.ok(await page.$('.heat'), 'the overview rendered')
  await page.close()
  assert.deepEqual(errors, [])
})

test('a backed-off monitor is marked on the overview, and an agent with infrastructure faults on the locations page', async () => {
  const [monitor] = seeded.monitors
  await database.pool.query(
    `INSERT INTO round_backoffs (monitor_id, location_id, timeouts, last_due_at, until)
     VALUES ($1, 'lab-eu', 3, now() - interval '1 minute', now() + interval '19 minutes')`, [monitor.id])
  const { rows: [agent] } = await database.pool.query(
    `UPDATE agents SET faults = 2, last_fault_at = now() - interval '3 minutes', last_fault = 'infrastructure fault: h3 arm: browser disconnected (pid 4242 killed by SIGKILL) during the run',
            last_seen_at = now() WHERE location_id = 'lab-eu' RETURNING id`)
  try {
    const overview = await open('#/')
    const row = await overview.page.$$eval('.heat tbody tr', (rows, label) => rows.find((r) => r.querySelector('th a')?.textContent === label).querySelector('.mon-meta').textContent, monitor.label)
    assert.match(row, /backed off at lab-eu: the last 3 rounds timed out/)
    const others = await overview.page.$$eval('.heat tbody tr', (rows, label) => rows.filter((r) => r.querySelector('th a')?.textContent !== label).map((r) => r.textContent), monitor.label)
    assert.ok(others.every((t) => !/backed off/.test(t)))
    await overview.done()

    const locations = await open('#/locations')
    const eu = await locations.page.$eval('[aria-labelledby="loc-lab-eu"]', (e) => e.textContent)
    assert.match(eu, /infrastructure faults \(last hour\)/)
    assert.match(eu, /2, the last [34] min ago/, '3 min ago when set; 4 once the two pages took more than 30 s')
    assert.match(eu, /browser disconnected \(pid 4242 killed by SIGKILL\)/)
    const na = await locations.page.$eval('[aria-labelledby="loc-lab-na"]', (e) => e.textContent)
    assert.doesNotMatch(na, /infrastructure faults/)
    await locations.done()
  } finally {
    await database.pool.query('DELETE FROM round_backoffs WHERE monitor_id = $1', [monitor.id])
    await database.pool.query('UPDATE agents SET faults = 0, last_fault_at = NULL, last_fault = NULL WHERE id = $1', [agent.id])
  }
})

test('a long name without spaces breaks inside the page rather than widening it', async () => {
  const word = (/** @type {string} */ c, /** @type {number} */ n) => c.repeat(n)
  const created = await fetch(`${server.url}/api/v1/monitors`, {
    method: 'POST',
    headers: { authorization: `Bearer ${seeded.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `https://example.com/?q=${word('q', 1500)}`, label: word('L', 120), locations: ['lab-eu'], interval_s: 300, paused: true })
  })
  assert.equal(created.status, 201, await created.clone().text())
  const monitor = await created.json()
  const rule = await fetch(`${server.url}/api/v1/alert-rules`, {
    method: 'POST',
    headers: { authorization: `Bearer ${seeded.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'location_silent', window_s: 600, description: word('D', 500) })
  })
  assert.equal(rule.status, 201, await rule.clone().text())
  const ruleId = (await rule.json()).id
  await database.pool.query("UPDATE locations SET region = $1 WHERE id = 'lab-na'", [word('R', 100)])
  // A run of the long URL that failed naming it, its requests to it.
  const { rows: [run] } = await database.pool.query(
    `WITH copy AS (SELECT * FROM results WHERE id = $1)
     INSERT INTO results SELECT (jsonb_populate_record(NULL::results, to_jsonb(copy) || jsonb_build_object(
       'id', nextval(pg_get_serial_sequence('results', 'id')), 'time', now(), 'monitor_id', $2::bigint, 'status', 'timeout', 'error', $3::text,
       'details', jsonb_set(copy.details, '{requests}', (SELECT jsonb_agg(jsonb_set(q, '{url}', to_jsonb($4::text))) FROM jsonb_array_elements(copy.details->'requests') q))))).*
       FROM copy RETURNING id`,
    [seeded.latestResultId, monitor.id, `load did not finish within 30000 ms: ${monitor.url}`, monitor.url])
  try {
    for (const hash of ['#/', `#/monitors/${monitor.id}`, `#/results/${run.id}`, '#/locations', '#/alerts']) {
      const { page, done } = await open(hash)
      const widths = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth])
      assert.ok(widths[0] <= widths[1], `${hash}: the page is ${widths[0]} px wide in a window of ${widths[1]} px`)
      if (hash === '#/') {
        // The overview's name column keeps its width: the name does not run over the verdicts beside it.
        const over = await page.$$eval('.heat tbody th', (cells) => cells.filter((c) => c.scrollWidth > c.clientWidth).map((c) => c.textContent?.slice(0, 40)))
        assert.deepEqual(over, [])
      }
      await done()
    }
  } finally {
    await fetch(`${server.url}/api/v1/monitors/${monitor.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${seeded.apiKey}` } })
    await fetch(`${server.url}/api/v1/alert-rules/${ruleId}`, { method: 'DELETE', headers: { authorization: `Bearer ${seeded.apiKey}` } })
    await database.pool.query("UPDATE locations SET region = 'North America' WHERE id = 'lab-na'")
  }
})

test('at a phone\'s width (360 px) every page fits the window: the header and pickers wrap, wide tables scroll inside their panel', async () => {
  for (const hash of ['#/', `#/monitors/${seeded.monitors[0].id}`, `#/results/${seeded.latestResultId}`, '#/new', `#/monitors/${seeded.monitors[0].id}/edit`, '#/locations', '#/alerts', '#/rum']) {
    const { page, done } = await open(hash, { width: 360 })
    const [scrollWidth, clientWidth, wide] = await page.evaluate(() => {
      const width = document.documentElement.clientWidth
      // The innermost elements past the window's edge, to say which.
      const past = [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > width + 0.5 && ![...e.children].some((c) => c.getBoundingClientRect().right > width + 0.5))
      return [document.documentElement.scrollWidth, width, past.slice(0, 3).map((e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}${e.className ? `.${String(e.className).split(' ').join('.')}` : ''}`)]
    })
    assert.ok(scrollWidth <= clientWidth, `${hash}: the page is ${scrollWidth} px wide in a window of ${clientWidth} px (${wide.join(', ')})`)
    await done()
  }
})

test('a run of a deleted monitor says its monitor was deleted, instead of a link to a monitor that does not exist', async () => {
  const auth = { authorization: `Bearer ${seeded.apiKey}` }
  const created = await (await fetch(`${server.url}/api/v1/monitors`, {
    method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ url: 'https://example.com/gone', label: 'soon gone', locations: ['lab-eu'], interval_s: 300, paused: true })
  })).json()
  const row = { time: new Date(Date.now() - 60e3).toISOString(), location_id: 'lab-eu', mode: 'h2', status: 'ok', observed_protocol: 'h2', ttfb_ms: 50, load_ms: 90 }
  const imported = await fetch(`${server.url}/api/v1/monitors/${created.id}/results/import`, { method: 'POST', headers: { ...auth, 'content-type': 'application/x-ndjson' }, body: `${JSON.stringify(row)}\n` })
  assert.equal(imported.status, 200, await imported.text())
  const [result] = (await (await apiGet(`/api/v1/monitors/${created.id}/results?limit=1`)).json()).items
  assert.equal((await fetch(`${server.url}/api/v1/monitors/${created.id}`, { method: 'DELETE', headers: auth })).status, 204)
  // The browser logs the monitor's 404, which is what says it was deleted.
  const { page, done } = await open(`#/results/${result.id}`, { allow: [/status of 404/] })
  await page.waitForSelector('[data-note="monitor-deleted"]')
  assert.match(await page.$eval('.crumbs', (e) => e.textContent), new RegExp(`Monitor ${created.id} \\(deleted\\) / Run ${result.id}`))
  assert.equal(await page.$$eval('.head-actions a', (els) => els.length), 0, 'no link back to a monitor that is gone')
  await done()
})

test('a label with a right-to-left override reads as typed: it neither reverses itself nor the text after it', async () => {
  const created = await fetch(`${server.url}/api/v1/monitors`, {
    method: 'POST',
    headers: { authorization: `Bearer ${seeded.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: 'https://example.com/rlo', label: 'shop\u202Eexample', locations: ['lab-eu'], interval_s: 300, paused: true })
  })
  assert.equal(created.status, 201, await created.clone().text())
  const monitor = await created.json()
  assert.equal(monitor.label, 'shop\u202Eexample', 'stored as given')
  try {
    for (const [hash, selector] of [['#/', '.heat tbody th a'], [`#/monitors/${monitor.id}`, 'h1']]) {
      const { page, done } = await open(hash)
      // Where the browser draws each letter of "example": left to right when nothing reverses them.
      const xs = await page.$$eval(selector, (els) => {
        const el = els.find((e) => e.textContent?.includes('example'))
        const walker = document.createTreeWalker(/** @type {Node} */ (el), NodeFilter.SHOW_TEXT)
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          const at = node.textContent?.indexOf('example') ?? -1
          if (at < 0) continue
          return [...'example'].map((_, i) => {
            const range = document.createRange()
            range.setStart(node, at + i)
            range.setEnd(node, at + i + 1)
            return range.getBoundingClientRect().left
          })
        }
        return []
      })
      assert.equal(xs.length, 7, hash)
      assert.deepEqual(xs, [...xs].sort((a, b) => a - b), `${hash}: the letters of "example" at ${xs.join(', ')}`)
      await done()
    }
  } finally {
    await fetch(`${server.url}/api/v1/monitors/${monitor.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${seeded.apiKey}` } })
  }
})

test('an All locations verdict that averages fewer locations than have rounds says how many, and on how many rounds', async () => {
  const auth = { authorization: `Bearer ${seeded.apiKey}` }
  const created = await fetch(`${server.url}/api/v1/monitors`, {
    method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ url: 'https://lab.h3lens.test:8443/page-15k.html', label: 'two locations, unequal', interval_s: 300, locations: ['lab-eu', 'lab-na'], paused: true })
  })
  assert.equal(created.status, 201, await created.clone().text())
  const monitor = await created.json()
  try {
    // Europe: 60 rounds, H3 a little faster. North America: 12 rounds (p50
    // needs 20), H3 far slower: the All locations p50 is Europe's alone.
    const lines = []
    const now = Date.now() - 5 * 60_000
    for (let i = 0; i < 60; i++) {
      const time = new Date(now - i * 60_000).toISOString()
      const t = 100 + (i * 7919 % 20)
      lines.push({ time, location_id: 'lab-eu', mode: 'h2', status: 'ok', observed_protocol: 'h2', ttfb_ms: t })
      lines.push({ time, location_id: 'lab-eu', mode: 'h3', status: 'ok', observed_protocol: 'h3', ttfb_ms: t - 5 })
      if (i < 12) {
        lines.push({ time, location_id: 'lab-na', mode: 'h2', status: 'ok', observed_protocol: 'h2', ttfb_ms: 1000 + i })
        lines.push({ time, location_id: 'lab-na', mode: 'h3', status: 'ok', observed_protocol: 'h3', ttfb_ms: 1300 + i })
      }
    }
    const imported = await fetch(`${server.url}/api/v1/monitors/${monitor.id}/results/import`, {
      method: 'POST', headers: { ...auth, 'content-type': 'application/x-ndjson' }, body: lines.map((l) => JSON.stringify(l)).join('\n')
    })
    assert.equal(imported.status, 200, await imported.clone().text())
    const { page, done } = await open('#/?window=24h&metric=ttfb')
    const cell = await page.$$eval('.heat tbody tr', (rows, label) => {
      const row = rows.find((r) => r.querySelector('th a')?.textContent === label)
      const td = row?.querySelectorAll('td')[0]
      return { text: td?.textContent ?? '', p50: td?.querySelector('.chip')?.getAttribute('title') ?? '' }
    }, 'two locations, unequal')
    assert.match(cell.text, /72 of 72 rounds matched/, 'the cell\'s rounds, at both locations')
    assert.match(cell.text, /p50: 1 of 2 locations, 60 rounds/, 'the p50 verdict rests on Europe\'s rounds alone')
    assert.match(cell.p50, /average of 1 location: lab-eu; 60 rounds/)
    await done()
  } finally {
    await fetch(`${server.url}/api/v1/monitors/${monitor.id}`, { method: 'DELETE', headers: auth })
  }
})

test('a monitor deleted while its page is open: the next refresh says it does not exist, in place of its old table', async () => {
  const auth = { authorization: `Bearer ${seeded.apiKey}` }
  const created = await fetch(`${server.url}/api/v1/monitors`, {
    method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ url: 'https://lab.h3lens.test:8443/page-15k.html', label: 'deleted while open', interval_s: 300, locations: ['lab-eu'], paused: true })
  })
  const monitor = await created.json()
  // The browser logs the refresh's 404 itself.
  const { page, done } = await open(`#/monitors/${monitor.id}`, { allow: [/status of 404 \(Not Found\)/] })
  await page.waitForSelector('#refresh-now')
  await fetch(`${server.url}/api/v1/monitors/${monitor.id}`, { method: 'DELETE', headers: auth })
  await page.click('#refresh-now')
  await page.waitForFunction(() => document.querySelector('.state.error .state-title')?.textContent === 'Not found')
  assert.match(await page.$eval('.state.error', (e) => e.textContent), new RegExp(`monitor ${monitor.id} does not exist.*Go to the overview`))
  assert.equal(await page.$('#comparison'), null, 'its old table is gone')
  await done()
})
