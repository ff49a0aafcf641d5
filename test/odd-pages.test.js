// Pages a browser shows as no page (a download, a 204, a PDF), that ask for a
// login, that are cut short or never end,
// or that go on to another by themselves right after they load: in Chromium
// and in Firefox a run says what happened (and what to monitor instead),
// soon, and leaves nothing behind; a page a script replaces before its load
// event, that changes its address in place or that starts a download once
// loaded, loads as usual; a page that opens a JavaScript dialog loads as for
// a user who clicks it away, with a note, and one that prints itself as for
// a user who cancels the print dialog; a page whose scripts replace the
// timing API or wrap fetch is measured as it loaded; a JSON document loads
// as text; a page that stops its own load (window.stop()), or whose load
// waits for an image that asks for a login or never answers, says so; a
// slow page loads in every arm of a round; a page of 1,000
// requests with URLs of 40,000 characters is stored, each URL cut to its
// start, through the real agent and API. An HTTP/2 server with
// the lab certificate serves them at the lab hostname.
// run-tests: side — it checks what its runs' errors say and times no page load; its server and origin are on free loopback ports
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import http2 from 'node:http2'
import os from 'node:os'
import path from 'node:path'
import { after, before, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { createFirefoxPool } from '../agents/browsers/firefox.js'
import { createJobRunner } from '../agents/job-runner.js'
import { measurePage, measurePageViews } from '../agents/measure.js'
import { measureParallel } from '../agents/probes/parallel.js'
import { measureUpload } from '../agents/probes/upload.js'
import { labBrowserFlags } from '../lib/measurement/browsers/chromium.js'
import { checkJourney } from '../lib/measurement/journey/steps.js'
import { createLogger } from '../lib/runtime/log.js'
import { startOrigin } from '../lab/origin.js'
import { freePort } from '../dev/free-port.js'
import { LAB_ALT_HOSTNAME } from '../lib/runtime/lab-host.js'
import { MAX_KEPT_URL, RESULTS_BODY_LIMIT, ROUND_RESULTS_BYTES } from '../lib/measurement/result.js'
import { createAgent } from '../agents/agent.js'
import { createApiClient } from '../agents/api-client.js'
import { createSpool } from '../agents/spool.js'
import { startApi } from '../api/server.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createAgentToken } from '../lib/store/agents.js'
import { createMonitor } from '../lib/store/monitors.js'
import { createTestDatabase } from './helpers/db.js'
import { eventually } from './helpers/eventually.js'

const FIREFOX = process.env.H3LENS_FIREFOX ?? '/usr/bin/firefox-esr'
/** A one-page PDF, padded to 20 kB. */
const PDF = Buffer.from('%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n2 0 obj <</Type /Pages /Kids [3 0 R] /Count 1>> endobj\n' +
  '3 0 obj <</Type /Page /MediaBox [0 0 612 792] /Parent 2 0 R>> endobj\ntrailer <</Root 1 0 R>>\n%%EOF\n' + ' '.repeat(20_000))
/** A 1×1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64')
/** How long /long-urls' image URLs' queries are, in characters. */
const LONG_URL = 40_000
/** How late /slow answers. */
const SLOW_MS = 1500
const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })

let dataDir
let origin
let pool
let lab

before(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-odd-pages-'))
  // The lab origin makes the lab certificate; its pages are not used here.
  origin = await startOrigin({ dataDir, port: await freePort(), log })
  pool = createBrowserPool({ dataDir, log, executablePath: process.env.H3LENS_CHROMIUM ?? '/usr/bin/chromium' })
  lab = labBrowserFlags({ spki: origin.spki, hostname: origin.hostname, address: '127.0.0.1' })
})

after(async () => {
  await pool?.close()
  await origin?.stop()
  if (dataDir) await rm(dataDir, { recursive: true, force: true })
})

/**
 * An HTTP/2 server with the lab certificate, at the lab hostname, whose
 * URLs answer with no page or with a page that leaves by itself, and a
 * page (/next) that stays.
 */
async function startOddPages () {
  /** How often each URL was asked for. @type {Map<string, number>} */
  const asked = new Map()
  /** The probes' requests, with the header a page's fetch wrapper adds. @type {[string, string | string[] | null][]} */
  const traced = []
  const server = http2.createSecureServer({
    allowHTTP1: true,
    cert: await readFile(path.join(dataDir, 'lab', 'lab-cert.pem')),
    key: await readFile(path.join(dataDir, 'lab', 'lab-key.pem'))
  }, (req, res) => {
    asked.set(req.url ?? '', (asked.get(req.url ?? '') ?? 0) + 1)
    const html = (/** @type {string} */ body) => res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html>${body}`)
    if (req.url === '/download') return res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-disposition': 'attachment; filename="report.bin"' }).end(Buffer.alloc(4096))
    if (req.url === '/no-content') return res.writeHead(204).end()
    // A whole PDF, which the browser shows in its PDF viewer.
    if (req.url === '/report.pdf') return res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': String(PDF.length) }).end(PDF)
    // A page behind a login (HTTP Basic): the browser's login prompt held Firefox's load until its timeout.
    if (req.url === '/login') return res.writeHead(401, { 'www-authenticate': 'Basic realm="members", charset="UTF-8"', 'content-type': 'text/html' }).end('<!doctype html><p>please log in')
    if (req.url === '/members') return html('<a id="members" href="/login">members only</a>')
    // A page whose images ask for a login and never answer: Chromium holds its load for both.
    if (req.url === '/login-image') return html('<p>a page with a members\' badge<img src="/login"><img src="/stall.png">')
    if (req.url === '/stall.png') return
    // Pages whose script runs without end: as it parses, and after its load.
    if (req.url === '/spins') return html('<p>spinning<script>while (true) {}</script>')
    if (req.url === '/spins-later') return html('<p>spinning once loaded<script>onload = () => setTimeout(() => { while (true) {} })</script>')
    // A page with no caching headers: each load of it asks for it again.
    if (req.url === '/fragment-page') return html('<p>top</p><p id="part">a part of the page</p>')
    // A page that stops its own load while it parses: no load event follows.
    if (req.url === '/stops') return html('<p>stopping here<script>window.stop()</script><p>never parsed')
    // A redirect to a page that fails: the error names the page that answered so.
    if (req.url === '/to-error') return res.writeHead(302, { location: '/gone' }).end()
    // A redirect to an app's own scheme, which the browser hands to the system.
    if (req.url === '/to-app') return res.writeHead(302, { location: 'myapp://open?from=web' }).end()
    // A redirect to a data: URL, which no browser follows.
    if (req.url === '/to-data') return res.writeHead(302, { location: 'data:text/html,elsewhere' }).end()
    if (req.url === '/gone') return res.writeHead(500, { 'content-type': 'text/html' }).end('<!doctype html><p>broken')
    if (req.url === '/script-leaves') return html('<script>addEventListener("load", () => setTimeout(() => { location.href = "/next" }))</script><p>moving on')
    if (req.url === '/leaves-blank') return html('<script>addEventListener("load", () => setTimeout(() => { location.href = "about:blank" }))</script><p>gone')
    if (req.url === '/refresh-leaves') return html('<meta http-equiv="refresh" content="0;url=/next"><p>moving on')
    if (req.url === '/refresh-itself') return html('<meta http-equiv="refresh" content="0"><p>again')
    // Refreshes to addresses a browser does not go to from a page: the page stays.
    if (req.url === '/refresh-js') return html('<meta http-equiv="refresh" content="0;url=javascript:document.title=\'ran\'"><p>a refresh to a script')
    if (req.url === '/refresh-data') return html('<meta http-equiv="refresh" content="0;url=data:text/html,elsewhere"><p>a refresh to a data: URL')
    // A refresh due a little after the load, which the read of the metrics usually ends before.
    if (req.url === '/refresh-later') return html('<meta http-equiv="Refresh" content=" 2.5 ; URL = \'/next\'"><p>you will be taken on shortly')
    // A page that reloads itself every half a minute stays.
    if (req.url === '/refresh-slowly') return html('<meta http-equiv="refresh" content="30"><p>a board that reloads itself')
    // Cut short: 1,000 bytes of the 100,000 it declares, then the stream is reset.
    if (req.url === '/truncated') {
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': '100000' })
      res.write(`<!doctype html><p>${'x'.repeat(982)}`)
      setTimeout(() => res.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR), 250)
      return
    }
    // A script replaces the page before its load event, while its body still comes: the load is the next page's.
    if (req.url === '/replaced') {
      res.writeHead(200, { 'content-type': 'text/html' }).write(`<!doctype html><script>location.replace("/slow")</script>${' '.repeat(2000)}`)
      const rest = setTimeout(() => res.end('<p>the rest'), 4000)
      res.on('close', () => clearTimeout(rest))
      return
    }
    if (req.url === '/slow') return setTimeout(() => html('<p>a page that answers late'), SLOW_MS)
    // A document that streams without end: its load never finishes.
    if (req.url === '/streams') {
      res.writeHead(200, { 'content-type': 'text/html' }).write(`<!doctype html><p>live${' '.repeat(4000)}`)
      const more = setInterval(() => res.write(`<p>more${' '.repeat(1000)}</p>`), 200)
      res.on('close', () => clearInterval(more))
      return
    }
    // A page that starts a download once loaded stays: no leaving.
    // A redirect to plain HTTP on this TLS port: the hop that fails came over no protocol of the arm's.
    if (req.url === '/to-http') return res.writeHead(302, { location: `http://${origin.hostname}:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}/next` }).end()
    if (req.url === '/download-later') return html('<script>addEventListener("load", () => setTimeout(() => { location.href = "/download" }))</script><p>your download starts shortly')
    // A redirect whose end takes an earlier hop's address in place: no leaving.
    if (req.url === '/landing') return res.writeHead(302, { location: '/landing?from=ad' }).end()
    if (req.url === '/landing?from=ad') return html('<script>history.replaceState(null, "", "/landing")</script><p>a landing page')
    // A single-page app's address changes without a new document: no leaving.
    if (req.url === '/app') return html('<script>addEventListener("load", () => { history.replaceState(null, "", "/app/home"); location.hash = "top" })</script><p>an app')
    // Pages that open a JavaScript dialog while they load, or once loaded.
    if (req.url === '/alert') return html('<script>alert("Your browser is not supported")</script><p>after the alert')
    if (req.url === '/alert-onload') return html('<script>onload = () => alert("loaded")</script><p>an alert from onload')
    if (req.url === '/confirm') return html('<script>document.title = confirm("Are you 18?") ? "yes" : "no"; confirm("Sure?")</script><p>after two confirms')
    if (req.url === '/prompt') return html('<script>prompt("Your name?", "you")</script><p>after a prompt')
    // A page that registers a service worker that answers every request
    // with a fetch of its own; its image comes late, so the worker is
    // running before the page's load ends.
    if (req.url === '/sw-page') return html('<script>navigator.serviceWorker?.register("/sw.js")</script><p>an app that works offline<img src="/late.png">')
    // A receipt that prints itself once loaded.
    if (req.url === '/prints') return html('<script>onload = () => print()</script><p>your receipt')
    // An API's answer, monitored as a page: the browser shows it as text.
    if (req.url === '/data.json') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'ok', items: [1, 2, 3] }))
    if (req.url === '/sw.js') return res.writeHead(200, { 'content-type': 'text/javascript' }).end('addEventListener("install", () => skipWaiting()); addEventListener("activate", (e) => e.waitUntil(clients.claim())); addEventListener("fetch", (e) => e.respondWith(fetch(e.request)))')
    if (req.url === '/late.png') return setTimeout(() => res.writeHead(200, { 'content-type': 'image/png' }).end(PNG), 1000)
    // A page that opens a window while it loads, which opens a dialog.
    if (req.url === '/popup') return html('<script>open("/popup-alert", "promo")</script><p>a page with a promotion<img src="/late.png">')
    if (req.url === '/popup-alert') return html('<script>alert("Subscribe!")</script><p>the promotion')
    // A page with an iframe of another origin (in a process of its own) that loads three images.
    if (req.url === '/embeds') return html(`<p>an article<iframe src="https://${LAB_ALT_HOSTNAME}:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}/embed"></iframe>`)
    if (req.url === '/embed') return html('<p>an ad<img src="/ad/1.png"><img src="/ad/2.png"><img src="/ad/3.png">')
    if (req.url?.startsWith('/ad/')) return res.writeHead(200, { 'content-type': 'image/png' }).end(PNG)
    // A page whose scripts replace the timing API the agent reads (a
    // monitoring library's wrapper gone wrong, or a page that wants to look
    // fast): a navigation entry whose first byte came at 1 ms, and no
    // PerformanceObserver. It answers late.
    if (req.url === '/fakes-timings') {
      return setTimeout(() => html('<script>const real = Performance.prototype.getEntriesByType; ' +
        'Performance.prototype.getEntriesByType = function (t) { return t === "navigation" ? real.call(this, t).map((e) => ({ ...e.toJSON(), responseStart: e.startTime + 1 })) : real.call(this, t) }; ' +
        'window.PerformanceObserver = function () { return { observe () {}, disconnect () {} } }; requestAnimationFrame = () => 0</script>' +
        '<h1>a page that says it came at once</h1><img src="/late.png">'), SLOW_MS)
    }
    // A page whose tracing library wraps fetch: each request waits 5 s and carries its header.
    if (req.url === '/wraps-fetch') {
      return html('<script>const f = window.fetch; window.fetch = (u, o = {}) => new Promise((r) => setTimeout(r, 5000)).then(() => f(u, { ...o, headers: { "x-trace-id": "42" } }))</script><p>an app with tracing')
    }
    if (req.url === '/ping' || req.url === '/sink') {
      traced.push([req.url, req.headers['x-trace-id'] ?? null])
      return req.resume().on('end', () => res.writeHead(204, { 'x-upload-bytes': req.headers['content-length'] ?? '0' }).end())
    }
    // An Alt-Svc whose protocol id does not decode, on the page and on its image.
    if (req.url === '/bad-alt-svc') return res.writeHead(200, { 'content-type': 'text/html', 'alt-svc': 'h3%=":443"' }).end('<!doctype html><p>odd headers<img src="/bad-alt-svc.png">')
    if (req.url === '/bad-alt-svc.png') return res.writeHead(200, { 'content-type': 'image/png', 'alt-svc': 'h3%zz=":443"; ma=60' }).end(PNG)
    // 1,000 images whose URLs are LONG_URL characters long: 40 MB of URLs in a load's requests.
    if (req.url === '/long-urls') return html(`<script>for (let i = 0; i < 1000; i++) { const img = new Image(); img.src = "/i/" + i + ".png?" + "u".repeat(${LONG_URL}); document.documentElement.append(img) }</script><p>tracking`)
    if (req.url?.startsWith('/i/')) return res.writeHead(200, { 'content-type': 'image/png' }).end(PNG)
    html('<p>the page it goes to')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const port = /** @type {import('node:net').AddressInfo} */ (server.address()).port
  return { base: `https://${origin.hostname}:${port}`, port, asked, traced, close: () => server.close() }
}

/**
 * What a user reads of the odd pages' runs, the same in every browser.
 * The runs follow one another, as an agent's do. `next`: also load the
 * page the leaving ones go to.
 * @param {string} base
 * @param {(path: string) => Promise<Record<string, any>>} run
 * @param {{ next?: boolean }} [opts]
 * @returns {Promise<Record<string, Record<string, any>>>} the results, by path
 */
async function assertOddPages (base, run, { next = true } = {}) {
  /** @type {Record<string, Record<string, any>>} */
  const r = {}
  for (const p of ['/download', '/no-content', '/report.pdf', '/login', '/to-error', '/to-data', '/truncated', '/script-leaves', '/refresh-leaves', '/refresh-itself', '/refresh-later', '/refresh-slowly', '/replaced', '/app', '/download-later', '/landing', '/fakes-timings', '/data.json', '/prints', '/leaves-blank', ...(next ? ['/next'] : [])]) r[p] = await run(p)
  assert.equal(r['/download'].status, 'error')
  assert.match(r['/download'].error, /at \S+\/download: the URL answered with a download \(Content-Disposition: attachment\), not a page; monitor a URL that answers with a page$/)
  assert.equal(r['/no-content'].status, 'error')
  assert.match(r['/no-content'].error, /at \S+\/no-content: the URL answered HTTP 204 \(no content\), which a browser shows no page for; monitor a URL that answers with a page$/)
  // Not "ok" with none of its bytes, nor "incomplete" with some: the viewer's load is not a page's.
  assert.equal(r['/report.pdf'].status, 'error', `a PDF: ${r['/report.pdf'].error}`)
  assert.match(r['/report.pdf'].error, /^no page at https:\/\/\S+\/report\.pdf: the URL answered with application\/pdf, which the browser shows in its PDF viewer, not as a page \(what loads and paints is the viewer\); monitor a URL that answers with a page$/)
  assert.equal(r['/login'].status, 'error', `a login page: ${r['/login'].error}`)
  assert.match(r['/login'].error, /^HTTP 401: https:\/\/\S+\/login: the page asks for a login \(WWW-Authenticate: Basic realm="members", charset="UTF-8"\); runs send no credentials$/)
  assert.equal(r['/to-error'].status, 'error')
  assert.match(r['/to-error'].error, /^HTTP 500: https:\/\/\S+\/gone \(redirected from https:\/\/\S+\/to-error\)$/)
  // Chromium's error does not give the address; Firefox's, NS_ERROR_CORRUPTED_CONTENT, said nothing of a redirect.
  assert.equal(r['/to-data'].status, 'error')
  assert.match(r['/to-data'].error, /^no page at https:\/\/\S+\/to-data: it redirects to (data:text\/html,elsewhere \(HTTP 302\)|an address) that no browser follows a redirect to \(only to http and https: (net::ERR_UNSAFE_REDIRECT|NS_ERROR_CORRUPTED_CONTENT)\); monitor a URL that answers with a page$/)
  assert.equal(r['/truncated'].status, 'error')
  assert.match(r['/truncated'].error, /^incomplete document: network error after the headers \(\S+\) .*: https:\/\/\S+\/truncated$/)
  for (const p of ['/script-leaves', '/refresh-leaves', '/refresh-later']) {
    assert.equal(r[p].status, 'error', p)
    assert.equal(r[p].error, `the page navigated away by itself right after it loaded, to ${base}/next, before its metrics could be read: monitor the URL it goes to`, p)
  }
  // Going to a page with no request of its own: Firefox read on in it, and took it for an empty document.
  assert.equal(r['/leaves-blank'].status, 'error')
  assert.equal(r['/leaves-blank'].error, 'the page navigated away by itself right after it loaded, to about:blank, before its metrics could be read: it leaves the site for a page with no address of its own, so no load of it ends in a page that stays')
  // Going to itself, it has no other URL to monitor.
  assert.equal(r['/refresh-itself'].status, 'error')
  assert.equal(r['/refresh-itself'].error, 'the page navigated away by itself right after it loaded, to itself, before its metrics could be read: it reloads itself, so no load of it ends in a page that stays')
  assert.equal(r['/refresh-slowly'].status, 'ok', `a page that refreshes itself long after its load: ${r['/refresh-slowly'].error}`)
  assert.equal(r['/replaced'].status, 'ok', `a page replaced before its load event: ${r['/replaced'].error}`)
  assert.ok(r['/replaced'].ttfb_ms >= SLOW_MS - 100, `the page it was replaced by is the one measured: TTFB ${r['/replaced'].ttfb_ms} ms`)
  assert.equal(r['/app'].status, 'ok', `an app that changes its address in place: ${r['/app'].error}`)
  assert.equal(r['/download-later'].status, 'ok', `a page that starts a download once loaded: ${r['/download-later'].error}`)
  assert.equal(r['/landing'].status, 'ok', `a redirect whose end takes an earlier address in place: ${r['/landing'].error}`)
  // What the page's scripts do to the timing API is not what is read.
  assert.equal(r['/fakes-timings'].status, 'ok', `a page that fakes its timings: ${r['/fakes-timings'].error}`)
  assert.ok(r['/fakes-timings'].ttfb_ms >= SLOW_MS - 100, `its document came after ${SLOW_MS} ms, not at 1 ms: TTFB ${r['/fakes-timings'].ttfb_ms} ms`)
  assert.ok(r['/fakes-timings'].lcp_ms >= r['/fakes-timings'].ttfb_ms, `its LCP is read: ${r['/fakes-timings'].lcp_ms} ms`)
  // A JSON document loads and paints as the browser shows it (in Firefox as text too, not in its JSON viewer).
  assert.equal(r['/data.json'].status, 'ok', `a JSON document: ${r['/data.json'].error}`)
  assert.ok(r['/data.json'].fcp_ms > 0, `a JSON document paints: FCP ${r['/data.json'].fcp_ms}`)
  // No print dialog holds the page (Firefox's held it until the run gave up reading it).
  assert.equal(r['/prints'].status, 'ok', `a page that prints itself: ${r['/prints'].error}`)
  if (next) assert.equal(r['/next'].status, 'ok', 'the page they go to measures as any')
  return r
}

/**
 * Both views of the service-worker page load, over h2 as forced.
 * @param {Record<string, any>[]} results
 */
function assertServiceWorkerPage (results) {
  assert.deepEqual(results.map((r) => [r.view, r.status, r.observed_protocol, r.error ?? null]), [['first', 'ok', 'h2', null], ['repeat', 'ok', 'h2', null]])
}

/** The pages that open dialogs, and the note each run of them must carry. */
const DIALOG_PAGES = {
  '/alert': /^the page opened an alert dialog \("Your browser is not supported"\); the agent dismissed it at once, as a user who clicks it away would/,
  '/alert-onload': /^the page opened an alert dialog \("loaded"\); the agent dismissed it/,
  '/confirm': /^the page opened 2 JavaScript dialogs, the first a confirm dialog \("Are you 18\?"\); the agent answered each at once/,
  '/prompt': /^the page opened a prompt dialog \("Your name\?"\); the agent dismissed it/
}

/**
 * A page that opens a dialog loads, soon, as for a user who clicks the
 * dialog away, and its result says the page opened one.
 * @param {(path: string) => Promise<Record<string, any>[]>} run the results of one run of the page
 * @param {string[]} paths
 * @param {number} timeoutMs the runs' page timeout
 */
async function assertDialogPages (run, paths, timeoutMs) {
  for (const p of paths) {
    const started = Date.now()
    const results = await run(p)
    const took = Date.now() - started
    assert.ok(results.length > 0, p)
    for (const r of results) {
      assert.equal(r.status, 'ok', `${p} (${r.view}): ${r.error}`)
      const notes = (r.notes ?? []).filter((/** @type {{ code: string }} */ n) => n.code === 'page_dialog')
      assert.equal(notes.length, 1, `${p} (${r.view}): ${JSON.stringify(r.notes)}`)
      assert.match(notes[0].message, DIALOG_PAGES[/** @type {keyof typeof DIALOG_PAGES} */ (p)], p)
    }
    assert.ok(took < timeoutMs, `${p}: the run took ${took} ms, its page timeout is ${timeoutMs} ms`)
  }
}

test('a page that opens a JavaScript dialog is measured as a user who clicks it away sees it, with a note that says so', async () => {
  const odd = await startOddPages()
  // A dialog left open held the load until this timeout, and the load timed
  // out; dismissed, /alert's two views took 7 s on a busy machine.
  const timeoutMs = 30_000
  try {
    await assertDialogPages((p) => measurePageViews({ pool, url: `${odd.base}${p}`, mode: 'h2', extraFlags: lab, timeoutMs, repeatView: p === '/alert' }), Object.keys(DIALOG_PAGES), timeoutMs)
  } finally {
    odd.close()
  }
})

test('a slow page loads in every arm of a round with the auto arm: the forced arm that goes last still has a whole page timeout, and the returning visit too when its browsers are slow to start', async () => {
  // The lab's /slow answers after 3 s: the redirect discovery (which waits
  // for the headers), the H3 arm and the auto arm's two visits take 12 s
  // together, more than two page timeouts of 5 s, which the round's loads
  // once shared, so the H2 arm after them was "not run" (or cut short and
  // stored as a timeout) though each load needs 3 s of its 5.
  const timeoutMs = 5000
  // The auto arm's browsers (a profile of the round's own) each take 3 s
  // more to start, as on an agent busy with other work: the first visit's
  // browser once left the returning visit less than the 3 s its load needs.
  // (3 s, not more: each visit's allowance for its browser is 5 s, and the
  // browser's own start and close come on top on a slow machine.)
  const slowToStart = { ...pool, withDedicated: async (/** @type {any} */ spec, /** @type {any} */ fn) => { if (spec.profile) await sleep(3000); return pool.withDedicated(spec, fn) } }
  // random() = 0 orders the arms h3, auto, h2 (agents/measure.js runRound).
  const run = createJobRunner({ pool: slowToStart, lab: { spki: origin.spki, hostname: origin.hostname, address: '127.0.0.1', port: origin.port, netns: null }, timeoutMs, log, random: () => 0 })
  const results = await run({ id: 1, url: `${origin.baseUrl}/slow?ms=3000`, modes: ['h2', 'h3', 'auto'] }, { location: { kind: 'lab' } })
  assert.deepEqual(results.map((r) => [r.mode, r.view, r.status, r.error ?? null]),
    [['h3', 'first', 'ok', null], ['auto', 'first', 'ok', null], ['auto', 'returning', 'ok', null], ['h2', 'first', 'ok', null]])
})

test('a URL that answers with no page, or a page that leaves by itself, is an error that says so', async () => {
  const odd = await startOddPages()
  try {
    const r = await assertOddPages(odd.base, (p) => measurePage({ pool, url: `${odd.base}${p}`, mode: 'h2', extraFlags: lab }))
    // The first hop came over h2; the load failed on the plain-HTTP one, which is what the run says it came over.
    const toHttp = await measurePage({ pool, url: `${odd.base}/to-http`, mode: 'h2', extraFlags: lab, timeoutMs: 10_000 })
    assert.equal(toHttp.status, 'error', toHttp.error)
    assert.notEqual(toHttp.observed_protocol, 'h2', `the failed hop is http://…/next (${toHttp.error})`)
    assert.equal(toHttp.protocol_ok, false)
    // A document that never ends is told from a server that never answered.
    const streams = await measurePage({ pool, url: `${odd.base}/streams`, mode: 'h2', extraFlags: lab, timeoutMs: 5000 })
    assert.equal(streams.status, 'timeout')
    assert.match(streams.error, /^load did not finish within 5000 ms: https:\/\/\S+\/streams: the document answered, but its body was still arriving \([\d,]+ bytes by then\)$/)
    assert.ok(streams.bytes > 10_000, `the bytes that came are counted: ${streams.bytes}`)
    // A redirect hop that ended keeps its own count.
    const hop = r['/landing'].requests_detail.find((/** @type {{ status: number }} */ q) => q.status === 302)
    assert.ok(hop?.bytes > 0, JSON.stringify(r['/landing'].requests_detail))
    // One wording whether Chromium's abort or the agent's give-up a second
    // after the answer ends the load first (agents/page-metrics.js), as in
    // Firefox; the reason after it is checked above.
    assert.match(r['/download'].error, /^no page at https:\/\/\S+\/download: /)
    assert.match(r['/no-content'].error, /^no page at https:\/\/\S+\/no-content: /)
    // A page with a service worker: its repeat view comes over the network,
    // the protocol known, not from the worker with none.
    assertServiceWorkerPage(await measurePageViews({ pool, url: `${odd.base}/sw-page`, mode: 'h2', extraFlags: lab, timeoutMs: 10_000, repeatView: true }))
    // A window the page opens while it loads is blocked, as a user's
    // browser blocks it: the page loads (a dialog in the window once held
    // its load to the page timeout).
    const popup = await measurePage({ pool, url: `${odd.base}/popup`, mode: 'h2', extraFlags: lab, timeoutMs: 10_000 })
    assert.equal(popup.status, 'ok', popup.error)
    assert.equal(odd.asked.get('/popup-alert'), undefined, 'no window opened')
    // An iframe in a process of its own (another site's: here the second lab
    // host, isolated by a switch) reports its requests on its own target:
    // they are the page's too, each counted once.
    const embeds = await measurePage({ pool, url: `${odd.base}/embeds`, mode: 'h2', extraFlags: [...lab, `--isolate-origins=https://${LAB_ALT_HOSTNAME}:${odd.port}`] })
    assert.equal(embeds.status, 'ok', embeds.error)
    assert.deepEqual(embeds.requests_detail.map((/** @type {{ url: string }} */ q) => new URL(q.url)).filter((u) => u.pathname !== '/favicon.ico').map((u) => `${u.hostname}${u.pathname}`).sort(),
      [`${origin.hostname}/embeds`, `${LAB_ALT_HOSTNAME}/ad/1.png`, `${LAB_ALT_HOSTNAME}/ad/2.png`, `${LAB_ALT_HOSTNAME}/ad/3.png`, `${LAB_ALT_HOSTNAME}/embed`].sort())
    assert.equal(embeds.requests, embeds.requests_detail.length)
    // The frame's document is marked as a frame's: not the page's document.
    assert.deepEqual(embeds.requests_detail.filter((/** @type {any} */ q) => q.type === 'Document').map((/** @type {any} */ q) => [new URL(q.url).pathname, q.subframe ?? false]), [['/embeds', false], ['/embed', true]])
    // A redirect to an app's own scheme: no page, and the error says why (it was Chromium's bare net::ERR_ABORTED).
    const toApp = await measurePage({ pool, url: `${odd.base}/to-app`, mode: 'h2', extraFlags: lab })
    assert.equal(toApp.status, 'error')
    assert.match(toApp.error, /^no page at https:\/\/\S+\/to-app: the URL redirects to myapp:\/\/open\?from=web \(HTTP 302\), which is no web page \(a browser loads pages from http and https only\); monitor a URL that answers with a page$/)
    // A meta refresh to a script or a data: URL, which the browser refuses
    // to follow: the page stays, and is measured as it loaded (it was an
    // error that said the page left).
    for (const p of ['/refresh-js', '/refresh-data']) {
      const stays = await measurePage({ pool, url: `${odd.base}${p}`, mode: 'h2', extraFlags: lab })
      assert.equal(stays.status, 'ok', `${p}: ${stays.error}`)
      assert.deepEqual(stays.requests_detail.filter((/** @type {any} */ q) => q.type === 'Document').map((/** @type {any} */ q) => new URL(q.url).pathname), [p], 'no other document')
    }
    // An Alt-Svc header that does not parse, from any origin of the page, is
    // skipped as browsers skip it: the page loads.
    const badAltSvc = await measurePage({ pool, url: `${odd.base}/bad-alt-svc`, mode: 'h2', extraFlags: lab })
    assert.equal(badAltSvc.status, 'ok', badAltSvc.error)
    assert.deepEqual(badAltSvc.requests_detail.filter((/** @type {{ url: string }} */ q) => !q.url.endsWith('/favicon.ico')).map((/** @type {{ url: string, status: number }} */ q) => [new URL(q.url).pathname, q.status]), [['/bad-alt-svc', 200], ['/bad-alt-svc.png', 200]])
  } finally {
    odd.close()
  }
})

test('in Firefox the same URLs give the same errors; a download or a document cut short is given up soon, and a download leaves nothing behind', { skip: !existsSync(FIREFOX) && `needs Firefox at ${FIREFOX} (Debian package firefox-esr)` }, async () => {
  const odd = await startOddPages()
  const firefoxPool = createFirefoxPool({ dataDir, log, executablePath: FIREFOX })
  // Long, so that a run given up soon (seconds on a busy machine) is told
  // from one that waits it out; no page here runs into it.
  const timeoutMs = 30_000
  try {
    const run = createJobRunner({ pool, firefoxPool, lab: { spki: origin.spki, caPath: origin.caPath, hostname: origin.hostname, address: '127.0.0.1', port: odd.port, netns: null }, timeoutMs, log })
    let id = 0
    /** @type {Record<string, number>} */
    const took = {}
    const r = await assertOddPages(odd.base, async (p) => {
      const started = Date.now()
      const [result] = await run({ id: ++id, url: `${odd.base}${p}`, modes: ['h2'], browser: 'firefox' }, { location: { kind: 'lab' } })
      took[p] = Date.now() - started
      return result
    }, { next: false })
    // The same words whether Firefox's navigation ends first or the agent
    // gives up a second after the 204 (on a busy machine); never its
    // driver's stack.
    assert.match(r['/no-content'].error, /^no page at https:\/\/\S+\/no-content: /)
    assert.doesNotMatch(r['/no-content'].error, /\n\s+at /)
    // Firefox's navigations to a download or to a document cut short never
    // end: they are given up, not waited out. The run's own time (the load
    // and closing its Firefox) is told from the page timeout; the whole
    // run, Firefox's start included, is said too.
    assertServiceWorkerPage(await run({ id: ++id, url: `${odd.base}/sw-page`, modes: ['h2'], repeat_view: true, browser: 'firefox' }, { location: { kind: 'lab' } }))
    const [popup] = await run({ id: ++id, url: `${odd.base}/popup`, modes: ['h2'], browser: 'firefox' }, { location: { kind: 'lab' } })
    const [stays] = await run({ id: ++id, url: `${odd.base}/refresh-js`, modes: ['h2'], browser: 'firefox' }, { location: { kind: 'lab' } })
    assert.equal(stays.status, 'ok', `a refresh to a script, which Firefox refuses too: ${stays.error}`)
    assert.equal(popup.status, 'ok', `a page that opens a window while it loads: ${popup.error}`)
    assert.equal(odd.asked.get('/popup-alert'), undefined, 'no window opened')
    for (const p of ['/download', '/truncated']) assert.ok(r[p].details.wall_ms < timeoutMs / 2, `${p}: the run took ${r[p].details.wall_ms} ms (${took[p]} ms with Firefox's start)`)
    assert.deepEqual((await readdir(path.join(dataDir, 'firefox', 'home'))).filter((n) => /download/i.test(n)), [], 'no download folder in the home that runs share')
    // Firefox's dialogs reach the page too (WebDriver BiDi leaves them to Puppeteer), and are answered the same way.
    await assertDialogPages((p) => run({ id: ++id, url: `${odd.base}${p}`, modes: ['h2'], browser: 'firefox' }, { location: { kind: 'lab' } }), ['/alert', '/confirm'], timeoutMs)
    // Firefox cancels the image's login, and its timeout names the image that never answered.
    const soon = createJobRunner({ pool, firefoxPool, lab: { spki: origin.spki, caPath: origin.caPath, hostname: origin.hostname, address: '127.0.0.1', port: odd.port, netns: null }, timeoutMs: 4000, log })
    const [held] = await soon({ id: ++id, url: `${odd.base}/login-image`, modes: ['h2'], browser: 'firefox' }, { location: { kind: 'lab' } })
    assert.equal(held.status, 'timeout')
    assert.match(held.error, /^load did not finish within 4000 ms: https:\/\/\S+\/login-image: 1 request had not finished by then: https:\/\/\S+\/stall\.png \(no answer\)$/)
    // A page that stops its own load as it parses: Firefox waits for a load event that never comes, and says so.
    const [stopped] = await soon({ id: ++id, url: `${odd.base}/stops`, modes: ['h2'], browser: 'firefox' }, { location: { kind: 'lab' } })
    assert.equal(stopped.status, 'timeout')
    assert.match(stopped.error, /^load did not finish within 4000 ms: https:\/\/\S+\/stops: every request had finished, but the page fired no load event by then: a script may still be running, or one stopped the load \(window\.stop\(\)\)$/)
    // A page whose script runs without end as it parses: its renderer does not answer.
    const [spins] = await soon({ id: ++id, url: `${odd.base}/spins`, modes: ['h2'], browser: 'firefox' }, { location: { kind: 'lab' } })
    assert.equal(spins.status, 'timeout')
    assert.match(spins.error, /^load did not finish within 4000 ms: https:\/\/\S+\/spins: the page did not answer the agent: its renderer was busy \(a script that runs without end does this\)$/)
  } finally {
    await firefoxPool.close()
    odd.close()
  }
})

test('a page whose load waits for an image that asks for a login and one that never answers times out, naming them', async () => {
  const odd = await startOddPages()
  try {
    const timeoutMs = 3000
    const r = await measurePage({ pool, url: `${odd.base}/login-image`, mode: 'h2', extraFlags: lab, timeoutMs })
    assert.equal(r.status, 'timeout')
    const base = odd.base.replace(/[.]/g, '\\.')
    assert.match(r.error, new RegExp(`^load did not finish within ${timeoutMs} ms: ${base}/login-image: 2 requests had not finished by then: ${base}/login \\(no answer\\), ${base}/stall\\.png \\(no answer\\)$`))
    // A probe's warm-up of the page says the same.
    const [parallel] = await measureParallel({ pool, url: `${odd.base}/login-image`, targetUrl: `${odd.base}/ping`, count: 3, mode: 'h2', extraFlags: lab, timeoutMs, log })
    assert.match(parallel.error, new RegExp(`^load did not finish within ${timeoutMs} ms: ${base}/login-image: 2 requests had not finished by then: `))
  } finally {
    odd.close()
  }
})

test('the repeat view of a URL with a fragment loads the document again, in Chromium and Firefox, rather than reading the first view\'s figures', async () => {
  const odd = await startOddPages()
  const firefoxPool = existsSync(FIREFOX) ? createFirefoxPool({ dataDir, log, executablePath: FIREFOX }) : null
  try {
    const [first, repeat] = await measurePageViews({ pool, url: `${odd.base}/fragment-page#part`, mode: 'h2', extraFlags: lab, timeoutMs: 5000, repeatView: true })
    for (const v of [first, repeat]) assert.equal(v.status, 'ok', `${v.view}: ${v.error}`)
    assert.equal(odd.asked.get('/fragment-page'), 2, 'the document asked for twice')
    assert.ok(repeat.requests >= 1, 'the repeat view has requests of its own')
    if (firefoxPool) {
      const run = createJobRunner({ pool, firefoxPool, lab: { spki: origin.spki, caPath: origin.caPath, hostname: origin.hostname, address: '127.0.0.1', port: odd.port, netns: null }, timeoutMs: 10_000, log })
      const views = await run({ id: 1, url: `${odd.base}/fragment-page#part`, modes: ['h2'], repeat_view: true, browser: 'firefox' }, { location: { kind: 'lab' } })
      assert.deepEqual(views.map((v) => [v.view, v.status]), [['first', 'ok'], ['repeat', 'ok']], JSON.stringify(views.map((v) => v.error)))
      assert.equal(odd.asked.get('/fragment-page'), 4, 'in Firefox too')
    }
  } finally {
    await firefoxPool?.close()
    odd.close()
  }
})

test('a page that stops its own load while it parses (window.stop()) is an error that says so, not an empty document', async () => {
  const odd = await startOddPages()
  try {
    // Chromium reads none of its body as often as not: each run, the same words.
    for (let i = 0; i < 3; i++) {
      const r = await measurePage({ pool, url: `${odd.base}/stops`, mode: 'h2', extraFlags: lab, timeoutMs: 5000 })
      assert.equal(r.status, 'error')
      assert.match(r.error, /^no load event: https:\/\/\S+\/stops stopped loading before its load event \(a script calling window\.stop\(\) does this\), so the page has no load time$/)
      assert.equal(r.failure_kind, undefined, 'not an empty document')
    }
  } finally {
    odd.close()
  }
})

test('a page whose script runs without end, as it parses or once loaded, says its renderer was busy, and the next run loads', async () => {
  const odd = await startOddPages()
  try {
    const timeoutMs = 3000
    const busy = 'the page did not answer the agent: its renderer was busy \\(a script that runs without end does this\\)'
    const parsing = await measurePage({ pool, url: `${odd.base}/spins`, mode: 'h2', extraFlags: lab, timeoutMs })
    assert.equal(parsing.status, 'timeout')
    // Not "its body was still arriving": the body came; the page did not read it.
    assert.match(parsing.error, new RegExp(`^load did not finish within ${timeoutMs} ms: https://\\S+/spins: ${busy}$`))
    const loaded = await measurePage({ pool, url: `${odd.base}/spins-later`, mode: 'h2', extraFlags: lab, timeoutMs })
    assert.equal(loaded.status, 'error')
    assert.match(loaded.error, /^the page stopped answering the agent after its load event: its renderer was busy \(a script that runs without end does this\): https:\/\/\S+\/spins-later$/)
    const next = await measurePage({ pool, url: `${odd.base}/next`, mode: 'h2', extraFlags: lab, timeoutMs })
    assert.equal(next.status, 'ok', next.error)
    // Their renderers were closed with their runs, not left spinning beside the next loads.
    assert.deepEqual(await spinningRenderers(), [])
  } finally {
    odd.close()
  }
})

test('a page of 1,000 requests whose URLs are 40,000 characters long is measured and stored through the agent and the API: each URL keeps its start and says its length', async () => {
  const odd = await startOddPages()
  const database = await createTestDatabase()
  const db = database.pool
  const api = await startApi({ db, config: loadConfig({ PORT: String(await freePort()), LOG_LEVEL: 'silent' }), log })
  const spoolDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-long-urls-'))
  const url = `${odd.base}/long-urls`
  const m = await createMonitor(db, { url, interval_s: 3600, locations: ['local'], modes: ['h2', 'h3'] })
  const { rows: [job] } = await db.query("INSERT INTO jobs (monitor_id, location_id, due_at, max_attempts) VALUES ($1, 'local', now(), 1) RETURNING id", [m.id])
  const { token } = await createAgentToken(db, { location: 'local' })
  // 40 MB of URLs take a browser tens of seconds to load on a busy machine
  // (over 30 s on a slow one beside the suite): a long page timeout, so
  // that the round is measured, not timed out, wherever the suite runs.
  const runner = createJobRunner({ pool, lab: { spki: origin.spki, hostname: origin.hostname, address: '127.0.0.1', port: odd.port, netns: null }, timeoutMs: 120_000, log })
  /** @type {number[]} what the runner handed the agent, in bytes of JSON */
  const measured = []
  const agent = createAgent({
    client: createApiClient({ apiUrl: api.url, token }),
    spool: createSpool(spoolDir),
    runJob: async (j, ctx) => {
      const results = await runner(j, ctx)
      measured.push(Buffer.byteLength(JSON.stringify(results)))
      return results
    },
    log,
    version: 'test',
    idlePollMs: 100
  })
  agent.start()
  try {
    const done = await eventually(async () => {
      const { rows: [j] } = await db.query('SELECT state, last_error FROM jobs WHERE id = $1', [job.id])
      return ['done', 'failed'].includes(j.state) && j
    }, { timeoutMs: 300_000, what: 'the round stored or failed' })
    assert.equal(done.state, 'done', `the round: ${done.last_error}`)
    const { rows } = await db.query("SELECT mode, status, requests, details FROM results WHERE job_id = $1 AND mode = 'h2' AND view = 'first'", [job.id])
    assert.equal(rows.length, 1)
    const [h2] = rows
    assert.equal(h2.status, 'ok')
    // The page, its 1,000 images and its favicon, counted; the first 1,000 of them kept.
    assert.ok(h2.requests >= 1001, `${h2.requests} requests`)
    assert.equal(h2.details.requests.length + (h2.details.requests_not_kept ?? 0), h2.requests)
    const images = h2.details.requests.filter((/** @type {any} */ q) => q.url.includes('/i/'))
    assert.ok(images.length >= 990, `${images.length} images kept`)
    for (const q of images) {
      assert.equal(q.url.length, MAX_KEPT_URL)
      assert.match(q.url, /\/i\/\d+\.png\?u+$/)
      assert.ok(q.url_length > LONG_URL && q.url_length < LONG_URL + 100, `url_length ${q.url_length}`)
    }
    // The arm's result as sent: its URLs alone came to 40 MB as measured,
    // more than the API takes (RESULTS_BODY_LIMIT) in a request.
    const sent = Buffer.byteLength(JSON.stringify(h2.details))
    assert.ok(sent < RESULTS_BODY_LIMIT / 4, `${sent} bytes of evidence`)
    assert.ok(1000 * LONG_URL > RESULTS_BODY_LIMIT)
    assert.ok(measured.length === 1 && measured[0] <= ROUND_RESULTS_BYTES, `${measured} bytes a round`)
  } finally {
    await agent.stop()
    await api.close()
    await database.drop()
    odd.close()
    await rm(spoolDir, { recursive: true, force: true })
  }
})

test('the probes\' requests are the agent\'s own: a page whose tracing library wraps fetch adds neither its delay nor its header to them', async () => {
  const odd = await startOddPages()
  try {
    const [parallel] = await measureParallel({ pool, url: `${odd.base}/wraps-fetch`, targetUrl: `${odd.base}/ping`, count: 3, mode: 'h2', extraFlags: lab, log })
    const [upload] = await measureUpload({ pool, url: `${odd.base}/wraps-fetch`, uploadUrl: `${odd.base}/sink`, bytes: 4096, mode: 'h2', extraFlags: lab, log })
    for (const r of [parallel, upload]) assert.equal(r.status, 'ok', `${r.probe}: ${r.error}`)
    assert.deepEqual(odd.traced, [['/ping', null], ['/ping', null], ['/ping', null], ['/sink', null]], 'no request carried the page\'s header')
    // Through the wrapper each took 5 s more; a loopback request takes milliseconds.
    assert.equal(parallel.samples.length, 3)
    for (const ms of [...parallel.samples, ...upload.samples]) assert.ok(ms < 5000, `a request took ${ms} ms`)
  } finally {
    odd.close()
  }
})

test('a journey step that clicks into a login page fails at that step, saying it asks for a login as a page load does', async () => {
  const odd = await startOddPages()
  try {
    // Journeys run in Chromium (docs/JOURNEYS.md).
    const run = createJobRunner({ pool, lab: { spki: origin.spki, hostname: origin.hostname, address: '127.0.0.1', port: odd.port, netns: null }, timeoutMs: 10_000, log })
    const url = `${odd.base}/members`
    const journey = checkJourney({ steps: [{ action: 'navigate', url, name: 'open' }, { action: 'click', selector: '#members', name: 'members' }] }, { url })
    const results = await run({ id: 1, url, modes: ['h2'], probes: ['journey'], journey }, { location: { kind: 'lab' } })
    // The journey's run and its step "members" fail; the step "open" loads.
    const failed = results.filter((r) => r.status !== 'ok')
    assert.equal(failed.length, 2, JSON.stringify(results.map((r) => [r.status, r.error])))
    for (const r of failed) {
      assert.equal(r.status, 'error')
      // Not Chromium's "net::ERR_INVALID_AUTH_CREDENTIALS", though no credentials were sent.
      assert.match(r.error, /^step 2 \(click #members, "members"\): the navigation it started answered HTTP 401: https:\/\/\S+\/login: the page asks for a login \(WWW-Authenticate: Basic realm="members", charset="UTF-8"\); runs send no credentials$/)
    }
  } finally {
    odd.close()
  }
})

/**
 * Chromium renderer processes of this test's browsers that are using a
 * whole core: their CPU time over a second, read from /proc.
 * @returns {Promise<string[]>} their pids
 */
async function spinningRenderers () {
  const renderers = async () => {
    /** @type {Map<string, number>} */
    const ticks = new Map()
    for (const pid of await readdir('/proc').catch(() => [])) {
      if (!/^\d+$/.test(pid)) continue
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')
      if (!cmdline.includes('--type=renderer') || !cmdline.includes(dataDir)) continue
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      ticks.set(pid, Number(fields[11]) + Number(fields[12]))
    }
    return ticks
  }
  const before = await renderers()
  await sleep(1000)
  const after = await renderers()
  // 100 ticks a second: a renderer that spins takes most of them.
  return [...after].filter(([pid, t]) => before.has(pid) && t - /** @type {number} */ (before.get(pid)) > 50).map(([pid]) => pid)
}
