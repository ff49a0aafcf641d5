#!/usr/bin/env node
// Calibration of the verdicts (DESIGN §6, docs/STATISTICS.md): synthetic
// scenarios whose truth is known, driven through the real import and
// comparison endpoints over HTTP against PostgreSQL. Prints, per scenario
// and analysis, how many tested cells claimed a difference, how many tables
// had any such cell, and for true gains the power. Not a test: it prints.
//
//   node bench/calibration.js [--quick] [--reps N] [--only TEXT]
//
// Uses DATABASE_URL or an embedded PostgreSQL in a temporary data dir.
// Targets: ≤ 5% of A/A cells flagged in every scenario; no selective-failure
// or regional-mix scenario reads as an H3 gain (H3-faster cells no more often
// than chance allows one side, 2.5%, and never in the all-locations column);
// ≥ 80% power for a 10% gain at 500 matched rounds.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { createLifecycle } from '../lib/runtime/lifecycle.js'
import { openDatabase } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createApiKey } from '../lib/store/api-keys.js'
import { buildApp } from '../api/app.js'
import { calibrationScenarios, CALIBRATION_LOCATIONS } from './lib/scenarios.js'
import { runScenario, flaggedCells } from './lib/calibrate.js'

const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, reps: { type: 'string' }, only: { type: 'string' } } })
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-bench-calibration-'))
const config = loadConfig({ ...process.env, H3LENS_DATA_DIR: dataDir, H3LENS_EMBEDDED_PG_PORT: '54393', LOG_LEVEL: 'warn', H3LENS_ALLOW_PRIVATE_TARGETS: 'true' })
const log = createLogger({ logLevel: 'warn' })
const lifecycle = createLifecycle(log)

/** Repetitions: enough tables to see a 5% rate, fewer for the largest. */
const repsFor = (s) => Number(values.reps ?? (values.quick ? (s.rounds > 1000 ? 2 : 6) : (s.rounds > 2000 ? 10 : s.rounds > 600 ? 30 : 40)))
const pct = (a, b) => (b ? `${(a / b * 100).toFixed(1)}%` : '—')

try {
  const { pool } = await openDatabase({ config, log, lifecycle, poolMax: 4 })
  await migrate(pool)
  for (const l of CALIBRATION_LOCATIONS) await upsertLocation(pool, { id: l.id, name: l.name, region: 'Calibration', kind: 'real', profile: {} })
  const key = (await createApiKey(pool, { name: 'calibration', role: 'write' })).secret
  const app = await buildApp({ db: pool, config, log })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const base = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (app.server.address()).port}`
  /** @type {import('./lib/calibrate.js').Client} */
  const client = async ({ method, url, body, type }) => {
    const res = await fetch(base + url, { method, body, headers: { authorization: `Bearer ${key}`, ...(type ? { 'content-type': type } : {}) } })
    const text = await res.text()
    return { status: res.status, text, json: () => JSON.parse(text) }
  }

  console.log(`calibration — ${os.cpus().length} cores, ${os.cpus()[0]?.model}, Node ${process.version}`)
  console.log('cells = tested cells over all runs (3 locations + all locations × p25…p99, those with enough rounds); flagged = claims a difference')
  console.log('| scenario | runs | matched: cells flagged | matched: tables with a flag | ITT: cells flagged | H3-gain cells, all-locations ones (matched / ITT) | failure verdicts | power | target |')
  console.log('|---|---|---|---|---|---|---|---|---|')
  const t0 = performance.now()
  for (const s of calibrationScenarios({ quick: values.quick })) {
    if (values.only && !s.name.includes(values.only)) continue
    const reps = repsFor(s)
    const tally = { matched: { tested: 0, flagged: 0, tables: 0, faster: 0, allFaster: 0 }, itt: { tested: 0, flagged: 0, tables: 0, faster: 0, allFaster: 0 } }
    const failures = {}
    for (let r = 0; r < reps; r++) {
      const { comparisons } = await runScenario(client, s, { seed: r })
      for (const [analysis, cmp] of Object.entries(comparisons)) {
        const flagged = flaggedCells(cmp)
        const t = tally[analysis]
        t.tested += cmp.cells.tested
        t.flagged += flagged.length
        t.tables += flagged.length ? 1 : 0
        t.faster += flagged.filter((c) => c.verdict === 'h3_faster').length
        t.allFaster += flagged.filter((c) => c.verdict === 'h3_faster' && c.location === 'all').length
      }
      for (const l of comparisons.matched.locations) failures[l.failure.verdict] = (failures[l.failure.verdict] ?? 0) + 1
    }
    const m = tally.matched
    const i = tally.itt
    // Identical arms: at most 5% of cells may claim a difference, in both
    // views. H3 losing rounds (selective, regional, level shift): the matched
    // view is identical arms; intention to treat truly shows H3 slower. No
    // view may read as an H3 gain: H3-faster cells no more often than
    // chance allows one side (2.5% of cells), and never in the all-locations
    // column.
    const noGain = [m, i].every((x) => x.faster / x.tested <= 0.025 && x.allFaster === 0)
    let target
    if (s.gain) target = s.gain === 0.1 ? (m.faster / m.tested >= 0.8 ? 'power ≥ 80%: met' : 'power ≥ 80%: MISSED') : 'power (reported)'
    else if (s.losesRounds) target = m.flagged / m.tested <= 0.05 && noGain ? 'matched ≤ 5%, no H3 gain: met' : 'matched ≤ 5%, no H3 gain: MISSED'
    else target = m.flagged / m.tested <= 0.05 && i.flagged / i.tested <= 0.05 ? '≤ 5%: met' : '≤ 5%: MISSED'
    const fv = Object.entries(failures).map(([k, n]) => `${k} ${n}`).join(', ')
    console.log(`| ${s.name} | ${reps} | ${pct(m.flagged, m.tested)} of ${m.tested} | ${m.tables}/${reps} | ${pct(i.flagged, i.tested)} of ${i.tested} | ${m.faster} (${m.allFaster}) / ${i.faster} (${i.allFaster}) | ${fv} | ${s.gain ? pct(m.faster, m.tested) : '—'} | ${target} |`)
  }
  console.log(`\n${((performance.now() - t0) / 1000).toFixed(0)} s`)
  await app.close()
} finally {
  await lifecycle.stopAll('done')
  fs.rmSync(dataDir, { recursive: true, force: true })
}
