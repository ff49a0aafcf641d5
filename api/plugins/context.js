import fp from 'fastify-plugin'
import { createSecretBox } from '../../lib/runtime/secret-box.js'

/**
 * Decorates the instance with the shared context so routes read `app.db`,
 * `app.config` instead of importing them; tests pass their own. `labOrigin`
 * is the server of the lab this process runs (`h3lens start`), or null.
 * `secrets` seals and opens journeys' secrets.
 */
export default fp(async (app, /** @type {{ db: import('pg').Pool, config: import('../../lib/runtime/config.js').Config, labOrigin?: import('../types.js').LabOrigin | null }} */ { db, config, labOrigin = null }) => {
  app.decorate('db', db)
  app.decorate('config', config)
  app.decorate('labOrigin', labOrigin)
  // Journeys' secrets (docs/JOURNEYS.md): the key file is made on first use.
  app.decorate('secrets', createSecretBox({ key: config.secretKey, previous: config.secretKeyPrevious, dataDir: config.dataDir }))
}, { name: 'context' })
