// What the agent benches stand on, in a temporary data dir: an embedded
// PostgreSQL (migrated), the lab origin (on loopback, or with `lab` in a
// namespace of emulated locations) and the API, each stopped by the
// returned `stop` (which also removes the data dir), or by Ctrl-C.
import path from 'node:path'
import { loadConfig } from '../../lib/runtime/config.js'
import { benchLab, benchScratch } from './scratch.js'
import { openDatabase } from '../../lib/runtime/db.js'
import { migrate } from '../../lib/runtime/migrate.js'
import { startApi } from '../../api/server.js'
import { startOrigin } from '../../lab/origin.js'

/**
 * @param {{ name: string, ports: { 'api-port': string, 'lab-port': string, 'pg-port': string },
 *   lab?: { prefix: string, profiles: readonly import('../../lab/profiles.js').Profile[] } | null }} o
 *   name: of the data dir (h3lens-<name>-…); ports: the bench's --api-port, --lab-port and --pg-port;
 *   lab: emulated locations (lab/netns.js labUp, root), the origin in their namespace
 */
export async function startBenchStack ({ name, ports, lab = null }) {
  const { dataDir, log, lifecycle } = benchScratch(name)
  const config = loadConfig({ ...process.env, H3LENS_DATA_DIR: dataDir, PORT: ports['api-port'], H3LENS_LAB_PORT: ports['lab-port'], H3LENS_EMBEDDED_PG_PORT: ports['pg-port'], LOG_LEVEL: 'warn' })
  const stop = () => lifecycle.stopAll('done')
  try {
    const { pool } = await openDatabase({ config, log, lifecycle })
    await migrate(pool)
    const topology = lab ? await benchLab(lifecycle, { ...lab, runDir: path.join(dataDir, 'run') }) : null
    const origin = await startOrigin({ dataDir, port: config.labPort, log, netns: topology?.originNs })
    lifecycle.add('origin', origin.stop)
    const api = await startApi({ db: pool, config, log })
    lifecycle.add('api', api.close)
    return { dataDir, config, log, lifecycle, pool, origin, api, topology, stop }
  } catch (err) {
    await stop()
    throw err
  }
}
