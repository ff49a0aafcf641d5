import { Readable } from 'node:stream'
import { getMonitor } from '../../lib/store/monitors.js'
import { targetPolicy } from '../../lib/measurement/targets.js'
import { importResults, ndjsonLines, IMPORT_MAX_AHEAD_MS, IMPORT_MAX_BYTES, IMPORT_MAX_LINES } from '../../lib/store/results-import.js'
import { errorResponses, idParams } from '../schemas.js'

const NDJSON = 'application/x-ndjson'

/**
 * Route plugins take the app as `any`: Fastify's types cannot derive request
 * shapes from JSON schemas in plain JS. The schemas check them at run time.
 * @param {import('fastify').FastifyInstance} app
 */
export default async function importRoutes (app) {
  // Rows that add a location to the monitor are checked as a PATCH of its locations would be.
  const policy = targetPolicy(app.config)
  // The body is handed over as the request stream and read line by line,
  // never buffered whole. Fastify's bodyLimit (1 MiB) applies only to the
  // parsers that buffer; this one counts bytes itself and stops at
  // IMPORT_MAX_BYTES. Registered in this plugin only, so no other route
  // takes NDJSON.
  app.addContentTypeParser(NDJSON, (request, payload, done) => {
    const declared = Number(request.headers['content-length'])
    if (declared > IMPORT_MAX_BYTES) {
      return done(Object.assign(new Error(`the body is larger than ${IMPORT_MAX_BYTES / 1024 / 1024} MiB; import at most ${IMPORT_MAX_LINES} results per request`), { statusCode: 413, field: 'body' }))
    }
    done(null, payload)
  })

  app.post('/monitors/:id/results/import', {
    config: { stores: 'results' },
    schema: {
      description: 'Import results into a monitor, one JSON object per line (`application/x-ndjson`) in the field names of the NDJSON export ' +
        '(`GET /api/v1/results?format=ndjson`), so an export restores as is. `time`, `location_id` and `mode` are required; `probe` defaults to page, ' +
        '`view` to first, `status` to ok. `protocol_ok` defaults to whether `observed_protocol` is the protocol the mode was forced to ' +
        '(an A/A monitor\'s aa_protocol for both arms); a result with status ok and no `observed_protocol` came over that protocol. ' +
        '`details` (an object, e.g. `{"samples": [...]}` for the parallel probe) is kept. `id`, `job_id`, `monitor_id` and `agent_id` belong to the ' +
        'source system and are ignored; any other field is an error. Rows with the same `location_id` and `time` are one round (one job). ' +
        `At most ${IMPORT_MAX_LINES} lines and ${IMPORT_MAX_BYTES / 1024 / 1024} MiB per request, read as a stream. ` +
        'The whole body is checked first (JSON, field types, the plausibility checks agent results get, duplicates in the file); ' +
        'every row must be at one of the monitor\'s locations (or, with `add_locations=true`, at a known location, which is then added to the monitor as a PATCH of its locations would) ' +
        `and its \`time\` and \`measured_at\` at most ${IMPORT_MAX_AHEAD_MS / 1000} s ahead of the server's clock; ` +
        'one bad line answers 400 with `line` and `field` (e.g. `line 17: ttfb_ms`) and stores nothing. Then everything is stored in one transaction. ' +
        'Idempotent: results already stored (same round, mode, view and probe) are counted in `skipped_existing`. ' +
        'Rollups, trends and comparisons include the imported results as soon as the request returns.',
      tags: ['results'],
      params: idParams,
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          add_locations: { type: 'boolean', default: false, description: 'Rows at a known location the monitor does not run at add that location to the monitor (it is then also measured there); without it they are a 400' }
        }
      },
      body: {
        content: {
          [NDJSON]: { schema: { description: 'One result per line, as in the NDJSON export' } }
        }
      },
      response: {
        200: {
          type: 'object',
          properties: {
            imported: { type: 'integer', description: 'Results stored by this request' },
            skipped_existing: { type: 'integer', description: 'Results that were stored already (an earlier import of the same rows)' },
            rounds: { type: 'integer', description: 'Rounds (location and time) the lines belong to' },
            added_locations: { type: 'array', items: { type: 'string' }, description: 'Locations this import added to the monitor (add_locations=true)' }
          }
        },
        ...errorResponses,
        409: { $ref: 'error#', description: 'A line names the due time of a round still queued or being measured (code live_round); nothing is stored' },
        413: { $ref: 'error#', description: `More than ${IMPORT_MAX_LINES} lines or ${IMPORT_MAX_BYTES / 1024 / 1024} MiB` },
        415: { $ref: 'error#', description: `The body is not ${NDJSON}` }
      }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Params: { id: number }, Querystring: { add_locations: boolean }, Body: unknown }>} */ request, reply) => {
    const body = request.body
    if (!(body instanceof Readable)) {
      return reply.code(415).send({ statusCode: 415, error: 'Unsupported Media Type', message: `send the results as ${NDJSON}, one JSON object per line` })
    }
    try {
      const monitor = await getMonitor(app.db, request.params.id)
      return await importResults(app.db, {
        monitor, lines: ndjsonLines(body), addLocations: request.query.add_locations, policy
      })
    } finally {
      // A refused import may leave the rest of the body unread: drain it, so
      // the client gets the answer instead of a stalled upload.
      if (!body.readableEnded) body.unpipe().resume()
    }
  })
}
