#!/usr/bin/env node
// How many bytes of JavaScript and CSS the dashboard transfers, against its
// 300 KB budget. Each page is loaded cold (fresh context, cache off) in
// Chromium; sizes are CDP's encodedDataLength (bytes on the wire, headers
// included). "All pages" counts each distinct file once: what a user who
// visits every page downloads.
//
//   node bench/ui-payload.js
import { seedDemo } from '../dev/demo-data.js'
import { startDashboard } from '../dev/dashboard.js'
import { startScratchDatabase } from '../dev/scratch-db.js'
import { launchBrowser, useApiKey } from '../dev/browser.js'
import { benchArgs } from './lib/args.js'

benchArgs(import.meta.url)

const BUDGET = 300 * 1024

const db = await startScratchDatabase()
let server = null
let chromium = null
try {
  const seeded = await seedDemo(db.pool, { hours: 3, stepMinutes: 5 })
  server = await startDashboard(db.pool)
  chromium = await launchBrowser()
  const pages = [
    ['overview', '#/'],
    ['monitor', `#/monitors/${seeded.monitors[0].id}`],
    ['run detail', `#/results/${seeded.latestResultId}`],
    ['add monitor', '#/new'],
    ['locations', '#/locations'],
    ['alerts', '#/alerts']
  ]
  const everything = new Map()
  /** @type {{ name: string, js: number, css: number, count: number }[]} */
  const rows = []
  for (const [name, hash] of pages) {
    const files = await transferred(`${server.url}/${hash}`, seeded.apiKey, name === 'monitor' ? '#cdf canvas' : null)
    for (const [url, f] of files) everything.set(url, f)
    rows.push({ name, js: sum(files, 'Script'), css: sum(files, 'Stylesheet'), count: files.size })
  }
  rows.push({ name: 'all pages', js: sum(everything, 'Script'), css: sum(everything, 'Stylesheet'), count: everything.size })

  const kb = (n) => `${(n / 1024).toFixed(1)} KB`
  console.log(`${'page'.padEnd(12)} ${'JS'.padStart(10)} ${'CSS'.padStart(10)} ${'total'.padStart(10)}  files`)
  for (const r of rows) console.log(`${r.name.padEnd(12)} ${kb(r.js).padStart(10)} ${kb(r.css).padStart(10)} ${kb(r.js + r.css).padStart(10)}  ${r.count}`)
  const total = rows[rows.length - 1].js + rows[rows.length - 1].css
  console.log(`\nbudget ${kb(BUDGET)}: ${kb(total)} used (${(total / BUDGET * 100).toFixed(0)}%) — ${total <= BUDGET ? 'within budget' : 'OVER BUDGET'}`)
  console.log('largest files:')
  for (const [url, f] of [...everything].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, 5)) {
    console.log(`  ${kb(f.bytes).padStart(9)}  ${new URL(url).pathname}`)
  }
  process.exitCode = total <= BUDGET ? 0 : 1
} finally {
  await chromium?.close()
  await server?.close()
  await db.stop()
}

/**
 * Scripts and stylesheets a cold load of `url` transfers.
 * @returns {Promise<Map<string, { type: string, bytes: number }>>}
 */
async function transferred (url, apiKey, waitFor) {
  const context = await chromium.browser.createBrowserContext()
  const page = await context.newPage()
  await page.setCacheEnabled(false)
  await useApiKey(page, apiKey)
  const cdp = await page.createCDPSession()
  const types = new Map()
  const files = new Map()
  cdp.on('Network.responseReceived', (e) => types.set(e.requestId, { type: e.type, url: e.response.url }))
  cdp.on('Network.loadingFinished', (e) => {
    const r = types.get(e.requestId)
    if (r && (r.type === 'Script' || r.type === 'Stylesheet')) files.set(r.url, { type: r.type, bytes: e.encodedDataLength })
  })
  await cdp.send('Network.enable')
  await page.goto(url, { waitUntil: 'networkidle0' })
  if (waitFor) await page.waitForSelector(waitFor)
  await context.close()
  return files
}

function sum (files, type) {
  let n = 0
  for (const f of files.values()) if (f.type === type) n += f.bytes
  return n
}
