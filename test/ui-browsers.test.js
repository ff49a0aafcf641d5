// The browser dimension on the dashboard, in real Chromium against the real
// API: a monitor that runs in Chromium and Firefox, whose H3 is 40 ms
// faster in Chromium and as fast as H2 in Firefox at one location. What a
// user reads: the browser switch, the cross-browser table that tells the
// server from the browser, the comparison following the switch, and the
// browser a run was made in.
// run-tests: side — its browser looks at the dashboard over seeded results, and times no page load
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestDatabase } from './helpers/db.js'
import { startDashboard } from '../dev/dashboard.js'
import { goHash, launchBrowser, whenRedrawn } from '../dev/browser.js'
import { openRoute } from './helpers/ui.js'
import { createApiKey } from '../lib/store/api-keys.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createMonitor } from '../lib/store/monitors.js'
import { insertResults } from '../lib/store/results.js'
import { rebuildRollups } from '../lib/analysis/rollups.js'

/* global document, location -- used inside functions that run in the page */

let database, server, chromium, apiKey, monitor, firefoxResult
const ROUNDS = 30

before(async () => {
  database = await createTestDatabase()
  const db = database.pool
  await upsertLocation(db, { id: 'lab-eu', name: 'Europe (lab)', region: 'Europe', kind: 'lab', profile: { rtt_ms: 30 } })
  monitor = await createMonitor(db, { url: 'https://lab.h3lens.test:8443/page-15k.html', locations: ['lab-eu'], modes: ['h2', 'h3'], browsers: ['chromium', 'firefox'], interval_s: 60, paused: true })
  // One minute read once: a clock reading per round could cross a minute
  // between two rounds and give both the same due time.
  const minute = Math.floor(Date.now() / 60e3) * 60e3
  for (const browser of ['chromium', 'firefox']) {
    for (let i = 1; i <= ROUNDS; i++) {
      const { rows: [job] } = await db.query(`INSERT INTO jobs (monitor_id, location_id, browser, due_at, state)
        VALUES ($1, 'lab-eu', $2, $3, 'done') RETURNING id, monitor_id, location_id, browser, due_at`, [monitor.id, browser, new Date(minute - i * 60e3)])
      const h3 = browser === 'chromium' ? 160 : 200
      const noise = (i % 7) - 3
      const version = browser === 'chromium' ? 'Chrome/156.0.8078.79' : 'firefox/153.0'
      const flags = browser === 'chromium' ? ['--headless=new'] : ['network.http.http3.enable=true']
      const inserted = await insertResults(db, {
        job,
        agentId: null,
        agentVersion: '0.1.0',
        results: [
          { mode: 'h2', status: 'ok', protocol_ok: true, observed_protocol: 'h2', ttfb_ms: 200 + noise, load_ms: 400 + noise, browser_version: version, flags },
          { mode: 'h3', status: 'ok', protocol_ok: true, observed_protocol: 'h3', ttfb_ms: h3 + noise, load_ms: 2 * h3 + noise, browser_version: version, flags }
        ]
      })
      if (browser === 'firefox' && i === 1) firefoxResult = inserted.find((r) => r.mode === 'h3')
    }
  }
  await rebuildRollups(db)
  // Its agents have both browsers (an agent says so when it claims).
  await db.query("UPDATE locations SET browsers = '{chromium,firefox}' WHERE id = 'lab-eu'")
  await upsertLocation(db, { id: 'lab-na', name: 'North America (lab)', region: 'North America', kind: 'lab', profile: { rtt_ms: 60 } })
  apiKey = (await createApiKey(db, { name: 'dashboard', role: 'write' })).secret
  server = await startDashboard(db)
  chromium = await launchBrowser()
})

after(async () => {
  await chromium?.close()
  await server?.close()
  await database?.drop()
})

/** @param {string} hash */
const open = (hash) => openRoute(chromium, server, apiKey, hash)

/** The comparison's headline, as read on the page. */
const headline = (page) => page.$eval('#comparison p.headline', (el) => el.textContent)

test('a monitor in two browsers has a browser switch and the cross-browser table; the comparison follows the switch', async () => {
  const { page, done } = await open(`#/monitors/${monitor.id}?window=24h&metric=ttfb_ms`)
  await page.waitForSelector('#browser-group')
  const options = await page.$$eval('#browser-group input', (els) => els.map((e) => [e.value, e.checked, document.querySelector(`label[for="${e.id}"]`)?.textContent]))
  assert.deepEqual(options, [['chromium', true, 'Chromium'], ['firefox', false, 'Firefox']])
  assert.match(await page.$eval('.page-head .sub', (e) => e.textContent), /Chromium and Firefox/)

  // The cross-browser table: Chromium's gain, Firefox's none, and what that says.
  await page.waitForSelector('#browsers table.cross-browser')
  const row = await page.$eval('#browsers tr[data-location="lab-eu"]', (tr) => ({
    cells: [...tr.children].map((c) => c.textContent),
    classes: [...tr.children].map((c) => c.className),
    reading: tr.querySelector('[data-reading]').dataset.reading
  }))
  assert.equal(row.cells[0], 'Europe (lab)')
  assert.match(row.cells[1], /^[−-]40(\.0)? ms \[/)
  assert.match(row.classes[1], /faster/)
  assert.match(row.cells[2], /^0(\.0)? ms \[/)
  assert.doesNotMatch(row.classes[2], /faster|slower/)
  assert.equal(row.reading, 'browser')
  assert.match(row.cells[3], /one browser's HTTP\/3 stack/)
  const heads = await page.$$eval('#browsers thead th', (ths) => ths.map((t) => t.textContent))
  assert.deepEqual(heads, ['Location', 'Chromium Δ p50', 'Firefox Δ p50', 'Reading'])

  // Chromium's comparison says H3 is faster; after the switch, Firefox's does not.
  assert.match(await headline(page), /HTTP\/3 is 20(\.0)?% faster at p50/)
  await page.click('label[for="browser-firefox"]')
  await page.waitForFunction(() => location.hash.includes('browser=firefox'))
  await page.waitForFunction(() => /** @type {HTMLInputElement | null} */ (document.querySelector('#browser-firefox'))?.checked === true)
  await page.waitForFunction(() => /not clearly different at p50/.test(document.querySelector('#comparison p.headline')?.textContent ?? ''), { timeout: 15000 })
  assert.doesNotMatch(await headline(page), /faster/)
  // Firefox has no filmstrips: its metric menu leaves the visual metrics out.
  const metrics = await page.$$eval('#metric-group input', (els) => els.map((e) => e.value))
  assert.ok(metrics.includes('ttfb_ms') && !metrics.includes('speed_index_ms') && !metrics.includes('first_visual_change_ms'), metrics.join(' '))
  await done()
  // One named in the address anyway is said to be one Firefox does not give, not "not enough data".
  const visual = await open(`#/monitors/${monitor.id}?window=24h&metric=speed_index_ms&browser=firefox`)
  await visual.page.waitForSelector('#comparison p.headline')
  assert.match(await headline(visual.page), /^Firefox does not give Speed Index: its rounds have no value of it to compare/)
  await visual.done()
})

test('a browser the monitor no longer runs is read when the address names it: its comparison and the cross-browser table', async () => {
  await database.pool.query("UPDATE monitors SET browsers = '{chromium}', paused = true WHERE id = $1", [monitor.id])
  try {
    const { page, done } = await openRoute(chromium, server, apiKey, `#/monitors/${monitor.id}?window=24h&metric=ttfb_ms&browser=firefox`, { allow: [/status of 404 \(Not Found\) .*\/api\/v1\/monitors\/999999$/] })
    await page.waitForSelector('#browser-group')
    const options = await page.$$eval('#browser-group input', (els) => els.map((e) => [e.value, e.checked]))
    assert.deepEqual(options, [['chromium', false], ['firefox', true]])
    assert.match(await page.$eval('.page-head .sub', (e) => e.textContent), /· Chromium \(showing Firefox's rounds, from when it ran there\) ·/)
    // The tab's title is the monitor's name, without its "paused" badge.
    assert.equal(await page.title(), `${monitor.url} · h3lens`)
    assert.equal(await page.$eval('h1 .badge', (e) => e.textContent), 'paused')
    await page.waitForFunction(() => /not clearly different at p50/.test(document.querySelector('#comparison p.headline')?.textContent ?? ''), { timeout: 15000 })
    await page.waitForSelector('#browsers table.cross-browser')
    assert.deepEqual(await page.$$eval('#browsers thead th', (ths) => ths.map((t) => t.textContent)), ['Location', 'Chromium Δ p50', 'Firefox Δ p50', 'Reading'])
    // Switched to Chromium, and opened without a browser in the address, the
    // switch still offers Firefox: the window has its rounds.
    await whenRedrawn(page, () => page.click('#browser-chromium'))
    assert.match(await page.evaluate(() => location.hash), /browser=chromium/)
    assert.deepEqual(await page.$$eval('#browser-group input', (els) => els.map((e) => [e.value, e.checked])), [['chromium', true], ['firefox', false]])
    assert.match(await page.$eval('.page-head .sub', (e) => e.textContent), /· Chromium ·/)
    // The page drawn for an address without a browser (the switch was on
    // Chromium before: only the page drawn anew tells the two apart).
    await goHash(page, `#/monitors/${monitor.id}?window=24h&metric=ttfb_ms`)
    assert.doesNotMatch(await page.evaluate(() => location.hash), /browser=/)
    assert.deepEqual(await page.$$eval('#browser-group input', (els) => els.map((e) => [e.value, e.checked])), [['chromium', true], ['firefox', false]])
    assert.match(await page.$eval('.page-head .sub', (e) => e.textContent), /· Chromium ·/)
    // A monitor that does not exist titles the tab so, not as the page before it
    // (the API's 404 is the one console line, the failed request's).
    await page.evaluate((id) => { location.hash = `#/monitors/${id}` }, 999999)
    await page.waitForSelector('.state.error')
    await page.waitForFunction((url) => !document.title.includes(url), {}, monitor.url)
    assert.doesNotMatch(await page.title(), /lab\.h3lens\.test/)
    await done()
  } finally {
    await database.pool.query("UPDATE monitors SET browsers = '{chromium,firefox}', paused = false WHERE id = $1", [monitor.id])
  }
})

test('GET /monitors/{id}/browsers-with-rounds names the browsers with rounds in the window, run or not; a bad window is a 400 naming its field', async () => {
  await database.pool.query("UPDATE monitors SET browsers = '{chromium}' WHERE id = $1", [monitor.id])
  try {
    const get = async (query) => {
      const res = await fetch(`${server.url}/api/v1/monitors/${monitor.id}/browsers-with-rounds${query}`, { headers: { authorization: `Bearer ${apiKey}` } })
      return { status: res.status, body: await res.json() }
    }
    const day = await get('')
    assert.equal(day.status, 200, JSON.stringify(day.body))
    assert.deepEqual(day.body.browsers, ['chromium', 'firefox'])
    assert.equal(day.body.probe, 'page')
    const before = await get(`?from=${new Date(Date.now() - 10 * 86400e3).toISOString()}&to=${new Date(Date.now() - 9 * 86400e3).toISOString()}`)
    assert.deepEqual(before.body.browsers, [], 'a window without rounds has no browser')
    const bad = await get('?from=2026-13-01T00:00:00Z')
    assert.equal(bad.status, 400)
    assert.match(JSON.stringify(bad.body), /from/)
  } finally {
    await database.pool.query("UPDATE monitors SET browsers = '{chromium,firefox}' WHERE id = $1", [monitor.id])
  }
})

test('a monitor that runs in Firefox only, or a journey only, says on the overview that its comparison is on its page, not "no rounds yet", and is not counted there', async () => {
  const stat = (page) => page.$eval('.stat.v-none .stat-n', (e) => Number(e.textContent))
  const before = await open('#/?window=24h')
  const insufficient = await stat(before.page)
  await before.done()
  const firefoxOnly = await createMonitor(database.pool, { url: 'https://lab.h3lens.test:8443/page-100k.html', label: 'Firefox only', locations: ['lab-eu'], modes: ['h2', 'h3'], browsers: ['firefox'], interval_s: 60, paused: true })
  const journeyOnly = await createMonitor(database.pool, { url: 'https://lab.h3lens.test:8443/page-15k.html', label: 'Journey only', locations: ['lab-eu'], modes: ['h2', 'h3'], journey: { steps: [{ action: 'navigate', url: '/page-15k.html' }] }, interval_s: 60, paused: true })
  const { page, done } = await open('#/?window=24h')
  const journeyRow = await page.$eval(`.heat tbody tr[data-elsewhere="probe"]`, (tr) => ({ text: tr.textContent, link: tr.querySelector('td a')?.getAttribute('href') }))
  assert.match(journeyRow.text, /Runs the journey probe only.*this overview compares page loads; the journey comparison is on the monitor's page/)
  assert.match(journeyRow.link ?? '', new RegExp(`^#/monitors/${journeyOnly.id}\\?.*probe=journey`))
  assert.equal(await stat(page), insufficient, 'neither is counted as "not enough data yet"')
  await page.waitForSelector('.heat tbody tr[data-browsers="firefox"]')
  const text = await page.$eval('.heat tbody tr[data-browsers="firefox"]', (tr) => tr.textContent)
  assert.match(text, /Runs in Firefox only.*this overview shows Chromium's rounds; Firefox's comparison is on the monitor's page/)
  assert.doesNotMatch(text, /no rounds yet/)
  assert.match(await page.$eval('.heat tbody tr[data-browsers="firefox"] td a', (a) => a.getAttribute('href')), new RegExp(`^#/monitors/${firefoxOnly.id}\\?.*browser=firefox`))
  await done()
})

test('a run\'s detail names the browser it ran in', async () => {
  const { page, done } = await open(`#/results/${firefoxResult.id}`)
  await page.waitForSelector('#browser-title')
  const facts = Object.fromEntries(await page.$$eval('.fact', (els) => els.map((e) => [e.querySelector('dt')?.textContent, e.querySelector('dd')?.textContent])))
  assert.equal(facts.Browser, 'Firefox (firefox/153.0)')
  assert.equal(facts.Preferences, 'network.http.http3.enable=true')
  // No frames, and why: not "capture was off".
  assert.match(await page.$eval('#view', (e) => e.textContent), /frames come from Chromium's screencast; Firefox runs have no filmstrip and no visual metrics/)
  const api = await fetch(`${server.url}/api/v1/results/${firefoxResult.id}/filmstrip`, { headers: { authorization: `Bearer ${apiKey}` } })
  assert.equal(api.status, 404)
  assert.match((await api.json()).message, /frames come from Chromium's screencast, and this run is firefox's/)
  await done()
})

test('a heavy page\'s run says which of its requests it keeps, and of which URLs only the start', async () => {
  // As the agent stores a page of 1,203 requests: the first 1,000 kept (lib/measurement/result.js).
  /** @type {Record<string, unknown>[]} */
  const requests = Array.from({ length: 1000 }, (_, i) => ({ url: `https://example.net/i/${i}.png`, protocol: 'h3', status: 200, bytes: 100, start_ms: i, end_ms: i + 5, type: 'Image' }))
  // A URL of 20,000 characters, of which the agent keeps the first 4,000.
  requests[1] = { ...requests[1], url: `https://example.net/track?q=${'q'.repeat(4000 - 28)}`, url_length: 20_000 }
  const { rows: [r] } = await database.pool.query(
    "UPDATE results SET requests = 1203, details = details || jsonb_build_object('requests', $2::jsonb, 'requests_not_kept', 203) WHERE id = (SELECT id FROM results WHERE browser = 'chromium' AND id <> $1 ORDER BY id LIMIT 1) RETURNING id",
    [firefoxResult.id, JSON.stringify(requests)])
  const { page, done } = await open(`#/results/${r.id}`)
  await page.waitForSelector('#requests-title')
  assert.equal(await page.$eval('#requests-title', (e) => e.textContent), 'Requests (1,000 of 1,203)')
  assert.equal(await page.$eval('.requests-not-kept', (e) => e.textContent),
    'The first 1,000 requests, in the order they started, are kept; 203 more are not. The request count, bytes and H3 shares above are of all 1,203.')
  assert.equal(await page.$$eval('.waterfall tbody tr', (rows) => rows.length), 1000)
  const cut = await page.$eval('.waterfall tbody tr:nth-child(2) .wf-url', (e) => ({ text: e.textContent ?? '', title: e.getAttribute('title') ?? '' }))
  assert.match(cut.text, /^\/track\?q=q+…$/, 'the URL kept, marked as its start')
  assert.match(cut.title, /q… \(the first 4,000 of its 20,000 characters\)$/)
  assert.doesNotMatch(await page.$eval('.waterfall tbody tr:nth-child(3) .wf-url', (e) => e.textContent ?? ''), /…/, 'a whole URL is not marked')
  await done()
})

test('a run whose requests carry times that are no numbers (an agent\'s own evidence) draws them as none, and the rest of its waterfall', async () => {
  const requests = [
    { url: 'https://example.net/', protocol: 'h2', status: 200, bytes: 100, start_ms: 0, end_ms: 120, type: 'Document' },
    { url: 'https://example.net/a.png', protocol: 'h2', status: 200, bytes: 100, start_ms: 'abc', end_ms: 1e300, type: 'Image' }
  ]
  const { rows: [r] } = await database.pool.query(
    "UPDATE results SET details = details || jsonb_build_object('requests', $2::jsonb) WHERE id = (SELECT id FROM results WHERE browser = 'chromium' AND id <> $1 ORDER BY id DESC LIMIT 1) RETURNING id",
    [firefoxResult.id, JSON.stringify(requests)])
  const { page, done } = await open(`#/results/${r.id}`)
  await page.waitForSelector('.waterfall tbody tr')
  const text = await page.$eval('.waterfall', (e) => e.textContent ?? '')
  assert.doesNotMatch(text, /NaN|Infinity|e\+\d/, text)
  const widths = await page.$$eval('.waterfall .wtrack > *', (bars) => bars.map((b) => /** @type {HTMLElement} */ (b).style.width))
  assert.ok(widths.every((w) => /^\d+(\.\d+)?%$/.test(w)), `bar widths: ${widths}`)
  await done()
})

test('the monitor form chooses the browsers: Chromium for a new monitor, the monitor\'s own when editing', async () => {
  const ticked = (page) => page.$$eval('#browsers-group input[type=checkbox]', (els) => els.map((e) => [e.value, /** @type {HTMLInputElement} */ (e).checked]))
  const fresh = await openRoute(chromium, server, apiKey, '#/new', { allow: [/status of 400 \(Bad Request\)/] })
  await fresh.page.waitForSelector('#browsers-group')
  assert.deepEqual(await ticked(fresh.page), [['chromium', true], ['firefox', false]])
  // A journey's mistake is said once, by its live check, and goes when the journey is mended.
  await fresh.page.type('#url', 'https://example.net/')
  await fresh.page.type('#journey', 'steps:\n- { action: click }')
  await fresh.page.waitForFunction(() => /selector: required for click/.test(document.querySelector('#journey-status')?.textContent ?? ''))
  await fresh.page.evaluate(() => /** @type {HTMLButtonElement} */ ([...document.querySelectorAll('button[type=submit]')].find((b) => b.textContent === 'Add monitor'))?.click())
  await fresh.page.waitForFunction(() => document.querySelector('#journey')?.getAttribute('aria-invalid') === 'true')
  const shown = () => fresh.page.$$eval('.journey-editor .field-error', (els) => els.filter((e) => !(/** @type {HTMLElement} */ (e).hidden) && e.textContent).map((e) => e.textContent))
  assert.equal((await shown()).length, 1, (await shown()).join(' | '))
  await fresh.page.$eval('#journey', (e) => { /** @type {HTMLTextAreaElement} */ (e).value = '' })
  await fresh.page.type('#journey', 'steps:\n- { action: navigate, url: / }')
  await fresh.page.waitForFunction(() => /^1 step/.test(document.querySelector('#journey-status')?.textContent ?? ''))
  assert.deepEqual(await shown(), [])
  await fresh.done()
  const edit = await open(`#/monitors/${monitor.id}/edit`)
  await edit.page.waitForSelector('#browsers-group')
  assert.deepEqual(await ticked(edit.page), [['chromium', true], ['firefox', true]])
  await edit.done()
  // Saved with a read-only key: the refusal under the form, focused, with the way to a write key; no page error.
  const readKey = (await createApiKey(database.pool, { name: 'viewer', role: 'read' })).secret
  const readOnly = await openRoute(chromium, server, readKey, `#/monitors/${monitor.id}/edit`, { allow: [/status of 403 \(Forbidden\)/] })
  await readOnly.page.waitForSelector('#browsers-group')
  await readOnly.page.evaluate(() => /** @type {HTMLButtonElement} */ ([...document.querySelectorAll('button[type=submit]')].find((b) => b.textContent === 'Save changes'))?.click())
  await readOnly.page.waitForFunction(() => [...document.querySelectorAll('button')].some((b) => b.textContent === 'Enter a write key' && !b.hidden))
  const focused = await readOnly.page.evaluate(() => ({ role: document.activeElement?.getAttribute('role'), text: document.activeElement?.textContent }))
  assert.equal(focused.role, 'alert', JSON.stringify(focused))
  assert.match(focused.text ?? '', /write/i)
  await readOnly.done()
})

test('the locations page says which browsers each location\'s agents have', async () => {
  const { page, done } = await open('#/locations')
  await page.waitForSelector('#loc-lab-eu')
  assert.equal(await page.$eval('#loc-lab-eu + p .browsers', (e) => e.textContent), ' · Chromium and Firefox')
  assert.equal(await page.$eval('#loc-lab-na + p .browsers', (e) => e.textContent), ' · Chromium')
  await done()
})
