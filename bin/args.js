// What the CLI's arguments may be, for the commands' own checks.

// Ids are PostgreSQL integers: a larger number names nothing, and would
// reach the database as an error.
const MAX_ID = 2147483647

/**
 * The id a CLI argument names (a monitor, a key, a site): a whole number in
 * decimal digits, from 1 to PostgreSQL's integer maximum; null for anything
 * else. Number() alone would read "0x2" or "1e3" as another row's id.
 * @param {unknown} text
 * @returns {number | null}
 */
export function idOf (text) {
  if (typeof text !== 'string' || !/^[1-9]\d{0,9}$/.test(text)) return null
  const n = Number(text)
  return n <= MAX_ID ? n : null
}
