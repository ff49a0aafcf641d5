// The agent side of the API (docs/DESIGN.md §4): claim, heartbeat, results. Every
// route is behind the agent-token hook; request.agent is the caller.
import { claimJobs, heartbeatJob, submitJobResults, submitRoundsResults, failJob, releaseJob } from '../../lib/store/jobs.js'
import { touchAgent } from '../../lib/store/agents.js'
import { getLocation } from '../../lib/store/locations.js'
import { measurementHints } from '../../lib/store/claim-hints.js'
import { errorResponses, trialOutcomeSchema, idParams, submittedResult } from '../schemas.js'
import { checkResults } from '../../lib/measurement/checks.js'
import { RESULTS_BODY_LIMIT } from '../../lib/measurement/result.js'
import { expectedProtocolFor, MODES } from '../../lib/measurement/modes.js'
import { PROBES } from '../../lib/measurement/probes/index.js'
import { JOURNEY_LIMITS } from '../../lib/measurement/probes/journey.js'
import { BROWSERS } from '../../lib/measurement/browsers/index.js'
import { ValidationError } from '../../lib/runtime/errors.js'
import { rangeErrorsAre422 } from '../plugins/errors.js'
import { protocolsOfJobs } from '../../lib/store/jobs.js'
import { openJourney } from '../../lib/measurement/journey/secrets.js'
import { claimTrials, finishTrial } from '../../lib/store/journey-trials.js'

const security = [{ agentToken: [] }]
const tags = ['agent protocol']
const conflict = { 409: { $ref: 'error#' } }
// POST /results: rounds per request, and the body they may take (a round
// with its request lists runs to tens of KB, a heavy page's to MBs); one
// round's submission may take as much.
export const MAX_BATCH_ROUNDS = 200
export const BATCH_BODY_LIMIT = RESULTS_BODY_LIMIT
// A round's results, at most: each arm in up to three runs (the first view,
// the auto arm's returning visit, a repeat view), and each run a result per
// probe, a journey's one per named step besides its own (a journey of 30
// named steps in h2, h3 and the auto arm's two visits has 124).
export const MAX_ROUND_RESULTS = MODES.length * 3 * (PROBES.length + JOURNEY_LIMITS.steps)

/**
 * One submitted result, as api/schemas.js submittedResult has checked it
 * (its required fields named; checkResults and the store read the rest).
 * @typedef {{ mode: string, status: string, protocol_ok: boolean } & Record<string, any>} SubmittedResult
 */

/**
 * Request types follow the schemas (see api/routes/monitors.js).
 * @param {import('fastify').FastifyInstance} app
 */
export default async function agentProtocolRoutes (app) {
  app.post('/claim', {
    schema: {
      description: 'Lease up to `limit` due jobs of the agent\'s own location. A lease lasts lease_seconds unless extended by a heartbeat.',
      tags,
      security,
      body: {
        type: 'object',
        additionalProperties: false,
        properties: {
          limit: { type: 'integer', minimum: 1, maximum: 50, default: 1 },
          version: { type: 'string', maxLength: 100 },
          browser_version: { type: 'string', maxLength: 200 },
          trials: { type: 'integer', minimum: 0, maximum: 5, default: 0, description: 'Also take up to this many queued journey trials ("try it", docs/JOURNEYS.md) of the location' },
          browsers: {
            type: 'array',
            items: { type: 'string', enum: [...BROWSERS] },
            minItems: 1,
            uniqueItems: true,
            description: 'The browsers this agent has; it is given rounds of those only, and its location gets rounds of those (docs/BROWSERS.md). Chromium alone when not said'
          },
          instance: {
            type: 'string',
            pattern: '^[A-Za-z0-9_-]{8,64}$',
            description: 'This agent process, new at each start. With `holding`: a round leased to this instance that it does not hold was claimed in an answer it never got, and is handed back first, in the same attempt (docs/OPERATIONS.md)'
          },
          holding: {
            type: 'array',
            maxItems: 1000,
            items: idParams.properties.id,
            description: 'The ids of the rounds this instance is measuring or submitting'
          }
        }
      },
      response: {
        200: {
          type: 'object',
          properties: {
            lease_seconds: { type: 'integer' },
            allow_private_targets: {
              type: 'boolean',
              description: 'H3LENS_ALLOW_PRIVATE_TARGETS of the API: when false, the agent blocks every request of a run to a host that is or resolves to a non-public address'
            },
            location: { $ref: 'location#' },
            trials: {
              type: 'array',
              description: 'Journey trials to run once in the H2 arm, each secret opened; answered with POST /api/v1/agent/trials/:id',
              items: { type: 'object', properties: { id: { type: 'integer' }, url: { type: 'string' }, journey: { type: 'object', additionalProperties: true } } }
            },
            jobs: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  id: { type: 'integer' },
                  monitor_id: { type: 'integer' },
                  location_id: { type: 'string' },
                  browser: { type: 'string', enum: [...BROWSERS], description: 'The browser the round runs in' },
                  due_at: { type: 'string', format: 'date-time' },
                  attempts: { type: 'integer' },
                  lease_expires_at: { type: 'string', format: 'date-time' },
                  url: { type: 'string' },
                  modes: { type: 'array', items: { type: 'string' } },
                  probes: { type: 'array', items: { type: 'string' } },
                  repeat_view: { type: 'boolean' },
                  options: { type: 'object', additionalProperties: true },
                  aa_protocol: {
                    type: ['string', 'null'],
                    description: 'A/A calibration: run mode h2 (arm A) and mode h3 (arm B) both forced to this protocol, judge each against it, ' +
                      'and submit them under their arm\'s mode with details.arm_protocol'
                  },
                  force_quic_origins: { type: 'array', items: { type: 'string' }, description: 'Origins seen advertising h3 (options.force_quic = all)' },
                  backed_off_timeouts: {
                    type: ['integer', 'null'],
                    description: 'Set when the monitor is backed off at this location: its last n rounds here timed out. ' +
                      'The round then gets one page timeout in all instead of two (docs/OPERATIONS.md)'
                  },
                  netlog_thresholds: { type: 'object', additionalProperties: { type: 'number' }, description: 'p99 per "probe/mode" of recent runs; a run above it is run again with a net log' },
                  journey: {
                    type: ['object', 'null'],
                    additionalProperties: true,
                    description: 'With the journey probe: the monitor\'s journey to run in each arm, each secret opened in its step (docs/JOURNEYS.md). ' +
                      'The agent never logs it, and scrubs every secret from what it submits'
                  }
                }
              }
            }
          }
        },
        ...errorResponses
      }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Body: { limit?: number, version?: string, browser_version?: string, trials?: number, browsers?: string[], instance?: string, holding?: number[] } | undefined }>} */ request) => {
    const body = request.body ?? {}
    await touchAgent(app.db, request.agent.id, body)
    const leaseSeconds = app.config.leaseSeconds
    const claimed = await claimJobs(app.db, {
      agentId: request.agent.id, locationId: request.agent.location_id, limit: body.limit ?? 1, leaseSeconds, instance: body.instance ?? null, holding: body.holding ?? []
    })
    const jobs = []
    for (const job of claimed) {
      Object.assign(job, await measurementHints(app.db, job))
      const { journey_secrets: sealed, ...spec } = job
      if (spec.journey) {
        // The one place a journey's secrets are opened: for the agent that runs the round.
        try {
          spec.journey = openJourney(spec.journey, sealed, app.secrets)
        } catch (/** @type {any} */ err) {
          // The server's key, not the agent: no fault of the agent's.
          await failJob(app.db, { jobId: job.id, agentId: request.agent.id, locationId: request.agent.location_id, error: `the journey's secrets cannot be opened: ${err.message}`, agentFault: false })
          request.log.error({ job: job.id, monitor: job.monitor_id, err: err.message }, 'journey secrets cannot be opened; round failed')
          continue
        }
      }
      jobs.push(spec)
    }
    const location = await getLocation(app.db, request.agent.location_id)
    const trials = body.trials ? await claimTrials(app.db, { agentId: request.agent.id, locationId: request.agent.location_id, limit: body.trials, box: app.secrets }) : []
    return { lease_seconds: leaseSeconds, allow_private_targets: app.config.allowPrivateTargets, location, jobs, trials }
  })

  app.post('/trials/:id', {
    // A screenshot is a few hundred KB of base64.
    bodyLimit: 6 * 1024 * 1024,
    schema: {
      description: 'The outcome of a journey trial this agent took: each step\'s, and the last frame as a base64 JPEG. Stored with the trial, never as a result.',
      tags,
      security,
      params: idParams,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['outcome'],
        properties: {
          // The editor reads every outcome's status and steps (the agent sends [] for none).
          outcome: { ...trialOutcomeSchema, required: ['status', 'steps'] },
          screenshot: { type: ['string', 'null'], maxLength: 4 * 1024 * 1024, pattern: '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$', description: 'base64, padded' }
        }
      },
      response: { 200: { type: 'object', properties: { stored: { type: 'boolean' } } }, ...errorResponses }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Params: { id: number }, Body: { outcome: Record<string, any>, screenshot?: string | null } }>} */ request) => {
    await finishTrial(app.db, { id: request.params.id, agentId: request.agent.id, outcome: request.body.outcome, screenshot: request.body.screenshot == null ? null : Buffer.from(request.body.screenshot, 'base64') })
    return { stored: true }
  })

  app.post('/jobs/:id/heartbeat', {
    schema: {
      description: 'Extend the lease of a job the agent is still running.',
      tags,
      security,
      params: idParams,
      response: { 200: { type: 'object', properties: { lease_expires_at: { type: 'string', format: 'date-time' } } }, ...errorResponses, ...conflict }
    }
  }, async (/** @type {import('../types.js').IdRequest} */ request) => {
    await touchAgent(app.db, request.agent.id)
    return heartbeatJob(app.db, { jobId: request.params.id, agentId: request.agent.id, locationId: request.agent.location_id, leaseSeconds: app.config.leaseSeconds })
  })

  app.post('/jobs/:id/results', {
    config: { stores: 'results' },
    // A round of a page with many requests lists each of them (thousands
    // on a heavy page): this route takes what a round of the batch route may.
    bodyLimit: BATCH_BODY_LIMIT,
    // Values out of range are 422, like the plausibility checks below.
    schemaErrorFormatter: rangeErrorsAre422,
    schema: {
      description: 'Submit every result of a job and mark it done. Idempotent: results already stored are counted as duplicates, not stored again. ' +
        '409 when the job is leased to another agent (code lease_lost) or belongs to another location, or is done and a result is not among those stored ' +
        '(code round_done: a round\'s results are sent together); ' +
        '422 when a value cannot be true (out of range, timings out of order, a status or protocol_ok that contradicts observed_protocol), naming the field, ' +
        'or when a result is of a mode, probe, journey step or view the round\'s claim did not ask for (code not_asked). ' +
        'protocol_ok is stored as the server computes it from observed_protocol.',
      tags,
      security,
      params: idParams,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['results'],
        properties: {
          agent_version: { type: 'string', maxLength: 100 },
          results: { type: 'array', minItems: 1, maxItems: MAX_ROUND_RESULTS, items: submittedResult }
        }
      },
      response: {
        200: { type: 'object', properties: { stored: { type: 'integer' }, duplicates: { type: 'integer' } } },
        ...errorResponses,
        ...conflict,
        422: { $ref: 'error#' }
      }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Params: { id: number }, Body: { agent_version?: string, results: SubmittedResult[] } }>} */ request) => {
    const monitor = await protocolsOfJob(app.db, request.params.id, request.agent.location_id)
    checkResults(request.body.results, { expectedProtocol: (mode) => expectedProtocolFor(mode, monitor) })
    await touchAgent(app.db, request.agent.id)
    const ack = await submitJobResults(app.db, {
      jobId: request.params.id,
      agent: request.agent,
      results: request.body.results,
      agentVersion: request.body.agent_version
    })
    app.metrics.countIngested(request.agent.location_id, request.body.results, ack)
    return ack
  })

  app.post('/results', {
    config: { stores: 'results' },
    // Many rounds a request: an agent's spool after an outage, or a busy agent.
    bodyLimit: BATCH_BODY_LIMIT,
    schemaErrorFormatter: rangeErrorsAre422,
    schema: {
      description: `Submit the results of up to ${MAX_BATCH_ROUNDS} jobs in one request and one transaction. ` +
        'Each round gets the checks of `POST /jobs/{id}/results` and its own answer, in the order sent: ' +
        '{job_id, stored, duplicates} when stored (idempotent, as for one job), or {job_id, error: {statusCode, code, message}} ' +
        'with the status that route would give (404, 409 lease_lost / wrong_location / cancelled / round_done, 422 naming the field, 422 not_asked); ' +
        'a refused round stores nothing and does not hold up the others.',
      tags,
      security,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['rounds'],
        properties: {
          agent_version: { type: 'string', maxLength: 100 },
          rounds: {
            type: 'array',
            minItems: 1,
            maxItems: MAX_BATCH_ROUNDS,
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['job_id', 'results'],
              properties: {
                job_id: idParams.properties.id,
                results: { type: 'array', minItems: 1, maxItems: MAX_ROUND_RESULTS, items: submittedResult }
              }
            }
          }
        }
      },
      response: {
        200: {
          type: 'object',
          properties: {
            rounds: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  job_id: { type: 'integer' },
                  stored: { type: 'integer' },
                  duplicates: { type: 'integer' },
                  error: { type: 'object', properties: { statusCode: { type: 'integer' }, code: { type: 'string' }, message: { type: 'string' } } }
                }
              }
            }
          }
        },
        ...errorResponses,
        422: { $ref: 'error#' }
      }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Body: { agent_version?: string, rounds: { job_id: number, results: SubmittedResult[] }[] } }>} */ request) => {
    const { rounds, agent_version: agentVersion } = request.body
    const seen = new Map()
    rounds.forEach((r, i) => {
      if (seen.has(r.job_id)) throw new ValidationError(`rounds.${i}.job_id: job ${r.job_id} is already rounds.${seen.get(r.job_id)}; send each job once`, `rounds.${i}.job_id`)
      seen.set(r.job_id, i)
    })
    const monitors = await protocolsOfJobs(app.db, rounds.map((r) => r.job_id), request.agent.location_id)
    /** @type {Map<number, any>} */
    const refused = new Map()
    /** @type {typeof rounds} */
    const checked = []
    rounds.forEach((r, i) => {
      try {
        checkResults(r.results, { expectedProtocol: (mode) => expectedProtocolFor(mode, monitors.get(r.job_id) ?? null) })
        checked.push(r)
      } catch (/** @type {any} */ err) {
        if (err.statusCode !== 422) throw err
        refused.set(r.job_id, { job_id: r.job_id, error: { statusCode: 422, code: 'implausible', message: `rounds.${i}.${err.message}` } })
      }
    })
    await touchAgent(app.db, request.agent.id)
    const answers = checked.length ? await submitRoundsResults(app.db, { agent: request.agent, rounds: checked, agentVersion }) : []
    answers.forEach((ack, i) => { if (!('error' in ack)) app.metrics.countIngested(request.agent.location_id, checked[i].results, ack) })
    const byJob = new Map(answers.map((a) => [a.job_id, a]))
    return { rounds: rounds.map((r) => refused.get(r.job_id) ?? byJob.get(r.job_id)) }
  })

  app.post('/jobs/:id/fail', {
    schema: {
      description: 'The agent could not run the job: an infrastructure fault (its browser did not start or went away), never the page\'s failure. ' +
        'Nothing of the attempt is stored; the round runs again as a new attempt, with back-off, until attempts run out, and the job keeps the cause. ' +
        'Counted in the agent\'s health (faults, last_fault on GET /agents).',
      tags,
      security,
      params: idParams,
      body: { type: 'object', additionalProperties: false, required: ['error'], properties: { error: { type: 'string', maxLength: 4000 } } },
      response: { 200: { type: 'object', properties: { state: { type: 'string' } } }, ...errorResponses, ...conflict }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Params: { id: number }, Body: { error: string } }>} */ request) => ({ state: await failJob(app.db, { jobId: request.params.id, agentId: request.agent.id, locationId: request.agent.location_id, error: request.body.error }) }))

  app.post('/jobs/:id/release', {
    schema: {
      description: 'Give a leased job back unrun (agent shutting down); the attempt is not counted. ' +
        '409 when the job belongs to another location (wrong_location), is leased to another agent (lease_lost) or is not leased (not_leased).',
      tags,
      security,
      params: idParams,
      response: { 200: { type: 'object', properties: { released: { type: 'boolean' } } }, ...errorResponses, ...conflict }
    }
  }, async (/** @type {import('../types.js').IdRequest} */ request) => ({ released: await releaseJob(app.db, { jobId: request.params.id, agentId: request.agent.id, locationId: request.agent.location_id }) }))
}

/**
 * What the job's monitor expects of each arm's protocol (its aa_protocol, for
 * an A/A monitor; the job's own value wins). Read as JSON so that a schema
 * without the column reads as "not A/A". A job that does not exist is left
 * to the submission, which answers 404.
 * @param {import('pg').Pool} db
 * @param {number} jobId
 * @param {string} locationId the submitting agent's location
 * @returns {Promise<{ aa_protocol?: string | null } | null>}
 */
async function protocolsOfJob (db, jobId, locationId) {
  return (await protocolsOfJobs(db, [jobId], locationId)).get(jobId) ?? null
}
