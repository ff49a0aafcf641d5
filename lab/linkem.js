// Builds and runs linkem, the user-space link emulator (lab/linkem/linkem.c),
// and reads its counters.
import { execFile, spawn } from 'node:child_process'
import { readFile, rename, stat, unlink } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const execFileP = promisify(execFile)

export const LINKEM_SOURCE = fileURLToPath(new URL('./linkem/linkem.c', import.meta.url))
export const LINKEM_BINARY = fileURLToPath(new URL('./linkem/linkem', import.meta.url))

/**
 * @typedef {{ in: number, out: number, drop_loss: number, drop_queue: number,
 *   drop_error: number, drop_udp: number, in_flight: number,
 *   late_avg_us: number, late_max_us: number, late_1ms: number }} DirectionStats
 * @typedef {{ seq: number, requests: number, pid: number, seed: string, uptime_ms: number,
 *   final: boolean, down: DirectionStats, up: DirectionStats }} LinkemStats
 * @typedef {{ info?: Function, warn?: Function, error?: Function }} Log
 */

/** @param {string} path */
async function mtimeMs (path) {
  try {
    return (await stat(path)).mtimeMs
  } catch {
    return -1
  }
}

/**
 * Compiles linkem when the binary is missing or older than its source.
 * Compiles to a temporary name and renames, so concurrent callers never
 * run a half-written binary.
 * @param {{ log?: Log }} [options]
 * @returns {Promise<string>} the binary's path
 */
export async function buildLinkem ({ log } = {}) {
  const [src, bin] = await Promise.all([mtimeMs(LINKEM_SOURCE), mtimeMs(LINKEM_BINARY)])
  if (src < 0) throw new Error(`linkem source missing: ${LINKEM_SOURCE}`)
  if (bin >= src) return LINKEM_BINARY
  const tmp = `${LINKEM_BINARY}.tmp-${process.pid}`
  log?.info?.({ source: LINKEM_SOURCE }, 'building linkem')
  try {
    await execFileP('cc', ['-O2', '-Wall', '-o', tmp, LINKEM_SOURCE, '-lm'])
    await rename(tmp, LINKEM_BINARY)
  } catch (/** @type {any} */ err) {
    await unlink(tmp).catch(() => {})
    const detail = err.code === 'ENOENT' ? 'no C compiler "cc" found (install gcc)' : (err.stderr || err.message).trim()
    throw new Error(`cannot build linkem: ${detail}`)
  }
  return LINKEM_BINARY
}

/**
 * Reads the stats file as last written, or null if it does not exist yet.
 * @param {string} statsFile
 * @returns {Promise<LinkemStats | null>}
 */
export async function readLinkemStats (statsFile) {
  let text
  try {
    text = await readFile(statsFile, 'utf8')
  } catch (/** @type {any} */ err) {
    if (err.code === 'ENOENT') return null
    throw err
  }
  return JSON.parse(text)
}

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Asks a running linkem for fresh counters (SIGUSR1) and waits until the
 * stats file shows the snapshot taken for this request: "requests" grows
 * only on SIGUSR1, while "seq" also grows on the periodic writes, which may
 * predate the request.
 * @param {number} pid
 * @param {string} statsFile
 * @param {{ timeoutMs?: number }} [options]
 * @returns {Promise<LinkemStats>}
 */
export async function requestLinkemStats (pid, statsFile, { timeoutMs = 2000 } = {}) {
  const before = (await readLinkemStats(statsFile))?.requests ?? 0
  process.kill(pid, 'SIGUSR1')
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const stats = await readLinkemStats(statsFile)
    if (stats && stats.requests > before) return stats
    await sleep(2)
  }
  throw new Error(`linkem ${pid} did not update ${statsFile} within ${timeoutMs} ms`)
}

/**
 * @typedef {{
 *   pid: number,
 *   statsFile: string,
 *   exited: Promise<{ code: number | null, signal: string | null }>,
 *   readStats: () => Promise<LinkemStats | null>,
 *   stop: () => Promise<LinkemStats | null>
 * }} LinkemHandle
 */

/**
 * Starts linkem and resolves once both TUN devices exist ("ready" on its
 * stdout). Device A is the origin side; A→B is the "down" direction.
 * @param {{
 *   devA: string, devB: string, netnsA?: string, netnsB?: string,
 *   args?: string[], statsFile: string, statsIntervalMs?: number,
 *   dieWithParent?: boolean, realtime?: number | false, readyTimeoutMs?: number, log?: Log
 * }} options
 * @returns {Promise<LinkemHandle>}
 */
export async function startLinkem (options) {
  const { devA, devB, netnsA, netnsB, args = [], statsFile, log } = options
  // SCHED_FIFO priority 10 by default: see the measurements at --realtime in
  // linkem.c. 10 stays below threaded interrupt handlers, which run at 50.
  const { statsIntervalMs = 1000, dieWithParent = true, realtime = 10, readyTimeoutMs = 5000 } = options
  const bin = await buildLinkem({ log })
  const argv = ['--dev-a', devA, '--dev-b', devB]
  if (netnsA) argv.push('--netns-a', netnsA)
  if (netnsB) argv.push('--netns-b', netnsB)
  argv.push('--stats', statsFile, '--stats-interval', String(statsIntervalMs))
  if (dieWithParent) argv.push('--die-with-parent')
  if (realtime) argv.push('--realtime', String(realtime))
  argv.push(...args)

  await unlink(statsFile).catch(() => {})
  // Its own process group: Ctrl-C in a terminal or `kill -TERM -<pgid>`
  // reaches the whole group at once, and a link that went down before the
  // agents had stopped would fail their in-flight page loads. h3lens stops
  // it (stop(), labDown) after the agents; --die-with-parent still ends it
  // if h3lens itself dies.
  const child = spawn(bin, argv, { stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  let stderr = ''
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-4000)
    for (const line of chunk.split('\n').filter(Boolean)) log?.warn?.({ dev: devA }, line)
  })
  // 'close' rather than 'exit': it comes after stderr is drained, so an
  // early failure is reported with linkem's own message.
  const exited = new Promise((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal }))
    child.on('error', () => resolve({ code: null, signal: null }))
  })

  await new Promise((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`linkem ${devA}<->${devB} not ready after ${readyTimeoutMs} ms: ${stderr.trim()}`))
    }, readyTimeoutMs)
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (chunk) => {
      out += chunk
      if (/^ready\b/m.test(out)) {
        clearTimeout(timer)
        resolve(undefined)
      }
    })
    child.on('error', (err) => {
      clearTimeout(timer)
      reject(new Error(`cannot start linkem: ${err.message}`))
    })
    exited.then(({ code, signal }) => {
      clearTimeout(timer)
      reject(new Error(`linkem ${devA}<->${devB} exited (${signal ?? code}) before ready: ${stderr.trim()}`))
    })
  })
  child.stdout.resume()

  // It said ready, so it was spawned and has a pid.
  const pid = /** @type {number} */ (child.pid)
  let running = true
  let stopping = false
  exited.then(({ code, signal }) => {
    running = false
    if (!stopping) log?.error?.({ dev: devA, code, signal, stderr: stderr.trim() }, 'linkem exited unexpectedly; the link is down')
  })
  return {
    pid,
    statsFile,
    exited,
    // Once linkem has exited, its last (final) counters are in the file.
    readStats: async () => running ? requestLinkemStats(pid, statsFile) : readLinkemStats(statsFile),
    async stop () {
      stopping = true
      if (running) {
        child.kill('SIGTERM')
        // linkem exits within one loop iteration; 2 s only guards a hang.
        const timer = setTimeout(() => child.kill('SIGKILL'), 2000)
        await exited
        clearTimeout(timer)
      }
      return readLinkemStats(statsFile)
    }
  }
}
