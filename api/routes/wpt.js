// The server side of the WebPageTest agent protocol (docs/WPT.md), under
// /work/, so that a stock wptagent started with
// `--server https://HOST/work/ --location ID --key KEY` measures h3lens rounds.
// The agent reads bodies, not statuses: an empty getwork body means "no
// work", and it never retries an upload, so workdone stores before it answers.
// Never sent: `Reboot` (the agent reboots its host) and `Servers:` /
// `Scheduler:` lines (they reconfigure it).
import multipart from '@fastify/multipart'
import { wptAgent, wptKeyValid } from '../../lib/store/wpt-keys.js'
import { nextTest, keepTestLeased, requeueTest, receiveWorkdone, refuseUpload, checkUpload } from '../../lib/store/wpt-tests.js'
import { readResultZipOffThread } from '../../lib/measurement/wpt/zip-thread.js'
import { isLabPage } from '../../lib/measurement/wpt/job.js'
import { checkPublicTarget, targetPolicy } from '../../lib/measurement/targets.js'
import { labFromOutside, readLabState } from '../../lib/runtime/lab-state.js'
import { ValidationError } from '../../lib/runtime/errors.js'
import { RETRY_AFTER_S } from '../plugins/errors.js'

/**
 * A result.zip holds the trace, screenshots and the net log of a run: a few
 * hundred KB on ordinary pages; 64 MB leaves room for a heavy page's net log.
 */
export const WPT_UPLOAD_LIMIT = 64 * 1024 * 1024
/**
 * An upload's body in any other form than multipart (none is expected): it
 * is parsed before the key is checked, so a stranger's must stay small.
 */
export const WPT_OTHER_BODY_LIMIT = 64 * 1024

const tags = ['WebPageTest agent protocol']
const text = { type: 'string', maxLength: 200 }
// The agent adds fields of its own (screen size, DNS, disk...); they are read where used and otherwise ignored.
const agentQuery = (/** @type {string[]} */ required, properties = {}) => ({
  type: 'object',
  additionalProperties: true,
  required,
  properties: { location: text, pc: text, key: text, version: text, ...properties }
})
const textBody = (/** @type {string} */ description) => ({ description, content: { 'text/plain': { schema: { type: 'string' } } } })
const plain = { 200: textBody('Empty, or a word the agent reads') }
// The agent's query string may carry fields of its own beyond those read
// here, so its length has no bound the schema could state: Node answers a
// request line and headers over 16 KB with 431.
const tooLong = { 431: { $ref: 'error#', description: 'The query string is too long to read (the request line and headers are over 16 KB)' } }
// What the agent hears when its location or key is wrong (admit, below);
// schema errors in the query string are JSON, as on every route, but
// getwork.php's (in plain text: wptagent would run a JSON body).
const refused = {
  ...tooLong,
  400: { $ref: 'badRequest#' },
  403: textBody('Wrong location or key'),
  429: textBody('Too many wrong keys from this address for this location this minute; see Retry-After. A right key is never refused so.')
}

/**
 * The query string of agentQuery (the agent's own extra fields are not read).
 * @typedef {{ location?: string, pc?: string, key?: string, version?: string }} AgentQuery
 */
/**
 * @template [Q={}] what the route's query string adds to AgentQuery
 * @typedef {import('fastify').FastifyRequest<{ Querystring: AgentQuery & Q }>} AgentRequest
 */

/**
 * getwork.php's onSend: wptagent reads getwork's body as a test whatever
 * its status, so an error answered in JSON (the database down while the
 * API stops, a bad query) it would run. Its errors are plain text, as its
 * 403 and 429 are: the agent finds no test in them, and a person reads
 * them. (The agent reads no other answer's body; workdone's errors name
 * their field in JSON.)
 * @param {import('fastify').FastifyRequest} request
 * @param {import('fastify').FastifyReply} reply
 * @param {unknown} payload the serialised answer
 */
async function errorsInPlainText (request, reply, payload) {
  if (reply.statusCode < 400 || !String(reply.getHeader('content-type') ?? '').startsWith('application/json')) return payload
  reply.type('text/plain; charset=utf-8')
  try {
    const body = JSON.parse(String(payload))
    return `${body.message ?? body.error ?? ''}${body.field ? ` (${body.field})` : ''}`
  } catch {
    return ''
  }
}

/**
 * @param {import('fastify').FastifyInstance} app see api/routes/monitors.js
 */
export default async function wptRoutes (app) {
  await app.register(multipart, { limits: { fileSize: WPT_UPLOAD_LIMIT, files: 1, fields: 20, parts: 21 } })
  const failures = wrongKeyLimiter(app)
  // A round's page is checked again when it is sent, through the resolver the API's settings name.
  const policy = targetPolicy(app.config)

  /**
   * The agent this request comes from, marked seen; or a 403 (wrong
   * location or key) / 429 (too many wrong keys from this address for this
   * location) already sent. A right key is checked first and always passes:
   * behind a reverse proxy every agent shares one address, so a stranger's
   * wrong keys must not lock a location's agents out (as for REST keys,
   * api/plugins/auth.js).
   * @param {AgentRequest} request
   * @param {import('fastify').FastifyReply} reply
   * @param {{ create?: boolean }} [o] create: a new pc becomes an agent (asking for work, a heartbeat; not an upload)
   */
  async function admit (request, reply, { create = false } = {}) {
    const q = request.query
    // An upload turned away here is lost (the agent never retries): its log line names the test.
    const test = (/** @type {{ id?: string }} */ (q)).id
    // The right key is checked first and always passes: wrong keys from the
    // same address (a reverse proxy's) never lock a location's agents out.
    if (q.location && q.key && await wptKeyValid(app.db, { location: q.location, key: q.key })) {
      if (!q.pc) throw new ValidationError('pc is required (the agent\'s name)', 'pc')
      return wptAgent(app.db, { location: q.location, pc: q.pc, version: q.version ?? null, create })
    }
    // A blocked address's wrong keys are answered without being logged one by one.
    const wait = failures.blockedFor(request)
    if (!wait) request.log.warn({ ip: request.ip, location: q.location, agent: q.pc, ...(test ? { test, status: 403 } : {}) }, 'WPT agent refused: wrong location or key')
    const blocked = wait || await failures.record(request)
    if (blocked) {
      if (test) request.log.warn({ ip: request.ip, location: q.location, agent: q.pc, test, status: 429 }, 'WPT upload refused: too many wrong keys from this address')
      await reply.code(429).header('retry-after', String(blocked)).type('text/plain').send(`too many wrong keys for location ${q.location}; try again in ${blocked} s`)
      return null
    }
    await reply.code(403).type('text/plain').send('wrong location or key: create a key with "h3lens agents wpt-key --location ID"')
    return null
  }

  /**
   * What a WPT location may measure is what a Puppeteer one may: a lab page
   * through the lab's resolver rule and certificate pin (the lab as this
   * API's data dir has it), and a private address only while
   * H3LENS_ALLOW_PRIVATE_TARGETS allows it, checked again when the round is
   * sent because a name may resolve elsewhere since the monitor was saved.
   * @param {string} url
   */
  async function reachable (url) {
    if (isLabPage(url)) {
      const lab = labFromOutside(await readLabState(app.config.dataDir))
      if (!lab) throw new Error(`no lab reachable from outside its namespaces runs with this API's data dir (the lab origin is reached at 127.0.0.1 when the lab runs unshaped, H3LENS_LAB=local)`)
      return lab
    }
    if (!app.config.allowPrivateTargets) await checkPublicTarget(url, { resolve: policy.resolve })
    return null
  }

  app.get('/work/getwork.php', {
    onSend: errorsInPlainText,
    schema: {
      description: 'wptagent asks for work. Answers one WPT test as JSON (one arm of an h3lens round: its page load, or its journey as a WPT script), or an empty body when there is none.',
      tags,
      querystring: agentQuery(['location'], { f: text }),
      response: {
        200: {
          description: 'One WPT test as JSON, or an empty text body when there is no work',
          content: { 'application/json': { schema: { type: 'object', additionalProperties: true } }, 'text/plain': { schema: { type: 'string', maxLength: 0 } } }
        },
        ...refused,
        // In plain text: wptagent would read a JSON body as a test (errorsInPlainText).
        400: textBody('A query string this route cannot read, in words naming the field'),
        503: textBody(`The database is unreachable; retry after Retry-After (${RETRY_AFTER_S} s)`)
      }
    }
  }, async (/** @type {AgentRequest<{ f?: string }>} */ request, reply) => {
    const agent = await admit(request, reply, { create: true })
    if (!agent) return reply
    const target = async (/** @type {string} */ url) => {
      try {
        return await reachable(url)
      } catch (/** @type {any} */ err) {
        request.log.warn({ location: agent.location_id, agent: agent.name, url, reason: err.message }, 'WPT round not sent: its page cannot be measured from this location')
        throw err
      }
    }
    const job = await nextTest(app.db, { agent, leaseSeconds: app.config.leaseSeconds, target })
    if (!job) return reply.type('text/plain').send('')
    return reply.type('application/json').send(JSON.stringify(job))
  })

  app.get('/work/ping.php', {
    schema: { description: 'wptagent\'s heartbeat, at most once a minute; with test= it is still on that test.', tags, querystring: agentQuery(['location'], { test: text }), response: { ...plain, ...refused } }
  }, async (/** @type {AgentRequest<{ test?: string }>} */ request, reply) => {
    // A heartbeat may come before the first call for work: it announces the agent.
    const agent = await admit(request, reply, { create: true })
    if (!agent) return reply
    if (request.query.test) await keepTestLeased(app.db, { agent, testId: request.query.test, leaseSeconds: app.config.leaseSeconds })
    return reply.type('text/plain').send('')
  })

  app.get('/work/started.php', {
    schema: { description: 'Sent only for jobs that carry work_server and jobID, which h3lens never sends.', tags, querystring: { type: 'object', additionalProperties: true, properties: { id: text } }, response: { ...plain, ...tooLong, 400: { $ref: 'badRequest#' } } }
  }, async (request, reply) => reply.type('text/plain').send(''))

  app.get('/work/requeue.php', {
    schema: {
      description: 'The agent stopped mid-test: its round goes back to the queue without using up an attempt. The agent sends no key; the test id, which carries random characters, is the proof.',
      tags,
      querystring: { type: 'object', additionalProperties: true, required: ['id', 'location'], properties: { id: text, location: text, sig: text } },
      response: { 200: textBody('"requeued", or empty when the test was not out'), ...tooLong, 400: { $ref: 'badRequest#' } }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Querystring: { id: string, location: string, sig?: string } }>} */ request, reply) => {
    const requeued = await requeueTest(app.db, { testId: request.query.id, location: request.query.location })
    return reply.type('text/plain').send(requeued ? 'requeued' : '')
  })

  app.post('/work/workdone.php', {
    config: { stores: 'results' },
    // The result.zip comes as multipart, read as a stream by the handler
    // once the agent's key is checked (at most WPT_UPLOAD_LIMIT, the
    // multipart limits above). Any other body is parsed whole before the
    // handler runs, key or no key: it is small or refused (413).
    bodyLimit: WPT_OTHER_BODY_LIMIT,
    // Every refusal is logged with its reason, test, location and agent:
    // wptagent ignores the status and logs nothing of the answer.
    onError: async (/** @type {AgentRequest<{ id?: string }>} */ request, reply, /** @type {any} */ err) => {
      const status = err.statusCode ?? 500
      if (status < 400 || status >= 500) return
      const q = request.query ?? {}
      request.log.warn({ test: q.id, location: q.location, agent: q.pc, status, reason: err.message }, 'WPT upload refused')
    },
    schema: {
      description: 'A test\'s result.zip (multipart field file). Stored before the answer; idempotent on (test id, run, cached). ' +
        'Sharded uploads add run and cached, and done=1 on the last. error= makes the test\'s results error results with that message; ' +
        'a view whose timings cannot be true is stored as an error result with the reason. ' +
        'A zip that is not a readable result of this test is 400 and nothing is stored; the refusal is logged, kept as the location\'s ' +
        'last_refusal, and fails the round\'s attempt with the reason (not for a test the location never gave out or gave another of its agents, named by pc).',
      tags,
      querystring: agentQuery(['location', 'id'], {
        id: text, done: { type: 'string', maxLength: 10 }, run: { type: 'integer', minimum: 1, maximum: 1000 }, cached: { type: 'integer', enum: [0, 1] }, error: { type: 'string', maxLength: 4000 }
      }),
      response: {
        200: { type: 'object', properties: { stored: { type: 'integer' }, duplicates: { type: 'integer' }, round_done: { type: 'boolean' } } },
        ...refused,
        409: { $ref: 'error#' },
        413: { $ref: 'error#', description: 'A result.zip over 64 MiB, or a body that is not multipart over 64 KiB (refused before it is read)' },
        422: { $ref: 'error#' }
      }
    }
  }, async (/** @type {AgentRequest<{ id: string, done?: string, run?: number, cached?: 0 | 1, error?: string }>} */ request, reply) => {
    const agent = await admit(request, reply)
    if (!agent) return reply
    const q = request.query
    try {
      const run = q.run ?? null
      const cached = q.cached === undefined ? null : q.cached === 1
      const test = await checkUpload(app.db, { agent, testId: q.id, run, cached })
      const zip = request.isMultipart() ? await uploadedZip(request) : null
      const agentError = q.error ? String(q.error) : null
      if (!zip && !agentError) throw new ValidationError('file: workdone needs the result.zip as multipart field "file"', 'file')
      // Read on a thread of its own: a large upload's gunzip and JSON would hold up every other request.
      const views = zip ? await readResultZipOffThread(zip) : []
      const ack = await receiveWorkdone(app.db, {
        agent,
        test,
        views,
        agentError,
        // Without run= the upload is the whole test; sharded ones say done=1 on the last.
        done: run === null || q.done === '1',
        run,
        cached
      })
      for (const v of ack.implausible) {
        request.log.warn({ test: q.id, location: q.location, agent: q.pc, view: v.view, reason: v.reason }, 'WPT upload stored as an error result: its timings cannot be true')
      }
      return ack
    } catch (/** @type {any} */ err) {
      // Stored before the answer, like an upload: the round learns why.
      const status = err.statusCode ?? 500
      if (status >= 400 && status < 500) await refuseUpload(app.db, { agent, testId: q.id, status, reason: err.message })
      throw err
    }
  })
}

/**
 * The bytes of the multipart field `file`, or null when there is none. A
 * body that cannot be read as multipart (no boundary, cut short, a part
 * more than the limits allow) is the upload's fault, a 400 naming `file`,
 * so that the round learns why: wptagent does not send it again.
 * @param {import('fastify').FastifyRequest} request
 * @returns {Promise<Buffer | null>}
 */
async function uploadedZip (request) {
  try {
    for await (const part of request.parts()) {
      if (part.type !== 'file') continue
      if (part.fieldname !== 'file') {
        await part.toBuffer()
        continue
      }
      return await part.toBuffer()
    }
    return null
  } catch (/** @type {any} */ err) {
    if (err.code === 'FST_REQ_FILE_TOO_LARGE') throw Object.assign(new Error(`file: result.zip is larger than ${WPT_UPLOAD_LIMIT} bytes`), { statusCode: 413, field: 'file' })
    if (err.code === 'FST_FILES_LIMIT') throw new ValidationError('file: an upload has one file, result.zip as multipart field "file"; this one has more', 'file')
    if (err.statusCode === undefined || err.code === 'FST_PARTS_LIMIT' || err.code === 'FST_FIELDS_LIMIT') {
      throw new ValidationError(`file: the multipart body could not be read (${err.message}): an upload cut short, or not multipart`, 'file')
    }
    throw err
  }
}

/**
 * Wrong keys counted per client address and location: an address that keeps
 * guessing one location's key has its further wrong keys for that location
 * answered 429 for the rest of the minute. Right keys are never limited by
 * it, and agents of other locations behind the same address (a shared NAT,
 * a reverse proxy) are not counted with it.
 * @param {import('fastify').FastifyInstance} app
 */
function wrongKeyLimiter (app) {
  const perMinute = app.config.authFailuresPerMin ?? 20
  if (!perMinute || typeof app.createRateLimit !== 'function') return { blockedFor: () => 0, record: async () => 0 }
  const keyOf = (/** @type {import('fastify').FastifyRequest} */ request) => `${request.ip}|${String(/** @type {AgentQuery} */ (request.query).location ?? '').slice(0, 100)}`
  const count = app.createRateLimit({ max: perMinute, timeWindow: 60_000, keyGenerator: keyOf })
  /** @type {Map<string, number>} */
  const blocked = new Map()
  return {
    /** @param {AgentRequest} request */
    blockedFor (request) {
      const until = blocked.get(keyOf(request))
      if (!until) return 0
      if (until > Date.now()) return Math.max(1, Math.ceil((until - Date.now()) / 1000))
      blocked.delete(keyOf(request))
      return 0
    },
    /** @param {AgentRequest} request */
    async record (request) {
      const r = await count(request)
      if (r.isAllowed || !r.isExceeded) return 0
      if (blocked.size > 10_000) for (const [k, t] of blocked) if (t <= Date.now()) blocked.delete(k)
      if (blocked.size <= 100_000) blocked.set(keyOf(request), Date.now() + r.ttl)
      return Math.max(1, Math.ceil(r.ttl / 1000))
    }
  }
}
