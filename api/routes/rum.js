// /api/v1/rum: real users' sites (their keys and origins), what their page
// views say (per region and browser, over time, as NDJSON) and the real
// users beside a monitor's regional table. The beacons come in through
// api/routes/rum-ingest.js. docs/RUM.md.
import { createSite, getSite, listSites, revokeSite, sitesOfOrigin, updateSite } from '../../lib/store/rum-sites.js'
import { beaconBatches } from '../../lib/store/rum-beacons.js'
import { ndjsonStream } from '../../lib/store/results-export.js'
import { getMonitor } from '../../lib/store/monitors.js'
import { realUserSummary, realUserTrend } from '../../lib/analysis/rum.js'
import { originOf } from '../../lib/measurement/origin.js'
import { currentSnippet, installTag, snippetSource, SNIPPET_BUDGET_GZIP_BYTES } from '../../lib/measurement/rum/snippet.js'
import { errorResponses, idParams } from '../schemas.js'
import { siteInput, siteSchema, snippetSchema, summarySchema, trendSchema } from '../rum-schemas.js'
import { FIRST_TIME } from '../../lib/runtime/date-time.js'

const tags = ['real users']
const DAY = 86400e3
const MAX_WINDOW_DAYS = 90
const windowQuery = {
  from: { type: 'string', format: 'date-time', description: 'Window start (default: 24 h before `to`)' },
  to: { type: 'string', format: 'date-time', description: 'Window end (default: now)' }
}
const BUCKETS = /** @type {Record<string, number>} */ ({ '5m': 300, '1h': 3600, '1d': 86400 })

/**
 * @typedef {import('fastify').FastifyRequest<{ Params: { id: number }, Querystring: { from?: string, to?: string, bucket?: string } }>} WindowRequest
 */

/** @param {import('fastify').FastifyInstance} app */
export default async function rumRoutes (app) {
  /**
   * The install tag points at this server as its users reach it. The
   * address is checked when this is called, before a route changes
   * anything: a refused one (a Host header that makes no URL) changes nothing.
   * @param {import('fastify').FastifyRequest} request
   * @returns {(site: Record<string, any>) => Record<string, any>} the site with its install tag
   */
  const installer = (request) => {
    const snippet = currentSnippet()
    // Without H3LENS_PUBLIC_URL, the address the request came to (its Host header).
    const baseUrl = app.config.publicUrl ?? `${request.protocol}://${request.host}`
    const field = app.config.publicUrl ? 'H3LENS_PUBLIC_URL' : 'host'
    const src = snippetSource({ baseUrl, snippet, field })
    return (site) => ({ ...site, install: { tag: installTag({ baseUrl, key: site.key, sampleRate: site.sample_rate, snippet, field }), src, integrity: snippet.integrity, version: snippet.version } })
  }

  /** @param {WindowRequest} request */
  const windowOf = (request) => {
    const to = request.query.to ? new Date(request.query.to) : new Date()
    const from = request.query.from ? new Date(request.query.from) : new Date(Math.max(+to - DAY, FIRST_TIME))
    if (from > to) throw Object.assign(app.httpErrors.badRequest('from must not be after to'), { field: 'from' })
    if (+to - +from > MAX_WINDOW_DAYS * DAY) throw Object.assign(app.httpErrors.badRequest(`the window is longer than ${MAX_WINDOW_DAYS} days; choose a shorter from/to`), { field: 'from' })
    return { from, to }
  }

  app.get('/rum/snippet', {
    schema: { description: 'The snippet served at /rum/v1/h3lens.js: its version, integrity (SRI) and size.', tags, response: { 200: snippetSchema } }
  }, async () => {
    const s = currentSnippet()
    return { path: '/rum/v1/h3lens.js', version: s.version, integrity: s.integrity, bytes: s.bytes, gzip_bytes: s.gzipBytes, budget_gzip_bytes: SNIPPET_BUDGET_GZIP_BYTES, web_vitals: s.webVitals }
  })

  app.get('/rum/sites', {
    schema: { description: 'The sites whose visitors send beacons, with their install tags (revoked ones too with all=true).', tags, querystring: { type: 'object', additionalProperties: false, properties: { all: { type: 'boolean', default: false } } }, response: { 200: { type: 'object', properties: { items: { type: 'array', items: siteSchema } } } } }
  }, async (/** @type {import('fastify').FastifyRequest<{ Querystring: { all: boolean } }>} */ request) => ({
    items: await listSites(app.db, { includeRevoked: request.query.all }).then((sites) => sites.map(installer(request)))
  }))

  app.post('/rum/sites', {
    schema: {
      description: 'Add a site: a name, the origins its pages are served from (the Origin of every beacon must be one of them) and a sample rate. The answer has the install tag.',
      tags,
      body: { type: 'object', additionalProperties: false, required: ['name', 'origins'], properties: siteInput },
      response: { 201: siteSchema, ...errorResponses }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Body: { name: string, origins: string[], sample_rate?: number } }>} */ request, reply) => {
    reply.code(201)
    const withInstall = installer(request)
    return withInstall(await createSite(app.db, request.body))
  })

  app.get('/rum/sites/:id', {
    schema: { description: 'One site, with its install tag.', tags, params: idParams, response: { 200: siteSchema, ...errorResponses } }
  }, async (/** @type {import('../types.js').IdRequest} */ request) => installer(request)(await getSite(app.db, request.params.id)))

  app.patch('/rum/sites/:id', {
    schema: {
      description: 'Rename a site, change its origins or its sample rate (the install tag carries the rate: pages keep theirs until it is replaced).',
      tags,
      params: idParams,
      body: { type: 'object', additionalProperties: false, minProperties: 1, properties: siteInput },
      response: { 200: siteSchema, ...errorResponses }
    }
  }, async (/** @type {import('../types.js').IdBodyRequest} */ request) => {
    const withInstall = installer(request)
    return withInstall(await updateSite(app.db, request.params.id, request.body))
  })

  app.delete('/rum/sites/:id', {
    schema: { description: 'Revoke a site key: its beacons are refused (403) within 10 s; those stored stay until retention.', tags, params: idParams, response: { 200: siteSchema, ...errorResponses } }
  }, async (/** @type {import('../types.js').IdRequest} */ request) => {
    const withInstall = installer(request)
    return withInstall(await revokeSite(app.db, request.params.id))
  })

  app.get('/rum/sites/:id/summary', {
    schema: {
      description: 'Real users of a site per region and browser: page views, the H3 share (Wilson interval), TTFB and LCP percentiles by protocol ' +
        '(bootstrap intervals), and H3 against H2 within strata (connection, visit, browser) combined with equal weights: an association, not a ' +
        'controlled comparison, coloured under the synthetic verdicts\' rules. Beside each region, the lab\'s returning-visit H3 share.',
      tags,
      params: idParams,
      querystring: { type: 'object', additionalProperties: false, properties: windowQuery },
      response: { 200: summarySchema, ...errorResponses }
    }
  }, async (/** @type {WindowRequest} */ request) => {
    const site = await getSite(app.db, request.params.id)
    return realUserSummary(app.db, { site, ...windowOf(request) })
  })

  app.get('/rum/sites/:id/trends', {
    schema: {
      description: 'The H3 share of network page views per time bucket, per region and for all regions.',
      tags,
      params: idParams,
      querystring: { type: 'object', additionalProperties: false, properties: { ...windowQuery, bucket: { type: 'string', enum: Object.keys(BUCKETS), default: '1h' } } },
      response: { 200: trendSchema, ...errorResponses }
    }
  }, async (/** @type {WindowRequest} */ request) => {
    const site = await getSite(app.db, request.params.id)
    return realUserTrend(app.db, { site, ...windowOf(request), bucketS: BUCKETS[request.query.bucket ?? '1h'] })
  })

  app.get('/rum/sites/:id/beacons', {
    schema: {
      description: 'Every stored beacon of the window, oldest first, as NDJSON (one page view per line, the columns of docs/PRIVACY.md), streamed.',
      tags,
      params: idParams,
      querystring: { type: 'object', additionalProperties: false, properties: windowQuery },
      response: { 200: { description: 'NDJSON', content: { 'application/x-ndjson': { schema: { type: 'string' } } } }, ...errorResponses }
    }
  }, async (/** @type {WindowRequest} */ request, reply) => {
    const site = await getSite(app.db, request.params.id)
    const { from, to } = windowOf(request)
    reply.type('application/x-ndjson; charset=utf-8')
    reply.header('content-disposition', `attachment; filename="h3lens-rum-${site.id}-${from.toISOString().replace(/[-:]|\.\d+/g, '')}.ndjson"`)
    if (request.method === 'HEAD') return reply.send()
    return reply.send(ndjsonStream(beaconBatches(app.db, { siteId: site.id, from, to, batchRows: 2000 })))
  })

  app.get('/rum/monitors/:id', {
    schema: {
      description: 'The real users of a monitor\'s page: the summary of the first site whose origins include the monitor\'s origin, or site null. ' +
        'Its lab share (regions[].lab, lab_monitor) is this monitor\'s own auto arm, and null when the monitor runs none.',
      tags,
      params: idParams,
      querystring: { type: 'object', additionalProperties: false, properties: windowQuery },
      response: { 200: { type: 'object', properties: { site: { ...siteSchema, type: ['object', 'null'] }, summary: { ...summarySchema, type: ['object', 'null'] } } }, ...errorResponses }
    }
  }, async (/** @type {WindowRequest} */ request) => {
    const monitor = await getMonitor(app.db, request.params.id)
    const origin = originOf(monitor.url)
    const [site] = origin ? await sitesOfOrigin(app.db, origin) : []
    if (!site) return { site: null, summary: null }
    return { site: installer(request)(site), summary: await realUserSummary(app.db, { site, ...windowOf(request), monitor }) }
  })
}
