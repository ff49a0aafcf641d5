import fp from 'fastify-plugin'
import { authenticateAgent } from '../../lib/agents.js'

/** Every agent route needs a bearer agent token; the agent lands on request.agent. */
export default fp(async (/** @type {any} */ app) => {
  app.decorateRequest('agent', null)
  app.addHook('onRequest', async (request, reply) => {
    const header = request.headers.authorization ?? ''
    const match = /^Bearer\s+(\S+)$/i.exec(header)
    if (!match) return reply.code(401).send({ statusCode: 401, error: 'Unauthorized', message: 'agent endpoints need "Authorization: Bearer <agent token>"' })
    const agent = await authenticateAgent(app.db, match[1])
    if (!agent) return reply.code(401).send({ statusCode: 401, error: 'Unauthorized', message: 'agent token is not valid (unknown or revoked)' })
    request.agent = agent
  })
}, { name: 'agent-auth', dependencies: ['context'] })
