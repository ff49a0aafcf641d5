// Multiple comparisons: a regional table asks dozens of questions at once
// (percentiles × locations), so a 5% error rate per cell would flag some
// cell in most tables of identical arms. Benjamini–Hochberg keeps the
// expected share of false claims among the claims at q; when every null is
// true (an A/A run) that is the chance of any claim at all.

/**
 * Benjamini–Hochberg adjusted p-values, in the order given. A cell is a
 * discovery at level q when its adjusted p-value is ≤ q. Null entries (cells
 * that were not tested) stay null and do not count towards m.
 * @param {(number | null)[]} pValues
 * @returns {(number | null)[]}
 */
export function benjaminiHochberg (pValues) {
  const tested = pValues.map((p, i) => ({ p, i })).filter((x) => x.p !== null && Number.isFinite(x.p))
  const m = tested.length
  /** @type {(number | null)[]} */
  const out = pValues.map(() => null)
  tested.sort((a, b) => /** @type {number} */ (a.p) - /** @type {number} */ (b.p))
  let running = 1
  for (let k = m - 1; k >= 0; k--) {
    running = Math.min(running, /** @type {number} */ (tested[k].p) * m / (k + 1))
    out[tested[k].i] = running
  }
  return out
}

/**
 * Adjusted p-values for a table whose cells fall into columns (a location,
 * or all locations; for the auto arm, a location and contrast): a column
 * may claim differences only when it passes a screen — the Simes test of
 * its cells, Bonferroni over the columns — and its cells are then corrected
 * with Benjamini–Hochberg within the column. A column of identical arms thus
 * stays quiet even when another column has real differences, which one
 * plain Benjamini–Hochberg over the whole table did not ensure (a true H3
 * loss at one location lent a chance cell elsewhere a "faster";
 * bench/calibration.js). Under identical arms everywhere any claim at all
 * has probability ≤ q.
 * @param {number[][]} columns each column's tested p-values (empty columns may be left out)
 * @returns {number[][]} the adjusted p-values, in the same shape
 */
export function screenedBenjaminiHochberg (columns) {
  const tested = columns.filter((c) => c.length)
  return columns.map((family) => {
    if (!family.length) return []
    const within = benjaminiHochberg(family)
    const simes = Math.min(...within.map((p) => p ?? 1))
    return family.map((_, i) => Math.min(1, Math.max(within[i] ?? 1, tested.length * simes)))
  })
}
