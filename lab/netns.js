// The lab's network topology: one origin namespace and one namespace per
// emulated location, each joined to the origin by its own emulated link.
//
//   <prefix>-origin   [<prefix>-<i>-o 10.213.<i>.1/30]
//        |  linkem (or a netem-shaped veth pair), "down" = toward the location
//   <prefix>-<name>   [<prefix>-<i>-l 10.213.<i>.2/30]
//
// Addresses exist only inside these namespaces, so nothing in the root
// namespace changes and two labs with different prefixes can run side by
// side with the same addresses.
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, unlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { startLinkem } from './linkem.js'
import { DEFAULT_PROFILES, profileToLinkemArgs, profileToNetemArgs, profileToTcFilterArgs, validateProfile } from './profiles.js'

const execFileP = promisify(execFile)

export const DEFAULT_PREFIX = 'h3lens'
export const DEFAULT_RUN_DIR = path.resolve('.h3lens', 'run')
// One /24 per location gives 254 locations; nobody needs more than 64.
const MAX_LOCATIONS = 64

// linkems this process started, by pid: labDown stops these through their
// handle, so their exit is not reported as a link failure.
/** @type {Map<number, import('./linkem.js').LinkemHandle>} */
const ownLinks = new Map()

/**
 * @typedef {import('./profiles.js').Profile} Profile
 * @typedef {import('./linkem.js').LinkemStats} LinkemStats
 * @typedef {{ info?: Function, warn?: Function, error?: Function }} Log
 * @typedef {{
 *   name: string, region: string | undefined, ns: string, device: string,
 *   address: string, originAddress: string, profile: Profile,
 *   readStats: (() => Promise<LinkemStats | null>) | null
 * }} LabLocation
 * @typedef {{ originNs: string, locations: LabLocation[], down: () => Promise<void> }} Lab
 */

/**
 * The argv prefix that runs a command inside a namespace.
 * @param {string} ns
 * @returns {string[]}
 */
export function netnsExec (ns) {
  return ['ip', 'netns', 'exec', ns]
}

/**
 * @param {string} cmd
 * @param {string[]} args
 */
async function run (cmd, args) {
  try {
    return (await execFileP(cmd, args, { timeout: 10_000 })).stdout
  } catch (/** @type {any} */ err) {
    const detail = err.code === 'ENOENT' ? `${cmd} not found` : (err.stderr || err.message).trim()
    throw new Error(`${cmd} ${args.join(' ')} failed: ${detail}`)
  }
}

const ip = (/** @type {string[]} */ ...args) => run('ip', args)

/**
 * Whether this process can build the lab. Never throws.
 * @returns {Promise<{ ok: boolean, reason?: string }>}
 */
export async function netnsSupport () {
  if (process.getuid?.() !== 0) return { ok: false, reason: 'not running as root' }
  if (!existsSync('/dev/net/tun')) return { ok: false, reason: '/dev/net/tun missing' }
  const probe = `${DEFAULT_PREFIX}-probe-${process.pid}`
  try {
    await ip('netns', 'add', probe)
    await ip('-n', probe, 'link', 'set', 'lo', 'up')
    return { ok: true }
  } catch (/** @type {any} */ err) {
    return { ok: false, reason: `ip netns not usable: ${err.message}` }
  } finally {
    await ip('netns', 'del', probe).catch(() => {})
  }
}

/**
 * Whether the kernel has sch_netem, tried on a veth pair in a throwaway
 * namespace. Never throws.
 * @returns {Promise<{ ok: boolean, reason?: string }>}
 */
export async function netemSupport () {
  const base = await netnsSupport()
  if (!base.ok) return base
  const probe = `${DEFAULT_PREFIX}-probe-netem-${process.pid}`
  try {
    await ip('netns', 'add', probe)
    await ip('-n', probe, 'link', 'add', 'probe0', 'type', 'veth', 'peer', 'name', 'probe1')
    await run('tc', ['-n', probe, 'qdisc', 'add', 'dev', 'probe0', 'root', 'netem', 'delay', '1ms'])
    return { ok: true }
  } catch (/** @type {any} */ err) {
    return { ok: false, reason: `netem not usable: ${err.message}` }
  } finally {
    await ip('netns', 'del', probe).catch(() => {})
  }
}

/** @param {string} prefix */
function checkPrefix (prefix) {
  // Device names are "<prefix>-<i>-o": 8 + 6 characters fit IFNAMSIZ (15).
  if (!/^[a-z][a-z0-9]{0,7}$/.test(prefix)) throw new Error(`prefix must be 1–8 characters of a-z and 0-9 (got ${JSON.stringify(prefix)})`)
}

/**
 * Builds the lab: removes stale state first, then creates the origin
 * namespace and one linked namespace per profile.
 * @param {{
 *   profiles?: readonly Profile[], log?: Log, backend?: 'linkem' | 'netem',
 *   runDir?: string, prefix?: string
 * }} [options]
 * @returns {Promise<Lab>}
 */
export async function labUp (options = {}) {
  const { profiles = DEFAULT_PROFILES, log, backend = 'linkem', runDir = DEFAULT_RUN_DIR, prefix = DEFAULT_PREFIX } = options
  checkPrefix(prefix)
  if (backend !== 'linkem' && backend !== 'netem') throw new Error(`backend must be 'linkem' or 'netem' (got ${JSON.stringify(backend)})`)
  checkProfiles(profiles)
  const support = backend === 'netem' ? await netemSupport() : await netnsSupport()
  if (!support.ok) throw new Error(`cannot build the lab regions: ${support.reason}`)

  await mkdir(runDir, { recursive: true })
  await labDown({ prefix, runDir, log })
  const originNs = `${prefix}-origin`
  const locations = []
  try {
    await addNamespace(originNs)
    for (const [i, profile] of profiles.entries()) {
      const location = await addLocation({ i, profile, prefix, originNs, backend, runDir, log })
      locations.push(location)
      log?.info?.({ location: location.name, ns: location.ns, address: location.address, backend }, 'lab location up')
    }
  } catch (err) {
    await labDown({ prefix, runDir, log }).catch(() => {})
    throw err
  }
  return { originNs, locations, down: () => labDown({ prefix, runDir, log }) }
}

/** @param {readonly Profile[]} profiles */
function checkProfiles (profiles) {
  if (!Array.isArray(profiles) || profiles.length === 0) throw new Error('profiles must be a non-empty array')
  if (profiles.length > MAX_LOCATIONS) throw new Error(`at most ${MAX_LOCATIONS} locations (got ${profiles.length})`)
  const seen = new Set()
  for (const p of profiles) {
    validateProfile(p)
    if (p.name === 'origin' || p.name.startsWith('probe')) throw new Error(`profile "${p.name}": name is reserved`)
    if (seen.has(p.name)) throw new Error(`profile "${p.name}": name used twice`)
    seen.add(p.name)
  }
}

/** @param {string} ns */
async function addNamespace (ns) {
  await ip('netns', 'add', ns)
  await ip('-n', ns, 'link', 'set', 'lo', 'up')
}

/**
 * @param {string} ns
 * @param {string} dev
 * @param {string} cidr
 */
async function configureEnd (ns, dev, cidr) {
  // No IPv6 link-local address: otherwise the kernel sends router and
  // neighbour solicitations through the link, which show up in loss counts
  // and shift the seeded drop pattern.
  await ip('-n', ns, 'link', 'set', 'dev', dev, 'addrgenmode', 'none')
  await ip('-n', ns, 'addr', 'add', cidr, 'dev', dev)
  await ip('-n', ns, 'link', 'set', 'dev', dev, 'up')
}

/**
 * @param {{ i: number, profile: Profile, prefix: string, originNs: string, backend: 'linkem' | 'netem', runDir: string, log?: Log }} opts
 * @returns {Promise<LabLocation>}
 */
async function addLocation ({ i, profile, prefix, originNs, backend, runDir, log }) {
  const ns = `${prefix}-${profile.name}`
  const devOrigin = `${prefix}-${i}-o`
  const devLocation = `${prefix}-${i}-l`
  const originAddress = `10.213.${i}.1`
  const address = `10.213.${i}.2`
  await addNamespace(ns)
  let readStats = null
  if (backend === 'linkem') {
    const link = await startLinkem({
      devA: devOrigin,
      devB: devLocation,
      netnsA: originNs,
      netnsB: ns,
      args: profileToLinkemArgs(profile),
      statsFile: path.join(runDir, `${ns}.linkem.json`),
      log
    })
    ownLinks.set(link.pid, link)
    await writeFile(path.join(runDir, `${ns}.linkem.pid`), `${link.pid}\n`)
    readStats = link.readStats
  } else {
    await ip('link', 'add', devOrigin, 'netns', originNs, 'type', 'veth', 'peer', 'name', devLocation, 'netns', ns)
  }
  await configureEnd(originNs, devOrigin, `${originAddress}/30`)
  await configureEnd(ns, devLocation, `${address}/30`)
  if (backend === 'netem') {
    await shapeVeth(originNs, devOrigin, profile, 'down', log)
    await shapeVeth(ns, devLocation, profile, 'up', log)
  }
  return { name: profile.name, region: profile.region, ns, device: devLocation, address, originAddress, profile, readStats }
}

/**
 * Shapes the egress of one veth end as one direction of the profile.
 * @param {string} ns
 * @param {string} dev
 * @param {Profile} profile
 * @param {'down' | 'up'} direction
 * @param {Log} [log]
 */
async function shapeVeth (ns, dev, profile, direction, log) {
  // veth hands 64 KB GSO super-packets to the qdisc; netem would rate and
  // drop them as one packet. Segmenting first keeps loss per wire packet.
  await run('ip', [...netnsExec(ns), 'ethtool', '-K', dev, 'tso', 'off', 'gso', 'off', 'gro', 'off'])
    .catch((err) => log?.warn?.({ dev }, `offloads stay on, netem loss is per GSO packet: ${err.message}`))
  await run('tc', ['-n', ns, 'qdisc', 'add', 'dev', dev, 'root', 'netem', ...profileToNetemArgs(profile, direction)])
  const filters = profileToTcFilterArgs(profile)
  if (filters.length === 0) return
  // A path that silently let UDP through would measure QUIC where the
  // profile says there is none, so a kernel without these parts stops the lab.
  try {
    await run('tc', ['-n', ns, 'qdisc', 'add', 'dev', dev, 'clsact'])
    for (const filter of filters) await run('tc', ['-n', ns, 'filter', 'add', 'dev', dev, ...filter])
  } catch (/** @type {any} */ err) {
    throw new Error(`profile "${profile.name}": block_udp needs tc's clsact qdisc, u32 classifier and drop action (act_gact) with the netem backend: ${err.message}`)
  }
}

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** @param {number} pid */
async function processArgv (pid) {
  try {
    return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter(Boolean)
  } catch {
    return null
  }
}

/**
 * A zombie counts as gone: it only waits for its parent to reap it.
 * @param {number} pid
 */
async function isRunning (pid) {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2))
  } catch {
    return false
  }
}

/**
 * SIGTERM, then SIGKILL whatever still runs after 2 s.
 * @param {number[]} pids
 */
async function stopProcesses (pids) {
  const signal = (/** @type {number} */ pid, /** @type {NodeJS.Signals} */ sig) => { try { process.kill(pid, sig) } catch {} }
  for (const pid of pids) signal(pid, 'SIGTERM')
  const deadline = Date.now() + 2000
  let left = pids
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(20)
    const running = await Promise.all(left.map(isRunning))
    left = left.filter((_, i) => running[i])
  }
  for (const pid of left) signal(pid, 'SIGKILL')
}

/**
 * @param {string[] | null} argv
 * @param {string} prefix
 */
function isLabLinkem (argv, prefix) {
  if (!argv?.length || !path.basename(argv[0]).startsWith('linkem')) return false
  const i = argv.indexOf('--netns-a')
  return i >= 0 && argv[i + 1] === `${prefix}-origin`
}

/**
 * linkem processes of this lab: from pid files, and any a lost pid file missed.
 * @param {string} prefix
 * @param {string} runDir
 */
async function findLinkems (prefix, runDir) {
  const pids = new Set()
  const files = await readdir(runDir).catch(() => [])
  for (const file of files.filter((f) => f.startsWith(`${prefix}-`) && f.endsWith('.linkem.pid'))) {
    const pid = Number((await readFile(path.join(runDir, file), 'utf8').catch(() => '')).trim())
    if (Number.isInteger(pid) && pid > 0 && isLabLinkem(await processArgv(pid), prefix)) pids.add(pid)
    await unlink(path.join(runDir, file)).catch(() => {})
  }
  for (const entry of await readdir('/proc')) {
    if (/^\d+$/.test(entry) && isLabLinkem(await processArgv(Number(entry)), prefix)) pids.add(Number(entry))
  }
  return [...pids]
}

/**
 * Removes everything a lab with this prefix created: its linkem processes,
 * every process still inside its namespaces, the namespaces (and with them
 * their devices and addresses), and any leftover device of that prefix in
 * the root namespace. Final linkem counters stay in runDir.
 * @param {{ prefix?: string, runDir?: string, log?: Log }} [options]
 */
export async function labDown ({ prefix = DEFAULT_PREFIX, runDir = DEFAULT_RUN_DIR, log } = {}) {
  checkPrefix(prefix)
  const linkems = await findLinkems(prefix, runDir)
  const others = []
  for (const pid of linkems) {
    const own = ownLinks.get(pid)
    ownLinks.delete(pid)
    if (own) await own.stop()
    else others.push(pid)
  }
  if (others.length > 0) await stopProcesses(others)

  const names = (await ip('netns', 'list')).split('\n').map((line) => line.split(' ')[0]).filter((n) => n.startsWith(`${prefix}-`))
  for (const ns of names) {
    const pids = (await ip('netns', 'pids', ns).catch(() => '')).split('\n').filter(Boolean).map(Number)
    if (pids.length > 0) {
      log?.warn?.({ ns, pids }, 'stopping processes left in a lab namespace')
      await stopProcesses(pids)
    }
    await ip('netns', 'del', ns)
  }

  const links = (await ip('-o', 'link', 'show')).split('\n')
    .map((line) => line.split(': ')[1]?.split('@')[0])
    .filter((dev) => dev?.startsWith(`${prefix}-`))
  for (const dev of links) await ip('link', 'del', dev).catch(() => {})
  if (linkems.length + names.length + links.length > 0) {
    log?.info?.({ prefix, linkems: linkems.length, namespaces: names.length, devices: links.length }, 'lab removed')
  }
}
