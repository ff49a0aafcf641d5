// The Fastify application, separate from the server so tests can use
// app.inject() without a socket. Order matters: shared decorators (db,
// config) first, then security headers and the auth rule (its onRoute hook
// must see every route), then documentation (swagger must see every route),
// then routes, then static files last so /api/* never falls through to a file.
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import Fastify, { LogController } from 'fastify'
import sensible from '@fastify/sensible'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fastifyStatic from '@fastify/static'
import { sharedSchemas } from './schemas.js'
import { alertSchemas } from './alert-schemas.js'
import contextPlugin from './plugins/context.js'
import errorsPlugin, { MAX_PARAM_LENGTH, longPathPart } from './plugins/errors.js'
import agentAuth from './plugins/agent-auth.js'
import authPlugin from './plugins/auth.js'
import inputGuard from './plugins/input-guard.js'
import securityHeaders, { DOCS_CSP, cspString } from './plugins/security-headers.js'
import metricsPlugin from './plugins/metrics.js'
import healthRoutes from './routes/health.js'
import metricsRoutes from './routes/metrics.js'
import exportRoutes from './routes/export.js'
import importRoutes from './routes/import.js'
import monitorRoutes from './routes/monitors.js'
import journeyRoutes from './routes/journeys.js'
import resultRoutes from './routes/results.js'
import catalogueRoutes from './routes/catalogue.js'
import locationRoutes from './routes/locations.js'
import agentRoutes from './routes/agents.js'
import agentProtocolRoutes from './routes/agent-protocol.js'
import comparisonRoutes from './routes/comparison.js'
import evidenceRoutes from './routes/evidence.js'
import alertRoutes from './routes/alerts.js'
import agentEvidenceRoutes from './routes/agent-evidence.js'
import wptRoutes from './routes/wpt.js'
import rumIngestRoutes from './routes/rum-ingest.js'
import rumRoutes from './routes/rum.js'
import { VERSION } from '../lib/runtime/version.js'
import { isValidDateTime } from '../lib/runtime/date-time.js'

const WEB_ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'web')

// Fastify's own validator compiler, resolved from Fastify's folder so it is
// the copy Fastify uses whatever the install layout.
const require = createRequire(import.meta.url)
const fastifyRequire = createRequire(require.resolve('fastify'))
const AjvCompiler = fastifyRequire('@fastify/ajv-compiler')
const ajvPool = AjvCompiler()
const SerializerSelector = fastifyRequire('@fastify/fast-json-stringify-compiler')

/**
 * Routes' validators and response serializers are compiled when a route is
 * first called, not when the app starts. Compiling all of them (some 90
 * routes, each with its request and response schemas) took 2.0 s of CPU of
 * the 2.8 s an app took to build and start, most of it fast-json-stringify
 * checking each response schema; a process that answers a few routes (the
 * CLI's one-shot commands, each test file's app) paid it whole. The first
 * call of a route pays its own, a few ms. Every schema still compiles in
 * the tests: test/route-schemas.test.js compiles them all (compileAllSchemas).
 * @template {(...args: any[]) => any} F
 * @param {() => F} compile
 * @param {Set<() => unknown>} pending where the compile waits until first called
 * @returns {F & { errors?: any }}
 */
function lazily (compile, pending) {
  /** @type {F | null} */
  let compiled = null
  const force = () => (compiled ??= compile())
  pending.add(force)
  const call = /** @type {F & { errors?: any }} */ (/** @type {unknown} */ (function (/** @type {any[]} */ ...args) {
    const fn = /** @type {any} */ (force())
    const out = fn(...args)
    // Ajv's validators leave their errors on themselves; Fastify reads them there.
    call.errors = fn.errors
    return out
  }))
  return call
}

/**
 * Query strings and path parameters arrive as text, so they are coerced to
 * the schema's types ("?limit=10" → 10). JSON bodies have real types, and a
 * wrong one is an error: "interval_s": "60" or true is refused, not guessed.
 * Each route's validator is compiled when first used (lazily).
 * @param {Set<() => unknown>} pending
 */
function validatorFactory (pending) {
  /**
   * @param {Record<string, any>} externalSchemas
   * @param {{ customOptions?: Record<string, any>, plugins?: any[], onCreate?: (ajv: any) => void }} [options]
   */
  return function buildValidator (externalSchemas, options) {
    options = { ...options, onCreate: useDateTimeRule }
    const coercing = ajvPool(externalSchemas, options)
    const strict = ajvPool(externalSchemas, { ...options, customOptions: { ...options.customOptions, coerceTypes: false } })
    return (/** @type {{ httpPart?: string, schema?: any }} */ route) => lazily(() => {
      if (route.httpPart === 'body') return strict(route)
      const validate = coercing(route)
      return route.httpPart === 'params' || route.httpPart === 'querystring' ? withDecimalIntegers(route.schema, validate) : validate
    }, pending)
  }
}

/**
 * Fastify's own serializer compiler (fast-json-stringify), each route's
 * compiled when first used (lazily).
 * @param {Set<() => unknown>} pending
 */
function serializerFactory (pending) {
  /**
   * @param {Record<string, any>} externalSchemas
   * @param {Record<string, any>} options
   */
  return function buildSerializer (externalSchemas, options) {
    const compile = SerializerSelector()(externalSchemas, options)
    return (/** @type {any} */ route) => lazily(() => compile(route), pending)
  }
}

const DECIMAL_INTEGER = /^-?\d+$/
const DECIMAL_NUMBER = /^-?\d+(\.\d+)?$/

/**
 * Ajv coerces any text JavaScript reads as a number: "1e3", "0x10", " 12"
 * and "+5" would pass as 1000, 16, 12 and 5, so a mistyped id could name
 * another monitor. Integer parameters in paths and query strings must be
 * written in decimal digits, and numbers in decimal digits with an optional
 * fraction (99.9); anything else is a 400 naming the parameter.
 * @param {any} schema the params or querystring schema
 * @param {any} validate Ajv's validator for it
 */
function withDecimalIntegers (schema, validate) {
  const numeric = Object.entries(schema?.properties ?? {})
    .map(([name, s]) => ({ name, type: [s?.type].flat().includes('integer') ? 'integer' : [s?.type].flat().includes('number') ? 'number' : null }))
    .filter((p) => p.type !== null)
  if (!numeric.length) return validate
  const checked = Object.assign((/** @type {any} */ data, /** @type {any} */ context) => {
    for (const { name, type } of numeric) {
      const bad = [data?.[name]].flat().find((v) => typeof v === 'string' && !(type === 'integer' ? DECIMAL_INTEGER : DECIMAL_NUMBER).test(v))
      if (bad !== undefined) {
        const message = type === 'integer' ? 'must be a whole number written in decimal digits, such as 12' : 'must be a number written in decimal digits, such as 95 or 99.9'
        checked.errors = [{ keyword: 'format', instancePath: `/${name}`, schemaPath: `#/properties/${name}/type`, params: { format: type }, message: `${message} (not ${JSON.stringify(bad.slice(0, 40))})` }]
        return false
      }
    }
    const ok = validate(data, context)
    checked.errors = validate.errors
    return ok
  }, { schemaEnv: validate.schemaEnv, errors: /** @type {any} */ (null) })
  return checked
}

/**
 * Every "date-time" in every schema (query windows, export filters, agent
 * submissions) follows lib/runtime/date-time.js, so a value passes the schema only
 * when JavaScript and PostgreSQL can both hold it. onCreate runs after
 * ajv-formats is added, so this replaces its looser rule.
 * @param {any} ajv
 */
function useDateTimeRule (ajv) {
  ajv.addFormat('date-time', { type: 'string', validate: isValidDateTime })
}

/**
 * HTTPS when H3LENS_TLS_CERT and H3LENS_TLS_KEY are set (agents in other
 * regions send bearer tokens, which must not cross the Internet in clear).
 * HTTP/1.1 over TLS; agents and browsers need nothing more.
 * @param {import('../lib/runtime/config.js').Config} config
 * @returns {{ https?: { cert: Buffer, key: Buffer } }}
 */
function tlsOptions (config) {
  if (!config.tlsCert) return {}
  const read = (/** @type {string} */ file, /** @type {string} */ name) => {
    try {
      return fs.readFileSync(file)
    } catch (/** @type {any} */ err) {
      throw Object.assign(new Error(`${name}=${file} cannot be read (${err.code ?? err.message})`), { userFacing: true })
    }
  }
  // loadConfig takes both or neither.
  return { https: { cert: read(config.tlsCert, 'H3LENS_TLS_CERT'), key: read(/** @type {string} */ (config.tlsKey), 'H3LENS_TLS_KEY') } }
}

/**
 * @param {{ db: import('pg').Pool, config: import('../lib/runtime/config.js').Config, log: import('pino').Logger,
 *   labOrigin?: import('./types.js').LabOrigin | null }} context
 */
export async function buildApp (context) {
  /** @type {Set<() => unknown>} */
  const pendingSchemas = new Set()
  const app = Fastify({
    ...tlsOptions(context.config),
    loggerInstance: /** @type {import('fastify').FastifyBaseLogger} */ (context.log),
    // 1 MiB: a result batch with per-request details is ~50 KB; anything
    // bigger than this is a mistake or an attack.
    bodyLimit: 1024 * 1024,
    // Unknown fields are an error, not something to drop silently.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: /** @type {any} */ ('array'), useDefaults: true } },
    // Agents poll every few seconds; per-request info lines would drown the
    // log. Failures are logged by the error handler with request context.
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Paths the router cannot read, answered like every other 400 (with the
    // field at fault) instead of Fastify's own shape.
    frameworkErrors: (error, request, reply) => {
      const body = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? longPathPart() : { statusCode: 400, error: 'Bad Request', message: 'the path is not valid percent-encoding', field: 'path' }
      return /** @type {any} */ (reply).code(400).send(body)
    },
    // @fastify/ajv-compiler's types say a compiler gets the schema; at run
    // time it gets the route ({ schema, method, url, httpPart }), as here.
    schemaController: {
      compilersFactory: {
        buildValidator: /** @type {import('@fastify/ajv-compiler').ValidatorFactory} */ (/** @type {unknown} */ (validatorFactory(pendingSchemas))),
        buildSerializer: /** @type {any} */ (serializerFactory(pendingSchemas))
      }
    }
  })
  // Compiles every route's schemas now (test/route-schemas.test.js).
  app.decorate('compileAllSchemas', () => { for (const compile of pendingSchemas) compile() })
  for (const schema of [...sharedSchemas, ...alertSchemas]) app.addSchema(schema)

  await app.register(sensible)
  await app.register(contextPlugin, context)
  await app.register(errorsPlugin)
  await app.register(securityHeaders)
  await app.register(authPlugin)
  await app.register(inputGuard)
  await app.register(metricsPlugin)
  await app.register(swagger, {
    // Every 400 names its field; the document says so, while the response
    // serializer leaves it optional (see badRequestSchema in api/schemas.js).
    transformObject: (/** @type {any} */ { openapiObject }) => {
      for (const schema of Object.values(openapiObject.components?.schemas ?? {})) {
        if (schema.title === 'badRequest') schema.required = ['statusCode', 'error', 'message', 'field']
      }
      return openapiObject
    },
    openapi: {
      openapi: '3.0.3',
      info: { title: 'h3lens API', version: VERSION, description: 'Is HTTP/3 faster than HTTP/2 for your users, where, by how much, and why?' },
      components: {
        securitySchemes: {
          agentToken: { type: 'http', scheme: 'bearer', description: 'Agent token from `h3lens agents token --location X`' },
          apiKey: { type: 'http', scheme: 'bearer', description: 'API key from `h3lens keys create --role read|write`; `h3lens start` leaves an admin (write) key in `<data dir>/admin-key`' }
        }
      }
    }
  })
  await app.register(swaggerUi, { routePrefix: '/api/docs', staticCSP: cspString(DOCS_CSP) })
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger())

  await app.register(healthRoutes)
  await app.register(metricsRoutes)
  await app.register(async (api) => {
    // The REST API reads JSON (and the types a route adds, as NDJSON):
    // Fastify's text/plain reader would hand a JSON route a string, refused
    // as "body must be object" instead of 415 for the content type.
    api.removeContentTypeParser('text/plain')
    await api.register(monitorRoutes)
    await api.register(journeyRoutes)
    await api.register(resultRoutes)
    await api.register(exportRoutes)
    await api.register(importRoutes)
    await api.register(comparisonRoutes)
    await api.register(evidenceRoutes)
    await api.register(alertRoutes)
    await api.register(locationRoutes)
    await api.register(catalogueRoutes)
    await api.register(agentRoutes)
    await api.register(rumRoutes)
    await api.register(async (agentApi) => {
      await agentApi.register(agentAuth)
      await agentApi.register(agentProtocolRoutes)
      await agentApi.register(agentEvidenceRoutes)
    }, { prefix: '/agent' })
  }, { prefix: '/api/v1' })
  // WebPageTest agents speak their own protocol at /work/*.php, with a
  // location key in the query string instead of a bearer token.
  await app.register(wptRoutes)
  // Real users: the snippet and its beacons, public (api/routes/rum-ingest.js).
  await app.register(rumIngestRoutes)

  await app.register(fastifyStatic, { root: WEB_ROOT, prefix: '/', index: 'index.html' })
  return app
}
