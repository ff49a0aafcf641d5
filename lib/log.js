import pino from 'pino'

// Fields that must never reach a log line, wherever they appear.
const REDACT = [
  'token', '*.token', 'agentToken', '*.agentToken', 'password', '*.password',
  'req.headers.authorization', 'headers.authorization', 'databaseUrl', '*.databaseUrl'
]

/**
 * @param {{ logLevel?: string, name?: string }} [opts]
 * @returns {import('pino').Logger}
 */
export function createLogger ({ logLevel = 'info', name = 'h3lens' } = {}) {
  return pino({ name, level: logLevel, redact: { paths: REDACT, censor: '[redacted]' } })
}
