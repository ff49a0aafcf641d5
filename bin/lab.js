// Bringing the lab up for `h3lens lab` and `h3lens start`: the origin, and
// either emulated regions (namespaces + linkem) or the unshaped loopback
// location. Agents learn how to reach the origin from <data dir>/lab/state.json
// (lib/runtime/lab-state.js).
import fs from 'node:fs/promises'
import path from 'node:path'
import { startOrigin } from '../lab/origin.js'
import { LAB_HOSTNAME } from '../lib/runtime/lab-host.js'
import { assertPortFree, claimDataDir, labPrefix } from '../lib/runtime/instance.js'
import { readLabState } from '../lib/runtime/lab-state.js'

/**
 * @typedef {{ id: string, name: string, region: string, kind: 'lab', profile: Record<string, any>,
 *   target: import('../agents/job-runner.js').LabTarget }} LabLocation
 */

/**
 * Start the lab and register its stop with the lifecycle.
 * @param {{ config: import('../lib/runtime/config.js').Config, log: import('pino').Logger, lifecycle: ReturnType<typeof import('../lib/runtime/lifecycle.js').createLifecycle> }} ctx
 * @returns {Promise<{ origin: Awaited<ReturnType<typeof startOrigin>>, locations: LabLocation[], mode: 'regions' | 'local', notice?: string }>}
 */
export async function startLabEnvironment ({ config, log, lifecycle }) {
  const labDir = path.join(config.dataDir, 'lab')
  /** @type {'regions' | 'local'} */
  let mode = config.lab === 'regions' ? 'regions' : 'local'
  let notice
  let netns = null
  if (config.lab === 'auto' || config.lab === 'regions') {
    netns = await import('../lab/netns.js')
    const support = /** @type {{ ok: boolean, reason?: string }} */ (await netns.netnsSupport())
    if (support.ok) {
      mode = 'regions'
    } else if (config.lab === 'regions') {
      throw Object.assign(new Error(`emulated regions are not available: ${support.reason}`), { userFacing: true })
    } else {
      notice = `emulated regions are off (${support.reason}); measuring from the unshaped "local" location only. Run as root on Linux with /dev/net/tun for lab-na, lab-eu, lab-asia and lab-udp-blocked.`
      log.warn(notice)
    }
  }

  if (mode === 'local') {
    await assertPortFree({ host: '127.0.0.1', port: config.labPort, what: 'lab origin', setting: 'H3LENS_LAB_PORT' })
    const origin = await startOrigin({ dataDir: config.dataDir, port: config.labPort, listen: '127.0.0.1', log })
    lifecycle.add('lab origin', origin.stop)
    const locations = [{
      id: 'local', name: 'Local (unshaped loopback)', region: 'Local', kind: /** @type {const} */ ('lab'), profile: { rtt_ms: 0 },
      target: { spki: origin.spki, caPath: origin.caPath, hostname: LAB_HOSTNAME, address: '127.0.0.1', port: origin.port, netns: null }
    }]
    await writeLabState(labDir, origin, locations)
    return { origin, locations, mode, notice }
  }

  const { DEFAULT_PROFILES } = await import('../lab/profiles.js')
  // Named for this data dir, so a lab of another data dir keeps its own.
  // mode is regions only when netns was imported above.
  const topology = await /** @type {typeof import('../lab/netns.js')} */ (netns).labUp({ profiles: DEFAULT_PROFILES, log, backend: config.labBackend, runDir: labDir, prefix: labPrefix(config.dataDir) })
  lifecycle.add('lab namespaces', () => topology.down())
  const origin = await startOrigin({ dataDir: config.dataDir, port: config.labPort, netns: topology.originNs, log })
  lifecycle.add('lab origin', origin.stop)
  const locations = topology.locations.map((loc) => {
    const p = DEFAULT_PROFILES.find((x) => x.name === loc.name)
    return {
      id: loc.name,
      name: `${p?.region ?? loc.name} (emulated)`,
      region: p?.region ?? loc.name,
      kind: /** @type {const} */ ('lab'),
      profile: loc.profile,
      target: { spki: origin.spki, caPath: origin.caPath, hostname: LAB_HOSTNAME, address: loc.originAddress, port: origin.port, netns: loc.ns }
    }
  })
  await writeLabState(labDir, origin, locations)
  return { origin, locations, mode }
}

/**
 * @param {string} labDir
 * @param {Awaited<ReturnType<typeof startOrigin>>} origin
 * @param {LabLocation[]} locations
 */
async function writeLabState (labDir, origin, locations) {
  const state = {
    hostname: LAB_HOSTNAME,
    port: origin.port,
    spki: origin.spki,
    // The lab's authority, which a Firefox run's profile trusts (docs/BROWSERS.md).
    caPath: origin.caPath,
    locations: Object.fromEntries(locations.map((l) => [l.id, { address: l.target.address, netns: l.target.netns, profile: l.profile }]))
  }
  await fs.mkdir(labDir, { recursive: true })
  await fs.writeFile(path.join(labDir, 'state.json'), JSON.stringify(state, null, 2))
}

/**
 * How a standalone agent of `location` reaches the lab, or null when no lab
 * runs for that location.
 * @param {string} dataDir
 * @param {string} location
 */
export async function readLabTarget (dataDir, location) {
  const state = await readLabState(dataDir)
  const loc = state?.locations?.[location]
  if (!state || !loc) return null
  return { spki: state.spki, caPath: state.caPath ?? null, hostname: state.hostname, address: loc.address, port: state.port ?? null, netns: loc.netns }
}

/**
 * `h3lens lab [up]`: the lab in the foreground until a signal.
 * @param {Parameters<typeof startLabEnvironment>[0]} ctx
 */
export async function runLab (ctx) {
  if (ctx.config.lab === 'off') throw Object.assign(new Error('"h3lens lab" starts a lab, and H3LENS_LAB (--lab) is off: give auto, regions or local'), { userFacing: true })
  ctx.lifecycle.add('data dir lock', claimDataDir(ctx.config.dataDir, 'lab'))
  const lab = await startLabEnvironment(ctx)
  console.log(`lab origin: ${lab.origin.baseUrl} on Caddy ${lab.origin.labOrigin.version} (maps to the lab via --host-resolver-rules)`)
  const width = Math.max(...lab.locations.map((l) => l.id.length))
  for (const l of lab.locations) console.log(`  ${l.id.padEnd(width)} origin at ${l.target.address}${l.target.netns ? ` from namespace ${l.target.netns}` : ''}`)
  console.log('Ctrl-C stops the lab.')
}

/**
 * `h3lens lab down`: remove what a crashed lab left behind.
 * @param {Parameters<typeof startLabEnvironment>[0]} ctx
 */
export async function labDownCommand ({ config, log, lifecycle }) {
  const netns = await import('../lab/netns.js')
  const prefix = labPrefix(config.dataDir)
  await netns.labDown({ log, prefix, runDir: path.join(config.dataDir, 'lab') })
  await lifecycle.stopAll('done')
  console.log(`lab of ${config.dataDir} removed: no namespaces, TUN devices or linkem processes named ${prefix}-* remain`)
  return 0
}
