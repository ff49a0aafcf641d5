// Standard normal tail probability, for the Mann–Whitney normal approximation.

/**
 * P(Z > z) for a standard normal Z.
 * @param {number} z
 */
export function normalSurvival (z) {
  return 0.5 * erfc(z / Math.SQRT2)
}

/**
 * Complementary error function, Chebyshev fit from Numerical Recipes
 * (erfcc): fractional error below 1.2e-7 everywhere, far finer than any
 * p-value shown to a user needs.
 * @param {number} x
 */
export function erfc (x) {
  const z = Math.abs(x)
  const t = 1 / (1 + 0.5 * z)
  const poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
    t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
    t * (-0.82215223 + t * 0.17087277))))))))
  const value = t * Math.exp(poly)
  return x >= 0 ? value : 2 - value
}
