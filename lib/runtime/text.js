// Text from outside (an agent, a browser, an upload) as the API takes it
// and PostgreSQL stores it.

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
