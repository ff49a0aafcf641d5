// The browser side of security: headers on every response, a content
// security policy the dashboard and the API docs both live with (no console
// errors, no refused script or style), and the dashboard asking for a key
// on a 401 and then working with it.
// run-tests: side — its browser looks at the dashboard and the API docs, and times no page load
/* global document */
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createTestDatabase } from './helpers/db.js'
import { freePort } from '../dev/free-port.js'
import { launchBrowser, collectPageErrors } from '../dev/browser.js'
import { startApi } from '../api/server.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { createApiKey } from '../lib/store/api-keys.js'
import { createMonitor } from '../lib/store/monitors.js'

let database, api, chromium, readKey

before(async () => {
  database = await createTestDatabase()
  api = await startApi({ db: database.pool, config: loadConfig({ PORT: String(await freePort()), LOG_LEVEL: 'silent' }), log: createLogger({ logLevel: 'silent' }) })
  readKey = (await createApiKey(database.pool, { name: 'browser', role: 'read' })).secret
  await createMonitor(database.pool, { url: 'https://example.com/', label: 'Example monitor', locations: ['local'] }, { allowPrivateTargets: true })
  chromium = await launchBrowser()
})

after(async () => {
  await chromium?.close()
  await api?.close()
  await database?.drop()
})

const directives = (csp) => Object.fromEntries(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([k, ...v]) => [k, v]))

test('security headers: a strict policy on the dashboard and the API, a wider style rule on the docs only', async () => {
  for (const path of ['/', '/app.js', '/css/base.css', '/api/v1/monitors', '/healthz', '/no/such/page']) {
    const res = await fetch(`${api.url}${path}`)
    const csp = directives(res.headers.get('content-security-policy') ?? '')
    assert.deepEqual(csp['script-src'], ["'self'"], path)
    assert.deepEqual(csp['style-src'], ["'self'"], path)
    assert.deepEqual(csp['frame-ancestors'], ["'none'"], path)
    assert.deepEqual(csp['object-src'], ["'none'"], path)
    assert.equal(csp['upgrade-insecure-requests'], undefined, `${path}: plain-HTTP deployments must keep loading their assets`)
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff', path)
    assert.equal(res.headers.get('referrer-policy'), 'no-referrer', path)
    assert.ok(res.headers.get('x-frame-options'), path)
  }
  const docs = await fetch(`${api.url}/api/docs/`)
  const csp = directives(docs.headers.get('content-security-policy'))
  assert.deepEqual(csp['script-src'], ["'self'"], 'the docs run no inline script either')
  assert.deepEqual(csp['style-src'], ["'self'", "'unsafe-inline'"])
})

test('the dashboard asks for a key on 401, stores it and works; no policy violation on the way', async () => {
  const page = await chromium.browser.newPage()
  const errors = collectPageErrors(page)
  try {
    await page.goto(`${api.url}/#/`, { waitUntil: 'networkidle0' })
    await page.waitForSelector('#key-dialog[open] #api-key', { timeout: 15000 })
    assert.match(await page.$eval('#key-dialog', (d) => d.textContent), /Enter your API key/)
    await page.type('#api-key', readKey)
    await page.click('#key-dialog button[type="submit"]')
    await page.waitForFunction(() => document.body.textContent.includes('Example monitor'), { timeout: 15000 })
    assert.equal(await page.evaluate(() => localStorage.getItem('h3lens.apiKey')), readKey)
    // A new load of another page (a goto that changes only the fragment
    // would not load anything): the stored key is used without asking again.
    await page.goto(`${api.url}/#/locations`)
    await page.reload({ waitUntil: 'networkidle0' })
    await page.waitForFunction(() => document.querySelector('h1')?.textContent === 'Locations and agents' && document.getElementById('view')?.getAttribute('aria-busy') === 'false', { timeout: 15000 })
    assert.equal(await page.$('#key-dialog[open]'), null, 'the stored key is used without asking again')
    const unexpected = errors.filter((e) => !/status of 401/.test(e))
    assert.deepEqual(unexpected, [])
    assert.ok(!errors.some((e) => /Content Security Policy|Refused to/i.test(e)))
  } finally {
    await page.close()
  }
})

test('the API docs render under their policy without console errors', async () => {
  const page = await chromium.browser.newPage()
  const errors = collectPageErrors(page)
  try {
    await page.goto(`${api.url}/api/docs/`, { waitUntil: 'networkidle0' })
    await page.waitForSelector('#swagger-ui .info .title', { timeout: 15000 })
    assert.match(await page.$eval('#swagger-ui .info .title', (e) => e.textContent), /h3lens API/)
    assert.ok(await page.$('#swagger-ui .opblock'), 'operations are listed')
    assert.ok(await page.$('#swagger-ui .authorize'), 'the Authorize button offers the API key and agent token')
    assert.deepEqual(errors, [])
  } finally {
    await page.close()
  }
})
