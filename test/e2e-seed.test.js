// `h3lens start` on an empty database seeds the lab monitors and one A/A
// calibration monitor; the A/A monitor's rounds go the whole way (claim,
// agent, Chromium, Caddy, results) with both arms over h2.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { startLocalH3lens, eventually, processesMatching } from './helpers/process.js'
import { AA_SEED_LABEL } from '../bin/start.js'

test('h3lens start seeds an A/A monitor whose two arms both load over h2', async () => {
  const { h3lens, dataDir, api } = await startLocalH3lens([], 'h3lens-e2e-seed-')
  try {
    await h3lens.waitFor(/dashboard\s+http:\/\/127\.0\.0\.1:\d+\//, 90000)
    const auth = { authorization: `Bearer ${fs.readFileSync(path.join(dataDir, 'admin-key'), 'utf8').trim()}` }
    const { items: monitors } = await (await fetch(`${api}/api/v1/monitors`, { headers: auth })).json()
    const aa = monitors.filter((m) => m.aa_protocol)
    assert.equal(aa.length, 1, 'one A/A monitor')
    assert.equal(aa[0].label, AA_SEED_LABEL)
    assert.equal(aa[0].aa_protocol, 'h2')
    assert.deepEqual(aa[0].modes, ['h2', 'h3'])
    assert.match(aa[0].url, /\/page-15k\.html$/)
    const others = monitors.filter((m) => !m.aa_protocol)
    assert.ok(others.length >= 3, 'the lab pages are seeded too')
    for (const m of monitors) {
      assert.deepEqual(m.locations, ['local'])
      assert.equal(m.interval_s, others[0].interval_s, 'every seed runs at the same interval')
    }

    const items = await eventually(async () => {
      const res = await fetch(`${api}/api/v1/monitors/${aa[0].id}/results`, { headers: auth })
      const { items } = await res.json()
      return items.some((r) => r.mode === 'h2') && items.some((r) => r.mode === 'h3') ? items : null
    }, { timeoutMs: 120000, what: 'A/A results in both arms' })
    for (const mode of ['h2', 'h3']) {
      const r = items.find((x) => x.mode === mode)
      assert.equal(r.status, 'ok', `arm ${mode}: ${r.error}`)
      assert.equal(r.observed_protocol, 'h2', `arm ${mode} loaded over h2`)
      assert.equal(r.protocol_ok, true)
      assert.ok(r.flags.includes('--disable-quic'), String(r.flags))
      const detail = await (await fetch(`${api}/api/v1/results/${r.id}`, { headers: auth })).json()
      assert.equal(detail.details.arm_protocol, 'h2')
    }
  } finally {
    h3lens.child.kill('SIGTERM')
    const { code } = await h3lens.exited
    assert.equal(code, 0, h3lens.output.slice(-2000))
  }
  assert.deepEqual(processesMatching(dataDir), [])
  fs.rmSync(dataDir, { recursive: true, force: true })
})
