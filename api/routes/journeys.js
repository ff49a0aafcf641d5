// Journeys besides their monitor (docs/JOURNEYS.md): the check the editor
// runs as one types, and "try it", a journey run once by one location's
// agent in the H2 arm, whose outcome is kept a few minutes and is never a
// result.
import { checkJourney, stepNames } from '../../lib/measurement/journey/steps.js'
import { createTrial, getTrial, TRIAL_TTL_S } from '../../lib/store/journey-trials.js'
import { getMonitor, validatePageUrl } from '../../lib/store/monitors.js'
import { targetPolicy } from '../../lib/measurement/targets.js'
import { ValidationError } from '../../lib/runtime/errors.js'
import { errorResponses, idParams, journeySchema, trialOutcomeSchema } from '../schemas.js'

const tags = ['journeys']
const journeyInput = { description: 'The journey as the monitor takes it: { steps: [...] } or its YAML or JSON text' }

const trialSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    location_id: { type: 'string' },
    monitor_id: { type: ['integer', 'null'] },
    url: { type: 'string' },
    journey: journeySchema,
    state: { type: 'string', enum: ['queued', 'running', 'done'], description: 'queued until an agent of the location claims it' },
    outcome: { ...trialOutcomeSchema, type: ['object', 'null'] },
    screenshot: { type: ['string', 'null'], description: 'The last frame, a base64 JPEG (fields holding a secret drawn masked)' },
    created_at: { type: 'string', format: 'date-time' },
    finished_at: { type: ['string', 'null'], format: 'date-time' },
    expires_at: { type: 'string', format: 'date-time' }
  }
}

/** @param {import('fastify').FastifyInstance} app */
export default async function journeyRoutes (app) {
  const policy = { ...targetPolicy(app.config), secrets: app.secrets }

  app.post('/journeys/check', {
    schema: {
      description: 'Check a journey as a monitor would store it, without storing anything: 200 with its steps and named steps, or a 400 naming the step and field at fault. ' +
        'The dashboard\'s journey editor calls it as one types. The private-target guard runs when the journey is saved or tried.',
      tags,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['journey'],
        properties: {
          url: { type: 'string', maxLength: 2048, description: 'The monitor URL navigate steps are relative to' },
          monitor_id: { type: 'integer', minimum: 1, maximum: 2147483647, description: 'Instead of url: that monitor\'s' },
          journey: journeyInput
        }
      },
      response: {
        200: {
          type: 'object',
          properties: {
            steps: { type: 'integer' },
            named_steps: { type: 'array', items: { type: 'string' } },
            step_timeout_ms: { type: 'integer' },
            timeout_ms: { type: 'integer' }
          }
        },
        ...errorResponses
      }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Body: Record<string, any> }>} */ request) => {
    const { body } = request
    if (body.url === undefined && !body.monitor_id) throw new ValidationError('url: required without monitor_id (navigate URLs are relative to it)', 'url')
    // A url given is checked as a monitor's would be; it wins over the monitor's.
    const url = body.url !== undefined ? validatePageUrl(body.url) : (await getMonitor(app.db, body.monitor_id)).url
    const j = checkJourney(body.journey, { url })
    return { steps: j.steps.length, named_steps: stepNames(j), step_timeout_ms: j.step_timeout_ms, timeout_ms: j.timeout_ms }
  })

  app.post('/journeys/trials', {
    schema: {
      description: `"Try it": run a journey once, on an agent of location_id, in the H2 arm. Answers 202 with the trial; GET it until its state is done. ` +
        `Nothing of it becomes a result; it is kept ${TRIAL_TTL_S / 60} minutes. With monitor_id, navigate URLs are relative to that monitor's URL and its stored secrets ({ stored }) may be used.`,
      tags,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['location_id', 'journey'],
        properties: {
          location_id: { type: 'string', maxLength: 63 },
          url: { type: 'string', maxLength: 2048, description: 'The URL navigate steps are relative to (a monitor\'s URL)' },
          monitor_id: { type: 'integer', minimum: 1, maximum: 2147483647 },
          journey: journeyInput
        }
      },
      response: { 202: trialSchema, ...errorResponses }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Body: Record<string, any> }>} */ request, reply) => {
    return reply.code(202).send(await createTrial(app.db, request.body, policy))
  })

  app.get('/journeys/trials/:id', {
    schema: { description: 'A trial: queued, running, or done with each step\'s outcome and the last frame.', tags, params: idParams, response: { 200: trialSchema, ...errorResponses } }
  }, async (/** @type {import('../types.js').IdRequest} */ request) => getTrial(app.db, request.params.id))
}
