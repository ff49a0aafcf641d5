/**
 * Route plugins take the app as `any`: Fastify's types cannot derive request
 * shapes from JSON schemas in plain JS. The schemas check them at run time.
 * @param {import('fastify').FastifyInstance} app
 */
export default async function metricsRoutes (app) {
  app.get('/metrics', {
    schema: {
      description: 'Prometheus metrics in the text exposition format: job states, live agents per location, results ingested, ' +
        'API response times by route, and the last hour\'s p50/p95 TTFB and load per monitor, location and mode ' +
        '(at most 500 series; h3lens_metric_series_dropped counts the rest).',
      tags: ['service'],
      response: {
        200: { description: 'text/plain; version=0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } }
      }
    }
  }, async (request, reply) => {
    reply.type(app.metrics.registry.contentType)
    return app.metrics.registry.metrics()
  })
}
