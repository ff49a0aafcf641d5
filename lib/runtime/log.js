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
