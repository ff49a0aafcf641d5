// Which Caddy the lab origin runs, as a user sees it: GET /api/v1/locations
// over HTTP and the Locations page in Chromium, against a real origin on the
// pinned Caddy 2.11.7 or on Debian's 2.6.2, wired to the API the way
// `h3lens start` wires them.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { startApi } from '../api/server.js'
import { chooseCaddy, DEBIAN_CADDY } from '../lab/caddy.js'
import { startOrigin } from '../lab/origin.js'
import { createApiKey } from '../lib/store/api-keys.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createTestDatabase } from './helpers/db.js'
import { freePort } from '../dev/free-port.js'
import { launchBrowser, collectPageErrors, useApiKey, waitUntilSettled } from '../dev/browser.js'
import { eventually } from './helpers/eventually.js'

let database, apiKey, chromium, dataDir

before(async () => {
  database = await createTestDatabase()
  await upsertLocation(database.pool, { id: 'local', name: 'Local (unshaped loopback)', region: 'Local', kind: 'lab', profile: { rtt_ms: 0 } })
  apiKey = (await createApiKey(database.pool, { name: 'ui', role: 'read' })).secret
  chromium = await launchBrowser()
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-lab-origin-'))
})

after(async () => {
  await chromium?.close()
  await database?.drop()
  if (dataDir) await rm(dataDir, { recursive: true, force: true })
})

/**
 * The API as `h3lens start` runs it next to a lab origin (none when
 * `caddyPath` is null), and what a user sees of the lab origin.
 * @param {string | null | undefined} caddyPath undefined = the lab's own choice
 */
async function withLab (caddyPath, fn, { killCaddy = false } = {}) {
  /** @type {any[]} */
  const lines = []
  const log = createLogger({ logLevel: 'info', destination: { write: (/** @type {string} */ l) => { lines.push(JSON.parse(l)) } } })
  const origin = caddyPath === null ? null : await startOrigin({ dataDir, port: await freePort(), caddyPath, log })
  if (killCaddy) {
    process.kill(lines.find((l) => l.msg === 'lab origin serving').caddyPid, 'SIGKILL')
    await eventually(async () => lines.some((l) => l.level === 50), { timeoutMs: 10_000, what: 'the lab origin gone' })
  }
  const config = loadConfig({ PORT: String(await freePort()), HOST: '127.0.0.1', LOG_LEVEL: 'silent' })
  const api = await startApi({ db: database.pool, config, log, labOrigin: origin?.labOrigin ?? null })
  try {
    const res = await fetch(`${api.url}/api/v1/locations`, { headers: { authorization: `Bearer ${apiKey}` } })
    assert.equal(res.status, 200)
    const body = await res.json()
    const page = await chromium.browser.newPage()
    const errors = collectPageErrors(page)
    await useApiKey(page, apiKey)
    await page.goto(`${api.url}/#/locations`, { waitUntil: 'networkidle0' })
    await waitUntilSettled(page)
    const seen = {
      warnings: await page.$$eval('#view .notice.warn[role="alert"]', (els) => els.map((e) => e.textContent)),
      text: await page.$eval('#view', (e) => e.textContent)
    }
    await page.close()
    assert.deepEqual(errors, [], 'no console errors')
    await fn({ body, seen })
  } finally {
    await api.close()
    await origin?.stop()
  }
}

test("on Debian's Caddy 2.6.2 the Locations API and page say lab H3 connects may be distorted", async () => {
  await withLab(DEBIAN_CADDY, ({ body, seen }) => {
    assert.deepEqual(body.lab_origin, { server: 'caddy', version: '2.6.2', distorts_h3: true, running: true, exited_at: null })
    assert.equal(body.items[0].id, 'local')
    assert.equal(seen.warnings.length, 1, 'one warning banner')
    assert.match(seen.warnings[0], /Lab H3 connects may be distorted/)
    assert.match(seen.warnings[0], /Caddy 2\.6\.2.*quic-go 3760/)
    assert.match(seen.warnings[0], /install Caddy 2\.11\.7/)
    assert.match(seen.text, /Lab origin\s*Caddy 2\.6\.2/)
  })
})

test('on the Caddy 2.11.7 that setup installed there is no warning', { skip: !chooseCaddy().pinned && 'setup could not install Caddy 2.11.7 (see its warning)' }, async () => {
  await withLab(undefined, ({ body, seen }) => {
    assert.deepEqual(body.lab_origin, { server: 'caddy', version: '2.11.7', distorts_h3: false, running: true, exited_at: null })
    assert.deepEqual(seen.warnings, [])
    assert.match(seen.text, /Lab origin\s*Caddy 2\.11\.7/)
  })
})

test('a lab origin whose Caddy exits while it serves: the Locations API and page say it is down and lab rounds fail until a restart', async () => {
  await withLab(undefined, ({ body, seen }) => {
    assert.equal(body.lab_origin.running, false)
    assert.ok(Date.now() - Date.parse(body.lab_origin.exited_at) < 60_000, body.lab_origin.exited_at)
    assert.equal(seen.warnings.length, 1, 'one warning banner')
    assert.match(seen.warnings[0], /^The lab origin is down: its Caddy exited (just now|\d+ s ago), so every round at a lab location fails until h3lens is restarted/)
    assert.match(seen.text, /Lab origin\s*Caddy [\d.]+ \(down\)/)
  }, { killCaddy: true })
})

test('an API that runs no lab reports no lab origin and shows no warning', async () => {
  await withLab(null, ({ body, seen }) => {
    assert.equal(body.lab_origin, null)
    assert.deepEqual(seen.warnings, [])
    assert.doesNotMatch(seen.text, /Lab origin/)
  })
})
