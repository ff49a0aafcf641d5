// Firefox (Debian's firefox-esr) driven by puppeteer-core over WebDriver
// BiDi. Every run is a browser of its own on a fresh profile, so every run
// is cold: the arm's preferences are the profile's (user.js), and a profile
// holds the HTTP cache, the Alt-Svc it learnt and the connections' state.
// Nothing is pooled: Chromium's pool keeps a warm browser per flag set and
// isolates runs by incognito contexts, but a Firefox run's preferences
// differ by page (the H3 arm maps the page's own origin to HTTP/3), and a
// fresh profile is the isolation the arm's comparison rests on. What that
// costs per run is in docs/BENCHMARKS.md ("Agent throughput"); a fresh
// profile gets Firefox's own start-up files from an earlier run
// (./firefox-seed.js), which halve what a start costs.
//
// Firefox's BiDi server listens on TCP (loopback); it has no pipe as
// Chromium's DevTools does. Inside a lab namespace that loopback is the
// namespace's own, so there Firefox is started through lab/netns-firefox.js,
// which forwards a Unix socket to it.
import { spawn, execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import pino from 'pino'
import puppeteer from 'puppeteer-core'
import { InfrastructureError } from '../faults.js'
import { profileSeed } from './firefox-seed.js'

const execFileAsync = promisify(execFile)
const NETNS_LAUNCHER = fileURLToPath(new URL('../../lab/netns-firefox.js', import.meta.url))
const BIDI_LINE = /^WebDriver BiDi listening on (ws:\/\/[^\s]+)/
const FORWARDED_LINE = /^h3lens: WebDriver BiDi on port (\d+) forwarded to (.+)$/
const CLOSE_GRACE_MS = 5000
// Lines of Firefox's own output kept, to say why a launch failed.
const LOG_TAIL = 20

/** The browser did not start: the agent's failure, never the page's. */
export class FirefoxLaunchError extends InfrastructureError {
  /**
   * @param {string} message
   * @param {{ netns: string | null, output?: string[], cause?: unknown }} context
   */
  constructor (message, { netns, output = [], cause }) {
    super(message, { cause })
    this.name = 'FirefoxLaunchError'
    this.netns = netns
    this.output = output
  }
}

/**
 * @typedef {import('../../lib/measurement/browsers/firefox.js').Prefs} Prefs
 * @typedef {{ name: string, pem: string }} TrustedCa a certificate authority the run's profile trusts (NSS)
 * @typedef {{ prefs: Prefs, trust?: TrustedCa[], netns?: string | null }} FirefoxSpec
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
export function createFirefoxPool ({
  executablePath = '/usr/bin/firefox-esr', log = pino({ level: 'silent' }), dataDir,
  launchTimeoutMs = 60_000, protocolTimeoutMs = 120_000
} = {}) {
  const root = dataDir ? path.join(path.resolve(dataDir), 'firefox') : path.join(os.tmpdir(), 'h3lens-firefox')
  /** @type {Set<{ close: () => Promise<void> }>} */
  const live = new Set()
  let closing = false
  // Firefox's own start-up files, from the first run that ended (./firefox-seed.js).
  const seed = profileSeed({ root, executablePath })

  /**
   * A new profile with the run's preferences and, when given, the
   * authorities it trusts. The caller removes it (removeProfile).
   * @param {{ prefs?: Prefs, trust?: TrustedCa[] }} [spec]
   * @returns {Promise<string>} its folder
   */
  async function newProfile ({ prefs = {}, trust = [] } = {}) {
    await mkdir(root, { recursive: true })
    const dir = await mkdtemp(path.join(root, 'profile-'))
    try {
      await seed.plant(dir)
      await writePrefs(dir, prefs)
      if (trust.length) await trustAuthorities(dir, trust)
    } catch (err) {
      await removeProfile(dir)
      throw new FirefoxLaunchError(`preparing a Firefox profile failed: ${/** @type {Error} */ (err).message}`, { netns: null, cause: err })
    }
    return dir
  }

  /**
   * A browser of its own for one use, closed afterwards. With `profile`
   * (from newProfile) it starts on that profile, which outlives it: a
   * second launch on it finds what the first learnt (the preferences are
   * written again: Firefox rewrites prefs.js as it exits, never user.js).
   * @template T
   * @param {FirefoxSpec & { profile?: string | null }} spec
   * @param {(browser: import('puppeteer-core').Browser) => Promise<T>} fn
   * @returns {Promise<T>}
   */
  async function withDedicated ({ prefs, trust = [], netns = null, profile = null }, fn) {
    if (closing) throw new Error('browser pool is closed')
    const dir = profile ?? await newProfile({ prefs, trust })
    if (profile) {
      await writePrefs(profile, prefs)
      if (trust.length && !existsSync(path.join(profile, 'cert9.db'))) await trustAuthorities(profile, trust)
    }
    let running = null
    try {
      running = await launch(dir, netns ?? null)
      return await fn(running.browser)
    } finally {
      await running?.close()
      if (!profile) {
        if (running) await seed.harvest(dir).catch(() => {})
        await removeProfile(dir)
      }
    }
  }

  /**
   * @param {string} profile
   * @param {string | null} netns
   */
  async function launch (profile, netns) {
    const args = ['--headless', '--no-remote', '--profile', profile, '--remote-debugging-port=0', 'about:blank']
    const env = {
      ...process.env,
      // Firefox keeps nothing of its own outside the run's profile.
      HOME: path.join(root, 'home'),
      MOZ_CRASHREPORTER_DISABLE: '1',
      MOZ_DISABLE_AUTO_SAFE_MODE: '1'
    }
    await mkdir(env.HOME, { recursive: true })
    let socketDir = null
    /** @type {import('node:child_process').ChildProcess} */
    let child
    if (netns) {
      // A Unix socket's path has room for 107 bytes: a short folder of its own.
      socketDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-bidi-'))
      child = spawn('ip', ['netns', 'exec', netns, process.execPath, NETNS_LAUNCHER, path.join(socketDir, 's'), executablePath, ...args],
        { detached: true, stdio: ['ignore', 'ignore', 'pipe'], env })
    } else {
      child = spawn(executablePath, args, { detached: true, stdio: ['ignore', 'ignore', 'pipe'], env })
    }
    /** @type {string[]} */
    const output = []
    const exited = new Promise((resolve) => {
      child.once('exit', resolve)
      child.once('error', resolve)
    })
    const killGroup = () => {
      try { process.kill(-(/** @type {number} */ (child.pid)), 'SIGKILL') } catch {}
    }
    process.on('exit', killGroup)
    /** @type {Promise<{ url: string, host: string | null }>} */
    const endpoint = new Promise((resolve, reject) => {
      const lines = createInterface({ input: /** @type {import('node:stream').Readable} */ (child.stderr) })
      lines.on('line', (line) => {
        output.push(line)
        if (output.length > LOG_TAIL) output.shift()
        const forwarded = netns && FORWARDED_LINE.exec(line)
        // Firefox refuses a connection whose Host is not its own loopback address.
        if (forwarded) resolve({ url: `ws+unix:${forwarded[2]}:/session`, host: `127.0.0.1:${forwarded[1]}` })
        const direct = !netns && BIDI_LINE.exec(line)
        if (direct) resolve({ url: `${direct[1]}/session`, host: null })
      })
      child.once('error', reject)
      child.once('exit', (code, signal) => reject(new Error(`firefox exited before it listened (${signal ?? `status ${code}`})`)))
    })
    let timer
    const timeout = new Promise((resolve, reject) => { timer = setTimeout(() => reject(new Error(`firefox did not listen within ${launchTimeoutMs} ms`)), launchTimeoutMs) })
    /** @type {import('puppeteer-core').Browser} */
    let browser
    const stop = async () => {
      const graceOver = new Promise((resolve) => setTimeout(resolve, CLOSE_GRACE_MS).unref())
      await Promise.race([exited, graceOver])
      killGroup()
      await exited
      process.off('exit', killGroup)
      if (socketDir) await rm(socketDir, { recursive: true, force: true })
    }
    try {
      const { url, host } = /** @type {{ url: string, host: string | null }} */ (await Promise.race([endpoint, timeout]))
      browser = await Promise.race([puppeteer.connect({
        browserWSEndpoint: url,
        headers: host ? { Host: host } : {},
        protocol: 'webDriverBiDi',
        protocolTimeout: protocolTimeoutMs,
        defaultViewport: { width: 1366, height: 768 }
      }), timeout])
    } catch (/** @type {any} */ err) {
      killGroup()
      await stop()
      throw new FirefoxLaunchError(`firefox did not start: ${err.message}${output.length ? ` (${output.slice(-3).join(' | ')})` : ''}`, { netns, output, cause: err })
    } finally {
      clearTimeout(timer)
    }
    const entry = {
      browser,
      async close () {
        live.delete(entry)
        await Promise.race([browser.close().catch(() => {}), new Promise((resolve) => setTimeout(resolve, CLOSE_GRACE_MS).unref())])
        await stop()
      }
    }
    live.add(entry)
    log.debug({ browserPid: child.pid, netns }, 'firefox launched')
    return entry
  }

  /** Close every browser still running. */
  async function close () {
    closing = true
    await Promise.all([...live].map((e) => e.close()))
  }

  return {
    browserName: /** @type {const} */ ('firefox'),
    withDedicated,
    newProfile,
    removeProfile,
    forgetCache,
    /** Nothing to prepare between rounds: every run starts its own browser. */
    settle: async () => {},
    close
  }
}

/**
 * Write the preferences into the profile's user.js, which Firefox reads at
 * every start and never rewrites. A download (a monitored URL that answers
 * with one) goes into the profile, removed with it, not into the home
 * folder that every run shares; it is no preference of the arm, so no
 * result records it.
 * @param {string} dir
 * @param {Prefs} prefs
 */
async function writePrefs (dir, prefs) {
  const downloads = { 'browser.download.folderList': 2, 'browser.download.dir': path.join(dir, 'downloads') }
  const lines = Object.entries({ ...prefs, ...downloads }).map(([k, v]) => `user_pref(${JSON.stringify(k)}, ${JSON.stringify(v)});`)
  await writeFile(path.join(dir, 'user.js'), lines.join('\n') + '\n')
}

/**
 * Trust certificate authorities in the profile's own NSS database (NSS's
 * certutil, Debian package libnss3-tools): a lab's, or the private-target
 * guard resolver's. Nothing outside the run's profile trusts them.
 * @param {string} dir
 * @param {TrustedCa[]} trust
 */
async function trustAuthorities (dir, trust) {
  const db = `sql:${dir}`
  await execFileAsync('certutil', ['-N', '-d', db, '--empty-password'], { timeout: 30_000 })
  for (const [i, ca] of trust.entries()) {
    const file = path.join(dir, `ca-${i}.pem`)
    await writeFile(file, ca.pem)
    await execFileAsync('certutil', ['-A', '-d', db, '-n', ca.name, '-t', 'C,,', '-i', file], { timeout: 30_000 })
    await rm(file, { force: true })
  }
}

/**
 * Remove the HTTP cache of a stopped browser's profile (cache2; with a
 * profile folder of its own, Firefox keeps its cache there), keeping the
 * rest: among it AlternateServices.bin, where Firefox keeps what it learnt
 * of origins' Alt-Svc across restarts (agents/visits.js).
 * @param {string} profile
 */
async function forgetCache (profile) {
  await rm(path.join(profile, 'cache2'), { recursive: true, force: true, maxRetries: 3 })
}

/**
 * Remove a profile newProfile made, once no browser runs on it.
 * @param {string} dir
 */
async function removeProfile (dir) {
  await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
}

/**
 * Firefox's version, as `firefox-esr --version` prints it ("Mozilla Firefox 153.7.0esr").
 * @param {string} executable
 */
export async function firefoxVersion (executable) {
  const { stdout } = await execFileAsync(executable, ['--version'], { timeout: 10_000, env: { ...process.env, MOZ_CRASHREPORTER_DISABLE: '1' } })
  return stdout.trim()
}
