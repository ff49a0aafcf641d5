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
