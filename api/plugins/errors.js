import fp from 'fastify-plugin'
import { isDatabaseOutOfResources, isDatabaseUnavailable } from '../../lib/runtime/db.js'
import { DATE_TIME_RULE } from '../../lib/runtime/date-time.js'

// Agents resubmit with back-off from 1 s; 5 s gives a restarting database
// time to come back without a stampede of retries.
/** How long a client waits before asking again while the database is down (and /healthz says so). */
export const RETRY_AFTER_S = 5

/**
 * One error handler: schema failures and domain errors become 4xx with a
 * readable message; an unreachable database is a 503 with Retry-After (a
 * client should try again, and agents keep their results spooled); anything
 * else is logged with request context and answered with a generic 500 that
 * leaks nothing.
 */
export default fp(async (app) => {
  app.addHook('onRoute', (route) => documentErrors(route))
  // A database out of disk space or memory still answers a read (/healthz's
  // SELECT 1) while writes fail: the last such failure is kept for /healthz
  // until the route it failed on stores again (a smaller write elsewhere,
  // an agent's heartbeat, may still fit where its results do not).
  /** @type {import('fastify').FastifyInstance['databaseWrites']} */
  const writes = {
    failedAt: null,
    message: null,
    route: null,
    failed (request, err) {
      if (!isDatabaseOutOfResources(err) || READ_METHODS.has(request.method)) return
      Object.assign(writes, { failedAt: Date.now(), message: err.message, route: routeOf(request) })
    }
  }
  app.decorate('databaseWrites', writes)
  app.addHook('onResponse', async (request, reply) => {
    if (writes.route !== null && reply.statusCode < 400 && routeOf(request) === writes.route) Object.assign(writes, { failedAt: null, message: null, route: null })
  })
  app.setErrorHandler((/** @type {any} */ err, request, reply) => {
    if (err.validation) {
      // 400 unless the route's schemaErrorFormatter chose another status
      // (the results route answers 422 for values out of range).
      const status = err.statusCode ?? 400
      return reply.code(status).send({ statusCode: status, error: httpReason(status), message: describeValidation(err, request), field: fieldOf(err.validation[0]) ?? err.validationContext ?? 'body' })
    }
    if (isDatabaseUnavailable(err)) {
      request.log.warn({ err: err.message, url: request.routeOptions.url, method: request.method }, 'database unavailable')
      writes.failed(request, err)
      return reply.code(503).header('retry-after', String(RETRY_AFTER_S)).send({
        statusCode: 503,
        error: 'Service Unavailable',
        message: `the database is unreachable${isDatabaseOutOfResources(err) ? ' or out of disk space or memory' : ''}; retry in ${RETRY_AFTER_S} s`,
        code: 'database_unavailable'
      })
    }
    const status = err.statusCode ?? 500
    if (status >= 500) {
      // The route pattern, not the URL: a query string may carry anything.
      request.log.error({ err, url: request.routeOptions.url ?? 'unmatched', method: request.method }, 'request failed')
      return reply.code(500).send({ statusCode: 500, error: 'Internal Server Error', message: 'something went wrong on the server; it has been logged' })
    }
    const limit = request.routeOptions.bodyLimit ?? request.server.initialConfig.bodyLimit
    const message = err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
      ? `this route does not read a body of type ${request.headers['content-type'] ?? '(none)'}; send ${bodyTypesOf(request).join(' or ')}`
      : err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? `the body is larger than this route takes (${limit} bytes)` : err.message
    /** @type {{ statusCode: number, error: string, message: string, field?: string, line?: number, code?: string }} */
    const body = { statusCode: status, error: httpReason(status), message }
    if (err.field) body.field = err.field
    // Fastify's own body errors (a Content-Length that does not match the
    // body) are about the body as a whole.
    else if ((status === 400 || status === 413) && String(err.code).startsWith('FST_ERR_CTP_')) body.field = 'body'
    if (err.line) body.line = err.line
    if (err.code && !String(err.code).startsWith('FST_')) body.code = err.code
    return reply.code(status).send(body)
  })
  app.setNotFoundHandler((request, reply) => {
    // The router matches no route for a parameter longer than its limit
    // (an id of 5,000 digits) when another route shares the path's start:
    // the same 400 as when it says so itself (api/app.js).
    const path = request.url.split('?')[0]
    if (path.split('/').some((part) => part.length > MAX_PARAM_LENGTH)) return reply.code(400).send(longPathPart())
    reply.code(404).send({ statusCode: 404, error: 'Not Found', message: `no route for ${request.method} ${request.url.split('?')[0]}` })
  })
}, { name: 'errors' })

/** The longest path parameter the router reads, in characters. */
export const MAX_PARAM_LENGTH = 100

/** The 400 for a path with a part longer than the router reads. */
export function longPathPart () {
  return { statusCode: 400, error: 'Bad Request', message: `the path has a part longer than ${MAX_PARAM_LENGTH} characters`, field: 'path' }
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH'])
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * The kind of write a request makes, which a failed write is kept by: what
 * its route stores (`config.stores`: the results routes of agents,
 * WebPageTest agents and imports are one kind), else its method and route.
 * @param {import('fastify').FastifyRequest} request
 */
const routeOf = (request) => request.routeOptions.config.stores ?? `${request.method} ${request.routeOptions.url ?? ''}`

/**
 * The content types a route reads: those its body schema names, or JSON.
 * @param {import('fastify').FastifyRequest} request
 */
function bodyTypesOf (request) {
  const types = Object.keys(/** @type {any} */ (request.routeOptions.schema)?.body?.content ?? {})
  return types.length ? types : ['application/json']
}

/**
 * The answers this handler and the plugins give on any route, in the route's
 * OpenAPI responses, so the document lists every status the server sends
 * (test/openapi.test.js and the fuzzer check it). A route's own entry for a
 * status wins.
 *   - 400: every /api/ route refuses unknown query parameters
 *     (api/plugins/input-guard.js), malformed ids and bodies;
 *   - 413 and 415: a route that takes a body refuses one over its limit or
 *     of a type it does not read;
 *   - 503: a route that reads the database answers so while it is down.
 * @param {import('fastify').RouteOptions} route
 */
function documentErrors (route) {
  const schema = /** @type {any} */ (route.schema)
  if (!schema?.response || schema.hide) return
  const { url } = route
  /** @type {Record<number, object>} */
  const common = {}
  if (url.startsWith('/api/')) common[400] = { $ref: 'badRequest#' }
  if ([route.method].flat().some((m) => BODY_METHODS.has(m))) {
    common[413] = { $ref: 'error#', description: 'The body is larger than this route takes' }
    common[415] = { $ref: 'error#', description: 'The body\'s content-type is not one this route reads' }
  }
  if (url.startsWith('/api/v1/') || url.startsWith('/work/') || url === '/metrics') {
    common[503] = { $ref: 'error#', description: `The database is unreachable; retry after Retry-After (${RETRY_AFTER_S} s)` }
  }
  schema.response = { ...common, ...schema.response }
}

const RANGE_KEYWORDS = new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'])

/**
 * A route's schemaErrorFormatter for data from machines (agent results):
 * a value out of its range is well-formed but implausible, 422; a wrong
 * shape or type stays 400.
 * @param {any[]} errors
 * @param {string} context
 */
export function rangeErrorsAre422 (errors, context) {
  const err = /** @type {any} */ (new Error(`${context} ${errors[0]?.instancePath ?? ''} ${errors[0]?.message ?? 'is not valid'}`))
  err.statusCode = context === 'body' && RANGE_KEYWORDS.has(errors[0]?.keyword) ? 422 : 400
  return err
}

/**
 * @param {any} err
 * @param {import('fastify').FastifyRequest} request
 */
function describeValidation (err, request) {
  const v = err.validation[0]
  const where = err.validationContext === 'body' ? '' : `${err.validationContext} `
  const field = fieldOf(v)
  // A parameter given twice (?location=a&location=b) reaches the schema as a list.
  const given = err.validationContext === 'querystring' && field ? /** @type {Record<string, unknown>} */ (request.query ?? {})[field] : undefined
  if (v.keyword === 'type' && Array.isArray(given)) return `${where}${field} is given ${given.length} times; give it once`
  switch (v.keyword) {
    case 'additionalProperties': {
      const parent = (v.instancePath || '').replace(/^\//, '').replace(/\//g, '.')
      return `unknown field "${v.params.additionalProperty}"${parent ? ` in ${parent}` : ''}`
    }
    case 'required':
      return `${where}${v.params.missingProperty} is required`
    case 'format':
      if (v.params.format === 'date-time') return `${where}${field || 'value'} ${DATE_TIME_RULE}`
      return `${where}${field || 'value'} ${v.message}`
    case 'enum':
      return `${where}${field || 'value'} must be one of ${v.params.allowedValues.map((/** @type {unknown} */ a) => (a === null ? 'null' : String(a))).join(', ')}`
    case 'type':
      // JSON's 1e400 parses to Infinity, which is not a number to the schema.
      return `${where}${field || 'value'} must be ${[v.params.type].flat().join(',').split(',').map((x) => (x === 'number' ? 'a finite number' : x)).join(' or ')}`
    default:
      return `${where}${field || 'value'} ${v.message}`
  }
}

/** @param {any} v */
function fieldOf (v) {
  if (!v) return undefined
  const path = (v.instancePath || '').replace(/^\//, '').replace(/\//g, '.')
  if (v.keyword === 'required') return path ? `${path}.${v.params.missingProperty}` : v.params.missingProperty
  if (v.keyword === 'additionalProperties') return path ? `${path}.${v.params.additionalProperty}` : v.params.additionalProperty
  return path || undefined
}

/** @param {number} status */
function httpReason (status) {
  return /** @type {Record<number, string>} */ ({ 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 409: 'Conflict', 413: 'Payload Too Large', 415: 'Unsupported Media Type', 422: 'Unprocessable Entity', 429: 'Too Many Requests' })[status] ?? 'Error'
}
