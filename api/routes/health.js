import { VERSION } from '../../lib/version.js'

/**
 * Route plugins take the app as `any`: Fastify's types cannot derive request
 * shapes from JSON schemas in plain JS. The schemas check them at run time.
 * @param {any} app
 */
export default async function healthRoutes (app) {
  app.get('/healthz', {
    schema: {
      description: 'Liveness and database check. 200 when the database answers, 503 otherwise.',
      tags: ['service'],
      response: {
        200: { type: 'object', properties: { status: { type: 'string' }, version: { type: 'string' }, database: { type: 'string' } } },
        503: { type: 'object', properties: { status: { type: 'string' }, version: { type: 'string' }, database: { type: 'string' } } }
      }
    }
  }, async (request, reply) => {
    try {
      await app.db.query('SELECT 1')
      return { status: 'ok', version: VERSION, database: 'ok' }
    } catch (err) {
      request.log.warn({ err: err.message }, 'health check: database unreachable')
      return reply.code(503).send({ status: 'unavailable', version: VERSION, database: 'unreachable' })
    }
  })
}
