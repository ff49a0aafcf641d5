// The median the benches print, one definition for all of them: of the
// numbers among the values (null, undefined and NaN left out), the middle
// one, or the mean of the two middle ones (PostgreSQL's percentile_cont at
// 0.5, as lib/analysis/stats/quantile.js computes it). NaN when there are
// none: NaN, not null, which would count as 0 in a difference of medians.
import { exactQuantile } from '../../lib/analysis/stats/quantile.js'

/**
 * @param {Iterable<number | null | undefined>} values
 * @returns {number}
 */
export function median (values) {
  const numbers = Float64Array.from([...values].filter((v) => typeof v === 'number' && !Number.isNaN(v))).sort()
  return exactQuantile(numbers, 0.5) ?? NaN
}

/**
 * The median to a tenth, as the benches' tables show it.
 * @param {Iterable<number | null | undefined>} values
 */
export function median1 (values) {
  return Math.round(median(values) * 10) / 10
}
