import { buildApp } from '../../api/app.js'
import { createLogger } from '../../lib/runtime/log.js'
import { loadConfig } from '../../lib/runtime/config.js'
import { createTestDatabase } from './db.js'
import { createAgentToken } from '../../lib/store/agents.js'
import { createApiKey } from '../../lib/store/api-keys.js'
import { PUBLIC_ZONE, startDnsServer } from '../../dev/dns-server.js'

/**
 * A Fastify app over a fresh database, for app.inject() tests. The API needs
 * keys, so the helper makes a write key and a read key, and `app.inject`
 * sends the write key unless the request names its own `authorization`
 * header (`authorization: undefined` sends none). This machine has no
 * outside DNS, so unless `env` names its own H3LENS_DNS_SERVERS the app
 * resolves monitor and webhook hosts through a test DNS server that knows
 * the public names in PUBLIC_ZONE (example.com and friends).
 * @param {Record<string, string>} [env]
 */
export async function createTestApp (env = {}) {
  const database = await createTestDatabase()
  const dns = env.H3LENS_DNS_SERVERS ? null : await startDnsServer(PUBLIC_ZONE)
  const config = loadConfig({ LOG_LEVEL: 'silent', ...(dns ? { H3LENS_DNS_SERVERS: dns.server } : {}), ...env })
  const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })
  const app = await buildApp({ db: database.pool, config, log })
  await app.ready()
  const writeKey = (await createApiKey(database.pool, { name: 'test-write', role: 'write' })).secret
  const readKey = (await createApiKey(database.pool, { name: 'test-read', role: 'read' })).secret
  withDefaultKey(app, writeKey)
  return {
    app,
    db: database.pool,
    config,
    log,
    writeKey,
    readKey,
    /** @param {string} location */
    async agentToken (location = 'local') {
      return (await createAgentToken(database.pool, { location })).token
    },
    async close () {
      await app.close()
      await database.drop()
      await dns?.close()
    }
  }
}

/**
 * @param {import('fastify').FastifyInstance} app
 * @param {string} key
 */
function withDefaultKey (app, key) {
  const inject = app.inject.bind(app)
  // The chain and promise forms (tests use no callbacks).
  app.inject = /** @type {typeof app.inject} */ ((/** @type {string | import('fastify').InjectOptions | undefined} */ opts) => {
    if (opts === undefined) return inject()
    const o = typeof opts === 'string' ? { url: opts } : { ...opts }
    /** @type {Record<string, any>} */
    const headers = { ...o.headers }
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) headers.authorization = `Bearer ${key}`
    for (const [h, v] of Object.entries(headers)) if (v === undefined) delete headers[h]
    return inject({ ...o, headers })
  })
}
