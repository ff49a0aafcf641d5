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
 * or all locations, in the forced comparison): a column
 * may claim differences only when it passes a screen — the Simes test of
 * its cells, Bonferroni over the columns — and its cells are then corrected
 * with Benjamini–Hochberg within the column. A column of identical arms thus
 * stays quiet even when another column has real differences, which one
 * plain Benjamini–Hochberg over the whole table did not ensure (a true H3
 * loss at one location lent a chance cell elsewhere a "faster";
 * bench/calibration.js). Under identical arms everywhere any claim at all
 * has probability ≤ q. The Bonferroni over the columns suits a few columns:
 * the bootstrap's p-value has a floor of 2 / 1,001, so beyond 25 columns
 * no column can pass (selectiveBenjaminiHochberg is for tables of many).
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

/**
 * Adjusted p-values for a table of many columns, by Benjamini and
 * Bogomolov's selective inference on families of hypotheses (JRSS B 76,
 * 2014): the columns are selected by Benjamini–Hochberg over their Simes
 * p-values at level q, and within each of the R selected columns, of m,
 * Benjamini–Hochberg runs at level q·R/m. A cell's adjusted p-value is the
 * larger of its column's selection p-value and its within-column one
 * scaled by m/R, so "adjusted ≤ q" is exactly that decision (the value is
 * for this q: R depends on it).
 *
 * The auto arm's view needs it: a column per location, visit and contrast
 * is 18 columns at three locations, and screenedBenjaminiHochberg's
 * Bonferroni over them asked a column's Simes p-value to be ≤ 0.05 / 18,
 * barely above the bootstrap p-value's floor of 2 / 1,001, so auto − H2
 * found a true 10% gain at 500 rounds in 21% of cells (bench/calibration.js).
 * Selecting columns by Benjamini–Hochberg lets the threshold rise with the
 * number of columns that show something. Under identical arms everywhere
 * a claim still needs a selected column, which has probability ≤ q.
 * @param {number[][]} columns each column's tested p-values (empty columns are not counted)
 * @param {number} q
 * @returns {number[][]} the adjusted p-values, in the same shape
 */
export function selectiveBenjaminiHochberg (columns, q) {
  const within = columns.map((family) => benjaminiHochberg(family).map((p) => p ?? 1))
  const simes = within.map((w) => (w.length ? Math.min(...w) : null))
  const selection = benjaminiHochberg(simes)
  const m = simes.filter((p) => p !== null).length
  const selected = selection.filter((p) => p !== null && p <= q).length
  return within.map((w, j) => w.map((p) => Math.min(1, Math.max(selection[j] ?? 1, p * m / Math.max(1, selected)))))
}
