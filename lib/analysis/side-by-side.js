// Which round to show side by side (docs/FILMSTRIPS.md): the comparison
// says "H3 is 90 ms faster at p95"; this finds the round that looks most
// like that sentence. The percentile's Δ is H2's percentile minus H3's over
// the window's matched rounds (as the comparison reports it); the round
// shown is the one whose own H2 − H3 is nearest that Δ, among rounds with
// frames in both arms when there are any, ties going to the round whose
// arms are nearest their percentiles (a p95 round, not a fast round with
// the same gap).
import { exactQuantile, sortedSample } from './stats/quantile.js'

/**
 * @typedef {{ job_id: number, time: Date, h2: number, h3: number, framed: boolean }} Round
 * @typedef {{ round: Round, delta_ms: number, percentile_delta_ms: number, h2_percentile_ms: number, h3_percentile_ms: number,
 *   rounds: number, framed_rounds: number, nearest_unframed: (Round & { delta_ms: number }) | null }} Pick
 */

/**
 * @param {Round[]} rounds matched rounds (both arms ok with a value)
 * @param {number} percentile 1–99
 * @returns {Pick | null} null without rounds
 */
export function pickRound (rounds, percentile) {
  if (!rounds.length) return null
  const q = percentile / 100
  const h2p = /** @type {number} */ (exactQuantile(sortedSample(rounds.map((r) => r.h2)), q))
  const h3p = /** @type {number} */ (exactQuantile(sortedSample(rounds.map((r) => r.h3)), q))
  const target = h2p - h3p
  const score = (/** @type {Round} */ r) => [Math.abs(r.h2 - r.h3 - target), Math.abs(r.h2 - h2p) + Math.abs(r.h3 - h3p)]
  const nearest = (/** @type {Round[]} */ rs) => rs.reduce((best, r) => {
    const [a, b] = score(r)
    const [c, d] = score(best)
    return a < c || (a === c && b < d) ? r : best
  })
  const framed = rounds.filter((r) => r.framed)
  const overall = nearest(rounds)
  const round = framed.length ? nearest(framed) : overall
  return {
    round,
    delta_ms: round.h2 - round.h3,
    percentile_delta_ms: target,
    h2_percentile_ms: h2p,
    h3_percentile_ms: h3p,
    rounds: rounds.length,
    framed_rounds: framed.length,
    // Said only when it was nearer the Δ than the round shown.
    nearest_unframed: score(overall)[0] < score(round)[0] ? { ...overall, delta_ms: overall.h2 - overall.h3 } : null
  }
}

/**
 * Why this round, in words.
 * @param {Pick} pick
 * @param {{ percentile: number, metric: string }} q metric: its label
 */
export function whyThisRound (pick, { percentile, metric }) {
  const f = (/** @type {number} */ v) => `${Math.round(v)} ms`
  const faster = (/** @type {number} */ d) => d > 0 ? `H3 ${f(d)} faster` : d < 0 ? `H3 ${f(-d)} slower` : 'no difference'
  const base = `At p${percentile} of ${metric}, H2 is ${f(pick.h2_percentile_ms)} and H3 ${f(pick.h3_percentile_ms)} (${faster(pick.percentile_delta_ms)}) over ${pick.rounds} rounds. ` +
    `This round's H2 − H3 is ${Math.round(pick.delta_ms)} ms (${faster(pick.delta_ms)}), the nearest to that Δ`
  if (!pick.round.framed) return `${base}; no round in the window has frames in both arms (options.filmstrip).`
  if (pick.nearest_unframed) {
    return `${base} among the ${pick.framed_rounds} rounds with frames in both arms; the nearest of all rounds (Δ ${Math.round(pick.nearest_unframed.delta_ms)} ms) has no frames.`
  }
  return `${base}.`
}
