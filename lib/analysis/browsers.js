// The cross-browser comparison: each location's H3 gain in every browser
// the monitor runs, on the same percentile, with intervals (each browser's
// own regional comparison, ./comparison.js, read side by side). Chromium and
// Firefox share the server and the path but not their HTTP/3 stacks, so a
// gain both show is the server's and the path's, and one that only one
// browser shows is that browser's (docs/BROWSERS.md).
import { FDR_Q, VERDICTS } from './comparison.js'
import { benjaminiHochberg, normalQuantile, normalSurvival } from './stats/index.js'

// The z of a 95% interval's half-width: each browser's standard error is
// read from its interval.
const Z95 = normalQuantile(0.975)

/** What a location's two gains say, in words. */
export const READINGS = Object.freeze({
  same: 'Both browsers agree: the difference is the server\'s and the path\'s, not one browser\'s',
  same_apart: 'Both browsers show the difference, but by clearly different amounts: its size is partly the browser\'s HTTP/3 stack',
  browser: 'The browsers disagree, their gains clearly apart: one browser\'s HTTP/3 stack makes the difference',
  inconclusive: 'One browser shows a difference and the other does not, but their gains are not clearly apart: more rounds would tell',
  neither: 'Neither browser shows a difference',
  no_h3: 'The origin offers no HTTP/3 to either browser',
  insufficient_data: 'Not enough rounds in every browser to tell',
  one_browser: 'The monitor runs in one browser: add another to its browsers to compare them'
})

/**
 * @typedef {{ rounds: number, h2_ms: number | null, h3_ms: number | null, delta_ms: number | null, delta_pct: number | null,
 *   ci_low_ms: number | null, ci_high_ms: number | null, verdict: string, reason: string | null }} Gain
 */

/**
 * Side by side: per location (and all locations), each browser's row of
 * the percentile, and what they say together.
 * @param {Record<string, { locations: Record<string, any>[] }>} answers each browser's regional comparison
 * @param {number} percentile one of the answers' percentiles
 */
export function crossBrowser (answers, percentile) {
  const browsers = Object.keys(answers)
  /** @type {Map<string, { location_id: string | null, name: string, region: string | null, kind: string | null, gains: Record<string, Gain> }>} */
  const byLocation = new Map()
  for (const b of browsers) {
    for (const loc of answers[b].locations) {
      const key = loc.location_id ?? ''
      let entry = byLocation.get(key)
      if (!entry) byLocation.set(key, (entry = { location_id: loc.location_id, name: loc.name, region: loc.region ?? null, kind: loc.kind ?? null, gains: {} }))
      const row = loc.rows.find((/** @type {Record<string, any>} */ r) => r.percentile === percentile)
      entry.gains[b] = gainOf(row, loc)
    }
  }
  // Whether the browsers' gains are apart, tested at every location where
  // each browser has an interval, corrected over those locations.
  const entries = [...byLocation.values()].map((l) => ({ ...l, difference: gainsApart(l.gains) }))
  const tested = entries.filter((l) => l.difference)
  benjaminiHochberg(tested.map((l) => /** @type {Difference} */ (l.difference).p))
    .forEach((p, i) => { /** @type {Difference} */ (tested[i].difference).p_adjusted = p })
  const out = entries.map((l) => ({ ...l, reading: readingOf(Object.values(l.gains), l.difference) }))
  // All locations last, as in the regional table.
  return out.sort((a, b) => (a.location_id === null ? 1 : 0) - (b.location_id === null ? 1 : 0))
}

/**
 * @param {Record<string, any> | undefined} row
 * @param {Record<string, any>} loc
 * @returns {Gain}
 */
function gainOf (row, loc) {
  if (!row) return { rounds: 0, h2_ms: null, h3_ms: null, delta_ms: null, delta_pct: null, ci_low_ms: null, ci_high_ms: null, verdict: VERDICTS.INSUFFICIENT_DATA, reason: loc.reason ?? 'no rounds' }
  return {
    rounds: row.rounds,
    h2_ms: row.h2_ms,
    h3_ms: row.h3_ms,
    delta_ms: row.delta_ms,
    delta_pct: row.delta_pct,
    ci_low_ms: row.ci_low_ms,
    ci_high_ms: row.ci_high_ms,
    verdict: loc.verdict === VERDICTS.H3_NOT_SUPPORTED ? VERDICTS.H3_NOT_SUPPORTED : row.verdict,
    reason: row.reason ?? null
  }
}

/**
 * @typedef {{ browsers: string[], delta_ms: number, delta_pct: number, se_pct: number, p: number, p_adjusted: number | null }} Difference
 * delta_ms: the gains' difference in ms, as shown; delta_pct and se_pct: in percentage points of each browser's H2, as tested
 */

/**
 * The difference of two browsers' relative gains (Δ as a percentage of
 * that browser's H2; the first named minus the second) with its standard
 * error and two-sided p: each browser's error from its 95% interval over
 * its H2, added, as the browsers' rounds are distinct. Relative, because
 * the browsers load at different speeds: the same 10% gain is more ms in
 * the slower one, and compared in ms it read "clearly different amounts".
 * With more than two browsers, the pair furthest apart, its p multiplied by
 * the pairs. Null when a browser has no interval or no H2 time.
 * @param {Record<string, Gain>} gains
 * @returns {Difference | null}
 */
export function gainsApart (gains) {
  const named = Object.entries(gains)
  if (named.length < 2 || named.some(([, g]) => g.ci_low_ms === null || g.ci_high_ms === null || g.delta_ms === null || g.delta_pct === null || !(Number(g.h2_ms) > 0))) return null
  const se = (/** @type {Gain} */ g) => 100 * (/** @type {number} */ (g.ci_high_ms) - /** @type {number} */ (g.ci_low_ms)) / (2 * Z95) / /** @type {number} */ (g.h2_ms)
  /** @type {Difference | null} */
  let widest = null
  let pairs = 0
  for (let i = 0; i < named.length; i++) {
    for (let j = i + 1; j < named.length; j++) {
      pairs++
      const [a, ga] = named[i]
      const [b, gb] = named[j]
      const delta = /** @type {number} */ (ga.delta_pct) - /** @type {number} */ (gb.delta_pct)
      const sePct = Math.hypot(se(ga), se(gb))
      const p = sePct > 0 ? 2 * normalSurvival(Math.abs(delta) / sePct) : (delta === 0 ? 1 : 0)
      if (!widest || p < widest.p) {
        widest = { browsers: [a, b], delta_ms: /** @type {number} */ (ga.delta_ms) - /** @type {number} */ (gb.delta_ms), delta_pct: delta, se_pct: sePct, p, p_adjusted: null }
      }
    }
  }
  const w = /** @type {Difference} */ (widest)
  w.p = Math.min(1, w.p * pairs)
  return w
}

/**
 * Same verdict in every browser (a difference both show, or none); verdicts
 * that differ with gains clearly apart (the difference's adjusted p-value at
 * most FDR_Q), or without; a browser without enough rounds leaves it open.
 * @param {Gain[]} gains
 * @param {Difference | null} [difference] the browsers' gains apart, corrected over the locations
 * @returns {{ code: keyof typeof READINGS, text: string }}
 */
export function readingOf (gains, difference = null) {
  const verdicts = gains.map((g) => g.verdict)
  const differs = (/** @type {string} */ v) => v === VERDICTS.H3_FASTER || v === VERDICTS.H3_SLOWER
  /** @type {keyof typeof READINGS} */
  let code
  if (gains.length < 2) code = 'one_browser'
  else if (verdicts.some((v) => v === VERDICTS.INSUFFICIENT_DATA)) code = 'insufficient_data'
  else if (!verdicts.every((v) => v === verdicts[0])) code = difference?.p_adjusted != null && difference.p_adjusted <= FDR_Q ? 'browser' : 'inconclusive'
  else if (verdicts[0] === VERDICTS.H3_NOT_SUPPORTED) code = 'no_h3'
  else if (!differs(verdicts[0])) code = 'neither'
  // The same verdict is one reading only where the gains are not clearly apart.
  else code = difference?.p_adjusted != null && difference.p_adjusted <= FDR_Q ? 'same_apart' : 'same'
  return { code, text: READINGS[code] }
}
