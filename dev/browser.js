// Chromium to look at the dashboard with, and what every look at one of its
// pages needs: the user's API key, the page's errors, a settled view. Used
// by the UI tests, scripts/screenshots.js, scripts/wpt-screenshot.js and
// the UI benches.
/* global document, window, location, addEventListener -- used inside functions that run in the page */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import puppeteer from 'puppeteer-core'
import { CHROMIUM_FLAGS } from './chromium-flags.js'

export { CHROMIUM_FLAGS }

/** Chromium with a fresh profile, talking to nothing but loopback. */
export async function launchBrowser () {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-ui-chromium-'))
  const browser = await puppeteer.launch({
    executablePath: process.env.H3LENS_CHROMIUM ?? '/usr/bin/chromium',
    args: [...CHROMIUM_FLAGS, `--user-data-dir=${userDataDir}`],
    defaultViewport: { width: 1360, height: 900 }
  })
  return {
    browser,
    async close () {
      await browser.close()
      fs.rmSync(userDataDir, { recursive: true, force: true })
    }
  }
}

/**
 * Store an API key in the dashboard's localStorage before any page script
 * runs, as a user who entered it earlier would have.
 * @param {import('puppeteer-core').Page} page
 * @param {string} key
 */
export function useApiKey (page, key) {
  return page.evaluateOnNewDocument((k) => localStorage.setItem('h3lens.apiKey', k), key)
}

/**
 * Console errors and uncaught exceptions of a page, collected as text.
 * @param {import('puppeteer-core').Page} page
 */
export function collectPageErrors (page) {
  /** @type {string[]} */
  const errors = []
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()} ${m.location()?.url ?? ''}`) })
  page.on('pageerror', (err) => errors.push(`pageerror: ${err instanceof Error ? err.message : String(err)}`))
  return errors
}

/**
 * Wait until the current view has rendered: not busy, no skeleton or
 * loading state left.
 * @param {import('puppeteer-core').Page} page
 */
export function waitUntilSettled (page) {
  return page.waitForFunction(() => {
    const main = document.getElementById('view')
    return main?.getAttribute('aria-busy') === 'false' && !main.querySelector('.skeleton, .state.loading')
  }, { timeout: 30000, polling: 'mutation' })
}

/**
 * Do what changes the dashboard's address in the same page (a click, a
 * choice in a menu, a new hash) and wait until the view drawn for the new
 * address has settled. The dashboard draws on `hashchange`, which the
 * browser fires a little after the address changes; until then the page
 * before still looks settled, and a wait for what both pages have ends on
 * the old one. Waiting for the event first (the dashboard's own listener
 * runs before this one and marks the view busy) means the wait after it
 * can only end on the new view. The address must change: this fails when
 * no `hashchange` comes within 15 s.
 * @param {import('puppeteer-core').Page} page
 * @param {() => Promise<unknown>} act
 */
export async function whenRedrawn (page, act) {
  await page.evaluate(() => {
    /** @type {any} */ (window).__h3lensHashChanged = new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), 15000)
      addEventListener('hashchange', () => { clearTimeout(timer); resolve(true) }, { once: true })
    })
  })
  await act()
  if (!(await page.evaluate(() => /** @type {any} */ (window).__h3lensHashChanged))) throw new Error(`the dashboard's address did not change within 15 s (it is ${await page.evaluate(() => location.hash)})`)
  await waitUntilSettled(page)
}

/**
 * Go to another dashboard address in the same page, and wait until the
 * view drawn for it has settled (whenRedrawn).
 * @param {import('puppeteer-core').Page} page
 * @param {string} hash
 */
export function goHash (page, hash) {
  return whenRedrawn(page, () => page.evaluate((h) => { location.hash = h }, hash))
}
