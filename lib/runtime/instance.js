// One machine, several h3lens processes: what one process holds (a data dir,
// a port) is checked before anything starts, so a second `h3lens start`
// stops at once with a message naming what is taken and how to pick another,
// instead of failing halfway or sharing a lab it would later tear down.
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'

/** A failure the CLI prints as its message alone. */
export class InUseError extends Error {
  /** @param {string} message */
  constructor (message) {
    super(message)
    this.name = 'InUseError'
    this.userFacing = true
  }
}

const LOCK_FILE = 'h3lens.pid'

/**
 * Take the data dir for this process (`h3lens start`, `h3lens lab`): the lab
 * state, the local agents' spools and tokens live there and cannot be
 * shared. A lock left by a process that is gone is taken over.
 * @param {string} dataDir
 * @param {string} command what this process is, for the message
 * @returns {() => void} gives the data dir back
 */
export function claimDataDir (dataDir, command) {
  fs.mkdirSync(dataDir, { recursive: true })
  const file = path.join(dataDir, LOCK_FILE)
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, `${process.pid}\n${command}\n`, { flag: 'wx' })
      return () => {
        if (readLock(file)?.pid === process.pid) fs.rmSync(file, { force: true })
      }
    } catch (/** @type {any} */ err) {
      if (err.code !== 'EEXIST') throw err
      const holder = readLock(file)
      if (holder && holder.pid !== process.pid && isAlive(holder.pid)) {
        throw new InUseError(`data dir ${dataDir} is in use by "h3lens ${holder.command}" (pid ${holder.pid}); stop that one, or choose another data dir with --data-dir or H3LENS_DATA_DIR`)
      }
      fs.rmSync(file, { force: true })
    }
  }
  throw new InUseError(`data dir ${dataDir}: another h3lens process is taking it at the same moment; try again`)
}

/**
 * Fail with a message naming the port and the setting that moves it when
 * something already listens on host:port.
 * @param {{ host: string, port: number, what: string, setting: string }} spec
 *   setting: how to choose another, e.g. "--port or PORT"
 */
export async function assertPortFree ({ host, port, what, setting }) {
  const server = net.createServer()
  try {
    await new Promise((resolve, reject) => {
      server.once('error', reject)
      server.listen({ host, port, exclusive: true }, () => resolve(undefined))
    })
  } catch (/** @type {any} */ err) {
    if (err.code === 'EADDRINUSE') throw new InUseError(`port ${port} on ${host} (${what}) is in use by another process; choose another with ${setting}`)
    if (err.code === 'EACCES') throw new InUseError(`port ${port} on ${host} (${what}) needs privileges this process lacks; choose another with ${setting}`)
    throw err
  } finally {
    await new Promise((resolve) => server.close(() => resolve(undefined)))
  }
}

/**
 * A short id for everything this data dir's lab creates on the machine
 * (namespaces, devices): two labs of two data dirs never share a name, and
 * `h3lens lab down` finds a crashed lab of its own data dir again.
 * @param {string} dataDir
 */
export function labPrefix (dataDir) {
  // Device names are "<prefix>-<i>-o" and must fit IFNAMSIZ (15): "h3l" and
  // 5 hex digits (a million ids) keep to the 8 characters lab/netns.js allows.
  return `h3l${createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 5)}`
}

/** @param {string} file */
function readLock (file) {
  try {
    const [pid, command] = fs.readFileSync(file, 'utf8').split('\n')
    const n = Number(pid)
    return Number.isInteger(n) && n > 0 ? { pid: n, command: command || 'start' } : null
  } catch {
    return null
  }
}

/**
 * Whether a process with this pid exists (EPERM: it does, owned by another user).
 * @param {number} pid
 */
export function isAlive (pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch (/** @type {any} */ err) {
    return err.code === 'EPERM'
  }
}
