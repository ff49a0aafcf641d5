import { ValidationError } from '../../lib/runtime/errors.js'
import { getMonitor } from '../../lib/store/monitors.js'
import { listResults, getResult } from '../../lib/store/results.js'
import { errorResponses, idParams, resultFilterQuery } from '../schemas.js'

/**
 * Route plugins take the app as `any`: Fastify's types cannot derive request
 * shapes from JSON schemas in plain JS. The schemas check them at run time.
 * @param {import('fastify').FastifyInstance} app
 */
export default async function resultRoutes (app) {
  app.get('/monitors/:id/results', {
    schema: {
      description: 'Measured loads of one monitor, newest first. Page with `cursor` = the previous answer\'s next_cursor.',
      tags: ['results'],
      params: idParams,
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          ...resultFilterQuery,
          limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
          cursor: { type: 'string', maxLength: 200 }
        }
      },
      response: {
        200: {
          type: 'object',
          properties: {
            items: { type: 'array', items: { $ref: 'result#' } },
            next_cursor: { type: ['string', 'null'] }
          }
        },
        ...errorResponses
      }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Params: { id: number }, Querystring: import('../types.js').ResultFilterQuery & { limit: number, cursor?: string } }>} */ request) => {
    const q = request.query
    if (q.from && q.to && Date.parse(q.from) > Date.parse(q.to)) throw new ValidationError('from must not be after to', 'from')
    await getMonitor(app.db, request.params.id)
    const page = await listResults(app.db, { monitorId: request.params.id, ...q })
    for (const item of page.items) withReason(item)
    return page
  })

  app.get('/results/:id', {
    schema: {
      description: 'One result with its evidence: per-request protocols, connection reuse, timings.',
      tags: ['results'],
      params: idParams,
      response: { 200: { $ref: 'resultDetail#' }, ...errorResponses }
    }
  }, async (/** @type {import('../types.js').IdRequest} */ request, reply) => {
    const result = await getResult(app.db, request.params.id)
    if (!result) return reply.notFound(`result ${request.params.id} does not exist`)
    return withReason(result)
  })
}

/**
 * The run's protocol reason beside its columns: a list shows it without
 * the evidence (details) it was read from.
 * @param {Record<string, any>} result
 */
function withReason (result) {
  const reason = result.details?.protocol_reason
  // An object, as the checks on the way in ask (lib/measurement/checks.js badDetails); a row stored before them may hold anything.
  result.protocol_reason = reason && typeof reason === 'object' && !Array.isArray(reason) ? reason : null
  return result
}
