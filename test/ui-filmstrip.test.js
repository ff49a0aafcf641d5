// Filmstrips in the dashboard, in real Chromium against the real API: six
// hours of demo rounds, those of one monitor at lab-eu with frames in both
// arms (dev/demo-filmstrips.js: JPEGs Chromium rendered, timed to each
// arm's load). What a user sees on the monitor page's "Side by side" (the
// round nearest the p95 Δ, two filmstrips on one axis, the scrubber, the
// progress curves, why that round) and in the run detail, light and dark,
// and what both say without frames.
// run-tests: side — its browser looks at the dashboard over seeded results, and times no page load
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestDatabase } from './helpers/db.js'
import { seedDemo } from '../dev/demo-data.js'
import { seedFilmstrips } from '../dev/demo-filmstrips.js'
import { startDashboard } from '../dev/dashboard.js'
import { launchBrowser } from '../dev/browser.js'
import { openRoute } from './helpers/ui.js'

/* global document, getComputedStyle, HTMLImageElement, location -- used inside functions that run in the page */

let database, seeded, server, chromium, monitor

before(async () => {
  database = await createTestDatabase()
  seeded = await seedDemo(database.pool, { hours: 6, stepMinutes: 5 })
  chromium = await launchBrowser()
  monitor = seeded.monitors[1]
  const { rounds } = await seedFilmstrips(database.pool, chromium.browser, { monitorId: monitor.id, locationId: 'lab-eu' })
  assert.ok(rounds > 30, `${rounds} rounds with frames`)
  server = await startDashboard(database.pool)
})

after(async () => {
  await chromium?.close()
  await server?.close()
  await database?.drop()
})

const apiGet = async (/** @type {string} */ path) => (await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${seeded.apiKey}` } })).json()

/** Every frame image in `selector` has loaded. */
const framesLoaded = (page, selector) => page.waitForFunction((sel) => {
  const imgs = [...document.querySelectorAll(sel)]
  return imgs.length > 0 && imgs.every((i) => i instanceof HTMLImageElement && i.complete && i.naturalWidth > 0)
}, { timeout: 15000 }, selector)

for (const scheme of /** @type {const} */ (['light', 'dark'])) {
  test(`side by side (${scheme}): the round nearest the p95 Δ at a location, both arms on one axis, scrubber and progress curves; a location without frames says so`, async () => {
    const from = new Date(Date.now() - 86400e3).toISOString()
    const want = await apiGet(`/api/v1/monitors/${monitor.id}/side-by-side?location=lab-eu&percentile=95&metric=load_ms&from=${encodeURIComponent(from)}`)
    assert.ok(want.round.arms.h2.filmstrip && want.round.arms.h3.filmstrip, 'the API picked a round with frames')
    const { page, done } = await openRoute(chromium, server, seeded.apiKey, `#/monitors/${monitor.id}?window=24h&metric=load_ms&location=lab-eu`, { scheme })
    await page.waitForSelector('#side-by-side .sbs')
    assert.equal(await page.$eval('#side-by-side-title', (e) => e.textContent), 'Side by side')
    // The round the API picks, and the sentence saying why.
    assert.equal(Number(await page.$eval('#side-by-side .sbs', (e) => e.getAttribute('data-job'))), want.round.job_id)
    const why = await page.$eval('#side-by-side .sbs-why', (e) => e.textContent)
    assert.match(why, /At p95 of Load, H2 is \d+ ms and H3 \d+ ms .* over \d+ rounds\. This round's H2 − H3 is -?\d+ ms .*the nearest to that Δ/)
    assert.equal(await page.$eval('#sbs-location', (e) => /** @type {HTMLInputElement} */ (e).value), 'lab-eu')

    // Two strips on one axis: the same 100 ms steps in both rows, frames loaded.
    const steps = await page.$$eval('#side-by-side .sbs-row', (rows) => rows.map((r) => [r.getAttribute('data-arm'), [...r.querySelectorAll('.sbs-cell')].map((c) => c.getAttribute('data-t'))]))
    assert.deepEqual(steps.map(([arm]) => arm), ['h2', 'h3'])
    assert.deepEqual(steps[0][1], steps[1][1])
    assert.ok(steps[0][1].length >= 5)
    assert.ok(steps[0][1].every((t, i) => Number(t) === i * 100))
    await framesLoaded(page, '#side-by-side .sbs-row img')
    // Each arm's strip marks where its picture changed: the four steps at least.
    for (const arm of ['h2', 'h3']) assert.ok(await page.$$eval(`#side-by-side .sbs-row[data-arm="${arm}"] .sbs-cell.changed`, (c) => c.length) >= 4, `${arm} changes`)

    // The scrubber moves both large frames and the line on the curves.
    const lastT = Number(steps[0][1].at(-1))
    await page.$eval('#sbs-scrubber', (e, t) => { const i = /** @type {HTMLInputElement} */ (e); i.value = String(t); i.dispatchEvent(new Event('input')) }, lastT)
    assert.match(await page.$eval('#side-by-side .sbs-t', (e) => e.textContent), /after the navigation's start/)
    await framesLoaded(page, '#side-by-side .sbs-big img')
    assert.equal(await page.$$eval('#side-by-side .sbs-big img', (i) => i.length), 2)
    assert.equal(await page.$$eval(`#side-by-side .sbs-cell.now[data-t="${lastT}"]`, (c) => c.length), 2)
    const curves = await page.$$eval('#side-by-side .sbs-curves path.curve', (ps) => ps.map((p) => ({ arm: p.getAttribute('data-arm'), stroke: getComputedStyle(p).stroke, d: p.getAttribute('d') })))
    assert.deepEqual(curves.map((c) => c.arm), ['h2', 'h3'])
    const vars = await page.evaluate(() => ['--h2', '--h3'].map((v) => getComputedStyle(document.documentElement).getPropertyValue(v).trim()))
    const rgb = (/** @type {string} */ hex) => `rgb(${[1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(', ')})`
    assert.deepEqual(curves.map((c) => c.stroke), vars.map(rgb), 'each arm in its own colour of this scheme')

    // Readable in this scheme: the text is the scheme's, on the scheme's surface.
    const colours = await page.$eval('#side-by-side', (e) => ({ fg: getComputedStyle(e.querySelector('.sbs-why')).color, bg: getComputedStyle(e).backgroundColor }))
    const light = (/** @type {string} */ c) => (c.match(/\d+/g) ?? []).slice(0, 3).reduce((s, v) => s + Number(v), 0) > 382
    assert.equal(light(colours.fg), scheme === 'dark', `text ${colours.fg}`)
    assert.equal(light(colours.bg), scheme === 'light', `surface ${colours.bg}`)

    // A location without frames: the round is still named, and each arm says why it has none.
    await page.select('#sbs-location', 'lab-na')
    await page.waitForFunction(() => document.querySelectorAll('#side-by-side .sbs-none').length === 2)
    const none = await page.$$eval('#side-by-side .sbs-none', (e) => e.map((x) => x.textContent))
    for (const text of none) assert.match(text, /no filmstrip for result \d+: capture was off/)
    assert.match(await page.$eval('#side-by-side .sbs-why', (e) => e.textContent), /no round in the window has frames in both arms/)
    await done()
  })
}

test('run detail: the filmstrip on the run\'s time axis, a click shows a frame larger; a run without frames says capture was off', async () => {
  const { items } = await apiGet(`/api/v1/monitors/${monitor.id}/results?location=lab-eu&limit=10`)
  const filmed = items.find((r) => r.mode === 'h3' && r.status === 'ok')
  const film = await apiGet(`/api/v1/results/${filmed.id}/filmstrip`)
  for (const scheme of /** @type {const} */ (['light', 'dark'])) {
    const { page, done } = await openRoute(chromium, server, seeded.apiKey, `#/results/${filmed.id}`, { scheme })
    await page.waitForSelector('#filmstrip-title')
    const shown = await page.$$eval('.filmstrip .frame-t', (e) => e.map((x) => x.textContent))
    assert.equal(shown.length, film.frames.length)
    // In time order, placed along the axis.
    const lefts = await page.$$eval('.filmstrip .film-frame', (e) => e.map((x) => parseFloat(/** @type {HTMLElement} */ (x).style.left)))
    assert.ok(lefts.every((l, i) => i === 0 || l > lefts[i - 1]), `positions ${lefts}`)
    // Every frame inside its card: the last one ends where the axis ends, and the page does not scroll sideways.
    const fits = await page.$eval('.filmstrip', (strip) => {
      const box = strip.getBoundingClientRect()
      return [...strip.querySelectorAll('.frame-button')].every((b) => { const r = b.getBoundingClientRect(); return r.left >= box.left - 1 && r.right <= box.right + 1 }) &&
        document.documentElement.scrollWidth <= document.documentElement.clientWidth
    })
    assert.ok(fits, 'every frame inside the strip, no sideways scroll')
    assert.equal(await page.$eval('.frame-large', (e) => e.hidden), true)
    await page.click('.filmstrip .film-frame:last-child .frame-button')
    await framesLoaded(page, '.frame-large img')
    assert.match(await page.$eval('.frame-large figcaption', (e) => e.textContent), /after the navigation's start/)
    assert.ok(await page.$eval('.frame-large img', (i) => /** @type {HTMLImageElement} */ (i).getBoundingClientRect().width) > 300, 'larger than the strip')
    await done()
  }
  const { items: plain } = await apiGet(`/api/v1/monitors/${monitor.id}/results?location=lab-na&limit=1`)
  const { page, done } = await openRoute(chromium, server, seeded.apiKey, `#/results/${plain[0].id}`, { scheme: 'dark' })
  await page.waitForSelector('#filmstrip-title')
  assert.equal(await page.$eval('.film-none .state-title', (e) => e.textContent), 'No filmstrip for this run')
  assert.match(await page.$eval('.film-none', (e) => e.textContent), /capture was off/)
  await done()
})

test('the monitor form sets options.filmstrip, keeping the monitor\'s other options', async () => {
  const other = seeded.monitors[2]
  await database.pool.query(`UPDATE monitors SET options = '{"netlog": "off"}' WHERE id = $1`, [other.id])
  const { page, done } = await openRoute(chromium, server, seeded.apiKey, `#/monitors/${other.id}/edit`)
  await page.waitForSelector('#options')
  assert.equal(await page.$eval('#options', (e) => /** @type {HTMLSelectElement} */ (e).value), 'outliers', 'the default, shown')
  await page.select('#options', 'always')
  await page.click('form.card-form button[type="submit"]')
  await page.waitForFunction((id) => location.hash.startsWith(`#/monitors/${id}`) && !location.hash.includes('edit'), {}, other.id)
  const saved = await apiGet(`/api/v1/monitors/${other.id}`)
  assert.deepEqual(saved.options, { netlog: 'off', filmstrip: 'always' })
  await done()
})
