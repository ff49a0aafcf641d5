#!/usr/bin/env node
// How fast the monitor page shows a 30-day regional comparison when the
// database holds over 1M results: the query benchmark's generator makes
// 3 monitors × 30 days × 5 locations × 2 modes at one round a minute
// (1.3M results), rollups are built for the monitor shown, and Chromium opens
// its page cold (a new tab) RUNS times. The time is from navigation start to
// the comparison table having every cell filled, as a user would see it.
//
//   node bench/ui-render.js [--monitors 3] [--runs 10]
/* global document */
import os from 'node:os'
import { loadConfig } from '../lib/runtime/config.js'
import { benchScratch } from './lib/scratch.js'
import { openDatabase } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { rebuildRollups } from '../lib/analysis/rollups.js'
import { createApiKey } from '../lib/store/api-keys.js'
import { startApi } from '../api/server.js'
import { generateResults } from './lib/generate.js'
import { launchBrowser, useApiKey } from '../dev/browser.js'
import { benchArgs } from './lib/args.js'

const { values } = benchArgs(import.meta.url, { options: { monitors: { type: 'string', default: '3' }, runs: { type: 'string', default: '10' } } })
const { dataDir, log, lifecycle } = benchScratch('bench-ui')
const config = loadConfig({ ...process.env, H3LENS_DATA_DIR: dataDir, PORT: '18383', H3LENS_EMBEDDED_PG_PORT: '54395', LOG_LEVEL: 'warn' })
try {
  const { pool } = await openDatabase({ config, log, lifecycle })
  await migrate(pool)
  const [target] = await generateResults(pool, { monitors: Number(values.monitors), days: 30 })
  const { rows: [{ n }] } = await pool.query('SELECT count(*)::int AS n FROM results')
  await rebuildRollups(pool, { monitorId: target })
  await pool.query('ANALYZE')
  const { secret } = await createApiKey(pool, { name: 'bench', role: 'read' })
  const api = await startApi({ db: pool, config, log })
  lifecycle.add('api', api.close)
  const chromium = await launchBrowser()
  lifecycle.add('chromium', chromium.close)
  const times = []
  for (let i = 0; i < Number(values.runs); i++) {
    const page = await chromium.browser.newPage()
    await useApiKey(page, secret)
    const t0 = Date.now()
    await page.goto(`${api.url}/#/monitors/${target}?window=30d&metric=ttfb`)
    await page.waitForFunction(() => {
      const cells = [...document.querySelectorAll('.compare td.cmp-cell')]
      return cells.length >= 36 && cells.every((td) => /H2 \d/.test(td.textContent))
    }, { timeout: 30000 })
    const navStart = await page.evaluate(() => performance.timeOrigin)
    times.push(Date.now() - Math.max(t0, navStart))
    await page.close()
  }
  times.sort((a, b) => a - b)
  console.log(`monitor page, 30-day comparison — ${n} results in the database, ${os.cpus().length} cores`)
  console.log(`  table filled: median ${Math.round(times[Math.floor(times.length / 2)])} ms, worst ${Math.round(times[times.length - 1])} ms over ${times.length} cold loads (target < 1,000 ms)`)
} finally {
  await lifecycle.stopAll('done')
}
