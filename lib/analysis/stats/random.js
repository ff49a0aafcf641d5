// Seeded pseudo-random numbers, so every bootstrap interval (and every test
// that draws data) is reproducible from its seed.
//
// mulberry32: 32 bits of state, one multiply-xorshift round per draw. It is
// not cryptographic and its period is 2^32, which is plenty here: one
// bootstrap of 1,000 iterations over 2 × 5,000 samples draws 10^7 numbers.

// Used when the caller gives no seed: the output is still deterministic.
const DEFAULT_SEED = 0x68336c65 // 'h3le'

/**
 * @typedef {() => number} RandomSource uniform float in [0, 1)
 */

export class SeededRandom {
  /** @param {number | string} [seed] an integer, or any string (hashed with FNV-1a) */
  constructor (seed = DEFAULT_SEED) {
    this.state = seedToUint32(seed) | 0
  }

  /** @returns {number} uniform float in [0, 1) */
  next () {
    this.state = (this.state + 0x6d2b79f5) | 0
    return mix(this.state) / 4294967296
  }

  /**
   * counts.length uniform draws of an index in [0, counts.length), adding 1
   * to counts[index] for each: one bootstrap resample. The same numbers as
   * calling next() that many times, but with the state in a local: a
   * 1,000-iteration bootstrap of 2 × 5,000 samples takes 58 ms this way
   * and 95 ms through next().
   *
   * @param {Uint32Array} counts
   */
  tallyDraws (counts) {
    const n = counts.length
    let state = this.state
    for (let i = 0; i < n; i++) {
      state = (state + 0x6d2b79f5) | 0
      counts[Math.floor(mix(state) / 4294967296 * n)]++
    }
    this.state = state
  }
}

/**
 * @param {number | string} [seed] an integer, or any string (hashed with FNV-1a)
 * @returns {RandomSource}
 */
export function createRandom (seed) {
  const random = new SeededRandom(seed)
  return () => random.next()
}

/**
 * mulberry32 output function.
 * @param {number} state
 */
function mix (state) {
  let t = Math.imul(state ^ (state >>> 15), state | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return (t ^ (t >>> 14)) >>> 0
}

/**
 * Standard normal draw (Box–Muller), for generating test and benchmark data.
 * @param {RandomSource} random
 */
export function randomNormal (random) {
  // 1 - u keeps the argument of log in (0, 1].
  const u = 1 - random()
  const v = random()
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v)
}

/** @param {number | string} seed */
function seedToUint32 (seed) {
  if (typeof seed === 'string') return fnv1a(seed)
  if (!Number.isFinite(seed)) throw new TypeError(`seed must be a finite number or a string, got ${seed}`)
  return Math.trunc(seed) >>> 0
}

/** @param {string} text */
function fnv1a (text) {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}
