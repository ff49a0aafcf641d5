// The lab's state file, <data dir>/lab/state.json: written by the lab when
// it starts (bin/lab.js), read by whatever must reach its origin — an h3lens
// agent of a lab location, and the API when it sends a lab page to a
// WebPageTest agent on this machine.
import fs from 'node:fs/promises'
import path from 'node:path'

/**
 * @typedef {{ hostname: string, port: number, spki: string, caPath?: string,
 *   locations: Record<string, { address: string, netns: string | null, profile?: Record<string, any> }> }} LabState
 */

/**
 * @param {string} dataDir
 * @returns {Promise<LabState | null>} null when no lab has run with this data dir
 */
export async function readLabState (dataDir) {
  try {
    return JSON.parse(await fs.readFile(path.join(dataDir, 'lab', 'state.json'), 'utf8'))
  } catch {
    return null
  }
}

/**
 * How a browser outside the lab's namespaces (a WebPageTest agent on this
 * machine) reaches the lab origin: the address of the unshaped loopback
 * location. Emulated regions put the origin inside a namespace that only
 * their own locations reach; and the origin's port, the only one of the lab
 * host names its browser reaches.
 * @param {LabState | null} state
 * @returns {{ spki: string, address: string, port: number | null } | null}
 */
export function labFromOutside (state) {
  const local = Object.values(state?.locations ?? {}).find((l) => !l.netns)
  return state?.spki && local ? { spki: state.spki, address: local.address, port: state.port ?? null } : null
}
