// Synthetic rounds for calibrating the comparison (bench/calibration.js and
// test/verdicts.test.js). Each scenario says what is true — which cells
// may honestly claim a difference — and produces results in the NDJSON
// import format, one object per arm of a round.
//
// The model of one round at one location: a path factor shared by both arms
// (the minute's congestion, the agent's load: lognormal, σ_path), times each
// arm's own noise (lognormal, σ_arm), times the arm's true effect. That is
// why the unit is the round: the path factor moves both arms together.
import { createRandom, randomNormal } from '../lib/analysis/stats/index.js'

/**
 * @typedef {{ time: string, location_id: string, mode: string, probe?: string, status?: string,
 *   observed_protocol?: string | null, error?: string, ttfb_ms?: number | null, details?: Record<string, any> }} ImportRow
 * @typedef {object} Scenario
 * @property {string} name
 * @property {string} truth what a correct table says
 * @property {string[]} locations
 * @property {number} rounds per location
 * @property {string} [probe] page (default) or parallel
 * @property {number} [gain] the true H3 gain (0.1 = H3 10% faster everywhere), 0 when arms are identical
 * @property {boolean} [losesRounds] H3 fails in some rounds: the matched view is identical arms, intention to treat shows H3 slower, and no view may read as an H3 gain
 * @property {boolean} [ittGains] H2 fails at random as well: intention to treat, which counts failures, may honestly show H3 faster; the matched view may not
 * @property {(seed: number | string, startMs: number, stepMs: number) => Generator<ImportRow>} rows
 */

export const CALIBRATION_LOCATIONS = [
  { id: 'cal-a', name: 'Calibration A', base: 80 },
  { id: 'cal-b', name: 'Calibration B', base: 160 },
  { id: 'cal-c', name: 'Calibration C', base: 320 }
]

// Fast locations, where the practical minimum is its 1 ms floor: a step of
// one whole millisecond between tied timings can pass it.
export const FAST_CALIBRATION_LOCATIONS = [
  { id: 'cal-a', name: 'Calibration A', base: 20 },
  { id: 'cal-b', name: 'Calibration B', base: 30 },
  { id: 'cal-c', name: 'Calibration C', base: 45 }
]

/**
 * @param {{ name: string, truth: string, rounds: number, sigmaPath?: number, sigmaArm?: number, gain?: number, probe?: string,
 *   samplesPerRound?: number, locations?: { id: string, name: string, base: number, gain?: number }[], level?: (i: number, n: number) => number,
 *   fails?: (o: { mode: string, path: number, own: () => number, i: number, n: number, location: string, random: () => number }) => boolean,
 *   drops?: (o: { mode: string, path: number, own: () => number, i: number, n: number, location: string, random: () => number }) => boolean, step?: number, ittGains?: boolean,
 *   miss?: { share: number, factor: number } }} s
 *   fails: whether an arm's load fails, from the round's path (a standard normal), the arm's own noise (own(), the
 *   standard normal its value would have had), the round and location
 *   drops: the same question for a load that leaves no result at all (no row: an import that left it out)
 *   step: the timings' resolution in ms (0.1 as a browser's; 1 or 10 for tied timings)
 *   locations: each with its base timing in ms, and a gain of its own where it differs from the scenario's
 *   miss: each arm's load, on its own, a cache miss with this chance (share), which takes `factor` times as long
 * @returns {Scenario}
 */
export function scenario ({
  name, truth, rounds, sigmaPath = 0.2, sigmaArm = 0.3, gain = 0, probe = 'page', samplesPerRound = 1,
  locations = CALIBRATION_LOCATIONS, level = () => 1, fails, drops, step = 0.1, ittGains = false, miss
}) {
  const round = step === 0.1 ? round1 : (/** @type {number} */ v) => Math.round(v / step) * step
  return {
    name,
    truth,
    locations: locations.map((l) => l.id),
    rounds,
    probe,
    gain,
    losesRounds: Boolean(fails || drops),
    ittGains,
    * rows (seed, startMs, stepMs) {
      const random = createRandom(`${name}|${seed}`)
      for (const loc of locations) {
        for (let i = 0; i < rounds; i++) {
          const time = new Date(startMs + i * stepMs).toISOString()
          const z = randomNormal(random)
          const path = Math.exp(sigmaPath * z)
          const modes = random() < 0.5 ? ['h2', 'h3'] : ['h3', 'h2']
          for (const mode of modes) {
            const factor = loc.base * level(i, rounds) * path * (mode === 'h3' ? 1 - (loc.gain ?? gain) : 1)
            // The arm's own noise, drawn before the failure is decided when
            // the failure depends on it (own()), else with the value.
            /** @type {number | null} */
            let ownZ = null
            const own = () => (ownZ ??= randomNormal(random))
            const draw = () => {
              const zArm = ownZ ?? randomNormal(random)
              ownZ = null
              const missed = miss && random() < miss.share ? miss.factor : 1
              return round(factor * missed * Math.exp(sigmaArm * zArm))
            }
            if (drops?.({ mode, path: z, own, i, n: rounds, location: loc.id, random })) {
              ownZ = null
            } else if (fails?.({ mode, path: z, own, i, n: rounds, location: loc.id, random })) {
              yield { time, location_id: loc.id, mode, probe, status: 'error', observed_protocol: null, error: 'net::ERR_TIMED_OUT', ttfb_ms: null }
            } else if (probe === 'parallel') {
              const samples = Array.from({ length: samplesPerRound }, draw)
              yield { time, location_id: loc.id, mode, probe, status: 'ok', observed_protocol: mode, ttfb_ms: null, details: { samples } }
            } else if (probe.startsWith('journey:')) {
              // A journey step's duration (step_ms) is its sample.
              yield { time, location_id: loc.id, mode, probe, status: 'ok', observed_protocol: mode, ttfb_ms: null, samples: [draw()] }
            } else {
              yield { time, location_id: loc.id, mode, probe, status: 'ok', observed_protocol: mode, ttfb_ms: draw() }
            }
          }
        }
      }
    }
  }
}

const round1 = (/** @type {number} */ v) => Math.round(v * 10) / 10

/** The scenarios of the verdicts' calibration table (docs/BENCHMARKS.md, "Calibration of the verdicts"). */
export function calibrationScenarios ({ quick = false } = {}) {
  const sizes = quick ? [50, 1000] : [50, 1000, 10000]
  const aa = sizes.flatMap((n) => [
    scenario({ name: `A/A tight n=${n}`, truth: 'identical arms', rounds: n, sigmaPath: 0.05, sigmaArm: 0.05 }),
    scenario({ name: `A/A wide n=${n}`, truth: 'identical arms', rounds: n, sigmaPath: 0.5, sigmaArm: 0.8 })
  ])
  return [
    ...aa,
    // H3 fails on the slowest 8% of paths and is otherwise identical: losing
    // slow rounds must not read as a tail gain.
    scenario({
      name: 'selective H3 failure on slow paths',
      truth: 'identical where both load; H3 fails more',
      rounds: 1000,
      fails: ({ mode, path }) => mode === 'h3' && path > 1.405 // the slowest 8% of a standard normal
    }),
    // H3 fails on its own slowest 5% of loads (a handshake that stalls
    // until the timeout), whatever the path: among the loads that complete
    // it looks faster at every percentile, and dropping the whole round does
    // not undo that. H3 failing more must keep its gain from being a verdict.
    scenario({
      name: 'H3 fails on its own slowest loads',
      truth: 'identical arms; H3 fails its own slowest 5%',
      rounds: 600,
      sigmaArm: 0.5,
      fails: ({ mode, own }) => mode === 'h3' && own() > 1.645 // the slowest 5% of a standard normal
    }),
    // The same, while H2 fails as often at random: the failure test finds
    // neither arm failing more, and H3's completed loads still look faster.
    scenario({
      name: 'H3 fails its own slowest loads, H2 as often at random',
      truth: 'identical arms; H3 fails its own slowest 5%, H2 5% at random',
      rounds: 1000,
      sigmaArm: 0.5,
      ittGains: true,
      fails: ({ mode, own, random }) => (mode === 'h3' ? own() > 1.645 : random() < 0.05)
    }),
    // One location where H3 fails its own slowest loads, another where H2
    // fails at random: pooled, the two locations' failures cancel out.
    scenario({
      name: 'H3 fails its own slowest at one location, H2 at random at another',
      truth: 'identical arms; H3 fails its own slowest 5% at cal-c, H2 5% at random at cal-a',
      rounds: 1000,
      sigmaArm: 0.5,
      ittGains: true,
      fails: ({ mode, own, location, random }) => (mode === 'h3' ? location === 'cal-c' && own() > 1.645 : location === 'cal-a' && random() < 0.05)
    }),
    // Fast and slow locations; H3 fails often at the slow one. Pooled
    // samples would be mostly fast for H3 (Simpson's paradox).
    scenario({
      name: 'regional mix, unequal failure',
      truth: 'identical at every location; H3 fails more at cal-c',
      rounds: 600,
      fails: ({ mode, location, random }) => mode === 'h3' && location === 'cal-c' && random() < 0.6
    }),
    // Five requests a round sharing one connection: strongly clustered.
    scenario({ name: 'A/A parallel probe, 5 requests a round', truth: 'identical arms', rounds: 400, probe: 'parallel', samplesPerRound: 5, sigmaPath: 0.4, sigmaArm: 0.1 }),
    // The level moves by half in mid-window while H3 fails more in the
    // fast half: unpaired numbers from different rows disagree.
    scenario({
      name: 'level shift inside the window, unequal failure',
      truth: 'identical arms',
      rounds: 1000,
      level: (i, n) => (i < n / 2 ? 1 : 1.5),
      fails: ({ mode, i, n, random }) => mode === 'h3' && i < n / 2 && random() < 0.3
    }),
    ...[0.05, 0.1, 0.2].map((g) => scenario({ name: `H3 ${g * 100}% faster, n=500`, truth: `H3 ${g * 100}% faster everywhere`, rounds: 500, gain: g })),
    // A gain stands when failures could not account for it: 2% of each
    // arm's loads failing at random costs little power.
    scenario({
      name: 'H3 10% faster, each arm failing 2% at random, n=500',
      truth: 'H3 10% faster everywhere',
      rounds: 500,
      gain: 0.1,
      fails: ({ random }) => random() < 0.02
    }),
    // Tied timings: whole milliseconds at fast locations, where a 1 ms step
    // passes the practical minimum, and 10 ms steps. Above 2,000 rounds the
    // subsample's scaled interval alone would claim one step of difference.
    ...(quick ? [1000, 5000] : [1000, 5000, 10000]).map((n) => scenario({
      name: `A/A tied to 1 ms, fast, n=${n}`, truth: 'identical arms', rounds: n, locations: FAST_CALIBRATION_LOCATIONS, sigmaPath: 0.03, sigmaArm: 0.03, step: 1
    })),
    ...(quick ? [] : [scenario({ name: 'A/A tied to 10 ms, n=5000', truth: 'identical arms', rounds: 5000, sigmaPath: 0.02, sigmaArm: 0.02, step: 10 })]),
    // A cache hit or miss (three times as long) in each load, a miss in 10%:
    // p90 sits in the gap between them, where the subsample's spread hardly
    // shrinks with more rounds; then the same in whole milliseconds at fast
    // locations, each location's p90 tied and in the gap, and their mean in
    // the all-locations column neither.
    ...(quick ? [] : [
      scenario({ name: 'A/A, a cache miss (×3) in 10% of loads, n=5000', truth: 'identical arms', rounds: 5000, sigmaPath: 0.1, sigmaArm: 0.1, miss: { share: 0.1, factor: 3 } }),
      scenario({
        name: 'A/A tied to 1 ms, fast, a cache miss (×3) in 10% of loads, n=5000',
        truth: 'identical arms',
        rounds: 5000,
        locations: FAST_CALIBRATION_LOCATIONS,
        sigmaPath: 0.05,
        sigmaArm: 0.05,
        step: 1,
        miss: { share: 0.1, factor: 3 }
      })
    ]),
    scenario({ name: 'H3 10% faster, tied to 1 ms, fast, n=500', truth: 'H3 10% faster everywhere', rounds: 500, gain: 0.1, locations: FAST_CALIBRATION_LOCATIONS, sigmaPath: 0.03, sigmaArm: 0.03, step: 1 }),
    // Above 2,000 rounds a location's interval comes from an evenly spaced
    // subsample, scaled to all rounds (m-out-of-n): it must stay calibrated
    // when the level moves inside the window, and gain the power of all rounds.
    ...(quick ? [] : [
      scenario({
        name: 'level shift inside the window, unequal failure, n=5000',
        truth: 'identical arms',
        rounds: 5000,
        level: (i, n) => (i < n / 2 ? 1 : 1.5),
        fails: ({ mode, i, n, random }) => mode === 'h3' && i < n / 2 && random() < 0.3
      }),
      scenario({ name: 'H3 3% faster, n=10000', truth: 'H3 3% faster everywhere', rounds: 10000, gain: 0.03 })
    ])
  ]
}

/**
 * @typedef {Record<'h2' | 'h3' | 'auto', number>} ArmScales
 * @typedef {Record<'first' | 'returning', number>} ViewShares
 * @typedef {object} AutoScenario
 * @property {string} name
 * @property {string} truth what a correct answer says
 * @property {string[]} locations
 * @property {number} rounds per location
 * @property {ArmScales} scale each arm's factor on the shared distribution
 * @property {number | null} receivedGain the true (H2 − auto) / (H2 − H3) at every percentile; null when H3 = H2
 * @property {ViewShares} share the true share of each auto visit that comes over H3
 * @property {ViewShares} byteShare the true share of each auto visit's bytes over H3 (byte-weighted, as the API's)
 * @property {(seed: number | string, startMs: number, stepMs: number) => Generator<ImportRow & { view?: string, bytes?: number, h3_byte_share?: number }>} rows
 */

// An auto visit's bytes and the share of them over H3: a visit whose page
// came over H3 fetches 80–100% of its bytes over it, one over H2 0–10%
// (a third-party host that speaks H3), and H2 visits are half again as
// large, so the share of bytes (ΣY / ΣX) differs from the mean share of a
// visit and the weighting is tested.
const BYTES = { median: 400e3, sigma: 0.5, h2Factor: 1.5 }
const WITHIN = { h3: [0.8, 1], h2: [0, 0.1] }
const mid = (/** @type {number[]} */ [a, b]) => (a + b) / 2

/**
 * The browser dimension's scenarios (docs/BROWSERS.md): a monitor whose
 * rounds run in Chromium and in Firefox at the same times, each browser's
 * rounds drawn from a scenario of its own. Each browser's comparison must
 * read only its own rounds: identical arms in a browser flag at most 5% of
 * its cells whatever the other browser's arms do.
 * @returns {{ name: string, truth: string, rounds: number, browsers: Record<string, Scenario> }[]}
 */
export function browserCalibrationScenarios () {
  return [
    {
      name: 'browsers: A/A in both, wide, n=400',
      truth: 'identical arms in both browsers',
      rounds: 400,
      browsers: {
        chromium: scenario({ name: 'chromium A/A', truth: 'identical arms', rounds: 400, sigmaPath: 0.5, sigmaArm: 0.8 }),
        firefox: scenario({ name: 'firefox A/A', truth: 'identical arms', rounds: 400, sigmaPath: 0.5, sigmaArm: 0.8 })
      }
    },
    {
      name: 'browsers: H3 10% faster in Chromium only, n=500',
      truth: 'H3 10% faster in Chromium, identical arms in Firefox',
      rounds: 500,
      browsers: {
        chromium: scenario({ name: 'chromium gain', truth: 'H3 10% faster', rounds: 500, gain: 0.1 }),
        firefox: scenario({ name: 'firefox A/A', truth: 'identical arms', rounds: 500 })
      }
    },
    // The same gain in both browsers at moderate power: one interval reaches
    // 0 where the other does not at many locations, which alone must not
    // read "the browsers disagree".
    {
      name: 'browsers: the same 8% H3 gain in both, n=300',
      truth: 'H3 8% faster in both browsers',
      rounds: 300,
      browsers: {
        chromium: scenario({ name: 'chromium gain 8', truth: 'H3 8% faster', rounds: 300, gain: 0.08 }),
        firefox: scenario({ name: 'firefox gain 8', truth: 'H3 8% faster', rounds: 300, gain: 0.08 })
      }
    },
    // The same relative gain in a browser that loads half as slow again:
    // more ms of gain there, the same share of its load.
    {
      name: 'browsers: the same 10% H3 gain in both, Firefox 1.5x slower, n=500',
      truth: 'H3 10% faster in both browsers; Firefox loads take 1.5 times as long',
      rounds: 500,
      browsers: {
        chromium: scenario({ name: 'chromium gain 10', truth: 'H3 10% faster', rounds: 500, gain: 0.1 }),
        firefox: scenario({ name: 'firefox gain 10 slower', truth: 'H3 10% faster, 1.5x slower loads', rounds: 500, gain: 0.1, level: () => 1.5 })
      }
    }
  ]
}

/**
 * A journey's steps (docs/STATISTICS.md): ten named steps, each its own
 * scenario (probe journey:s<k>), identical arms in all, or one step 20%
 * faster over H3 among nine identical ones.
 * @returns {{ name: string, rounds: number, steps: Scenario[] }[]}
 */
export function journeyCalibrationScenarios () {
  const steps = (/** @type {number} */ rounds, /** @type {number} */ gaining) => Array.from({ length: 10 }, (_, k) => scenario({
    name: `step ${k}`, truth: k === gaining ? 'H3 20% faster' : 'identical arms', rounds, probe: `journey:s${k}`, gain: k === gaining ? 0.2 : 0, sigmaPath: 0.3, sigmaArm: 0.4
  }))
  return [
    { name: 'journey: ten identical steps, n=100', rounds: 100, steps: steps(100, -1) },
    { name: 'journey: one step of ten 20% faster, n=300', rounds: 300, steps: steps(300, 3) }
  ]
}

/**
 * The true byte share of visits that come over H3 with probability p.
 * @param {number} p
 */
export function trueByteShare (p) {
  return (p * mid(WITHIN.h3) + (1 - p) * BYTES.h2Factor * mid(WITHIN.h2)) / (p + (1 - p) * BYTES.h2Factor)
}

/**
 * Rounds of a monitor that runs the auto arm: per round the forced arms'
 * first view and the auto arm's first and returning visits, each drawn as in
 * scenario() — the round's path factor shared by all four, each its own
 * noise — times its arm's scale. Every arm is a scale of one distribution,
 * so each percentile of an arm is its scale times that of h2, and the
 * received gain (h2 − auto) / (h2 − h3) is the same known number at every
 * percentile. The auto visits come over H3 with the view's share
 * (observed_protocol), with bytes and h3_byte_share as BYTES and WITHIN say.
 * `fails`: whether a load fails, from its own noise (own()) or at random,
 * as in scenario(): a forced arm's, or an auto visit's (mode auto, with its
 * view); `drops`: the same for a load that leaves no row at all.
 * @param {{ name: string, truth: string, rounds: number, sigmaPath?: number, sigmaArm?: number, scale?: Partial<ArmScales>,
 *   share?: ViewShares, locations?: typeof CALIBRATION_LOCATIONS,
 *   fails?: (o: { mode: 'h2' | 'h3' | 'auto', view?: string, own: () => number, random: () => number }) => boolean,
 *   drops?: (o: { mode: 'h2' | 'h3' | 'auto', view?: string, own: () => number, random: () => number }) => boolean }} s
 * @returns {AutoScenario}
 */
export function autoScenario ({
  name, truth, rounds, sigmaPath = 0.2, sigmaArm = 0.3, scale: given = {}, share = { first: 0.05, returning: 0.8 },
  locations = CALIBRATION_LOCATIONS, fails, drops
}) {
  const scale = { h2: 1, h3: 1, auto: 1, ...given }
  return {
    name,
    truth,
    locations: locations.map((l) => l.id),
    rounds,
    scale,
    receivedGain: scale.h2 === scale.h3 ? null : (scale.h2 - scale.auto) / (scale.h2 - scale.h3),
    share,
    byteShare: { first: trueByteShare(share.first), returning: trueByteShare(share.returning) },
    * rows (seed, startMs, stepMs) {
      const random = createRandom(`${name}|${seed}`)
      const uniform = (/** @type {number[]} */ [a, b]) => a + (b - a) * random()
      for (const loc of locations) {
        for (let i = 0; i < rounds; i++) {
          const time = new Date(startMs + i * stepMs).toISOString()
          const path = Math.exp(sigmaPath * randomNormal(random))
          for (const mode of /** @type {const} */ (['h2', 'h3'])) {
            // The arm's own noise, drawn before the failure is decided when
            // the failure depends on it (own()), else with the value.
            /** @type {number | null} */
            let ownZ = null
            const own = () => (ownZ ??= randomNormal(random))
            if (drops?.({ mode, own, random })) continue
            if (fails?.({ mode, own, random })) {
              yield { time, location_id: loc.id, mode, probe: 'page', status: 'error', observed_protocol: null, error: 'net::ERR_TIMED_OUT', ttfb_ms: null }
              continue
            }
            const z = ownZ ?? randomNormal(random)
            yield { time, location_id: loc.id, mode, probe: 'page', status: 'ok', observed_protocol: mode, ttfb_ms: round1(loc.base * path * scale[mode] * Math.exp(sigmaArm * z)) }
          }
          for (const view of /** @type {const} */ (['first', 'returning'])) {
            const h3 = random() < share[view]
            const bytes = Math.round(BYTES.median * (h3 ? 1 : BYTES.h2Factor) * Math.exp(BYTES.sigma * randomNormal(random)))
            /** @type {number | null} */
            let ownZ = null
            const own = () => (ownZ ??= randomNormal(random))
            if (drops?.({ mode: 'auto', view, own, random })) continue
            if (fails?.({ mode: 'auto', view, own, random })) {
              yield { time, location_id: loc.id, mode: 'auto', view, probe: 'page', status: 'error', observed_protocol: null, error: 'net::ERR_TIMED_OUT', ttfb_ms: null }
              continue
            }
            const z = ownZ ?? randomNormal(random)
            yield {
              time, location_id: loc.id, mode: 'auto', view, probe: 'page', status: 'ok', observed_protocol: h3 ? 'h3' : 'h2',
              ttfb_ms: round1(loc.base * path * scale.auto * Math.exp(sigmaArm * z)), bytes, h3_byte_share: uniform(h3 ? WITHIN.h3 : WITHIN.h2)
            }
          }
        }
      }
    }
  }
}

/** Three more locations, for the auto arm's view of six: 36 columns of cells to correct. */
export const MORE_CALIBRATION_LOCATIONS = [
  { id: 'cal-d', name: 'Calibration D', base: 40 },
  { id: 'cal-e', name: 'Calibration E', base: 120 },
  { id: 'cal-f', name: 'Calibration F', base: 240 }
]
const SIX_LOCATIONS = [...CALIBRATION_LOCATIONS, ...MORE_CALIBRATION_LOCATIONS]

/** The auto arm's calibration (docs/BENCHMARKS.md, "The auto arm"): three arms, the received gain's coverage, the power of auto − H2. */
export function autoCalibrationScenarios ({ quick = false } = {}) {
  const gainSizes = quick ? [100, 500] : [100, 500, 2000]
  return [
    // Identical arms: any flagged cell of any contrast is false.
    ...(quick ? [200] : [200, 1000]).map((n) => autoScenario({ name: `auto: A/A three arms, wide, n=${n}`, truth: 'identical arms', rounds: n, sigmaPath: 0.5, sigmaArm: 0.8 })),
    ...(quick ? [] : [autoScenario({ name: 'auto: A/A three arms, tight, n=1000', truth: 'identical arms', rounds: 1000, sigmaPath: 0.05, sigmaArm: 0.05 })]),
    // H3 20% faster, auto 10% faster: users receive half the gain. At 500
    // rounds this is also the power of auto − H2 for a 10% gain.
    ...gainSizes.map((n) => autoScenario({ name: `auto: received gain 0.5, n=${n}`, truth: 'H3 20% faster, auto 10% faster', rounds: n, scale: { h3: 0.8, auto: 0.9 } })),
    autoScenario({ name: 'auto: received gain 0, n=500', truth: 'H3 20% faster, auto as H2', rounds: 500, scale: { h3: 0.8, auto: 1 }, share: { first: 0, returning: 0 } }),
    autoScenario({ name: 'auto: received gain 1, n=500', truth: 'H3 20% faster, auto as H3', rounds: 500, scale: { h3: 0.8, auto: 0.8 }, share: { first: 0.3, returning: 0.97 } }),
    // A small forced gain, a verdict in a minority of the cells: the share is
    // shown where that gain came out large (the winner's curse), which 95%
    // intervals did not allow for (they covered 88–92% there).
    autoScenario({ name: 'auto: received gain 1, H3 7% faster, n=300', truth: 'H3 7% faster, auto as H3', rounds: 300, scale: { h3: 0.93, auto: 0.93 }, share: { first: 0.3, returning: 0.97 } }),
    // Identical arms, forced H3 failing its own slowest 5%: among the rounds
    // where all three loaded it looks faster than both others, which must
    // be no contrast and no gain to receive.
    autoScenario({
      name: 'auto: A/A, forced H3 failing its own slowest 5%, n=600', truth: 'identical arms', rounds: 600, sigmaArm: 0.5,
      fails: ({ mode, own }) => mode === 'h3' && own() > 1.645
    }),
    // A true gain, and a forced arm failing its own slowest 3%: forced H3
    // looks faster than it is (the gain larger, the share of it smaller),
    // forced H2 faster than it is (users on H2 slower than it). Without the
    // forced arms' worst cases the share's intervals covered 84–87% here.
    autoScenario({
      name: 'auto: received gain 1, forced H3 failing its own slowest 3%, n=500', truth: 'H3 20% faster, auto as H3', rounds: 500, scale: { h3: 0.8, auto: 0.8 },
      share: { first: 0.3, returning: 0.97 }, fails: ({ mode, own }) => mode === 'h3' && own() > 1.8808
    }),
    autoScenario({
      name: 'auto: received gain 0, forced H2 failing its own slowest 3%, n=500', truth: 'H3 20% faster, auto as H2', rounds: 500, scale: { h3: 0.8, auto: 1 },
      share: { first: 0, returning: 0 }, fails: ({ mode, own }) => mode === 'h2' && own() > 1.8808
    }),
    // Six locations: 36 columns, where a Bonferroni screen over the columns
    // could pass none (the bootstrap p-value's floor × 36 > 0.05).
    ...(quick ? [] : [
      autoScenario({ name: 'auto: A/A three arms, wide, n=500, 6 locations', truth: 'identical arms', rounds: 500, sigmaPath: 0.5, sigmaArm: 0.8, locations: SIX_LOCATIONS }),
      autoScenario({ name: 'auto: received gain 0.5, n=500, 6 locations', truth: 'H3 20% faster, auto 10% faster', rounds: 500, scale: { h3: 0.8, auto: 0.9 }, locations: SIX_LOCATIONS })
    ])
  ]
}
