import fp from 'fastify-plugin'

/**
 * Decorates the instance with the shared context so routes read `app.db`,
 * `app.config` instead of importing them; tests pass their own.
 */
export default fp(async (/** @type {any} */ app, /** @type {any} */ { db, config }) => {
  app.decorate('db', db)
  app.decorate('config', config)
}, { name: 'context' })
