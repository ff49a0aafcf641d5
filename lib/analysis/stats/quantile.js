// Quantiles of raw samples, defined exactly as PostgreSQL's percentile_cont so
// a number computed here can be checked against a SQL query over the same rows.

/**
 * Linear interpolation between the two closest order statistics:
 * position = q × (n − 1); value = v[⌊pos⌋] + (v[⌈pos⌉] − v[⌊pos⌋]) × (pos − ⌊pos⌋).
 * This is percentile_cont (and numpy's default "linear" method).
 *
 * @param {ArrayLike<number>} sortedValues ascending
 * @param {number} q in [0, 1]
 * @returns {number | null} null for an empty input
 */
export function exactQuantile (sortedValues, q) {
  assertQuantile(q)
  const n = sortedValues.length
  if (n === 0) return null
  const position = q * (n - 1)
  const lower = Math.floor(position)
  const upper = Math.ceil(position)
  const low = sortedValues[lower]
  return low + (sortedValues[upper] - low) * (position - lower)
}

/**
 * Copy values into an ascending Float64Array, rejecting NaN and ±Infinity.
 * Typed-array sort is numeric without a comparator: 0.44 ms against 1.5 ms
 * for Array#sort((a, b) => a - b) on 5,000 doubles (Node 20).
 *
 * @param {Iterable<number>} values
 * @param {string} [label] names the input in error messages
 */
export function sortedSample (values, label = 'sample') {
  const sorted = Float64Array.from(values)
  for (let i = 0; i < sorted.length; i++) {
    if (!Number.isFinite(sorted[i])) {
      throw new RangeError(`${label}[${i}] is ${sorted[i]}; every value must be a finite number of milliseconds`)
    }
  }
  return sorted.sort()
}

/** @param {number} q */
export function assertQuantile (q) {
  if (typeof q !== 'number' || !(q >= 0 && q <= 1)) {
    throw new RangeError(`quantile must be a number in [0, 1], got ${q}`)
  }
}
