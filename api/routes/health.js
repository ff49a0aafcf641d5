import { VERSION } from '../../lib/runtime/version.js'
import { RETRY_AFTER_S } from '../plugins/errors.js'

// Load balancers and compose healthchecks give up after a second or two; a
// database that hangs (rather than refusing) must not hold the answer for
// the pool's 10 s connect timeout.
const DATABASE_CHECK_MS = 800
// A write that failed for want of disk space or memory makes the database
// unavailable here until that kind of write (its route) succeeds, or for
// this long after the last such failure when none is tried in between (an
// agent with spooled results tries again every few seconds).
const WRITE_FAILURE_HELD_MS = 5 * 60_000

const healthSchema = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['ok', 'unavailable'] },
    version: { type: 'string' },
    database: {
      type: 'string',
      enum: ['ok', 'timeout', 'unreachable', 'out_of_resources'],
      description: 'ok, timeout (no answer within 800 ms), unreachable, or out_of_resources (it answers, but a write failed for want of disk space or memory and that kind of write has not succeeded since)'
    },
    message: { type: 'string', description: 'What is down, when something is' }
  }
}

/**
 * Route plugins take the app as `any`: Fastify's types cannot derive request
 * shapes from JSON schemas in plain JS. The schemas check them at run time.
 * @param {import('fastify').FastifyInstance} app
 */
export default async function healthRoutes (app) {
  app.get('/healthz', {
    schema: {
      description: `Liveness and database check, answered within a second. 200 when the database answers within ${DATABASE_CHECK_MS} ms ` +
        'and no write has failed for want of disk space or memory that has not succeeded again since; 503 naming the dependency that is down otherwise.',
      tags: ['service'],
      response: { 200: healthSchema, 503: healthSchema }
    }
  }, async (request, reply) => {
    const writes = app.databaseWrites
    const database = await checkDatabase(app.db)
    if (database.state === 'ok' && writes.failedAt !== null && Date.now() - writes.failedAt < WRITE_FAILURE_HELD_MS) {
      Object.assign(database, { state: 'out_of_resources', detail: `out of disk space or memory: reads answer, but a write (${writes.route}) failed at ${new Date(writes.failedAt).toISOString()} (${writes.message}) and has not succeeded since` })
    }
    if (database.state === 'ok') return { status: 'ok', version: VERSION, database: 'ok' }
    request.log.warn({ database: database.state, err: database.detail }, 'health check: database down')
    // As the API's other answers while the database is down (api/plugins/errors.js).
    return reply.code(503).header('retry-after', String(RETRY_AFTER_S)).send({ status: 'unavailable', version: VERSION, database: database.state, message: `database ${database.detail}` })
  })
}

/**
 * @param {import('pg').Pool} db
 * @returns {Promise<{ state: 'ok' | 'timeout' | 'unreachable' | 'out_of_resources', detail?: string }>}
 */
async function checkDatabase (db) {
  let timer
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ state: 'timeout', detail: `did not answer within ${DATABASE_CHECK_MS} ms` }), DATABASE_CHECK_MS)
  })
  // The query keeps running after a timeout; its late answer is dropped.
  const query = db.query('SELECT 1')
    .then(() => ({ state: 'ok' }), (err) => ({ state: 'unreachable', detail: `unreachable: ${err.message}` }))
  try {
    return /** @type {any} */ (await Promise.race([query, timeout]))
  } finally {
    clearTimeout(timer)
  }
}
