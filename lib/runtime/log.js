import pino from 'pino'

// Fields that must never reach a log line, wherever they appear.
const REDACT = [
  'token', '*.token', 'agentToken', '*.agentToken', 'password', '*.password', 'secret', '*.secret', 'key', '*.key',
  'req.headers.authorization', 'headers.authorization', 'req.headers.cookie', 'databaseUrl', '*.databaseUrl',
  'secretKey', '*.secretKey', 'secretKeyPrevious', '*.secretKeyPrevious',
  // A journey's secrets (docs/JOURNEYS.md), wherever a journey is logged whole.
  'journey.steps[*].secret', '*.journey.steps[*].secret', 'journey_secrets', '*.journey_secrets'
]

/**
 * @param {{ logLevel?: string, name?: string, destination?: import('pino').DestinationStream }} [opts]
 *   destination: where lines go (stderr by default); tests pass a stream to read them back
 * @returns {import('pino').Logger}
 */
export function createLogger ({ logLevel = 'info', name = 'h3lens', destination } = {}) {
  const options = { name, level: logLevel, redact: { paths: REDACT, censor: '[redacted]' } }
  // Logs go to stderr so stdout carries only what a command answers: a key
  // from `keys create` or a token from `agents token` can be piped or
  // captured with $(…) without log lines beside it.
  return pino(options, destination ?? pino.destination({ dest: 2, sync: true }))
}

/**
 * The warnings of work retried on a short timer that may fail for minutes
 * on end (the scheduler's loops, each tick while the database is down): a
 * failure is logged, then at most one line each `everyMs` with how many
 * there have been since the last line, and one line when the work succeeds
 * after a logged failure. Work that fails now and then (a statement out of
 * memory) stays within the same lines a minute. A line a second per loop
 * would fill the disk an outage may have filled.
 * @param {import('pino').Logger} log
 * @param {string} what the work, as a log line names it ("scheduler rounds")
 * @param {{ everyMs?: number, now?: () => number }} [o] now: the clock (tests pass their own)
 */
export function repeatedFailures (log, what, { everyMs = 60_000, now = Date.now } = {}) {
  let unlogged = 0
  let since = 0
  let loggedAt = -Infinity
  // A failure logged and no success since.
  let failing = false
  return {
    /** @param {any} err */
    failed (err) {
      const t = now()
      if (unlogged++ === 0) since = t
      // A clock stepped back counts as time gone by.
      if (Math.abs(t - loggedAt) < everyMs) return
      const first = new Date(since).toISOString()
      const fields = { err: err?.message ?? String(err), ...(unlogged > 1 ? { failures: unlogged, since: first } : {}) }
      if (unlogged === 1) log.warn(fields, `${what} failed; retrying next tick`)
      else log.warn(fields, `${what} ${failing ? 'still failing' : 'failed again'}: ${unlogged} times since ${first}; retrying next tick`)
      loggedAt = t
      unlogged = 0
      failing = true
    },
    succeeded () {
      if (!failing) return
      failing = false
      log.info(`${what} works again`)
    }
  }
}
