import { listAgents } from '../../lib/store/agents.js'

/**
 * Route plugins take the app as `any`: Fastify's types cannot derive request
 * shapes from JSON schemas in plain JS. The schemas check them at run time.
 * @param {import('fastify').FastifyInstance} app
 */
export default async function agentRoutes (app) {
  app.get('/agents', {
    schema: {
      description: 'Registered agents with their location, versions and when they were last seen.',
      tags: ['locations'],
      response: { 200: { type: 'object', properties: { items: { type: 'array', items: { $ref: 'agent#' } } } } }
    }
  }, async () => ({ items: await listAgents(app.db) }))
}
