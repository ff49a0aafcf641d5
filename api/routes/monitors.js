import { createMonitor, getMonitor, listMonitors, updateMonitor, deleteMonitor } from '../../lib/store/monitors.js'
import { targetPolicy } from '../../lib/measurement/targets.js'
import { backoffsOf } from '../../lib/store/round-backoffs.js'
import { errorResponses, idParams, monitorCreateBody, monitorPatchBody } from '../schemas.js'

/**
 * Fastify's types cannot derive request shapes from JSON schemas in plain JS,
 * so a handler that reads params, query or body names its request type
 * (api/types.d.ts); the schemas check the values at run time.
 * @param {import('fastify').FastifyInstance} app
 */
export default async function monitorRoutes (app) {
  const tags = ['monitors']
  const policy = { ...targetPolicy(app.config), secrets: app.secrets }
  /** Each monitor with the locations it is backed off at (lib/store/round-backoffs.js). @param {Record<string, any>[]} monitors */
  const withBackoffs = async (monitors) => {
    const backoffs = await backoffsOf(app.db, monitors.map((m) => m.id))
    return monitors.map((m) => ({ ...m, backed_off: backoffs.get(Number(m.id)) ?? [] }))
  }

  app.post('/monitors', {
    schema: {
      description: 'Add a URL to monitor. It is measured with H2 and H3 from each location every interval_s seconds; the first round is due at once. ' +
        'Unless H3LENS_ALLOW_PRIVATE_TARGETS=true, url and the probe URLs must be on hosts that resolve to public addresses only (not loopback, private, link-local…), ' +
        'or on the lab origin for lab locations only; the agents check again on every request of a run. ' +
        'With aa_protocol set it is an A/A calibration monitor: both arms load with that protocol, stored as h2 (arm A) and h3 (arm B), so its comparison shows the noise floor. ' +
        'min_effect_pct and min_effect_ms set the practical minimum effect a verdict needs (default max(2%, 1 ms)).',
      tags,
      body: monitorCreateBody,
      response: { 201: { $ref: 'monitor#' }, ...errorResponses }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Body: Record<string, any> }>} */ request, reply) => {
    const monitor = await createMonitor(app.db, request.body, policy)
    return reply.code(201).send(monitor)
  })

  app.get('/monitors', {
    schema: {
      description: 'Every monitor, oldest first.',
      tags,
      response: { 200: { type: 'object', properties: { items: { type: 'array', items: { $ref: 'monitor#' } } } } }
    }
  }, async () => ({ items: await withBackoffs(await listMonitors(app.db)) }))

  app.get('/monitors/:id', {
    schema: { description: 'One monitor.', tags, params: idParams, response: { 200: { $ref: 'monitor#' }, ...errorResponses } }
  }, async (/** @type {import('../types.js').IdRequest} */ request) => (await withBackoffs([await getMonitor(app.db, request.params.id)]))[0])

  app.patch('/monitors/:id', {
    schema: {
      description: 'Change a monitor. Only the fields given change; a new interval starts a new schedule from now.',
      tags,
      params: idParams,
      body: monitorPatchBody,
      response: { 200: { $ref: 'monitor#' }, ...errorResponses }
    }
  }, async (/** @type {import('../types.js').IdBodyRequest} */ request) => updateMonitor(app.db, request.params.id, request.body, policy))

  app.delete('/monitors/:id', {
    schema: {
      description: 'Stop and remove a monitor. Its queued rounds are cancelled; results already measured are kept for export.',
      tags,
      params: idParams,
      response: { 204: { type: 'null' }, ...errorResponses }
    }
  }, async (/** @type {import('../types.js').IdRequest} */ request, reply) => {
    await deleteMonitor(app.db, request.params.id)
    return reply.code(204).send()
  })
}
