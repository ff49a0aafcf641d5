#!/usr/bin/env node
// Screenshots of every dashboard page, for the docs: a throw-away database
// with a day of realistic results, the API on a free loopback port, and
// Chromium. Writes docs/screenshots/<page>.png and <page>-dark.png; a
// section shown on its own (users-get: a monitor page's "As users get it")
// is cut out of its page.
//
//   node scripts/screenshots.js [--out docs/screenshots] [--only real-users,monitor]
import fs from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { seedDemo } from '../dev/demo-data.js'
import { startDashboard } from '../dev/dashboard.js'
import { startScratchDatabase } from '../dev/scratch-db.js'
import { launchBrowser, collectPageErrors, useApiKey, waitUntilSettled } from '../dev/browser.js'
import { seedAlerts } from '../dev/demo-alerts.js'
import { seedAutoArm } from '../dev/demo-auto-arm.js'
import { seedRealUsers } from '../dev/demo-real-users.js'

const { values } = parseArgs({ options: { out: { type: 'string', default: 'docs/screenshots' }, only: { type: 'string' } } })
const only = values.only ? new Set(values.only.split(',')) : null
const out = path.resolve(values.out)
fs.mkdirSync(out, { recursive: true })

const db = await startScratchDatabase()
let server = null
let chromium = null
let failed = false
try {
  console.log('seeding a day of results…')
  const seeded = await seedDemo(db.pool, { hours: 24, stepMinutes: 5 })
  await seedAlerts(db.pool, { hours: 24 })
  // After the alerts are evaluated, so the alerts page shows what it did before.
  const auto = await seedAutoArm(db.pool, seeded, { hours: 24, stepMinutes: 5 })
  const site = await seedRealUsers(db.pool, { origin: new URL(seeded.monitors[0].url).origin, hours: 24, views: 8000, monitor: seeded.monitors[0] })
  server = await startDashboard(db.pool)
  chromium = await launchBrowser()
  /** @type {[string, string, string?][]} name, route, and the section to cut out */
  const all = [
    // Load time shows every verdict: H3 loses on loopback for the 1 MB page.
    ['overview', '#/?window=24h&metric=load'],
    ['monitor', `#/monitors/${seeded.monitors[1].id}?window=24h&metric=ttfb`],
    ['users-get', `#/monitors/${auto.monitor.id}?window=24h&metric=ttfb`, '#users-get'],
    ['run-detail', `#/results/${seeded.latestResultId}`],
    ['add-monitor', '#/new'],
    ['locations', '#/locations'],
    ['alerts', '#/alerts'],
    ['real-users', `#/rum/${site.id}?window=24h`]
  ]
  const pages = all.filter(([name]) => !only || only.has(name))
  for (const scheme of ['light', 'dark']) {
    for (const [name, hash, part] of pages) {
      const page = await chromium.browser.newPage()
      const errors = collectPageErrors(page)
      await useApiKey(page, seeded.apiKey)
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: scheme }])
      await page.goto(`${server.url}/${hash}`, { waitUntil: 'networkidle0' })
      await waitUntilSettled(page)
      // Charts draw after their module loads and they know their width.
      if (name === 'monitor') await page.waitForSelector('#cdf canvas')
      if (name === 'real-users') await page.waitForSelector('#rum-trend canvas')
      await page.evaluate('document.activeElement?.blur()')
      const file = path.join(out, `${name}${scheme === 'dark' ? '-dark' : ''}.png`)
      const section = part ? await page.$(part) : null
      if (part && !section) throw new Error(`${name}: ${part} is not on the page`)
      // A section scrolled into view would have the sticky header over its top.
      if (section) await page.$eval('header', (e) => { e.style.position = 'static' })
      await (section ?? page).screenshot({ path: file, ...(section ? {} : { fullPage: true }) })
      console.log(`wrote ${path.relative(process.cwd(), file)}`)
      if (errors.length) {
        failed = true
        console.error(`${name} (${scheme}): ${errors.join('\n  ')}`)
      }
      await page.close()
    }
  }
} finally {
  await chromium?.close()
  await server?.close()
  await db.stop()
}
process.exitCode = failed ? 1 : 0
