import fp from 'fastify-plugin'
import { authenticateAgent } from '../../lib/agents.js'
import { bearerOf, unauthorized, tooMany } from './auth.js'

/**
 * Every agent route needs a bearer agent token; the agent lands on
 * request.agent. The token is looked up on every call (one indexed read), so
 * a revoked agent is shut out at once. Wrong tokens count towards the same
 * per-address limit as wrong API keys (api/plugins/auth.js).
 */
export default fp(async (/** @type {any} */ app) => {
  app.decorateRequest('agent', null)
  app.addHook('onRequest', async (request, reply) => {
    const token = bearerOf(request)
    if (!token) return unauthorized(reply, 'agent endpoints need "Authorization: Bearer <agent token>"; create one with "h3lens agents token --location <id>"')
    const wait = app.authFailures.blockedFor(request)
    if (wait) return tooMany(reply, wait)
    const agent = await authenticateAgent(app.db, token)
    if (!agent) {
      request.log.warn({ ip: request.ip, url: request.routeOptions.url }, 'authentication failed: unknown or revoked agent token')
      const blocked = await app.authFailures.record(request)
      if (blocked) return tooMany(reply, blocked)
      return unauthorized(reply, 'agent token is not valid (unknown or revoked)')
    }
    request.agent = agent
  })
}, { name: 'agent-auth', dependencies: ['context', 'auth'] })
