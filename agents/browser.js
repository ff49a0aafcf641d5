import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import pino from 'pino'
import puppeteer from 'puppeteer-core'

// One Chromium process per flag set (and namespace): the flags decide the
// protocol, so an h3 run and an h2 run can never share a browser, while runs
// of the same mode reuse a warm process instead of paying ~0.5 s of launch.
// Isolation between runs comes from a fresh incognito context per run, not
// from a fresh process.

const NETNS_WRAPPER = fileURLToPath(new URL('../lab/netns-chromium.sh', import.meta.url))
const CLOSE_GRACE_MS = 5000

// Chromium preconnects to a page's origin the moment navigation starts, so
// the request usually finds a socket already connected and Navigation Timing
// reports dns/connect/tls as 0 even on a cold context (seen in most runs
// against the lab origin; the net log shows a PRECONNECT stream job). Turning
// network prediction off (2 = never) puts the connection back into the
// navigation's own timings. There is no command-line switch for it, so it
// goes into the fresh profile's preferences; incognito contexts inherit it.
const PROFILE_PREFERENCES = { net: { network_prediction_options: 2 } }

export class BrowserLaunchError extends Error {
  /**
   * @param {string} message
   * @param {{ flags: string[], netns: string | null, cause?: unknown }} context
   */
  constructor (message, { flags, netns, cause }) {
    super(message, { cause })
    this.name = 'BrowserLaunchError'
    this.flags = flags
    this.netns = netns
  }
}

/**
 * @typedef {{ browser: import('puppeteer-core').Browser, userDataDir: string, closed: Promise<void>, retiring?: boolean }} PooledBrowser
 */

/**
 * @param {{
 *   executablePath?: string,
 *   log?: import('pino').Logger,
 *   dataDir?: string,
 *   launchTimeoutMs?: number,
 *   protocolTimeoutMs?: number
 * }} [opts]
 */
export function createBrowserPool ({
  executablePath = '/usr/bin/chromium', log = pino({ level: 'silent' }), dataDir,
  launchTimeoutMs = 30_000, protocolTimeoutMs = 120_000
} = {}) {
  const profilesDir = dataDir ? path.join(path.resolve(dataDir), 'chromium') : os.tmpdir()
  /** @type {Map<string, Promise<PooledBrowser>>} */
  const browsers = new Map()
  /** @type {Set<PooledBrowser>} */
  const live = new Set()
  let closing = false

  /**
   * @param {string[]} flags
   * @param {string | null} netns
   * @returns {Promise<PooledBrowser>}
   */
  async function launch (flags, netns) {
    await mkdir(profilesDir, { recursive: true })
    const userDataDir = await mkdtemp(path.join(profilesDir, 'h3lens-chromium-'))
    let browser
    try {
      await mkdir(path.join(userDataDir, 'Default'))
      await writeFile(path.join(userDataDir, 'Default', 'Preferences'), JSON.stringify(PROFILE_PREFERENCES))
      browser = await puppeteer.launch({
        // In a namespace, the wrapper execs `ip netns exec <ns> chromium`.
        executablePath: netns ? NETNS_WRAPPER : executablePath,
        env: netns ? { ...process.env, H3LENS_NETNS: netns, H3LENS_CHROMIUM: executablePath } : process.env,
        args: [...flags], // puppeteer edits the array it is given
        headless: true,
        pipe: true, // no DevTools port for anything else on the host to reach
        userDataDir,
        timeout: launchTimeoutMs,
        protocolTimeout: protocolTimeoutMs,
        defaultViewport: { width: 1366, height: 768 },
        // The agent's entry file owns signal handling and closes the pool;
        // puppeteer's own exit hook still kills browsers if the process ends.
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false
      })
    } catch (/** @type {any} */ err) {
      await rm(userDataDir, { recursive: true, force: true, maxRetries: 3 })
      throw new BrowserLaunchError(`chromium did not start: ${err.message}`, { flags, netns, cause: err })
    }
    const pid = browser.process()?.pid
    /** @type {PooledBrowser} */
    const entry = {
      browser,
      userDataDir,
      closed: (browser.connected ? new Promise((resolve) => browser.once('disconnected', resolve)) : Promise.resolve())
        .then(() => waitForExit(browser))
        .then(() => rm(userDataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }))
        .catch((err) => log.warn({ err, userDataDir }, 'removing a browser profile failed'))
    }
    live.add(entry)
    entry.closed.finally(() => live.delete(entry))
    browser.once('disconnected', () => {
      if (!closing && !entry.retiring) log.warn({ browserPid: pid, flags, netns }, 'browser disconnected; it will be replaced on next use')
    })
    log.info({ browserPid: pid, flags, netns }, 'browser launched')
    return entry
  }

  /**
   * The browser for this flag set, launching (or replacing a dead) one as needed.
   * @param {{ flags: string[], netns?: string | null }} spec
   * @returns {Promise<import('puppeteer-core').Browser>}
   */
  async function acquire ({ flags, netns = null }) {
    const key = JSON.stringify([netns, flags])
    // Two rounds at most: a browser found dead is replaced once, and a
    // replacement that is dead on arrival is an error, not a loop.
    for (let attempt = 0; attempt < 2; attempt++) {
      if (closing) throw new Error('browser pool is closed')
      let pending = browsers.get(key)
      if (!pending) {
        pending = launch(flags, netns)
        browsers.set(key, pending)
        pending.catch(() => { if (browsers.get(key) === pending) browsers.delete(key) })
      }
      const entry = await pending
      if (entry.browser.connected) return entry.browser
      if (browsers.get(key) === pending) browsers.delete(key)
      await closeEntry(entry)
    }
    throw new BrowserLaunchError('chromium disconnected right after launch', { flags, netns })
  }

  /**
   * A browser of its own for one use, closed afterwards: a net log
   * (--log-net-log) is complete only once its browser has exited, and its
   * flags are unique to the run anyway.
   * @template T
   * @param {{ flags: string[], netns?: string | null }} spec
   * @param {(browser: import('puppeteer-core').Browser) => Promise<T>} fn
   * @returns {Promise<T>}
   */
  async function withDedicated ({ flags, netns = null }, fn) {
    if (closing) throw new Error('browser pool is closed')
    const entry = await launch(flags, netns)
    try {
      return await fn(entry.browser)
    } finally {
      entry.retiring = true
      await closeEntry(entry)
    }
  }

  /** Close every browser and remove their profiles. */
  async function close () {
    closing = true
    const pending = [...browsers.values()]
    browsers.clear()
    const launched = await Promise.allSettled(pending)
    for (const r of launched) if (r.status === 'fulfilled') live.add(r.value)
    await Promise.all([...live].map(closeEntry))
  }

  return { acquire, withDedicated, close }
}

/** @param {PooledBrowser} entry */
async function closeEntry ({ browser, closed }) {
  let timer
  const graceOver = new Promise((resolve) => { timer = setTimeout(resolve, CLOSE_GRACE_MS) })
  await Promise.race([browser.close().catch(() => {}), graceOver])
  clearTimeout(timer)
  // Whatever did not exit in time is killed: no Chromium outlives its pool.
  const proc = browser.process()
  if (proc && proc.exitCode === null && proc.signalCode === null) {
    // Chromium is started in its own process group; take its helpers too.
    try { process.kill(-(/** @type {number} */ (proc.pid)), 'SIGKILL') } catch { proc.kill('SIGKILL') }
  }
  await closed
}

/** @param {import('puppeteer-core').Browser} browser */
async function waitForExit (browser) {
  const proc = browser.process()
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return
  await new Promise((resolve) => proc.once('exit', resolve))
}
