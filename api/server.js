// Runs the app on a socket with timeouts suited to agents and dashboards, and
// closes it gracefully: stop accepting, let in-flight requests finish.
import { buildApp } from './app.js'
import { BATCH_BODY_LIMIT } from './routes/agent-protocol.js'
import { resealJourneySecrets } from '../lib/store/monitors.js'
import { uploadAllowanceMs } from '../lib/runtime/uploads.js'

/**
 * @param {{ db: import('pg').Pool, config: import('../lib/runtime/config.js').Config, log: import('pino').Logger,
 *   labOrigin?: import('./types.js').LabOrigin | null }} context
 * @returns {Promise<{ app: import('fastify').FastifyInstance, url: string, close: () => Promise<void> }>}
 */
export async function startApi (context) {
  const app = await buildApp(context)
  // After a key rotation, journeys' secrets move to the new key before anything reads them.
  if (context.config.secretKeyPrevious) {
    const n = await resealJourneySecrets(context.db, app.secrets)
    context.log.info({ secrets: n }, 'journey secrets sealed again with H3LENS_SECRET_KEY; H3LENS_SECRET_KEY_PREVIOUS can be removed')
  }
  // A request's whole time, its body's included: a minute, and for the
  // largest body an agent sends (a batch of rounds from its spool) the time
  // it takes on the slowest link agents allow for (lib/runtime/uploads.js).
  app.server.requestTimeout = 60_000 + uploadAllowanceMs(BATCH_BODY_LIMIT)
  app.server.keepAliveTimeout = 65_000
  await app.listen({ port: context.config.port, host: context.config.host })
  const scheme = context.config.tlsCert ? 'https' : 'http'
  const url = `${scheme}://${context.config.host === '0.0.0.0' ? '127.0.0.1' : context.config.host}:${context.config.port}`
  context.log.info({ url }, 'api listening')
  return { app, url, close: () => app.close() }
}
