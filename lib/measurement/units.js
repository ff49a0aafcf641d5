// How figures are rounded when a result is made: milliseconds to 0.1 ms,
// round trips to 0.01 RTT. Agents and the RTT accounting share it.

/**
 * @param {number} value
 * @param {number} [digits] decimals kept; 1 for milliseconds
 */
export function round (value, digits = 1) {
  const f = 10 ** digits
  return Math.round(value * f) / f
}
