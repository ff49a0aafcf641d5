// Agent upload of a Chromium net log. Its own content type and body limit:
// net logs are binary (gzip) and much larger than result batches.
import { storeNetlog } from '../../lib/store/netlogs.js'
import { storeFilmstrip } from '../../lib/store/filmstrips.js'
import { FILMSTRIP_MAX_BYTES, FILMSTRIP_MAX_FRAMES } from '../../lib/measurement/visual.js'
import { MODES } from '../../lib/measurement/modes.js'
import { ValidationError } from '../../lib/runtime/errors.js'
import { errorResponses, idParams, probeValue } from '../schemas.js'

/**
 * 32 MiB of gzip: the net log of a many-resources page in Default capture
 * mode is a few MB raw and compresses about tenfold, so this leaves room for
 * heavy real pages while bounding what one request can make the API hold.
 */
export const NETLOG_BODY_LIMIT = 32 * 1024 * 1024

/** A run's frames as base64 in JSON: the cap per run, a third more for base64, and room for the rest. */
export const FILMSTRIP_BODY_LIMIT = Math.ceil(FILMSTRIP_MAX_BYTES * 4 / 3) + 64 * 1024

/**
 * @param {import('fastify').FastifyInstance} app see api/routes/monitors.js; registered behind agent-auth
 */
export default async function agentEvidenceRoutes (app) {
  app.addContentTypeParser('application/gzip', { parseAs: 'buffer', bodyLimit: NETLOG_BODY_LIMIT }, (request, body, done) => done(null, body))

  app.put('/jobs/:id/netlog', {
    bodyLimit: NETLOG_BODY_LIMIT,
    schema: {
      description: 'Upload the gzip-compressed net log of one result of a job this agent holds (before or after its results). Same key as the result: mode, view, probe.',
      tags: ['agent protocol'],
      security: [{ agentToken: [] }],
      params: idParams,
      // No type: the body is a Buffer, which the handler checks is gzip.
      body: { content: { 'application/gzip': { schema: { description: 'The net log, gzip-compressed' } } } },
      querystring: {
        type: 'object',
        additionalProperties: false,
        required: ['mode', 'kind'],
        properties: {
          mode: { type: 'string', enum: MODES },
          view: { type: 'string', enum: ['first', 'repeat'], default: 'first' },
          probe: { ...probeValue, default: 'page' },
          kind: { type: 'string', enum: ['run', 'rerun'] },
          raw_bytes: { type: 'integer', minimum: 0, maximum: 1e12 }
        }
      },
      response: {
        200: { type: 'object', properties: { stored: { type: 'boolean' }, gzip_bytes: { type: 'integer' } } },
        ...errorResponses,
        409: { $ref: 'error#' },
        413: { $ref: 'error#' }
      }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Params: { id: number }, Body: unknown,
    Querystring: { mode: string, view: string, probe: string, kind: 'run' | 'rerun', raw_bytes?: number } }>} */ request, reply) => {
    const body = request.body
    if (!Buffer.isBuffer(body) || body.length < 2 || body[0] !== 0x1f || body[1] !== 0x8b) {
      throw new ValidationError('the body must be a gzip-compressed net log with content-type application/gzip', 'body')
    }
    const q = request.query
    return storeNetlog(app.db, {
      jobId: request.params.id, agent: request.agent, mode: q.mode, view: q.view, probe: q.probe, kind: q.kind, rawBytes: q.raw_bytes ?? null, gzip: body
    })
  })

  app.put('/jobs/:id/filmstrip', {
    bodyLimit: FILMSTRIP_BODY_LIMIT,
    schema: {
      description: `Upload the frames of one result of a job this agent holds (before or after its results); same key as the result: mode, view, probe. ` +
        `At most ${FILMSTRIP_MAX_FRAMES} frames and ${FILMSTRIP_MAX_BYTES} bytes of JPEG, one per 100 ms at most, in time order. A second upload for the key replaces the first.`,
      tags: ['agent protocol'],
      security: [{ agentToken: [] }],
      params: idParams,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['mode', 'frames'],
        properties: {
          mode: { type: 'string', enum: MODES },
          view: { type: 'string', enum: ['first', 'repeat'], default: 'first' },
          probe: { ...probeValue, default: 'page' },
          frames: {
            type: 'array',
            minItems: 1,
            maxItems: FILMSTRIP_MAX_FRAMES,
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['t_ms', 'jpeg'],
              properties: {
                t_ms: { type: 'number', minimum: 0, maximum: 600000, description: 'ms since the navigation\'s start' },
                jpeg: { type: 'string', maxLength: Math.ceil(FILMSTRIP_MAX_BYTES * 4 / 3) + 4, description: 'the frame, JPEG in base64' }
              }
            }
          }
        }
      },
      response: {
        200: { type: 'object', properties: { stored: { type: 'boolean' }, frames: { type: 'integer' }, bytes: { type: 'integer' } } },
        ...errorResponses,
        409: { $ref: 'error#' },
        413: { $ref: 'error#' }
      }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Params: { id: number },
    Body: { mode: string, view: string, probe: string, frames: { t_ms: number, jpeg: string }[] } }>} */ request) => {
    const b = request.body
    const frames = b.frames.map((f) => ({ t_ms: f.t_ms, jpeg: Buffer.from(f.jpeg, 'base64') }))
    return storeFilmstrip(app.db, { jobId: request.params.id, agent: request.agent, mode: b.mode, view: b.view, probe: b.probe, frames })
  })
}
