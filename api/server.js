// Runs the app on a socket with timeouts suited to agents and dashboards, and
// closes it gracefully: stop accepting, let in-flight requests finish.
import { buildApp } from './app.js'

/**
 * @param {{ db: import('pg').Pool, config: import('../lib/runtime/config.js').Config, log: import('pino').Logger,
 *   labOrigin?: { server: string, version: string | null, distorts_h3: boolean } | null }} context
 * @returns {Promise<{ app: import('fastify').FastifyInstance, url: string, close: () => Promise<void> }>}
 */
export async function startApi (context) {
  const app = await buildApp(context)
  app.server.requestTimeout = 60_000
  app.server.keepAliveTimeout = 65_000
  await app.listen({ port: context.config.port, host: context.config.host })
  const scheme = context.config.tlsCert ? 'https' : 'http'
  const url = `${scheme}://${context.config.host === '0.0.0.0' ? '127.0.0.1' : context.config.host}:${context.config.port}`
  context.log.info({ url }, 'api listening')
  return { app, url, close: () => app.close() }
}
