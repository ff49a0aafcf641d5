import pino from 'pino'

// Fields that must never reach a log line, wherever they appear.
const REDACT = [
  'token', '*.token', 'agentToken', '*.agentToken', 'password', '*.password', 'secret', '*.secret', 'key', '*.key',
  'req.headers.authorization', 'headers.authorization', 'req.headers.cookie', 'databaseUrl', '*.databaseUrl'
]

/**
 * @param {{ logLevel?: string, name?: string, destination?: import('pino').DestinationStream }} [opts]
 *   destination: where lines go (stdout by default); tests pass a stream to read them back
 * @returns {import('pino').Logger}
 */
export function createLogger ({ logLevel = 'info', name = 'h3lens', destination } = {}) {
  const options = { name, level: logLevel, redact: { paths: REDACT, censor: '[redacted]' } }
  return destination ? pino(options, destination) : pino(options)
}
