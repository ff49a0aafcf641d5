// What the agent benches stand on, in a temporary data dir: an embedded
// PostgreSQL (migrated), the lab origin and the API, each stopped by the
// returned `stop` (which also removes the data dir), or by Ctrl-C.
import { loadConfig } from '../../lib/runtime/config.js'
import { benchScratch } from './scratch.js'
import { openDatabase } from '../../lib/runtime/db.js'
import { migrate } from '../../lib/runtime/migrate.js'
import { startApi } from '../../api/server.js'
import { startOrigin } from '../../lab/origin.js'

/**
 * @param {{ name: string, ports: { 'api-port': string, 'lab-port': string, 'pg-port': string } }} o
 *   name: of the data dir (h3lens-<name>-…); ports: the bench's --api-port, --lab-port and --pg-port
 */
export async function startBenchStack ({ name, ports }) {
  const { dataDir, log, lifecycle } = benchScratch(name)
  const config = loadConfig({ ...process.env, H3LENS_DATA_DIR: dataDir, PORT: ports['api-port'], H3LENS_LAB_PORT: ports['lab-port'], H3LENS_EMBEDDED_PG_PORT: ports['pg-port'], LOG_LEVEL: 'warn' })
  const stop = () => lifecycle.stopAll('done')
  try {
    const { pool } = await openDatabase({ config, log, lifecycle })
    await migrate(pool)
    const origin = await startOrigin({ dataDir, port: config.labPort, log })
    lifecycle.add('origin', origin.stop)
    const api = await startApi({ db: pool, config, log })
    lifecycle.add('api', api.close)
    return { dataDir, config, log, lifecycle, pool, origin, api, stop }
  } catch (err) {
    await stop()
    throw err
  }
}
