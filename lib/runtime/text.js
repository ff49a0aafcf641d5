// Text from outside (an agent, a browser, an upload) as the API takes it
// and PostgreSQL stores it.
import { ValidationError } from './errors.js'

/** A result's error, at most: what the agent protocol, the import and the WPT uploads each take. */
export const MAX_ERROR_LENGTH = 4000

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/**
 * At most `max` characters, without NUL characters (which neither text nor
 * jsonb takes) and with no half of a surrogate pair left (the text's own, or
 * one the cut made): such a half becomes U+FFFD.
 * @param {string} v
 * @param {number} max
 */
export function storableText (v, max) {
  return v.replaceAll('\0', '').slice(0, max).replace(LONE_SURROGATE, '\uFFFD')
}

/**
 * Text shown in a message: at most `max` characters, and … where it was cut.
 * @param {string} v
 * @param {number} max
 */
export function clipped (v, max) {
  return v.length > max ? `${v.slice(0, max)}…` : v
}

/**
 * A name shown on one line (the CLI's lists print one item a line, its
 * fields between tabs): trimmed, 1 to `max` characters, no control
 * characters.
 * @param {unknown} value
 * @param {{ field: string, what: string, example: string, max?: number }} o
 *   what: "a key's name"; example: "grafana"
 * @returns {string}
 * @throws {ValidationError}
 */
export function oneLineName (value, { field, what, example, max = 100 }) {
  const name = String(value ?? '').trim()
  if (!name || name.length > max) throw new ValidationError(`${what} is 1 to ${max} characters, such as "${example}"`, field)
  if (/\p{Cc}/u.test(name)) throw new ValidationError(`${what} may not hold control characters (tabs, line breaks)`, field)
  return name
}
