import fp from 'fastify-plugin'
import { authenticateAgent } from '../../lib/store/agents.js'
import { bearerOf, unauthorized, tooMany, agentTooMany } from './auth.js'

/**
 * Every agent route needs a bearer agent token; the agent lands on
 * request.agent. The token is looked up on every call (one indexed read), so
 * a revoked agent is shut out at once. Wrong tokens count towards the same
 * per-address limit as wrong API keys (api/plugins/auth.js); a valid agent
 * is limited per token, never by what others sent from its address.
 */
export default fp(async (app) => {
  // Null until the hook below sets it; only the agent routes, which run
  // after the hook, read it, so api/types.d.ts declares it never null.
  app.decorateRequest('agent', /** @type {any} */ (null))
  app.addHook('onRequest', async (request, reply) => {
    const token = bearerOf(request)
    if (!token) return unauthorized(reply, 'agent endpoints need "Authorization: Bearer <agent token>"; create one with "h3lens agents token --location <id>"')
    const agent = await authenticateAgent(app.db, token)
    if (!agent) {
      const blocked = await app.authFailures.reject(request, 'unknown or revoked agent token')
      if (blocked) return tooMany(reply, blocked)
      return unauthorized(reply, 'agent token is not valid (unknown or revoked)')
    }
    request.agent = agent
    const wait = await app.agentRequests(request)
    if (wait) return agentTooMany(reply, wait)
  })
}, { name: 'agent-auth', dependencies: ['context', 'auth'] })
