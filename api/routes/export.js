import {
  EXPORT_FORMATS, JSON_MAX_DAYS, JSON_MAX_ROWS, assertMonitorExists, checkExportRange, exportBatches, exportRowsCapped,
  csvStream, ndjsonStream, exportFilename
} from '../../lib/store/results-export.js'
import { errorResponses, resultFilterQuery } from '../schemas.js'

const STREAMS = {
  csv: { type: 'text/csv; charset=utf-8', ext: 'csv', encode: csvStream },
  ndjson: { type: 'application/x-ndjson; charset=utf-8', ext: 'ndjson', encode: ndjsonStream }
}

/**
 * Route plugins take the app as `any`: Fastify's types cannot derive request
 * shapes from JSON schemas in plain JS. The schemas check them at run time.
 * @param {import('fastify').FastifyInstance} app
 */
export default async function exportRoutes (app) {
  app.get('/results', {
    schema: {
      description: 'Raw results of one monitor, oldest first, for analysis elsewhere. `csv` (default) and `ndjson` stream any ' +
        `range as a download; \`json\` answers \`{items}\` for ranges up to ${JSON_MAX_DAYS} days and ${JSON_MAX_ROWS} rows. ` +
        'CSV columns are the result fields, `details` as far as the analyses read it (why a run failed, why its page came over its protocol, an A/A arm\'s protocol, a journey\'s steps; not the evidence, per request and per origin, which the result\'s own routes serve) as JSON text, then `samples` (a multi-sample probe\'s values, as JSON text); the NDJSON export carries the same fields, and the import takes details and samples back from it, so a monitor restored from it gives the same answers. Then `filmstrip_url` (where the result\'s frames are listed, null without frames; the import ignores it); flags are joined with a space, notes are JSON text, times are ISO-8601, and a text cell a spreadsheet would run as a formula (it begins with =, +, -, @, a tab or a carriage return and is not a number) is written after an apostrophe; NDJSON carries values as stored; `json` answers `{items}` of the result fields, without details.',
      tags: ['export'],
      querystring: {
        type: 'object',
        additionalProperties: false,
        required: ['monitor'],
        properties: {
          monitor: { type: 'integer', minimum: 1, maximum: 2147483647, description: 'Monitor id (deleted monitors\' results are still exported)' },
          ...resultFilterQuery,
          format: { type: 'string', enum: EXPORT_FORMATS, default: 'csv' }
        }
      },
      response: {
        200: {
          description: 'CSV or NDJSON download, or `{items}` for format=json',
          content: {
            'application/json': { schema: { type: 'object', properties: { items: { type: 'array', items: { $ref: 'result#' } } } } },
            'text/csv': { schema: { type: 'string' } },
            'application/x-ndjson': { schema: { type: 'string' } }
          }
        },
        ...errorResponses
      }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Querystring: import('../types.js').ResultFilterQuery & { monitor: number, format: 'csv' | 'ndjson' | 'json' } }>} */ request, reply) => {
    const q = request.query
    checkExportRange(q)
    await assertMonitorExists(app.db, q.monitor)
    const filter = { ...q, monitorId: q.monitor }
    if (q.format === 'json') return { items: await exportRowsCapped(app.db, filter) }

    const out = STREAMS[q.format]
    reply.type(out.type)
    reply.header('content-disposition', `attachment; filename="${exportFilename(q, out.ext)}"`)
    // HEAD (download managers asking for the file name) gets the headers
    // only; sending the stream would read the whole range just to drop it.
    if (request.method === 'HEAD') return reply.send()
    // Fastify pipes the stream to the socket, so rows are fetched only as
    // fast as the client reads them.
    const stream = out.encode(exportBatches(app.db, filter))
    stream.once('error', (err) => {
      // Before the first byte, the error handler answers (and logs) a 500.
      // After it, Fastify destroys the response: the client sees a chunked
      // download cut short, never a short file that looks complete. Fastify
      // logs nothing then (request logging is off), so it is logged here.
      if (reply.raw.headersSent) request.log.error({ err, url: request.routeOptions.url, method: request.method, format: q.format }, 'export failed after it started; the download was aborted')
    })
    return reply.send(stream)
  })
}
