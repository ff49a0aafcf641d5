// The public side of real-user monitoring (docs/RUM.md): the snippet, and
// the beacon its page views send. POST /rum/v1/beacon is the one write
// anyone may make, so it is answered in the order that costs least to
// refuse: a flooding address before its body is read, then the body's size,
// type and every field, the site key and the Origin it must come from, the
// site's own rate, what no page view could send; only then is it stored, and
// it is acknowledged once its batch is committed (api/beacon-queue.js). Every
// refusal is a 4xx that names its reason (and field), and is counted in
// h3lens_rum_beacons_total; nothing refused is stored.
import { decodeUtf8Body } from '../plugins/input-guard.js'
import { BEACON_SCHEMA, implausibility, storedBeacon } from '../../lib/measurement/rum/beacon.js'
import { parseIPv6 } from '../../lib/measurement/addresses.js'
import { browserOf } from '../../lib/measurement/rum/user-agent.js'
import { openCountryDatabase } from '../../lib/measurement/rum/country.js'
import { currentSnippet } from '../../lib/measurement/rum/snippet.js'
import { siteOfKey } from '../../lib/store/rum-sites.js'
import { createBeaconQueue } from '../beacon-queue.js'
import { isDatabaseUnavailable } from '../../lib/runtime/db.js'

// A beacon is about 1 KB; 8 KB leaves room for long tag names and future
// fields and keeps a flood of big bodies cheap to refuse.
export const BEACON_BODY_LIMIT = 8 * 1024
// Site keys are looked up at most this often (a revoked key stops within it).
const SITE_CACHE_MS = 10_000
const SITE_CACHE_MAX = 10_000
const tags = ['real users']

/** Fastify's own errors for a body it could not take, by code. */
const FASTIFY_REFUSALS = /** @type {Record<string, string>} */ ({
  FST_ERR_CTP_BODY_TOO_LARGE: 'too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_type',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'bad_json',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'too_large'
})

const countryDatabases = new Map()

/** @param {import('fastify').FastifyInstance} app */
export default async function rumIngestRoutes (app) {
  const file = app.config.rumCountryDb ?? null
  if (!countryDatabases.has(file)) countryDatabases.set(file, openCountryDatabase({ file }))
  const countries = countryDatabases.get(file)
  const queue = createBeaconQueue({ db: app.db })
  app.addHook('onClose', async () => { await queue.drain() })
  const sites = siteCache(app.db)
  const header = app.config.rumClientIpHeader ?? null
  /** The visitor's address: looked up for its country and rate-limited, never stored or logged. */
  const addressOf = (/** @type {import('fastify').FastifyRequest} */ request) => {
    const value = header ? request.headers[header] : undefined
    const last = (Array.isArray(value) ? value.join(',') : value ?? '').split(',').pop()?.trim()
    return last || request.ip
  }
  const perAddress = limiter(app.config.rumAddressPerMin ?? 600, (request) => networkOf(addressOf(request)))
  const perSite = limiter(app.config.rumSitePerMin ?? 60000, (request) => request.body.key)

  app.get('/rum/v1/h3lens.js', {
    config: { auth: 'public' },
    schema: {
      description: 'The real-user snippet: web-vitals (standard build) and h3lens\'s beacon in one script, at most 4 KB gzipped. ' +
        'No cookies, no storage, no request but its beacon. With `v` equal to the current version (the install tag has it) it may be ' +
        'cached for a year; the tag\'s integrity attribute pins its bytes.',
      tags,
      querystring: { type: 'object', additionalProperties: false, properties: { v: { type: 'string', maxLength: 64, pattern: '^[0-9a-f]*$' } } },
      response: {
        200: { description: 'application/javascript', content: { 'application/javascript': { schema: { type: 'string' } } } },
        304: { description: 'Not modified: the If-None-Match ETag is the current snippet\'s', type: 'null' },
        400: { $ref: 'error#' }
      }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Querystring: { v?: string } }>} */ request, reply) => {
    const s = currentSnippet()
    const current = request.query.v === s.version
    reply.header('content-type', 'application/javascript; charset=utf-8')
      // Loaded by other sites' pages, with crossorigin="anonymous" for its integrity check.
      .header('access-control-allow-origin', '*')
      .header('cross-origin-resource-policy', 'cross-origin')
      .header('cache-control', current ? 'public, max-age=31536000, immutable' : 'public, max-age=300')
      .header('etag', s.etag)
      .header('vary', 'accept-encoding')
    if (request.headers['if-none-match'] === s.etag) return reply.code(304).send()
    if (/\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) {
      reply.header('content-encoding', 'gzip')
      return reply.send(s.gzipped)
    }
    return reply.send(s.body)
  })

  await app.register(async (scope) => {
    // navigator.sendBeacon sends a string as text/plain (no CORS preflight);
    // both it and application/json are read as JSON, and no other type.
    scope.removeContentTypeParser(['application/json', 'text/plain'])
    scope.addContentTypeParser(['application/json', 'text/plain'], { parseAs: 'buffer', bodyLimit: BEACON_BODY_LIMIT }, (request, body, done) => {
      let text
      try {
        text = decodeUtf8Body(/** @type {Buffer} */ (body))
      } catch (/** @type {any} */ err) {
        return done(err, undefined)
      }
      try {
        done(null, JSON.parse(text))
      } catch {
        done(Object.assign(new Error('the body is not JSON'), { statusCode: 400, code: 'bad_json' }), undefined)
      }
    })

    scope.post('/rum/v1/beacon', {
      config: { auth: 'public' },
      // The answer is a 204 or a short JSON error that no page reads or
      // renders: the dashboard's dozen security headers would be a sixth of
      // the cost of a beacon (bench/rum-ingest.js); nosniff stays.
      helmet: false,
      bodyLimit: BEACON_BODY_LIMIT,
      schema: {
        description: 'One page view\'s beacon, sent by the snippet with navigator.sendBeacon (text/plain or application/json). ' +
          '204 when stored; 409 when this page view is stored already (a replay); 400 for a field that is not as described, naming it; ' +
          '403 for an unknown or revoked site key, or an Origin header that is not one of the site\'s origins; 413 over 8 KB; ' +
          '415 for another content type; 422 for values no page view can have (or a page view older than a day); 429 past the rate ' +
          'per address or per site; 503 when the beacon could not be stored. Stored: docs/PRIVACY.md.',
        tags,
        body: BEACON_SCHEMA,
        response: {
          204: { description: 'Stored', type: 'null' },
          ...Object.fromEntries([400, 403, 409, 413, 415, 422, 429, 503].map((s) => [s, { $ref: 'error#' }]))
        }
      },
      onRequest: async (request, reply) => {
        reply.header('x-content-type-options', 'nosniff')
        const wait = perAddress(request)
        if (wait) return refuse(request, reply, 429, 'rate_limited_address', `too many beacons from this address; try again in ${wait} s`, undefined, wait)
      },
      onResponse: async (request, reply) => {
        app.metrics.rumBeacons.inc({ outcome: request.rumOutcome ?? (reply.statusCode < 300 ? 'stored' : 'invalid') })
      },
      errorHandler: (/** @type {any} */ err, request, reply) => {
        if (err.validation) {
          const v = err.validation[0]
          // The body as a whole (not an object: [] or null) is the field "body".
          const field = v?.keyword === 'required' ? v.params.missingProperty : (v?.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.') || 'body'
          const message = v?.keyword === 'additionalProperties'
            ? `unknown field "${v.params.additionalProperty}": a beacon has only the fields of its format (country and browser are the server's to find)`
            : `${field} ${v?.message ?? 'is not valid'}`
          return refuse(request, reply, 400, 'invalid', message, v?.keyword === 'additionalProperties' ? v.params.additionalProperty : field)
        }
        const reason = FASTIFY_REFUSALS[err.code] ?? (err.code === 'bad_json' ? 'bad_json' : null)
        if (reason) {
          const message = reason === 'too_large' ? `a beacon is at most ${BEACON_BODY_LIMIT} bytes`
            : reason === 'unsupported_type' ? `a beacon is sent as text/plain or application/json, not ${JSON.stringify(String(request.headers['content-type'] ?? '(none)').slice(0, 100))}`
              : err.message
          return refuse(request, reply, err.statusCode ?? 400, reason, message, reason === 'bad_json' || reason === 'unsupported_type' ? 'body' : undefined)
        }
        if (err.statusCode >= 400 && err.statusCode < 500) return refuse(request, reply, err.statusCode, 'invalid', err.message, err.field)
        if (err.code === 'overloaded') return refuse(request, reply, 503, 'overloaded', err.message, undefined, 1)
        request.log.error({ err: isDatabaseUnavailable(err) ? err.message : err, url: request.routeOptions.url }, 'beacon not stored')
        app.databaseWrites.failed(request, err)
        return refuse(request, reply, 503, 'failed', 'the beacon could not be stored', undefined, 5)
      }
    }, async (request, reply) => {
      const b = /** @type {Record<string, any>} */ (request.body)
      // Above 0, which OpenAPI 3.0's schema cannot say as JSON Schema does.
      if (b.sample === 0) return refuse(request, reply, 400, 'invalid', 'sample must be above 0: a page view drawn at a rate of 0 sends no beacon', 'sample')
      const site = await sites.get(b.key)
      if (!site) return refuse(request, reply, 403, 'unknown_site', 'the site key is unknown or revoked', 'key')
      const origin = request.headers.origin
      if (!origin || !site.origins.includes(origin)) {
        return refuse(request, reply, 403, 'wrong_origin', `the Origin header (${origin ? JSON.stringify(origin.slice(0, 200)) : 'none'}) is not one of this site's origins`)
      }
      const wait = perSite(request)
      if (wait) return refuse(request, reply, 429, 'rate_limited_site', `this site sent too many beacons this minute; try again in ${wait} s`, undefined, wait)
      const bad = implausibility(b, Date.now())
      if (bad) return refuse(request, reply, 422, 'implausible', bad.message, bad.field)
      const row = storedBeacon(b, { siteId: site.id, origin, country: countries.lookup(addressOf(request)), browser: browserOf(request.headers['user-agent']) })
      if (await queue.add(row) === 'duplicate') return refuse(request, reply, 409, 'duplicate', 'this page view is stored already; a beacon is stored once', 'id')
      request.rumOutcome = 'stored'
      return reply.code(204).send()
    })
  })
}

/**
 * @param {import('fastify').FastifyRequest} request
 * @param {import('fastify').FastifyReply} reply
 * @param {number} status
 * @param {string} outcome
 * @param {string} message
 * @param {string} [field]
 * @param {number} [retryAfter]
 */
function refuse (request, reply, status, outcome, message, field, retryAfter) {
  request.rumOutcome = outcome
  if (retryAfter) reply.header('retry-after', String(retryAfter))
  const error = /** @type {Record<number, string>} */ ({ 400: 'Bad Request', 403: 'Forbidden', 409: 'Conflict', 413: 'Payload Too Large', 415: 'Unsupported Media Type', 422: 'Unprocessable Entity', 429: 'Too Many Requests', 503: 'Service Unavailable' })[status] ?? 'Error'
  return reply.code(status).send({ statusCode: status, error, message, code: outcome, ...(field ? { field } : {}) })
}

/**
 * What the per-address limit counts by: an IPv4 address, or an IPv6
 * address's /64, the network one subscriber is given (a client holding a
 * /64 could otherwise send from 2^64 addresses, each with a limit of its
 * own). An IPv4-mapped IPv6 address is its IPv4 address.
 * @param {string} address
 */
export function networkOf (address) {
  const g = parseIPv6(address.replace(/%.*$/, ''))
  if (!g) return address
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return `${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`
  return `${g.slice(0, 4).map((x) => x.toString(16)).join(':')}::/64`
}

/**
 * A per-minute limit keyed by `key`: seconds to wait, 0 = go ahead. A fixed
 * window per key, counted synchronously: @fastify/rate-limit's store hands
 * back a counter it goes on changing, so beacons arriving in one turn of
 * the event loop all read the last one's count (all of a burst refused).
 * Expired windows are swept once a minute; at most MAX_KEYS keys are kept
 * (past that the oldest are dropped: a spray of addresses can only loosen
 * the limit).
 * @param {number} perMinute 0 = no limit
 * @param {(request: any) => string} key
 * @returns {(request: any) => number}
 */
function limiter (perMinute, key) {
  if (!perMinute) return () => 0
  const MAX_KEYS = 100_000
  /** @type {Map<string, { n: number, until: number }>} */
  const windows = new Map()
  let swept = Date.now()
  return (request) => {
    const k = key(request)
    const now = Date.now()
    // Nothing is held much past its minute (docs/PRIVACY.md: addresses).
    if (now - swept > 60_000) {
      swept = now
      for (const [x, v] of windows) if (v.until <= now) windows.delete(x)
    }
    let w = windows.get(k)
    if (!w || w.until <= now) {
      if (windows.size >= MAX_KEYS) {
        for (const [x, v] of windows) if (v.until <= now) windows.delete(x)
        for (const x of windows.keys()) { if (windows.size < MAX_KEYS) break; windows.delete(x) }
      }
      w = { n: 0, until: now + 60_000 }
      windows.set(k, w)
    }
    w.n++
    return w.n > perMinute ? Math.max(1, Math.ceil((w.until - now) / 1000)) : 0
  }
}

/**
 * Site keys → live sites (or null), kept for SITE_CACHE_MS, at most
 * SITE_CACHE_MAX of them: a flood of made-up keys costs one query each per
 * address's rate, not one per beacon of a real site.
 * @param {import('pg').Pool} db
 */
function siteCache (db) {
  /** @type {Map<string, { at: number, site: Promise<Awaited<ReturnType<typeof siteOfKey>>> }>} */
  const cache = new Map()
  return {
    /** @param {string} key */
    get (key) {
      const hit = cache.get(key)
      if (hit && Date.now() - hit.at < SITE_CACHE_MS) return hit.site
      if (cache.size >= SITE_CACHE_MAX) cache.delete(/** @type {string} */ (cache.keys().next().value))
      const site = siteOfKey(db, key)
      cache.set(key, { at: Date.now(), site })
      site.catch(() => cache.delete(key))
      return site
    }
  }
}
