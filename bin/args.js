// What the CLI's arguments may be, for the commands' own checks.

// Ids are PostgreSQL integers: a larger number names nothing, and would
// reach the database as an error.
const MAX_ID = 2147483647

/**
 * Whether `n` can be the id of a row (a monitor, a key, a site).
 * @param {number} n
 */
export function isId (n) {
  return Number.isInteger(n) && n > 0 && n <= MAX_ID
}
