// Looking at the dashboard in a test: a route opened as a user with a key,
// failing on any console error, and the ink a chart drew. The browser, the
// dashboard and its demo data are in dev/ (browser.js, dashboard.js,
// demo-data.js).
/* global document, getComputedStyle -- used inside functions that run in the page */
import assert from 'node:assert/strict'
import { collectPageErrors, useApiKey, waitUntilSettled } from '../../dev/browser.js'

/**
 * Open a dashboard route as a user whose API key is stored, and wait until
 * it has settled. Console errors and uncaught exceptions are collected;
 * `done` closes the page and asserts there were none but those `allow`ed.
 * @param {any} chromium from launchBrowser (its pages untyped, as the tests use them)
 * @param {{ url: string }} server
 * @param {string} key
 * @param {string} hash
 * @param {{ allow?: RegExp[], scheme?: 'light' | 'dark', width?: number }} [opts] scheme: the colour scheme the user's
 *   system prefers; width: the window's, in CSS pixels (a phone's is about 390)
 */
export async function openRoute (chromium, server, key, hash, { allow = [], scheme, width } = {}) {
  const page = await chromium.browser.newPage()
  if (width) await page.setViewport({ width, height: 844 })
  const errors = collectPageErrors(page)
  await useApiKey(page, key)
  if (scheme) await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: scheme }])
  await page.goto(`${server.url}/${hash}`, { waitUntil: 'networkidle0' })
  await waitUntilSettled(page)
  return {
    page,
    async done () {
      const unexpected = errors.filter((e) => !allow.some((re) => re.test(e)))
      await page.close()
      assert.deepEqual(unexpected, [], 'no console errors or uncaught exceptions')
    }
  }
}

/** Counts canvas pixels close to a CSS colour variable (a series' stroke). */
/**
 * @param {import('puppeteer-core').Page} page
 * @param {string} selector canvases
 * @param {string} cssVar such as --h3
 */
export function inkOf (page, selector, cssVar) {
  return page.$$eval(selector, (canvases, name) => {
    const hex = getComputedStyle(document.documentElement).getPropertyValue(name).trim()
    const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16))
    return canvases.map((el) => {
      const c = /** @type {HTMLCanvasElement} */ (el)
      const { data } = /** @type {CanvasRenderingContext2D} */ (c.getContext('2d')).getImageData(0, 0, c.width, c.height)
      let near = 0
      let painted = 0
      for (let i = 0; i < data.length; i += 4) {
        if (data[i + 3] === 0) continue
        painted++
        if (Math.abs(data[i] - want[0]) + Math.abs(data[i + 1] - want[1]) + Math.abs(data[i + 2] - want[2]) < 60) near++
      }
      return { width: c.width, height: c.height, painted, near }
    })
  }, cssVar)
}
