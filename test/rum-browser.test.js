// Real users, end to end in a real browser: a lab page (Caddy, HTTPS with H2
// and H3 on one port) with the snippet installed by its one tag, loaded by a
// browser forced onto H2 and onto H3 as the agents force it; the page is
// left, its beacon goes to the API on loopback, and what is stored must say
// the protocol the browser used, the connection's phases and the web
// vitals, exactly as the page's own Navigation Timing gave them. A second
// visit in the same browser must read as a reused connection and a cached
// visit. (Whether the first visit's connection reads as new depends on a
// race: Chromium preconnects to the origin as a navigation starts, and on
// loopback that preconnect often completes before the request, so the
// navigation's timing shows no set-up at all; the beacon then says
// "reused", as it would for a real visitor, docs/RUM.md.)
//
// h3lens is reached over HTTPS, as a site's pages must reach it: the API
// sits behind a TLS terminator with the lab's certificate and is told its
// public address, so the install tag names https://lab2.h3lens.test:<port>
// (the lab's second name: Firefox's forced HTTP/3 maps a host name on every
// port, and the API is no HTTP/3 origin).
// (Firefox sends "Origin: null" on a POST from an HTTPS page to plain HTTP,
// even on loopback, and such a beacon is rightly refused.)
//
// Browsers: each entry of BROWSERS runs every case. Firefox is listed with
// the preferences that force its protocol and reach the lab, and is skipped
// while no Firefox is installed (H3LENS_FIREFOX names its binary).
import { test, before, after, describe } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import net from 'node:net'
import path from 'node:path'
import tls from 'node:tls'
import puppeteer from 'puppeteer-core'
import { startOrigin, LAB_HOSTNAME } from '../lab/origin.js'
import { LAB_ALT_HOSTNAME } from '../lib/runtime/lab-host.js'
import { rumPage } from '../lab/site/rum-page.js'
import { baseFlags, labBrowserFlags, modeFlags } from '../lib/measurement/browsers/chromium.js'
import { basePrefs, labPrefs, modePrefs } from '../lib/measurement/browsers/firefox.js'
import { createSite } from '../lib/store/rum-sites.js'
import { createTestDatabase } from './helpers/db.js'
import { startDashboard } from '../dev/dashboard.js'
import { eventually } from './helpers/process.js'
import { freePort } from '../dev/free-port.js'

/* global document, requestAnimationFrame -- used inside functions that run in the page */

const FIREFOX = process.env.H3LENS_FIREFOX ?? '/usr/bin/firefox'
const BROWSERS = [
  {
    name: 'chromium',
    family: 'chrome',
    layoutShifts: true,
    available: fs.existsSync(process.env.H3LENS_CHROMIUM ?? '/usr/bin/chromium'),
    /** @param {'h2' | 'h3'} mode @param {string} url @param {{ spki: string }} origin @param {string} profile */
    launch: (mode, url, origin, profile) => puppeteer.launch({
      executablePath: process.env.H3LENS_CHROMIUM ?? '/usr/bin/chromium',
      args: [...baseFlags(), ...modeFlags(mode, url), ...labBrowserFlags({ spki: origin.spki, hostname: LAB_HOSTNAME, address: '127.0.0.1', exclude: ['127.0.0.1'] }), `--user-data-dir=${profile}`]
    })
  },
  {
    name: 'firefox',
    family: 'firefox',
    // Firefox has no Layout Instability API: its views carry no CLS.
    layoutShifts: false,
    available: fs.existsSync(FIREFOX),
    /** @param {'h2' | 'h3'} mode @param {string} url @param {unknown} _origin @param {string} profile */
    launch: (mode, url, _origin, profile) => puppeteer.launch({
      browser: 'firefox',
      executablePath: FIREFOX,
      acceptInsecureCerts: true,
      userDataDir: profile,
      // The product's preferences (lib/measurement/browsers/firefox.js):
      // its base, the arm's (H3 from the first request by the alt-svc
      // mapping, as Chromium's force list does), and the lab's (every name
      // to the loopback, HTTP/3 kept with the lab's own root). The lab's
      // certificate is a chain to the lab's authority, which the product
      // trusts in the profile with certutil; here the driver accepts it.
      extraPrefsFirefox: { ...basePrefs(), ...modePrefs(mode, url), ...labPrefs({ address: '127.0.0.1' }) }
    })
  }
]

describe('beacons from a real browser', () => {
  let dataDir, origin, database, server, terminator, site, pageUrl

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-rum-browser-'))
    origin = await startOrigin({ dataDir, port: await freePort() })
    database = await createTestDatabase()
    const httpsPort = await freePort()
    server = await startDashboard(database.pool, { H3LENS_PUBLIC_URL: `https://${LAB_ALT_HOSTNAME}:${httpsPort}` })
    terminator = await terminateTls(httpsPort, origin, new URL(server.url).port)
    site = await createSite(database.pool, { name: 'lab', origins: [origin.baseUrl] })
    const res = await fetch(`${server.url}/api/v1/rum/sites/${site.id}`, { headers: { authorization: `Bearer ${await writeKey(database.pool)}` } })
    const { install } = await res.json()
    assert.match(install.tag, new RegExp(`^<script async src="https://${LAB_ALT_HOSTNAME.replaceAll('.', '\\.')}:${httpsPort}/rum/v1/h3lens\\.js\\?v=[0-9a-f]{12}" integrity="sha384-`))
    fs.writeFileSync(path.join(dataDir, 'lab', 'site', 'rum.html'), rumPage({ tag: install.tag }))
    pageUrl = `${origin.baseUrl}/rum.html`
  })

  after(async () => {
    terminator?.close()
    await server?.close()
    await database?.drop()
    await origin?.stop()
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
  })

  /** The stored beacons of the site, newest last. */
  const beacons = async () => (await database.pool.query('SELECT * FROM rum_beacons WHERE site_id = $1 ORDER BY received_at', [site.id])).rows

  for (const browser of BROWSERS) {
    for (const mode of /** @type {const} */ (['h2', 'h3'])) {
      test(`${browser.name}, ${mode.toUpperCase()} forced: the beacon says ${mode}, the phases and the web vitals; a second visit reads as reused and cached`,
        { skip: browser.available ? false : `${browser.name} is not installed` }, async () => {
          const profile = fs.mkdtempSync(path.join(os.tmpdir(), `h3lens-rum-${browser.name}-`))
          const b = await browser.launch(mode, pageUrl, origin, profile)
          try {
            const page = await b.newPage()
            const errors = []
            page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()) })
            const had = (await beacons()).length
            /** @type {{ first: Record<string, any>, second: Record<string, any> | null }} */
            const seen = { first: await visit(page, pageUrl), second: null }
            const first = await eventually(async () => (await beacons())[had], { timeoutMs: 20000, what: 'the first visit\'s beacon' })
            assert.equal(first.protocol, mode, 'the protocol the browser used')
            assert.deepEqual([first.nav, first.visit, first.browser, first.country], ['navigate', 'first', browser.family, null])
            samePhases(first, seen.first)
            assert.equal(first.connection, first.connect_ms > 0 || first.dns_ms > 0 ? 'new' : 'reused')
            if (first.connection === 'new') assert.ok(first.tls_ms > 0 && first.tls_ms <= first.connect_ms, `a new connection's TLS: ${first.tls_ms} of ${first.connect_ms} ms`)
            assert.ok(first.ttfb_ms >= first.dns_ms + first.connect_ms + first.waiting_ms - 1, 'TTFB covers its phases')
            assert.ok(first.fcp_ms >= first.ttfb_ms && first.lcp_ms >= first.fcp_ms, `TTFB ${first.ttfb_ms}, FCP ${first.fcp_ms}, LCP ${first.lcp_ms} ms`)
            assert.equal(first.lcp_element, 'img')
            assert.ok(first.lcp_resource_ms > 0, 'the LCP image\'s load time')
            assert.ok(first.inp_ms >= 80 && first.inp_target === 'button', `INP ${first.inp_ms} ms on ${first.inp_target}`)
            assert.ok(first.inp_processing_ms >= 75, `INP processing ${first.inp_processing_ms} ms`)
            if (browser.layoutShifts) assert.ok(first.cls > 0.05 && /^[a-z]+$/.test(first.cls_target), `CLS ${first.cls} (the banner pushed ${first.cls_target} down)`)
            else assert.deepEqual([first.cls, first.cls_target], [null, null], 'no CLS where the browser measures none, not a zero')
            assert.ok(first.resources >= 2, `${first.resources} same-origin resources`)

            seen.second = await visit(page, pageUrl)
            const second = await eventually(async () => (await beacons())[had + 1], { timeoutMs: 20000, what: 'the second visit\'s beacon' })
            assert.equal(second.protocol, mode)
            samePhases(second, /** @type {Record<string, any>} */ (seen.second))
            assert.equal(second.connection, 'reused', `no DNS and no connect: ${second.dns_ms} ms, ${second.connect_ms} ms`)
            assert.equal(second.visit, 'cached', `${second.cached_resources} of ${second.resources} resources from the cache`)
            assert.notEqual(second.view_id, first.view_id)
            assert.deepEqual(errors, [], 'no console errors (the snippet loads with its integrity, the beacon is sent)')
          } finally {
            await b.close()
            fs.rmSync(profile, { recursive: true, force: true })
          }
        })
    }
  }
})

/**
 * Load the page, wait for its LCP and its banner's shift, click the button (an 80 ms interaction),
 * then leave: the page is hidden and sends its beacon.
 * @param {import('puppeteer-core').Page} page
 * @param {string} url
 * @returns {Promise<Record<string, any>>} the page's own navigation entry
 */
async function visit (page, url) {
  await page.goto(url, { waitUntil: 'load' })
  // The banner first: a shift within 500 ms after an input is not counted.
  await page.waitForFunction(() => document.getElementById('banner')?.style.height === '120px')
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))))
  // The click is over for the user once the browser has reported it: its
  // Event Timing entry reaches the page's observers (the snippet's among
  // them) after the frame that shows it, which a loaded machine can delay
  // past two animation frames. A page left before then has no INP to send.
  await page.evaluate(() => {
    /** @type {any} */ (globalThis).clickReported = new Promise((resolve) => {
      new PerformanceObserver((list, observer) => {
        if (list.getEntries().some((e) => /** @type {any} */ (e).interactionId > 0)) { observer.disconnect(); resolve(true) }
      }).observe(/** @type {any} */ ({ type: 'event', durationThreshold: 16 }))
    })
  })
  await page.click('#work')
  await page.waitForFunction(() => document.getElementById('work')?.textContent === 'Done')
  await page.evaluate(() => /** @type {any} */ (globalThis).clickReported)
  const entry = await page.evaluate(() => performance.getEntriesByType('navigation')[0].toJSON())
  await page.goto('about:blank')
  return entry
}

/**
 * The beacon's phases are the page's Navigation Timing, rounded to 0.1 ms.
 * @param {Record<string, any>} row
 * @param {Record<string, any>} n
 */
function samePhases (row, n) {
  const close = (/** @type {number} */ a, /** @type {number} */ b, /** @type {string} */ what) => assert.ok(Math.abs(a - b) <= 0.06, `${what}: beacon ${a}, page ${b}`)
  close(row.dns_ms, n.domainLookupEnd - n.domainLookupStart, 'dns_ms')
  close(row.connect_ms, n.connectEnd - n.connectStart, 'connect_ms')
  close(row.tls_ms, n.secureConnectionStart > 0 ? n.connectEnd - n.secureConnectionStart : 0, 'tls_ms')
  close(row.waiting_ms, n.responseStart - n.requestStart, 'waiting_ms')
  close(row.ttfb_ms, n.responseStart, 'ttfb_ms')
  assert.equal(row.transfer_bytes, n.transferSize)
  assert.equal(row.protocol === 'h3' ? 'h3' : n.nextHopProtocol, n.nextHopProtocol)
}

/**
 * HTTPS on `port` with the lab's certificate, each connection passed on to the API's plain port.
 * @param {number} port
 * @param {{ certPath: string, keyPath: string }} origin
 * @param {string} apiPort
 */
async function terminateTls (port, origin, apiPort) {
  const server = tls.createServer({ cert: fs.readFileSync(origin.certPath), key: fs.readFileSync(origin.keyPath), ALPNProtocols: ['http/1.1'] }, (socket) => {
    const upstream = net.connect(Number(apiPort), '127.0.0.1')
    socket.pipe(upstream).pipe(socket)
    const end = () => { socket.destroy(); upstream.destroy() }
    socket.on('error', end)
    upstream.on('error', end)
  })
  await new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(undefined)))
  return server
}

/** @param {import('pg').Pool} db */
async function writeKey (db) {
  const { createApiKey } = await import('../lib/store/api-keys.js')
  return (await createApiKey(db, { name: 'rum-browser', role: 'write' })).secret
}
