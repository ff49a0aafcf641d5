// Alert rules, webhook channels and the alerts themselves.
import { createRule, getRule, listRules, updateRule } from '../../lib/store/alert-rules.js'
import { deleteRuleClosingAlerts } from '../../lib/analysis/alerts.js'
import { createChannel, getChannel, listChannels, updateChannel, deleteChannel } from '../../lib/store/alert-channels.js'
import { sendTest, listDeliveries } from '../../lib/store/alert-deliveries.js'
import { targetPolicy } from '../../lib/measurement/targets.js'
import { currentAlerts, alertHistory } from '../../lib/store/alert-states.js'
import { errorResponses, idParams } from '../schemas.js'
import { ruleCreateBody, rulePatchBody, channelCreateBody, channelPatchBody, alertFilterQuery } from '../alert-schemas.js'

const items = (/** @type {string} */ ref) => ({ type: 'object', properties: { items: { type: 'array', items: { $ref: `${ref}#` } } } })

/** @param {import('fastify').FastifyInstance} app see api/routes/monitors.js */
export default async function alertRoutes (app) {
  const policy = targetPolicy(app.config)

  // Rules
  const rules = ['alerts']
  app.post('/alert-rules', {
    schema: {
      description: 'Add an alert rule. Fields a kind does not use are refused; thresholds that can never or always hold are refused; monitor_id, locations and channels must exist.',
      tags: rules,
      body: ruleCreateBody,
      response: { 201: { $ref: 'alertRule#' }, ...errorResponses }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Body: Record<string, any> }>} */ request, reply) => reply.code(201).send(await createRule(app.db, request.body)))

  app.get('/alert-rules', {
    schema: { description: 'Every alert rule, oldest first (a new installation has three defaults).', tags: rules, response: { 200: items('alertRule') } }
  }, async () => ({ items: await listRules(app.db) }))

  app.get('/alert-rules/:id', {
    schema: { description: 'One alert rule.', tags: rules, params: idParams, response: { 200: { $ref: 'alertRule#' }, ...errorResponses } }
  }, async (/** @type {import('../types.js').IdRequest} */ request) => getRule(app.db, request.params.id))

  app.patch('/alert-rules/:id', {
    schema: { description: 'Change a rule; only the fields given change, null clears an optional one. The kind cannot change.', tags: rules, params: idParams, body: rulePatchBody, response: { 200: { $ref: 'alertRule#' }, ...errorResponses } }
  }, async (/** @type {import('../types.js').IdBodyRequest} */ request) => updateRule(app.db, request.params.id, request.body))

  app.delete('/alert-rules/:id', {
    schema: { description: 'Remove a rule with its alerts and history. A firing alert of it is resolved first, with its notification ("the rule was deleted"); notifications already in the outbox are still sent.', tags: rules, params: idParams, response: { 204: { type: 'null' }, ...errorResponses } }
  }, async (/** @type {import('../types.js').IdRequest} */ request, reply) => {
    await deleteRuleClosingAlerts(app.db, request.params.id, { publicUrl: app.config.publicUrl ?? null })
    return reply.code(204).send()
  })

  // Channels
  const channels = ['alerts']
  app.post('/channels', {
    schema: {
      description: 'Add a webhook channel. Each notification is a POST of the alertNotification body (format json) or {"text"} (format slack), signed: ' +
        'X-H3lens-Timestamp is the unix time in seconds, X-H3lens-Signature is "v1=" followed by the hex HMAC-SHA256 of `<timestamp>.<raw body>` keyed with the secret. ' +
        'The secret is write-only. Unless H3LENS_ALLOW_PRIVATE_TARGETS=true, url must be on a host that resolves to public addresses only ' +
        '(not loopback, private, link-local…), checked now and again as each delivery connects.',
      tags: channels,
      body: channelCreateBody,
      response: { 201: { $ref: 'alertChannel#' }, ...errorResponses }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Body: Record<string, any> }>} */ request, reply) => reply.code(201).send(await createChannel(app.db, request.body, policy)))

  app.get('/channels', {
    schema: { description: 'Every channel (never its secret).', tags: channels, response: { 200: items('alertChannel') } }
  }, async () => ({ items: await listChannels(app.db) }))

  app.get('/channels/:id', {
    schema: { description: 'One channel (never its secret).', tags: channels, params: idParams, response: { 200: { $ref: 'alertChannel#' }, ...errorResponses } }
  }, async (/** @type {import('../types.js').IdRequest} */ request) => getChannel(app.db, request.params.id))

  app.patch('/channels/:id', {
    schema: { description: 'Change a channel; without secret the stored one is kept.', tags: channels, params: idParams, body: channelPatchBody, response: { 200: { $ref: 'alertChannel#' }, ...errorResponses } }
  }, async (/** @type {import('../types.js').IdBodyRequest} */ request) => updateChannel(app.db, request.params.id, request.body, policy))

  app.delete('/channels/:id', {
    schema: { description: 'Remove a channel, its deliveries, and its id from every rule.', tags: channels, params: idParams, response: { 204: { type: 'null' }, ...errorResponses } }
  }, async (/** @type {import('../types.js').IdRequest} */ request, reply) => {
    await deleteChannel(app.db, request.params.id)
    return reply.code(204).send()
  })

  app.post('/channels/:id/test', {
    schema: {
      description: 'Send a test notification ({"version":1,"event":"test",…}, signed like any) now, once, and report what the receiver answered. Logged as a delivery; not retried.',
      tags: channels,
      params: idParams,
      response: {
        200: { type: 'object', properties: { delivery_id: { type: 'integer' }, ok: { type: 'boolean' }, status_code: { type: ['integer', 'null'] }, error: { type: ['string', 'null'] }, duration_ms: { type: 'number' } } },
        ...errorResponses
      }
    }
  }, async (/** @type {import('../types.js').IdRequest} */ request) => sendTest(app.db, request.params.id, policy))

  const attempt = { type: 'object', properties: { at: { type: 'string' }, status_code: { type: ['integer', 'null'] }, error: { type: ['string', 'null'] }, duration_ms: { type: 'number' } } }
  app.get('/channels/:id/deliveries', {
    schema: {
      description: 'The channel\'s 50 most recent deliveries, newest first, each with every attempt and its outcome.',
      tags: channels,
      params: idParams,
      response: {
        200: {
          type: 'object',
          properties: {
            items: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  id: { type: 'integer' },
                  event_id: { type: ['integer', 'null'] },
                  kind: { type: 'string', enum: ['firing', 'resolved', 'test'] },
                  status: { type: 'string', enum: ['pending', 'delivered', 'failed'] },
                  attempts: { type: 'integer' },
                  next_attempt_at: { type: 'string', format: 'date-time' },
                  created_at: { type: 'string', format: 'date-time' },
                  delivered_at: { type: ['string', 'null'], format: 'date-time' },
                  last_error: { type: ['string', 'null'] },
                  attempt_log: { type: 'array', items: attempt },
                  body: { $ref: 'alertNotification#', description: 'What is sent (a slack channel gets {"text"} made from it)' }
                }
              }
            }
          }
        },
        ...errorResponses
      }
    }
  }, async (/** @type {import('../types.js').IdRequest} */ request) => {
    await getChannel(app.db, request.params.id)
    return { items: await listDeliveries(app.db, request.params.id) }
  })

  // Alerts
  app.get('/alerts', {
    schema: {
      description: 'Alerts now (`current`: each rule × monitor × location that is pending, firing or resolved — or in `state` when given) and their history ' +
        '(`history`: changes of state, newest first), filtered by state, monitor, location and rule.',
      tags: ['alerts'],
      querystring: alertFilterQuery,
      response: {
        200: {
          type: 'object',
          properties: {
            current: { type: 'array', items: { $ref: 'alertState#' } },
            history: { type: 'array', items: { $ref: 'alertEvent#' } }
          }
        },
        ...errorResponses
      }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Querystring: { state?: string, monitor_id?: number, location_id?: string, rule_id?: number, limit?: number } }>} */ request) => ({ current: await currentAlerts(app.db, request.query), history: await alertHistory(app.db, request.query) }))
}
