// The one rule for date-times h3lens accepts (query parameters, agent
// submissions): RFC 3339 as JSON Schema's "date-time" describes it, further
// restricted to what both JavaScript and PostgreSQL can hold. Without it,
// values the schema format allows became 500s: a leap second
// (23:59:60Z, an Invalid Date in JavaScript), year 0000 (PostgreSQL has no
// year 0) and offsets beyond ±15:59 (PostgreSQL's limit).

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|([+-])(\d{2}):(\d{2}))$/

/** What a valid value looks like, for error messages. */
export const DATE_TIME_RULE = 'must be an RFC 3339 date-time from 0001-01-01 to 9999-12-31 with a UTC offset within ±15:59, such as 2026-11-22T12:00:00Z'

/** The first instant a date-time may name (0001-01-01T00:00:00Z): a window's default start is never before it. */
export const FIRST_TIME = Date.parse('0001-01-01T00:00:00Z')

// A timestamptz as PostgreSQL prints it as text ("2026-11-22 12:00:00.123456+00",
// an offset's minutes only when it has some), as keyset cursors carry it.
const POSTGRES_TEXT = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,6})?(?:Z|[+-](\d{2})(?::?(\d{2}))?)?$/

/**
 * True when `value` is a date-time h3lens can store and compare.
 * @param {string} value
 */
export function isValidDateTime (value) {
  const m = RFC3339.exec(value)
  if (!m) return false
  return holds(m.slice(1, 7), m[9] ? [m[10], m[11]] : []) && Number.isFinite(Date.parse(value))
}

/**
 * True when `text` is a timestamp as PostgreSQL prints one, within the same
 * rule: a date that exists, a time of day, an offset within ±15:59.
 * @param {string} text
 */
export function isPostgresTimestamp (text) {
  const m = POSTGRES_TEXT.exec(text)
  return m !== null && holds(m.slice(1, 7), m.slice(7, 9))
}

/**
 * The rule both forms share, on their fields as matched.
 * @param {string[]} date year, month, day, hour, minute, second
 * @param {(string | undefined)[]} offset hours and minutes, when there is an offset
 */
function holds (date, offset) {
  const [year, month, day, hour, minute, second] = date.map(Number)
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return false
  if (hour > 23 || minute > 59 || second > 59) return false
  const [offsetHours = 0, offsetMinutes = 0] = offset.map((v) => Number(v ?? 0))
  return offsetHours <= 15 && offsetMinutes <= 59
}

/** @param {number} year @param {number} month */
function daysIn (year, month) {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
}
