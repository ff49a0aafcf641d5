import { buildApp } from '../../api/app.js'
import { createLogger } from '../../lib/log.js'
import { loadConfig } from '../../lib/config.js'
import { createTestDatabase } from './db.js'
import { createAgentToken } from '../../lib/agents.js'

/**
 * A Fastify app over a fresh database, for app.inject() tests.
 * @param {Record<string, string>} [env]
 */
export async function createTestApp (env = {}) {
  const database = await createTestDatabase()
  const config = loadConfig({ LOG_LEVEL: 'silent', ...env })
  const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })
  const app = await buildApp({ db: database.pool, config, log })
  await app.ready()
  return {
    app,
    db: database.pool,
    config,
    log,
    /** @param {string} location */
    async agentToken (location = 'local') {
      return (await createAgentToken(database.pool, { location })).token
    },
    async close () {
      await app.close()
      await database.drop()
    }
  }
}
