import fp from 'fastify-plugin'
import { createMetrics } from '../prometheus.js'

/**
 * Prometheus metrics for this app: `app.metrics` (registry, counters) and a
 * response-time histogram over every route. Registered before the routes so
 * its hook covers them all.
 */
export default fp(async (app) => {
  const metrics = createMetrics({ db: app.db, log: app.log })
  app.decorate('metrics', metrics)
  app.addHook('onResponse', async (request, reply) => {
    metrics.httpRequestDuration.observe({
      method: request.method,
      // The route pattern (/api/v1/monitors/:id), never the URL: one series
      // per route, not one per id or query string. Requests no route matched
      // share one label.
      route: request.routeOptions.url ?? 'unmatched',
      status_code: String(reply.statusCode)
    }, reply.elapsedTime / 1000)
  })
  app.addHook('onClose', async () => { metrics.registry.clear() })
}, { name: 'metrics', dependencies: ['context'] })
