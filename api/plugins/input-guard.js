import { Readable } from 'node:stream'
import fp from 'fastify-plugin'

// Deeper than any document h3lens accepts (a result's details are 4 levels
// deep); a 1 MiB body of nested brackets would otherwise cost a deep walk.
const MAX_DEPTH = 64

/**
 * Input that passes JSON and schema checks but that PostgreSQL refuses:
 * a NUL character (text cannot hold it) and a lone UTF-16 surrogate (jsonb
 * rejects the escape). Caught here they are a 400 that names the field;
 * caught by the database they would be a 500.
 * Also: every /api/ route without a querystring schema gets one that allows
 * no parameters, so an unknown or misspelt parameter is an error rather than
 * silently ignored; the same goes for bodies sent to POST routes that take
 * none.
 */
export default fp(async (app) => {
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/api/') || !route.schema || route.schema.hide) return
    route.schema.querystring ??= { type: 'object', additionalProperties: false, properties: {} }
    // A POST without a body schema takes no body (heartbeat, release):
    // fields sent anyway are refused, as everywhere else.
    if (route.method === 'POST' && !route.schema.body) {
      route.schema.body = { type: ['object', 'null'], additionalProperties: false, properties: {}, description: 'No body' }
    }
  })

  app.addHook('preValidation', async (request) => {
    for (const [part, value] of /** @type {const} */ ([['querystring', request.query], ['params', request.params], ['body', request.body]])) {
      const bad = findUnstorable(value)
      if (bad) {
        const where = `${part === 'body' ? '' : `${part} `}${bad.path || 'value'}`
        throw Object.assign(new Error(`${where} ${bad.reason}`), { statusCode: 400, field: bad.path || undefined })
      }
    }
  })
}, { name: 'input-guard' })

/**
 * @param {unknown} value
 * @param {string} [path]
 * @param {number} [depth]
 * @returns {{ path: string, reason: string } | null} the first string (or key) PostgreSQL would refuse
 */
export function findUnstorable (value, path = '', depth = 0) {
  if (typeof value === 'string') {
    return value.includes('\0') || !isWellFormed(value) ? { path, reason: 'contains a NUL character or an unpaired surrogate, which cannot be stored' } : null
  }
  // Binary bodies (a gzip net log) are stored as bytea, never as text; a
  // streamed body (the NDJSON results import) is checked line by line by its
  // route.
  if (value === null || typeof value !== 'object' || Buffer.isBuffer(value) || value instanceof Readable) return null
  if (depth > MAX_DEPTH) return { path, reason: `is nested more than ${MAX_DEPTH} levels deep` }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value)
  for (const [k, v] of entries) {
    const here = path ? `${path}.${k}` : k
    if (k.includes('\0') || !isWellFormed(k)) return { path: here, reason: 'has a name with a NUL character or an unpaired surrogate' }
    const bad = findUnstorable(v, here, depth + 1)
    if (bad) return bad
  }
  return null
}

// String.prototype.isWellFormed is in Node 20, not yet in the ES2022 typings.
const isWellFormed = (/** @type {string} */ s) => /** @type {any} */ (s).isWellFormed()
