import fp from 'fastify-plugin'
import rateLimit from '@fastify/rate-limit'
import { authenticateApiKey } from '../../lib/store/api-keys.js'

/**
 * What a route needs. One rule decides it for every route, so a new route is
 * protected without anyone remembering to protect it:
 *   - `config.auth` on the route, when given, wins;
 *   - /api/v1/agent/* → agent (its own bearer agent token, api/plugins/agent-auth.js);
 *   - /work/* → wpt (WebPageTest agents: a location key in the query string,
 *     checked by the routes themselves, api/routes/wpt.js);
 *   - /api/v1/* and /metrics → read for GET and HEAD, write for anything else;
 *   - everything else (the dashboard's static files, /healthz, /api/docs,
 *     /api/openapi.json, unknown paths) → public.
 * /metrics carries per-monitor latencies and agent health, which is the same
 * data the read API serves, so it follows the read rule; Prometheus sends
 * the key with `authorization: { credentials_file: ... }`.
 */
export const AUTH = Object.freeze({ public: 'public', read: 'read', write: 'write', agent: 'agent', wpt: 'wpt' })

const SAFE_METHODS = new Set(['GET', 'HEAD'])

/**
 * @param {{ url: string, method: string | string[], config?: { auth?: string } }} route
 * @returns {string} one of AUTH
 */
export function authRequirement (route) {
  if (route.config?.auth) {
    if (!Object.values(AUTH).includes(/** @type {any} */ (route.config.auth))) throw new Error(`route ${route.url}: config.auth must be one of ${Object.values(AUTH).join(', ')}`)
    return route.config.auth
  }
  const { url } = route
  if (url.startsWith('/api/v1/agent/')) return AUTH.agent
  if (url.startsWith('/work/')) return AUTH.wpt
  if (url.startsWith('/api/v1/') || url === '/metrics') {
    const methods = [route.method].flat()
    return methods.every((m) => SAFE_METHODS.has(m)) ? AUTH.read : AUTH.write
  }
  return AUTH.public
}

/** @type {Record<string, { security: Record<string, string[]>[], note: string }>} */
const DOC = {
  public: { security: [], note: 'No key needed.' },
  read: { security: [{ apiKey: [] }], note: 'Needs an API key (role `read` or `write`).' },
  publicRead: { security: [{}, { apiKey: [] }], note: 'No key needed on this server (H3LENS_PUBLIC_READ=true); otherwise an API key with role `read` or `write`.' },
  write: { security: [{ apiKey: [] }], note: 'Needs an API key with role `write`.' },
  agent: { security: [{ agentToken: [] }], note: 'Needs the agent token of the job\'s location.' },
  wpt: { security: [], note: 'WebPageTest agents: needs `location` and that location\'s `key` (from `h3lens agents wpt-key`) in the query string; 403 otherwise, and 429 for further wrong keys once an address has sent too many for the location (a right key always passes). requeue.php and started.php carry no key: a test id h3lens gave out is the proof.' }
}
const NOTE_MARK = '\n\n**Auth:** '

/**
 * Bearer credentials of a request, or null.
 * @param {import('fastify').FastifyRequest} request
 */
export function bearerOf (request) {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')
  return match ? match[1] : null
}

/**
 * API keys for the REST API (roles read and write), the per-route rule above
 * shown in the OpenAPI document, and a limit on wrong credentials per client
 * address, shared with the agent endpoints: a guessed key is answered 401 a
 * few times, then 429 with Retry-After until the minute is over. Requests
 * without credentials are not counted: a dashboard opened without a key
 * makes several at once and must still be able to ask for one.
 */
export default fp(async (app) => {
  const publicRead = Boolean(app.config.publicRead)
  /** @type {{ method: string, url: string, auth: string }[]} */
  const routes = []
  app.decorate('authRoutes', routes)
  app.decorateRequest('apiKey', null)

  app.addHook('onRoute', (route) => {
    const auth = authRequirement(route)
    route.config = { ...route.config, auth }
    for (const method of [route.method].flat()) routes.push({ method, url: route.url, auth })
    const schema = route.schema
    if (!schema || schema.hide) return
    const doc = auth === AUTH.read && publicRead ? DOC.publicRead : DOC[auth]
    schema.security = doc.security
    // The HEAD twin of a GET route shares its schema object: note it once.
    if (!schema.description?.includes(NOTE_MARK)) schema.description = `${schema.description ?? ''}${NOTE_MARK}${doc.note}`
    if (auth !== AUTH.public && auth !== AUTH.wpt && schema.response) {
      schema.response = {
        ...schema.response,
        401: { $ref: 'error#', description: 'No credentials, or credentials that are unknown or revoked' },
        ...(auth === AUTH.write ? { 403: { $ref: 'error#', description: 'The key may only read' } } : {}),
        429: { $ref: 'error#', description: 'Too many wrong credentials from this address; see Retry-After' }
      }
    }
  })

  // global: false: nothing is limited unless asked.
  await app.register(rateLimit, { global: false })
  const failures = await authFailureLimiter(app, app.config.authFailuresPerMin ?? 20)
  app.decorate('authFailures', failures)
  app.decorate('agentRequests', agentRequestLimiter(app, app.config.agentRequestsPerMin ?? 600))

  app.addHook('onRequest', async (request, reply) => {
    const need = request.routeOptions.config?.auth ?? AUTH.public
    if (need === AUTH.public || need === AUTH.agent || need === AUTH.wpt) return
    if (need === AUTH.read && publicRead) return
    const secret = bearerOf(request)
    if (!secret) {
      return unauthorized(reply, `this endpoint needs an API key: send "Authorization: Bearer <key>"; create one with "h3lens keys create --role ${need}"`)
    }
    const key = await authenticateApiKey(app.db, secret)
    if (!key) {
      const blocked = await failures.reject(request, 'unknown or revoked API key')
      if (blocked) return tooMany(reply, blocked)
      return unauthorized(reply, 'the API key is not valid (unknown or revoked); "h3lens keys list" shows the keys that exist')
    }
    if (need === AUTH.write && key.role !== AUTH.write) {
      return reply.code(403).send({ statusCode: 403, error: 'Forbidden', message: `the API key "${key.name}" may only read; this needs a key with role write`, code: 'read_only_key' })
    }
    request.apiKey = key
  })
}, { name: 'auth', dependencies: ['context'] })

/**
 * @param {any} reply
 * @param {string} message
 */
export function unauthorized (reply, message) {
  return reply.code(401).header('www-authenticate', 'Bearer realm="h3lens"')
    .send({ statusCode: 401, error: 'Unauthorized', message })
}

/**
 * @param {any} reply
 * @param {number} seconds
 */
export function tooMany (reply, seconds) {
  return reply.code(429).header('retry-after', String(seconds))
    .send({ statusCode: 429, error: 'Too Many Requests', message: `too many wrong keys or tokens from this address; try again in ${seconds} s`, code: 'auth_rate_limited' })
}

/**
 * @param {any} reply
 * @param {number} seconds
 */
export function agentTooMany (reply, seconds) {
  return reply.code(429).header('retry-after', String(seconds))
    .send({ statusCode: 429, error: 'Too Many Requests', message: `this agent token made too many requests this minute; try again in ${seconds} s`, code: 'agent_rate_limited' })
}

/**
 * Counts wrong credentials per client address with @fastify/rate-limit's
 * store (a bounded LRU), and remembers which addresses went over the limit.
 * Only wrong credentials are ever turned away: a right key or agent token is
 * checked first and served, even from a blocked address, because one
 * address is often many clients (the three local agents and the dashboard on
 * 127.0.0.1, everyone behind a reverse proxy), and a guesser must not be
 * able to lock them out. Guessing is not helped by this: keys and tokens
 * carry 192 random bits, and a blocked address's guesses are
 * answered 429 without being logged one by one.
 * @param {import('fastify').FastifyInstance} app
 * @param {number} perMinute 0 = no limit
 * @returns {Promise<{ reject: (request: any, why: string) => Promise<number> }>} seconds to wait, 0 = answer 401
 */
async function authFailureLimiter (app, perMinute) {
  const warn = (/** @type {import('fastify').FastifyRequest} */ request, /** @type {string} */ why) => request.log.warn({ ip: request.ip, method: request.method, url: request.routeOptions.url }, `authentication failed: ${why}`)
  if (!perMinute) return { reject: async (/** @type {import('fastify').FastifyRequest} */ request, /** @type {string} */ why) => { warn(request, why); return 0 } }
  const count = app.createRateLimit({ max: perMinute, timeWindow: 60_000, keyGenerator: (request) => request.ip })
  /** @type {Map<string, number>} address → blocked until (ms) */
  const blocked = new Map()
  const left = (/** @type {number} */ until) => Math.max(1, Math.ceil((until - Date.now()) / 1000))
  return {
    /**
     * @param {import('fastify').FastifyRequest} request
     * @param {string} why
     */
    async reject (request, why) {
      const until = blocked.get(request.ip)
      if (until && until > Date.now()) return left(until)
      if (until) blocked.delete(request.ip)
      warn(request, why)
      const r = await count(request)
      if (r.isAllowed || !r.isExceeded) return 0
      const next = Date.now() + r.ttl
      // Entries are few (addresses that went over the limit) and expire;
      // a sweep on insert keeps a spray from many addresses bounded.
      if (blocked.size > 10_000) for (const [ip, t] of blocked) if (t <= Date.now()) blocked.delete(ip)
      if (blocked.size <= 100_000) blocked.set(request.ip, next)
      request.log.warn({ ip: request.ip, retryAfterS: left(next) }, 'too many failed authentications; wrong credentials from this address get 429 for the rest of the minute')
      return left(next)
    }
  }
}

/**
 * Requests per minute one agent token may make, counted per token (not per
 * address: the local agents share 127.0.0.1). An idle agent claims about
 * once a second and a busy one adds a heartbeat and a few submissions per
 * job, so 600 leaves ten times the normal rate for a spool being flushed
 * while stopping a runaway or stolen token from flooding the API.
 * @param {import('fastify').FastifyInstance} app
 * @param {number} perMinute 0 = no limit
 * @returns {(request: any) => Promise<number>} seconds to wait, 0 = go ahead
 */
export function agentRequestLimiter (app, perMinute) {
  if (!perMinute) return async () => 0
  const count = app.createRateLimit({ max: perMinute, timeWindow: 60_000, keyGenerator: (request) => `agent:${request.agent.id}` })
  return async (request) => {
    const r = await count(request)
    return !r.isAllowed && r.isExceeded ? Math.max(1, Math.ceil(r.ttl / 1000)) : 0
  }
}
