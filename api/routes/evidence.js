// The evidence behind the numbers: which origins of a monitored page speak
// HTTP/3 (the capability matrix), and the Chromium net log of a result.
import { getMonitor } from '../../lib/store/monitors.js'
import { getResult } from '../../lib/store/results.js'
import { capabilityMatrix } from '../../lib/store/monitor-origins.js'
import { getNetlog } from '../../lib/store/netlogs.js'
import { errorResponses, idParams } from '../schemas.js'

const cell = {
  type: 'object',
  properties: {
    location_id: { type: 'string' },
    alt_svc: { type: ['string', 'null'], description: 'Last Alt-Svc header value the origin sent to this location' },
    h3_advertised: { type: 'boolean', description: 'That header offered h3' },
    first_advertised_at: { type: ['string', 'null'], format: 'date-time' },
    last_advertised_at: { type: ['string', 'null'], format: 'date-time' },
    served_h3: { type: 'boolean', description: 'At least one request to the origin really went over HTTP/3' },
    h3_requests: { type: 'integer' },
    h2_requests: { type: 'integer' },
    other_requests: { type: 'integer' },
    last_h3_at: { type: ['string', 'null'], format: 'date-time' },
    first_seen_at: { type: 'string', format: 'date-time' },
    last_seen_at: { type: 'string', format: 'date-time' }
  }
}

/**
 * @param {import('fastify').FastifyInstance} app see api/routes/monitors.js
 */
export default async function evidenceRoutes (app) {
  app.get('/monitors/:id/capabilities', {
    schema: {
      description: 'H3 capability matrix: every origin the monitored page used, per location, with its Alt-Svc advertisement and the protocols it was really served over. ' +
        'Collected from the response headers of normal runs (Alt-Svc comes with H2 responses, so a monitor that runs only h3 mode sees served_h3 but rarely an advertisement).',
      tags: ['evidence'],
      params: idParams,
      response: {
        200: {
          type: 'object',
          properties: {
            monitor_id: { type: 'integer' },
            locations: { type: 'array', items: { type: 'string' } },
            origins: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  origin: { type: 'string' },
                  h3_advertised: { type: 'boolean', description: 'Advertised h3 to at least one location' },
                  served_h3: { type: 'boolean', description: 'Served over h3 to at least one location' },
                  locations: { type: 'array', items: cell }
                }
              }
            }
          }
        },
        ...errorResponses
      }
    }
  }, async (/** @type {import('../types.js').IdRequest} */ request) => {
    await getMonitor(app.db, request.params.id)
    return capabilityMatrix(app.db, request.params.id)
  })

  app.get('/results/:id/netlog', {
    schema: {
      description: 'The Chromium net log of a result, gzip-compressed JSON (open it with the netlog viewer). ' +
        'It exists when the monitor captures every run (options.netlog = always) or when the result was an outlier (then details.netlog.kind = rerun: the same probe and mode ran again at once with capture on).',
      tags: ['evidence'],
      params: idParams,
      response: errorResponses
    }
  }, async (/** @type {import('../types.js').IdRequest} */ request, reply) => {
    const result = await getResult(app.db, request.params.id)
    if (!result) return reply.notFound(`result ${request.params.id} does not exist`)
    const netlog = await getNetlog(app.db, result)
    if (!netlog) {
      return reply.notFound(`result ${request.params.id} has no net log: one is captured for every run when the monitor's options.netlog is "always", and for outlier runs when it is "outliers"`)
    }
    return reply
      .header('content-type', 'application/gzip')
      .header('content-disposition', `attachment; filename="h3lens-result-${result.id}-${result.mode}.netlog.json.gz"`)
      .header('x-netlog-kind', netlog.kind)
      .send(netlog.gzip)
  })
}
