// "As users get it" in real Chromium, against the real API over a database
// that holds six hours of the demo data plus the auto arm's visits
// (dev/demo-auto-arm.js): a normal path whose returning visits come over
// H3, a path that drops UDP (forced H3 fails, users get H2), and an origin
// without H3. What a user reads on the monitor page, the overview, the run
// detail and the form, in light and dark.
// run-tests: serial — its overview computes the auto arm's analysis for every cell, which beside the lab files once kept the page busy past its 30 s wait
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestDatabase } from './helpers/db.js'
import { seedDemo } from '../dev/demo-data.js'
import { startDashboard } from '../dev/dashboard.js'
import { launchBrowser } from '../dev/browser.js'
import { openRoute, inkOf } from './helpers/ui.js'
import { seedAutoArm } from '../dev/demo-auto-arm.js'

/* global document, getComputedStyle, Element, matchMedia -- used inside functions that run in the page */

let database, seeded, auto, server, chromium

before(async () => {
  database = await createTestDatabase()
  seeded = await seedDemo(database.pool, { hours: 6, stepMinutes: 5 })
  auto = await seedAutoArm(database.pool, seeded, { hours: 6, stepMinutes: 5 })
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
const apiGet = async (path) => (await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${seeded.apiKey}` } })).json()

/** One location's card in "As users get it", as the user reads it. */
function readCard (page, location) {
  return page.$eval(`#users-get .users-loc[data-location="${location}"]`, (card) => {
    const text = (sel) => card.querySelector(sel)?.textContent ?? null
    const shares = Object.fromEntries([...card.querySelectorAll('.users-share tbody tr')].map((tr) => [tr.dataset.visit, [...tr.children].map((c) => c.textContent)]))
    const heads = Object.fromEntries([...card.querySelectorAll('.users-timing tr.visit-head')].map((tr) => [tr.dataset.visit, tr.textContent]))
    const cells = [...card.querySelectorAll('.users-timing td[data-contrast]')].map((td) => ({
      visit: td.closest('tr').dataset.visit, p: td.closest('tr').dataset.percentile, contrast: td.dataset.contrast, verdict: td.dataset.verdict, cls: td.className, text: td.textContent
    }))
    const gains = [...card.querySelectorAll('.users-timing td.gain')].map((td) => ({ visit: td.closest('tr').dataset.visit, p: td.closest('tr').dataset.percentile, shown: td.dataset.shown, text: td.textContent }))
    return { story: text('.story'), shares, heads, cells, gains, whole: text('.users-timing tbody') }
  })
}

test('the monitor page says what users get at each location: the story, the H3 share by visit, the race and the received gain', async () => {
  const api = await apiGet(`/api/v1/monitors/${auto.monitor.id}/auto?metric=ttfb_ms&percentiles=50,95&from=${encodeURIComponent(new Date(Date.now() - 86400e3).toISOString())}`)
  const na = api.locations.find((l) => l.location_id === 'lab-na')
  const { page, done } = await open(`#/monitors/${auto.monitor.id}?window=24h&metric=ttfb`)
  await page.waitForSelector('#users-get .users-loc')
  assert.equal(await page.$eval('#users-get-title', (e) => e.textContent), 'As users get it')
  // Beside (below) the forced comparison.
  assert.deepEqual(await page.$$eval('#view section.panel', (els) => els.map((e) => e.id).slice(0, 2)), ['comparison', 'users-get'])

  const normal = await readCard(page, 'lab-na')
  assert.equal(normal.story, `Users get H3 from their second visit on (${Math.round(na.shares.returning.navigation_share.rate * 100)}% of 72 returning visits)`)
  // "N% (lo–hi%) of M visits", and why: the reasons and Chromium's race outcome in words.
  const [, firstPages, firstBytes, firstWhy, firstRace] = normal.shares.first
  assert.match(firstPages, /^0% \(0–5\.1%\) of 72 visits$/)
  assert.match(firstBytes, /^0% .*of bytes, 72 visits$/)
  assert.equal(firstWhy, 'Not H3: the origin was not yet known to speak H3 72')
  assert.equal(firstRace, 'no Alt-Svc known for the origin 72')
  const [, pages, , why, race] = normal.shares.returning
  const returning = na.shares.returning
  assert.match(pages, new RegExp(`^${Math.round(returning.navigation_share.rate * 100)}% \\(\\d+(\\.\\d)?–\\d+(\\.\\d)?%\\) of 72 visits$`))
  assert.match(why, new RegExp(`H3: learnt from Alt-Svc ${returning.reasons.alt_svc}.*Not H3: TCP won the race ${returning.reasons.tcp_won}`))
  assert.match(race, /QUIC won the race against TCP \d+TCP won the race against QUIC \d+/)
  assert.equal(normal.shares.repeat, undefined, 'no repeat view without one')

  // The rounds each number rests on, and per percentile the contrasts coloured by their verdict only.
  assert.match(normal.heads.returning, /Returning visit 72 rounds in which all three arms loaded, of 72$/)
  for (const c of normal.cells) {
    const expected = { faster: /v-faster/, slower: /v-slower/, no_clear_difference: /v-same/, insufficient_data: /v-none/ }[c.verdict]
    assert.match(c.cls, expected, `${c.visit} p${c.p} ${c.contrast}`)
    assert.doesNotMatch(c.cls, c.verdict === 'faster' || c.verdict === 'slower' ? /v-same|v-none/ : /v-faster|v-slower/)
    if (c.verdict === 'faster') assert.match(c.text, /95% CI [−+]\d.*auto faster than (H2|forced H3)/)
    if (c.verdict === 'no_clear_difference') assert.match(c.text, /No clear difference.*(interval includes 0|not significant after the false-discovery-rate correction|practical minimum)/)
  }
  const cell = (visit, p, contrast) => normal.cells.find((c) => c.visit === visit && c.p === String(p) && c.contrast === contrast)
  assert.equal(cell('returning', 50, 'auto_vs_h2').verdict, na.visits.returning.rows[0].contrasts.auto_vs_h2.verdict)
  assert.match(cell('returning', 95, 'auto_vs_h2').text, /Not enough data.*p95 needs at least 200 rounds; have 72/)

  // The received gain with its interval where forced H3 is clearly faster, else why not.
  const gain = na.visits.returning.rows[0].received_gain
  assert.equal(gain.shown, true)
  const shown = normal.gains.find((g) => g.visit === 'returning' && g.p === '50')
  assert.equal(shown.shown, 'true')
  const level = `${Math.round(gain.level * 1000) / 10}%`.replace('.', '\\.')
  assert.match(shown.text, new RegExp(`^${Math.round(gain.value * 100)}% of the H3 gain${level} -?\\d+% … \\d+%$`))
  assert.match(normal.gains.find((g) => g.visit === 'returning' && g.p === '95').text, /^not shown: p95 needs at least 200 rounds; have 72$/)

  // UDP blocked: said in words; the paired numbers cannot exist, and the page says why.
  const blocked = await readCard(page, 'lab-eu')
  assert.equal(blocked.story, 'QUIC blocked on this path: users get H2 (forced H3 failed or fell back in 72 of 72 rounds)')
  assert.match(blocked.shares.returning[1], /^0% \(0–5\.1%\) of 72 visits$/)
  assert.match(blocked.shares.returning[3], /Not H3: H3 marked broken after failures 36/)
  assert.match(blocked.shares.returning[3], /Not H3: TCP won the race 36/)
  assert.match(blocked.shares.returning[4], /QUIC marked broken for the origin after failures 36/)
  assert.match(blocked.heads.first, /0 rounds in which all three arms loaded, of 72; 72 left out: 72 H3 failed/)
  assert.match(blocked.whole, /Not enough data: forced H3 did not load in any round \(72 of 72\), so no round has all three arms loaded; more rounds add none while that lasts/)

  const legend = await page.$eval('#users-get .legend-block', (e) => e.textContent)
  assert.match(legend, new RegExp(`correcting for the ${api.cells.tested} cells tested here`))
  assert.match(legend, /Received gain = \(H2 − auto\) \/ \(H2 − H3\)/)
  await done()

  // An origin that does not announce H3.
  const other = await open(`#/monitors/${seeded.h2Only.id}?window=24h&metric=ttfb`)
  await other.page.waitForSelector('#users-get .users-loc')
  const eu = await readCard(other.page, 'lab-eu')
  assert.equal(eu.story, 'The origin does not announce H3: users get H2 (144 of 144 visits that loaded)')
  assert.match(eu.shares.returning[3], /^Not H3: the origin does not announce H3 72$/)
  await other.done()
})

test('a monitor without the auto arm says so and how to turn it on', async () => {
  const { page, done } = await open(`#/monitors/${seeded.monitors[0].id}?window=24h`)
  await page.waitForSelector('#users-get .state')
  const text = await page.$eval('#users-get', (e) => e.textContent)
  assert.match(text, /This monitor does not run the auto arm/)
  assert.match(text, /tick “As users get it \(auto\)” under Modes/)
  assert.match(await page.$eval('#users-get .state a', (a) => a.getAttribute('href')), new RegExp(`^#/monitors/${seeded.monitors[0].id}/edit`))
  await done()
})

test('the overview shows the H3 share of returning visits per cell, or the story where users never get H3', async () => {
  const { page, done } = await open('#/?window=24h')
  const badges = (label) => page.$$eval('.heat tbody tr', (rows, l) => {
    const row = rows.find((r) => r.querySelector('th a')?.textContent === l)
    const heads = [...document.querySelectorAll('.heat thead th')].map((th) => th.firstChild?.textContent)
    return [...row.querySelectorAll('td')].map((td, i) => ({ column: heads[i + 1], badge: td.querySelector('.badge.users')?.textContent ?? null, title: td.querySelector('.badge.users')?.getAttribute('title') ?? null }))
  }, label)
  const mine = await badges('Lab auto arm')
  const na = mine.find((c) => c.column === 'Lab North America')
  const cmp = await apiGet(`/api/v1/monitors/${auto.monitor.id}/comparison?percentiles=50,95`)
  const returning = cmp.locations.find((l) => l.location_id === 'lab-na').users_get.returning
  // The overview's story is the monitor page's.
  const full = await apiGet(`/api/v1/monitors/${auto.monitor.id}/auto?percentiles=50`)
  for (const l of full.locations) assert.deepEqual(cmp.locations.find((c) => c.location_id === l.location_id).users_get.story, l.story)
  assert.equal(na.badge, `H3 ${Math.round(returning.h3 / returning.loaded * 100)}% returning`)
  assert.match(na.title, new RegExp(`H3 on ${returning.h3} of 72 returning visits that loaded \\(95% interval \\d+(\\.\\d)?% \\(\\d+(\\.\\d)?–\\d+(\\.\\d)?%\\)\\)`))
  assert.match(na.title, /Users get H3 from their second visit on/)
  const eu = mine.find((c) => c.column === 'Lab Europe')
  assert.equal(eu.badge, 'QUIC blocked on this path: users get H2')
  assert.match(eu.title, /forced H3 failed or fell back in 72 of 72 rounds.*H3 on 0 of 72 returning visits/)
  assert.equal(mine.find((c) => c.column === 'All locations').badge, null, 'no share pooled across locations')
  const h2Only = (await badges('Lab h2-only origin')).filter((c) => c.badge)
  assert.deepEqual(h2Only.map((c) => c.badge), ['The origin does not announce H3: users get H2', 'The origin does not announce H3: users get H2'])
  // The badge has the story's words; its tooltip the visits it rests on.
  for (const c of h2Only) assert.match(c.title, /The origin does not announce H3: users get H2 \((\d+) of \1 visits that loaded\)\./)
  assert.deepEqual((await badges('Lab page-15k')).filter((c) => c.badge), [], 'no badge without the auto arm')
  await done()
})

test('the raw export holds every run of the window, the auto arm\'s returning visits included, whatever view the page shows', async () => {
  const { page, done } = await open(`#/monitors/${auto.monitor.id}?window=24h&metric=ttfb`)
  await page.click('.menu summary')
  const raw = await page.$$eval('.menu-list a', (as) => as.find((a) => a.textContent === 'Raw results as NDJSON')?.href)
  await done()
  const res = await fetch(raw, { headers: { authorization: `Bearer ${seeded.apiKey}` } })
  assert.equal(res.status, 200, await res.clone().text())
  const rows = (await res.text()).trim().split('\n').map((l) => JSON.parse(l))
  const count = (mode, view) => rows.filter((r) => r.mode === mode && r.view === view).length
  // Two locations, 72 rounds each, every arm loaded in each.
  assert.deepEqual(['h2/first', 'h3/first', 'auto/first', 'auto/returning'].map((k) => count(...k.split('/'))), [144, 144, 144, 144])
})

test('an overview cell where users\' loads mostly fail while the forced arms load says so', async () => {
  const call = (method, path, body, type = 'application/json') => fetch(`${server.url}${path}`, { method, body, headers: { authorization: `Bearer ${seeded.apiKey}`, 'content-type': type } })
  const created = await call('POST', '/api/v1/monitors', JSON.stringify({ url: 'https://lab.h3lens.test:8443/page-15k.html', label: 'Failing for users', locations: ['lab-na'], paused: true }))
  assert.equal(created.status, 201, await created.clone().text())
  const { id } = await created.json()
  // 12 rounds in the last hour: both forced arms load, the auto arm's visits fail.
  const rows = Array.from({ length: 12 }, (_, i) => new Date(Date.now() - (i + 1) * 240e3).toISOString()).flatMap((time) => [
    { time, location_id: 'lab-na', mode: 'h2', ttfb_ms: 40 }, { time, location_id: 'lab-na', mode: 'h3', ttfb_ms: 30 },
    ...['first', 'returning'].map((view) => ({ time, location_id: 'lab-na', mode: 'auto', view, status: 'error', error: 'net::ERR_CONNECTION_RESET', observed_protocol: null }))
  ])
  const imported = await call('POST', `/api/v1/monitors/${id}/results/import`, rows.map((r) => JSON.stringify(r)).join('\n'), 'application/x-ndjson')
  assert.equal(imported.status, 200, await imported.clone().text())
  const { page, done } = await open('#/?window=24h')
  const cell = await page.$$eval('.heat tbody tr', (trs) => {
    const row = trs.find((r) => r.querySelector('th a')?.textContent === 'Failing for users')
    const heads = [...document.querySelectorAll('.heat thead th')].map((th) => th.firstChild?.textContent)
    const td = [...row.querySelectorAll('td')][heads.indexOf('Lab North America') - 1]
    const badge = td.querySelector('.badge.users')
    return { badge: badge?.textContent ?? null, title: badge?.getAttribute('title') ?? null, errors: td.querySelector('.badge.bad:not(.users)')?.textContent ?? null }
  })
  assert.equal(cell.badge, 'Users\' loads mostly fail')
  assert.match(cell.title, /Most visits of the auto arm failed: users' loads fail here \(24 of 24 visits failed\), though forced H2 loaded in \d+ of \d+ rounds: what fails is the browser as users run it, not the page/)
  assert.equal(cell.errors, null, 'the forced arms did not fail')
  await done()

  // A few returning visits fail: the badge's share is of those that loaded, and it says so.
  const some = await (await call('POST', '/api/v1/monitors', JSON.stringify({ url: 'https://lab.h3lens.test:8443/page-15k.html', label: 'Some fail for users', locations: ['lab-na'], paused: true }))).json()
  const mixed = Array.from({ length: 24 }, (_, i) => new Date(Date.now() - (i + 1) * 120e3).toISOString()).flatMap((time, i) => [
    { time, location_id: 'lab-na', mode: 'h2', ttfb_ms: 40 }, { time, location_id: 'lab-na', mode: 'h3', ttfb_ms: 30 },
    { time, location_id: 'lab-na', mode: 'auto', view: 'first', ttfb_ms: 40, observed_protocol: 'h2' },
    i < 4
      ? { time, location_id: 'lab-na', mode: 'auto', view: 'returning', status: 'error', error: 'net::ERR_CONNECTION_RESET', observed_protocol: null }
      : { time, location_id: 'lab-na', mode: 'auto', view: 'returning', ttfb_ms: 30, observed_protocol: 'h3' }
  ])
  const stored = await call('POST', `/api/v1/monitors/${some.id}/results/import`, mixed.map((r) => JSON.stringify(r)).join('\n'), 'application/x-ndjson')
  assert.equal(stored.status, 200, await stored.clone().text())
  const again = await open('#/?window=24h')
  const badge = await again.page.$$eval('.heat tbody tr', (trs) => {
    const row = trs.find((r) => r.querySelector('th a')?.textContent === 'Some fail for users')
    const heads = [...document.querySelectorAll('.heat thead th')].map((th) => th.firstChild?.textContent)
    return [...row.querySelectorAll('td')][heads.indexOf('Lab North America') - 1].querySelector('.badge.users')?.textContent ?? null
  })
  assert.equal(badge, 'H3 100% returning, 4 of 24 failed')
  await again.done()
})

test('a journey step that failed in every round says so in the steps table, not only "not enough data"', async () => {
  const call = (method, path, body, type = 'application/json') => fetch(`${server.url}${path}`, { method, body, headers: { authorization: `Bearer ${seeded.apiKey}`, 'content-type': type } })
  const journey = { steps: [{ action: 'navigate', url: '/page-15k.html', name: 'open' }, { action: 'click', selector: '#buy', name: 'buy' }] }
  const created = await call('POST', '/api/v1/monitors', JSON.stringify({ url: 'https://lab.h3lens.test:8443/page-15k.html', label: 'Shop with a broken button', locations: ['lab-na'], modes: ['h2', 'h3'], journey, paused: true }))
  assert.equal(created.status, 201, await created.clone().text())
  const { id } = await created.json()
  const rows = Array.from({ length: 12 }, (_, i) => new Date(Date.now() - (i + 1) * 240e3).toISOString()).flatMap((time) => ['h2', 'h3'].flatMap((mode) => [
    { time, location_id: 'lab-na', mode, probe: 'journey:open', samples: [300] },
    { time, location_id: 'lab-na', mode, probe: 'journey:buy', status: 'timeout', error: 'step 2 (click #buy): no element matches #buy' },
    { time, location_id: 'lab-na', mode, probe: 'journey', status: 'timeout', error: 'step 2 (click #buy): no element matches #buy' }
  ]))
  const imported = await call('POST', `/api/v1/monitors/${id}/results/import`, rows.map((r) => JSON.stringify(r)).join('\n'), 'application/x-ndjson')
  assert.equal(imported.status, 200, await imported.clone().text())
  const { page, done } = await open(`#/monitors/${id}?window=24h`)
  await page.waitForSelector('#journey-step-table tbody tr')
  const table = await page.$$eval('#journey-step-table tbody tr', (trs) => Object.fromEntries(trs.map((tr) => [tr.dataset.probe, tr.querySelectorAll('td')[4].textContent])))
  assert.match(table['journey:buy'], /^Not enough data.*failed: H2 12 of 12, H3 12 of 12 rounds$/)
  assert.match(table.journey, /failed: H2 12 of 12, H3 12 of 12 rounds$/)
  assert.doesNotMatch(table['journey:open'], /failed/)
  await done()
})

test('the run detail says why the page came over its protocol, and the waterfall shows the race and reuse per request', async () => {
  const { page, done } = await open(`#/results/${auto.returningH3}`)
  assert.equal(await page.$eval('h1', (e) => e.textContent), 'Auto run, returning visit from Lab North America')
  const reason = await page.$eval('.reason-line', (e) => ({ code: e.dataset.code, protocol: e.querySelector('.proto').textContent, text: e.querySelector('.reason-text').textContent, sub: e.querySelector('.reason-sub').textContent }))
  assert.deepEqual([reason.code, reason.protocol, reason.text], ['alt_svc', 'h3', 'H3: learnt from Alt-Svc'])
  assert.match(reason.sub, /nothing forced: the browser chose\. Returning visit: the browser started again/)
  assert.match(reason.sub, /H3 announced by Alt-Svc\. Chromium: QUIC won the race against TCP \(alternativeJobWonRace\)/)
  const rows = await page.$$eval('.waterfall tbody tr', (trs) => trs.map((tr) => ({
    usage: tr.querySelector('.usage-cell .badge')?.firstChild?.textContent ?? tr.querySelector('.usage-cell').textContent,
    title: tr.querySelector('.usage-cell .badge')?.getAttribute('title') ?? null,
    conn: tr.querySelector('.conn').textContent
  })))
  assert.deepEqual(rows[0], { usage: 'QUIC won', title: 'alternativeJobWonRace: QUIC won the race against TCP', conn: `${rows[0].conn.match(/#\d+/)[0]} new` })
  assert.ok(rows.slice(1).every((r) => r.usage === '—' && /^#\d+ reused$/.test(r.conn)), 'the sub-resources reuse the connection')
  assert.match(await page.$eval('.waterfall thead', (e) => e.textContent), /Race/)
  await done()

  // Stored in the words of an older agent, it reads as the reason's code says today.
  await database.pool.query("UPDATE results SET details = jsonb_set(details, '{protocol_reason,text}', '\"H2: TCP won the race\"') WHERE id = $1", [auto.returningTcpWon])
  const blocked = await open(`#/results/${auto.returningTcpWon}`)
  assert.equal(await blocked.page.$eval('.reason-text', (e) => e.textContent), 'Not H3: TCP won the race')
  assert.equal(await blocked.page.$eval('.waterfall tbody tr .usage-cell .badge', (e) => e.getAttribute('title')), 'mainJobWonRace: TCP won the race against QUIC')
  await blocked.done()
})

test('the runs table lists the auto arm\'s visits with their view and reason', async () => {
  const { page, done } = await open(`#/monitors/${auto.monitor.id}?window=24h`)
  await page.waitForSelector('#runs tbody tr')
  const runs = await page.$$eval('#runs tbody tr', (trs) => trs.map((tr) => ({ mode: tr.dataset.mode, view: tr.children[3].textContent, why: tr.querySelector('td.reason').textContent })))
  const returning = runs.filter((r) => r.mode === 'auto' && r.view === 'returning visit')
  assert.ok(returning.length > 0, 'returning visits are listed')
  assert.ok(returning.every((r) => /^(H3|Not H3): /.test(r.why)), returning.map((r) => r.why).join(' | '))
  assert.ok(runs.some((r) => r.mode === 'auto' && r.view === 'first visit' && r.why === 'Not H3: the origin was not yet known to speak H3'))
  assert.ok(runs.some((r) => r.mode === 'h2' && r.why === 'H2: QUIC switched off by the arm'))
  await done()
})

test('the trend and CDF charts draw the auto arm beside the forced arms', async () => {
  const { page, done } = await open(`#/monitors/${auto.monitor.id}?window=24h`)
  await page.waitForSelector('#trends canvas')
  await page.waitForSelector('#cdf canvas')
  assert.match(await page.$eval('#trends .legend', (e) => e.textContent), /Auto \(first visit\) p50.*Auto \(first visit\) p95/)
  assert.match(await page.$eval('#cdf .legend', (e) => e.textContent), /HTTP\/2.*HTTP\/3.*Auto \(first visit\)/)
  for (const selector of ['#trends canvas', '#cdf canvas']) {
    const charts = await inkOf(page, selector, '--auto')
    assert.equal(charts.length, 2, `${selector}: one chart per location`)
    assert.ok(charts.every((c) => c.near > 50), `${selector} draws the auto arm (${charts.map((c) => c.near).join(', ')} pixels)`)
  }
  assert.match(await page.$eval('#cdf .readout', (e) => e.textContent), /Auto \(first visit\) \d+/)
  // Each readout says how many loads its percentiles rest on, and that the CDF's are every load, not matched rounds.
  assert.match(await page.$eval('#cdf .readout', (e) => e.textContent), /over every load that succeeded \(H2 [\d,]+ · H3 [\d,]+ · Auto \(first visit\) [\d,]+\), not matched rounds$/)
  assert.match(await page.$eval('#trends .readout', (e) => e.textContent), /^Latest {2}H2 p50 .* \([\d,]+ loads?\) {3}H3 p50 .* \([\d,]+ loads?\)/)
  await done()
})

/**
 * Text in `selectors` whose contrast with what is behind it is below 4.5:1
 * (WCAG AA for text), opacity included; an empty list when all is readable.
 */
function unreadable (page, selectors) {
  return page.evaluate((sels) => {
    const rgba = (s) => {
      const m = s.match(/^rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)$/)
      if (m) return [+m[1], +m[2], +m[3], m[4] === undefined ? 1 : +m[4]]
      const c = s.match(/^color\(srgb ([\d.]+) ([\d.]+) ([\d.]+)(?: \/ ([\d.]+))?\)$/)
      if (c) return [c[1] * 255, c[2] * 255, c[3] * 255, c[4] === undefined ? 1 : +c[4]]
      throw new Error(`cannot read the colour ${s}`)
    }
    const mix = (a, b, t) => [0, 1, 2].map((i) => a[i] * t + b[i] * (1 - t))
    const lum = (c) => {
      const [r, g, b] = c.map((v) => { const x = v / 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4 })
      return 0.2126 * r + 0.7152 * g + 0.0722 * b
    }
    const behind = (el) => {
      const layers = []
      for (let e = el; e; e = e.parentElement) {
        const bg = rgba(getComputedStyle(e).backgroundColor)
        if (bg[3] > 0) layers.push(bg)
        if (bg[3] === 1) break
      }
      return layers.reduceRight((acc, bg) => mix(bg, acc, bg[3]), [255, 255, 255])
    }
    const out = []
    for (const el of sels.flatMap((s) => [...document.querySelectorAll(s)])) {
      const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())
      if (!own || !(el instanceof Element) || el.closest('.sr-only')) continue
      let opacity = 1
      for (let e = /** @type {Element | null} */ (el); e; e = e.parentElement) opacity *= +getComputedStyle(e).opacity
      const bg = behind(el)
      const fg = mix(rgba(getComputedStyle(el).color), bg, opacity)
      const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x)
      const ratio = (a + 0.05) / (b + 0.05)
      if (ratio < 4.5) out.push(`${el.tagName.toLowerCase()}.${el.className} "${el.textContent.trim().slice(0, 40)}": ${ratio.toFixed(2)}`)
    }
    return out
  }, selectors)
}

for (const scheme of /** @type {const} */ (['light', 'dark'])) {
  test(`in ${scheme} mode every word of the new parts is readable`, async () => {
    const view = async (hash, selectors, ready) => {
      const { page: p, done } = await openRoute(chromium, server, seeded.apiKey, hash, { scheme })
      if (ready) await p.waitForSelector(ready)
      assert.equal(await p.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches), scheme === 'dark')
      assert.deepEqual(await unreadable(p, selectors), [], `${hash} in ${scheme} mode`)
      await done()
    }
    await view(`#/monitors/${auto.monitor.id}?window=24h`, ['#users-get *', '#runs td.reason', '#trends .legend *'], '#users-get .users-loc')
    await view('#/?window=24h', ['.badge.users'])
    await view(`#/results/${auto.returningH3}`, ['.reason-line *', '.waterfall .usage-cell *', '.waterfall .conn *'])
    await view('#/new', ['#modes-group *'])
  })
}
