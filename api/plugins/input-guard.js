import { Readable } from 'node:stream'
import fp from 'fastify-plugin'

// Deeper than any document h3lens accepts (a result's details are 4 levels
// deep); a 1 MiB body of nested brackets would otherwise cost a deep walk.
const MAX_DEPTH = 64

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * JSON bodies must be UTF-8 (RFC 8259). Fastify's own parser reads the bytes
 * as UTF-8 and turns what is not into U+FFFD, so a label sent in Latin-1 or
 * UTF-16 would be stored changed, with a 201. This parser decodes strictly
 * and answers 400 naming the first bad byte; the text then goes through
 * Fastify's parser (which refuses __proto__ and constructor.prototype keys).
 *
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
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let text
    try {
      text = decodeUtf8Body(/** @type {Buffer} */ (body))
    } catch (/** @type {any} */ err) {
      return done(err, undefined)
    }
    parseJson(request, text, (/** @type {any} */ err, /** @type {unknown} */ value) => {
      if (!err) return done(null, value)
      if (text.trim() === '') return done(badBody('is empty; send a JSON value, or no content-type with no body'), undefined)
      let why = 'it has a __proto__ or constructor.prototype key'
      try { JSON.parse(text) } catch (/** @type {any} */ e) { why = e.message }
      done(badBody(`is not valid JSON (${why})`), undefined)
    })
  })

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
        // A body that is one string is named as the body.
        const field = bad.path || part
        const where = part === 'body' ? field : `${part} ${bad.path || 'value'}`
        throw Object.assign(new Error(`${where} ${bad.reason}`), { statusCode: 400, field })
      }
    }
  })
}, { name: 'input-guard' })

/**
 * A body's bytes as text, or a 400 (field body) naming the first byte that
 * is not UTF-8. For every parser of JSON, here and in routes with their own.
 * @param {Uint8Array} bytes
 * @returns {string}
 */
export function decodeUtf8Body (bytes) {
  try {
    return utf8.decode(bytes)
  } catch {
    throw badBody(`is not valid UTF-8 (${whereUtf8Breaks(bytes)}); send JSON as UTF-8 text`)
  }
}

/** @param {string} problem what is wrong with the body, after "the body" */
function badBody (problem) {
  return Object.assign(new Error(`the body ${problem}`), { statusCode: 400, field: 'body' })
}

/**
 * Where the first byte that breaks UTF-8 is, for the 400: the longest prefix
 * that still decodes as the start of a UTF-8 text is found by bisection (a
 * prefix of a good prefix is good), so a 1 MiB body costs ~20 decodes.
 * @param {Uint8Array} bytes bytes that are not valid UTF-8
 */
export function whereUtf8Breaks (bytes) {
  const goodStart = (/** @type {number} */ n) => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, n), { stream: true })
      return true
    } catch {
      return false
    }
  }
  if (goodStart(bytes.length)) return 'it ends in the middle of a character'
  let good = 0
  let bad = bytes.length
  while (bad - good > 1) {
    const mid = (good + bad) >>> 1
    if (goodStart(mid)) good = mid
    else bad = mid
  }
  // The decoder refused byte bad - 1; a character it had begun before it
  // (a lead byte with too few continuation bytes) is where the text breaks.
  let start = bad - 1
  for (let k = bad - 2; k >= Math.max(0, bad - 4) && bytes[k] >= 0x80; k--) {
    if (bytes[k] >= 0xc0) {
      const length = bytes[k] >= 0xf0 ? 4 : bytes[k] >= 0xe0 ? 3 : 2
      if (length > bad - 1 - k) start = k
      break
    }
  }
  const hex = [...bytes.subarray(start, bad)].map((b) => `0x${b.toString(16).toUpperCase().padStart(2, '0')}`).join(' ')
  return `${start === bad - 1 ? 'byte' : 'bytes'} ${hex} at offset ${start}`
}

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
