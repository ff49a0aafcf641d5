import { mkdir, mkdtemp, readdir, readlink, rm, stat, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import pino from 'pino'
import puppeteer from 'puppeteer-core'
import { InfrastructureError, markUnanswering } from '../faults.js'
import { isAlive } from '../../lib/runtime/instance.js'

// One Chromium process per flag set (and namespace): the flags decide the
// protocol, so an h3 run and an h2 run can never share a browser, while runs
// of the same mode reuse a warm process instead of paying ~0.5 s of launch.
// Isolation between runs comes from a fresh incognito context per run, not
// from a fresh process.
//
// A fresh context's first page costs a new renderer process (site isolation
// gives each context its own): 100-350 ms on two busy cores, more than the
// lab's 15 KB page takes to load. So the pool keeps one spare per browser,
// a context with a blank page that has never navigated, prepared by
// settle() between rounds (while the agent submits results), and a run
// takes it instead of making one. Contexts a run is done with are closed by
// settle() too. Neither happens while a run is measuring: freshPage() waits
// for a settle under way, so preparing never competes with a page load for
// the CPU. A spare is as cold as a context made on the spot: it has no
// cache, no cookies and no connections (nothing was fetched in it), and an
// incognito context's network state is its own, never shared with another
// context of the same browser.

// Contexts left to close at most; beyond, a run closes the oldest itself.
const MAX_RETIRED = 8

// A profile folder older than this that no running Chromium holds was left
// by a pool whose process was killed outright (kill -9): removed when the
// next pool on the same data dir makes its first profile.
const STALE_PROFILE_MS = 10 * 60_000
const PROFILE_PREFIX = 'h3lens-chromium-'

const NETNS_WRAPPER = fileURLToPath(new URL('../../lab/netns-chromium.sh', import.meta.url))
const CLOSE_GRACE_MS = 5000

// Chromium preconnects to a page's origin the moment navigation starts, so
// the request usually finds a socket already connected and Navigation Timing
// reports dns/connect/tls as 0 even on a cold context (seen in most runs
// against the lab origin; the net log shows a PRECONNECT stream job). Turning
// network prediction off (2 = never) puts the connection back into the
// navigation's own timings. There is no command-line switch for it, so it
// goes into the fresh profile's preferences; incognito contexts inherit it.
const PROFILE_PREFERENCES = { net: { network_prediction_options: 2 } }

/** The browser did not start: the agent's failure, never the page's. */
export class BrowserLaunchError extends InfrastructureError {
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
 * @typedef {{ flags: string[], netns?: string | null, localState?: Record<string, any> | null }} BrowserSpec
 * netns: the network namespace Chromium runs in; localState: browser-wide
 * preferences that have no switch (secure DNS, agents/target-guard.js)
 * @typedef {{ browser: import('puppeteer-core').Browser, userDataDir: string, closed: Promise<void>, retiring?: boolean }} PooledBrowser
 * @typedef {{ context: import('puppeteer-core').BrowserContext, page: import('puppeteer-core').Page }} FreshPage
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
  /** @type {Set<import('puppeteer-core').Browser>} browsers acquire() handed out (no dedicated ones) */
  const pooled = new Set()
  /** @type {Map<import('puppeteer-core').Browser, Promise<FreshPage | null>>} */
  const spares = new Map()
  /** @type {Set<import('puppeteer-core').Browser>} browsers a run took a context of since the last settle */
  const used = new Set()
  /** @type {import('puppeteer-core').BrowserContext[]} */
  const retired = []
  /** @type {Promise<void>} */
  let settling = Promise.resolve()
  let closing = false
  /** @type {Promise<void> | null} */
  let swept = null

  /**
   * @param {string[]} flags
   * @param {string | null} netns
   * @param {Record<string, any> | null} localState browser-wide preferences (the profile's "Local State")
   * @param {string | null} [profile] a profile the caller made (newProfile) and keeps
   *   across launches; by default each launch gets a fresh one, removed when it closes
   * @param {boolean} [oneUse] a browser for one use (withDedicated), not the pool's
   * @returns {Promise<PooledBrowser>}
   */
  async function launch (flags, netns, localState, profile = null, oneUse = false) {
    const userDataDir = profile ?? await newProfile()
    let browser
    try {
      // Written at every launch: Chromium rewrites the file as it exits.
      if (localState) await writeFile(path.join(userDataDir, 'Local State'), JSON.stringify(localState))
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
        // Popups blocked, as in a user's Chromium (puppeteer lets them all
        // open): a window a page opens while it loads shares its renderer,
        // and a dialog in it held the page's load until the page timeout.
        ignoreDefaultArgs: ['--disable-popup-blocking'],
        // The agent's entry file owns signal handling and closes the pool;
        // puppeteer's own exit hook still kills browsers if the process ends.
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false
      })
    } catch (/** @type {any} */ err) {
      if (!profile) await rm(userDataDir, { recursive: true, force: true, maxRetries: 3 })
      throw new BrowserLaunchError(`chromium did not start: ${err.message}`, { flags, netns, cause: err })
    }
    const pid = browser.process()?.pid
    /** @type {PooledBrowser} */
    const entry = {
      browser,
      userDataDir,
      closed: (browser.connected ? new Promise((resolve) => browser.once('disconnected', resolve)) : Promise.resolve())
        .then(() => waitForExit(browser))
        .then(() => profile ? undefined : rm(userDataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }))
        .catch((err) => log.warn({ err, userDataDir }, 'removing a browser profile failed'))
    }
    live.add(entry)
    entry.closed.finally(() => live.delete(entry))
    browser.once('disconnected', () => {
      if (!closing && !entry.retiring) log.warn({ browserPid: pid, flags, netns }, 'browser disconnected; it will be replaced on next use')
    })
    // A pooled browser is launched once for many runs; one for a single use
    // (a net log, the auto arm's visits) comes and goes with every round.
    log[oneUse ? 'debug' : 'info']({ browserPid: pid, flags, netns }, 'browser launched')
    return entry
  }

  /**
   * The browser for this flag set, launching (or replacing a dead) one as needed.
   * @param {BrowserSpec} spec
   * @returns {Promise<import('puppeteer-core').Browser>}
   */
  async function acquire ({ flags, netns = null, localState = null }) {
    const key = JSON.stringify([netns, flags, localState])
    // Two rounds at most: a browser found dead is replaced once, and a
    // replacement that is dead on arrival is an error, not a loop.
    for (let attempt = 0; attempt < 2; attempt++) {
      if (closing) throw new Error('browser pool is closed')
      let pending = browsers.get(key)
      if (!pending) {
        pending = launch(flags, netns, localState)
        browsers.set(key, pending)
        pending.catch(() => { if (browsers.get(key) === pending) browsers.delete(key) })
      }
      const entry = await pending
      // A browser whose process has exited is dead though its DevTools pipe
      // may not have said so yet (killed for not answering a moment ago).
      const proc = entry.browser.process()
      const exited = proc !== null && (proc.exitCode !== null || proc.signalCode !== null)
      if (entry.browser.connected && !exited) {
        if (!pooled.has(entry.browser)) {
          pooled.add(entry.browser)
          entry.browser.once('disconnected', () => { pooled.delete(entry.browser); spares.delete(entry.browser) })
        }
        return entry.browser
      }
      if (browsers.get(key) === pending) browsers.delete(key)
      await closeEntry(entry)
    }
    throw new BrowserLaunchError('chromium disconnected right after launch', { flags, netns })
  }

  /**
   * A browser of its own for one use, closed afterwards: a net log
   * (--log-net-log) is complete only once its browser has exited, and its
   * flags are unique to the run anyway.
   * With `profile` (from newProfile) the browser starts on that profile,
   * which outlives it: a second launch on it finds what the first learnt.
   * @template T
   * @param {BrowserSpec & { profile?: string | null }} spec
   * @param {(browser: import('puppeteer-core').Browser) => Promise<T>} fn
   * @returns {Promise<T>}
   */
  async function withDedicated ({ flags, netns = null, localState = null, profile = null }, fn) {
    if (closing) throw new Error('browser pool is closed')
    const entry = await launch(flags, netns, localState, profile, true)
    try {
      return await fn(entry.browser)
    } finally {
      entry.retiring = true
      await closeEntry(entry)
    }
  }

  /**
   * A context of its own and a blank page in it, for one run: the spare
   * settle() prepared for this browser if there is one, else made now.
   * Waits for a settle under way first.
   * @param {import('puppeteer-core').Browser} browser
   * @returns {Promise<FreshPage & { prepared: boolean }>} prepared: it was the spare
   */
  async function freshPage (browser) {
    await settling
    used.add(browser)
    const spare = spares.get(browser)
    spares.delete(browser)
    const ready = spare ? await spare : null
    if (ready && browser.connected && !ready.page.isClosed()) return { ...ready, prepared: true }
    if (ready) retire(ready.context)
    return { ...(await newContextPage(browser)), prepared: false }
  }

  /**
   * A context the caller is done with; settle() closes it. Off the run's
   * path, but never left to pile up: beyond MAX_RETIRED the oldest are
   * closed at once.
   * @param {import('puppeteer-core').BrowserContext} context
   * @returns {Promise<void>}
   */
  async function retire (context) {
    retired.push(context)
    if (retired.length > MAX_RETIRED) await closeContexts(retired.splice(0, retired.length - MAX_RETIRED))
  }

  /**
   * Close the retired contexts and prepare a spare for every pooled browser
   * a run used since the last settle (the browsers the next round of the
   * same monitor will ask for; one that sits unused keeps at most the one
   * spare it has): the work a run would otherwise do on its own path. Call
   * it when no run is measuring (the agent calls it when a round's loads
   * are done); the next freshPage() waits for it.
   * @returns {Promise<void>}
   */
  function settle () {
    settling = settling.then(async () => {
      if (closing) return
      /** @type {Promise<unknown>[]} */
      const work = [closeContexts(retired.splice(0))]
      const wanted = [...used].filter((b) => pooled.has(b))
      used.clear()
      for (const browser of wanted) {
        if (spares.has(browser) || !browser.connected) continue
        const spare = newContextPage(browser).catch((err) => {
          log.warn({ err: err.message }, 'preparing a spare context failed; the next run makes its own')
          return null
        })
        spares.set(browser, spare)
        work.push(spare)
      }
      await Promise.all(work)
    })
    return settling
  }

  /** Close every browser and remove their profiles. */
  async function close () {
    closing = true
    await settling
    spares.clear()
    retired.length = 0
    const pending = [...browsers.values()]
    browsers.clear()
    const launched = await Promise.allSettled(pending)
    for (const r of launched) if (r.status === 'fulfilled') live.add(r.value)
    await Promise.all([...live].map(closeEntry))
  }

  /**
   * @param {import('puppeteer-core').BrowserContext[]} contexts
   */
  async function closeContexts (contexts) {
    await Promise.all(contexts.map((c) => c.close().catch((err) => {
      if (c.browser().connected) log.warn({ err: err.message }, 'closing a browser context failed')
    })))
  }

  /**
   * A new, empty browser profile with the measurement preferences, for
   * launches that share it (withDedicated's `profile`). The caller removes
   * it (removeProfile) when done.
   * @returns {Promise<string>} its folder
   */
  async function newProfile () {
    await mkdir(profilesDir, { recursive: true })
    if (dataDir) {
      swept ??= removeStaleProfiles(profilesDir).then((n) => { if (n) log.info({ removed: n, dir: profilesDir }, 'removed browser profiles an earlier run left behind') })
      await swept
    }
    const userDataDir = await mkdtemp(path.join(profilesDir, PROFILE_PREFIX))
    await mkdir(path.join(userDataDir, 'Default'))
    await writeFile(path.join(userDataDir, 'Default', 'Preferences'), JSON.stringify(PROFILE_PREFERENCES))
    return userDataDir
  }

  return { browserName: /** @type {const} */ ('chromium'), acquire, withDedicated, freshPage, retire, settle, close, newProfile, removeProfile, forgetCache }
}

/**
 * @param {import('puppeteer-core').Browser} browser
 * @returns {Promise<FreshPage>}
 */
async function newContextPage (browser) {
  const context = await browser.createBrowserContext()
  try {
    return { context, page: await context.newPage() }
  } catch (err) {
    await context.close().catch(() => {})
    throw err
  }
}

/** A profile's HTTP cache folders (relative to its Default folder), removed between the auto arm's visits. */
export const CACHE_FOLDERS = Object.freeze(['Cache', 'Code Cache'])

/**
 * Remove the HTTP cache of a stopped browser's profile, keeping the rest
 * (its "Network Persistent State": the Alt-Svc and broken alternatives it
 * learnt; agents/visits.js).
 * @param {string} profile
 */
async function forgetCache (profile) {
  await Promise.all(CACHE_FOLDERS.map((f) => rm(path.join(profile, 'Default', f), { recursive: true, force: true, maxRetries: 3 })))
}

/**
 * Remove the profiles in `dir` that no Chromium holds (its SingletonLock
 * names a live process while one runs on the profile) and that nothing has
 * touched for STALE_PROFILE_MS.
 * @param {string} dir
 * @returns {Promise<number>} how many were removed
 */
async function removeStaleProfiles (dir) {
  let removed = 0
  for (const name of (await readdir(dir).catch(() => [])).filter((n) => n.startsWith(PROFILE_PREFIX))) {
    const folder = path.join(dir, name)
    try {
      if (Date.now() - (await stat(folder)).mtimeMs < STALE_PROFILE_MS) continue
      // "<host>-<pid>"
      const holder = Number((await readlink(path.join(folder, 'SingletonLock')).catch(() => '')).split('-').pop())
      if (holder > 0 && isAlive(holder)) continue
      await rm(folder, { recursive: true, force: true, maxRetries: 3 })
      removed++
    } catch {
      // gone meanwhile, or not ours to remove: left as it is
    }
  }
  return removed
}

/**
 * Remove a profile newProfile made, once no browser runs on it.
 * @param {string} userDataDir
 */
async function removeProfile (userDataDir) {
  await rm(userDataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
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
    // A run it was in says why it ended (agents/faults.js): not a crash.
    markUnanswering(browser, `no answer to closing in ${CLOSE_GRACE_MS / 1000} s`)
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
