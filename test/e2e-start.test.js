// The product as a user runs it: `h3lens start` on a fresh data dir, a
// monitor added through the API, real H2 and H3 loads in Chromium against
// the lab's Caddy, results read back, then a clean Ctrl-C.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { chooseCaddy } from '../lab/caddy.js'
import { startLocalH3lens, eventually, processesMatching } from './helpers/process.js'

test('h3lens start measures an added monitor over h2 and h3 and stops cleanly', async () => {
  const { h3lens, dataDir, labPort, api } = await startLocalH3lens(['--no-seed'], 'h3lens-e2e-')
  try {
    await h3lens.waitFor(/dashboard\s+http:\/\/127\.0\.0\.1:\d+\//, 90000)
    // The first start leaves an admin key for the user, readable by them only.
    const keyFile = path.join(dataDir, 'admin-key')
    assert.ok(h3lens.output.includes(`admin key  ${keyFile}`), 'the banner says where the key is')
    assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600)
    const key = fs.readFileSync(keyFile, 'utf8').trim()
    assert.ok(!h3lens.output.includes(key), 'the key itself is never printed or logged')
    const auth = { authorization: `Bearer ${key}` }
    assert.equal((await fetch(`${api}/api/v1/monitors`)).status, 401, 'the API needs the key')

    const page = await fetch(`${api}/`)
    assert.equal(page.status, 200)
    assert.match(await page.text(), /<title>h3lens<\/title>/)

    const created = await fetch(`${api}/api/v1/monitors`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ url: `https://lab.h3lens.test:${labPort}/page-15k.html`, interval_s: 10, locations: ['local'] })
    })
    assert.equal(created.status, 201)
    const monitor = await created.json()

    const items = await eventually(async () => {
      const res = await fetch(`${api}/api/v1/monitors/${monitor.id}/results`, { headers: auth })
      const { items } = await res.json()
      return items.some((r) => r.mode === 'h2') && items.some((r) => r.mode === 'h3') ? items : null
    }, { timeoutMs: 180_000, what: 'results in both modes' })

    for (const mode of ['h2', 'h3']) {
      const r = items.find((x) => x.mode === mode)
      assert.equal(r.status, 'ok', `${mode}: ${r.error}`)
      assert.equal(r.observed_protocol, mode)
      assert.equal(r.protocol_ok, true)
      assert.equal(r.location_id, 'local')
      assert.ok(r.ttfb_ms > 0 && r.ttfb_ms <= r.load_ms, `${mode} ttfb ${r.ttfb_ms} load ${r.load_ms}`)
      assert.ok(r.bytes > 10000, `${mode} bytes ${r.bytes}`)
      assert.match(r.browser_version, /Chrom/)
    }
    const agents = await (await fetch(`${api}/api/v1/agents`, { headers: auth })).json()
    assert.ok(agents.items.some((a) => a.location_id === 'local' && a.alive))
    // The locations say which Caddy the lab runs: the pinned one when setup installed it.
    const { lab_origin: labOrigin } = await (await fetch(`${api}/api/v1/locations`, { headers: auth })).json()
    assert.deepEqual(labOrigin, chooseCaddy().pinned
      ? { server: 'caddy', version: '2.11.7', distorts_h3: false, running: true, exited_at: null }
      : { server: 'caddy', version: '2.6.2', distorts_h3: true, running: true, exited_at: null })
  } finally {
    h3lens.child.kill('SIGTERM')
    const { code } = await h3lens.exited
    assert.equal(code, 0, h3lens.output.slice(-2000))
  }
  // Nothing started for this data dir survives: no Chromium, Caddy or postgres.
  assert.deepEqual(processesMatching(dataDir), [])
  fs.rmSync(dataDir, { recursive: true, force: true })
})
