// The dashboard over a database: the API on a free loopback port, for the
// UI tests, scripts/screenshots.js, scripts/wpt-screenshot.js and the UI
// benches.
import { startApi } from '../api/server.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { PUBLIC_ZONE, startDnsServer } from './dns-server.js'
import { freePort } from './free-port.js'

/**
 * The API (and so the dashboard) on a free loopback port. It resolves
 * monitor and webhook hosts through a test DNS server that knows the public
 * names of PUBLIC_ZONE (this machine has no outside DNS).
 * @param {import('pg').Pool} db
 * @param {Record<string, string>} [env] more settings (H3LENS_DATA_DIR, …)
 */
export async function startDashboard (db, env = {}) {
  const dns = await startDnsServer(PUBLIC_ZONE)
  const config = loadConfig({ PORT: String(await freePort()), HOST: '127.0.0.1', LOG_LEVEL: 'silent', H3LENS_DNS_SERVERS: dns.server, ...env })
  const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })
  const api = await startApi({ db, config, log })
  return {
    ...api,
    async close () {
      await api.close()
      await dns.close()
    }
  }
}
