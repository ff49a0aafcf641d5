// Mergeable quantile sketches for rollups: DDSketch with 1% relative accuracy,
// so any percentile of any window is a merge of per-bucket sketches.
//
// Values are durations in milliseconds. Only the DDSketch class from
// @datadog/sketches-js 2.1.1 is used; three of its parts are replaced here:
// - toProto()/fromProto() need protobufjs, which is only a devDependency of
//   the package, so they throw "Cannot find module 'protobufjs/minimal'" in an
//   installed tree; fromProto also drops min, max and sum. encodeSketch and
//   decodeSketch below use a small versioned format instead.
// - merge() never merges the negative store, and its DenseStore.merge extends
//   the key range with `secondKey || key`, so a source whose highest key is 0
//   (largest value in (0.98, 1] ms) leaves maxKey short; the next merge of
//   that sketch then skips its top bins. mergeSketches adds bin by bin through
//   store.add(), which extends the range correctly.
// - accept(NaN) silently counts a zero. addToSketch rejects it.

import { DDSketch } from '@datadog/sketches-js'
import { ByteReader, ByteWriter } from './bytes.js'
import { assertQuantile } from './quantile.js'

export const SKETCH_RELATIVE_ACCURACY = 0.01

const ENCODING_VERSION = 1

/** @typedef {DDSketch} Sketch */

/** @returns {Sketch} */
export function newSketch () {
  return new DDSketch({ relativeAccuracy: SKETCH_RELATIVE_ACCURACY })
}

/**
 * Negative values are rejected, not clamped to 0: a negative duration means a
 * broken measurement (for example a timing subtracted from a missing mark),
 * and clamping would record it as an impossibly fast load.
 *
 * @param {Sketch} sketch
 * @param {number} value milliseconds, finite and ≥ 0
 */
export function addToSketch (sketch, value) {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new RangeError(`sketch value must be a finite number of milliseconds, got ${value}`)
  }
  if (value < 0) {
    throw new RangeError(`sketch value must not be negative (a duration), got ${value} ms`)
  }
  sketch.accept(value)
}

/**
 * The value at rank q × (count − 1), rounded down to an order statistic (the
 * sketch keeps no values to interpolate between), within 1% of that value.
 * The result is clamped to the exact [min, max] the sketch tracks, which can
 * only reduce the error: p0 and p100 are exact, and so is every quantile of a
 * single repeated value.
 *
 * @param {Sketch} sketch
 * @param {number} q in [0, 1]
 * @returns {number | null} null when the sketch is empty
 */
export function sketchQuantile (sketch, q) {
  assertQuantile(q)
  if (sketch.count === 0) return null
  const value = sketch.getValueAtQuantile(q)
  return Math.min(sketch.max, Math.max(sketch.min, value))
}

/** @param {Sketch} sketch */
export function sketchCount (sketch) {
  return sketch.count
}

/**
 * @param {Sketch} sketch
 * @returns {{ count: number, sum: number, min: number | null, max: number | null }}
 */
export function sketchSummary (sketch) {
  const empty = sketch.count === 0
  return {
    count: sketch.count,
    sum: sketch.sum,
    min: empty ? null : sketch.min,
    max: empty ? null : sketch.max
  }
}

/**
 * Merge any number of sketches, or encoded sketches straight from a bytea
 * column, into a new sketch. The inputs are not modified.
 *
 * @param {Iterable<Sketch | Uint8Array>} sketches
 * @returns {Sketch}
 */
export function mergeSketches (sketches) {
  const merged = newSketch()
  for (const item of sketches) {
    if (item instanceof Uint8Array) addEncoded(merged, item)
    else mergeInto(merged, item)
  }
  return merged
}

/**
 * Encoding, version 1 (all multi-byte numbers little-endian; varints are
 * unsigned LEB128, keys zigzag LEB128):
 *
 *   u8       version = 1
 *   float64  relative accuracy (0.01); decoding rebuilds the same mapping
 *   float64  sum
 *   float64  min  (+Infinity when empty)
 *   float64  max  (-Infinity when empty)
 *   varint   zero count
 *   varint   B = number of non-empty bins
 *   B ×      key (the first as zigzag, then the gap to the previous key,
 *            always ≥ 1), count
 *
 * The count is not stored: it is the zero count plus the bin counts. Only
 * non-empty bins are written because most rollup buckets hold a few dozen
 * samples spread over a couple of hundred possible bins. A 1,000-sample TTFB
 * sketch takes about 0.3 KB (see test/stats-sketch.test.js for the measured
 * size). Decoding restores the same bins, so every quantile is identical.
 *
 * @param {Sketch} sketch
 * @returns {Buffer}
 */
export function encodeSketch (sketch) {
  if (sketch.negativeStore.count > 0) {
    throw new RangeError('cannot encode a sketch holding negative values')
  }
  const out = new ByteWriter()
  out.uint8(ENCODING_VERSION)
  out.float64(sketch.mapping.relativeAccuracy)
  out.float64(sketch.sum)
  out.float64(sketch.min)
  out.float64(sketch.max)
  out.varuint(sketch.zeroCount)

  const bins = nonEmptyBins(sketch)
  out.varuint(bins.length)
  let previousKey = 0
  bins.forEach(([key, count], i) => {
    if (i === 0) out.varint(key)
    else out.varuint(key - previousKey)
    out.varuint(count)
    previousKey = key
  })
  return out.toBuffer()
}

/**
 * @param {Uint8Array} bytes produced by encodeSketch
 * @returns {Sketch}
 */
export function decodeSketch (bytes) {
  return addEncoded(null, bytes)
}

/**
 * The fields of an encoded sketch, without building a sketch.
 * @param {Uint8Array} bytes produced by encodeSketch
 */
export function readEncoded (bytes) {
  const input = new ByteReader(bytes)
  const version = input.uint8()
  if (version !== ENCODING_VERSION) {
    throw new RangeError(`unknown sketch encoding version ${version} (this build reads version ${ENCODING_VERSION})`)
  }
  const relativeAccuracy = input.float64()
  const sum = input.float64()
  const min = input.float64()
  const max = input.float64()
  const zeroCount = input.varuint()
  const binCount = input.varuint()
  const keys = new Array(binCount)
  const counts = new Array(binCount)
  let count = zeroCount
  let key = 0
  for (let i = 0; i < binCount; i++) {
    key = i === 0 ? input.varint() : key + input.varuint()
    keys[i] = key
    counts[i] = input.varuint()
    count += counts[i]
  }
  return { relativeAccuracy, sum, min, max, zeroCount, keys, counts, count }
}

/** One mapping per accuracy: it turns a bin key back into a value. */
const mappings = new Map()

/**
 * Quantiles of an encoded sketch, the same values decodeSketch +
 * sketchQuantile give (rank q × (count − 1), lower key, clamped to
 * [min, max]), without building the sketch: trends read one rollup row per
 * bucket and series, 7,200 of them for 30 days of hours.
 * @param {Uint8Array | ReturnType<typeof readEncoded>} bytes an encoded sketch, or what readEncoded made of one
 * @param {number[]} qs each in [0, 1]
 * @returns {(number | null)[]}
 */
export function encodedQuantiles (bytes, qs) {
  const e = bytes instanceof Uint8Array ? readEncoded(bytes) : bytes
  if (e.count === 0) return qs.map(() => null)
  let mapping = mappings.get(e.relativeAccuracy)
  if (!mapping) mappings.set(e.relativeAccuracy, (mapping = new DDSketch({ relativeAccuracy: e.relativeAccuracy }).mapping))
  return qs.map((q) => {
    assertQuantile(q)
    const rank = q * (e.count - 1)
    if (rank < e.zeroCount) return Math.min(e.max, Math.max(e.min, 0))
    const inStore = rank - e.zeroCount
    let running = 0
    let key = e.keys.at(-1)
    for (let i = 0; i < e.keys.length; i++) {
      running += e.counts[i]
      if (running > inStore) {
        key = e.keys[i]
        break
      }
    }
    return Math.min(e.max, Math.max(e.min, mapping.value(key)))
  })
}

/**
 * Add an encoded sketch's bins to `target` (or to a new sketch when null)
 * without building an intermediate sketch: merging 1,000 rollup rows this way
 * takes ~5 ms instead of ~26 ms on 2 cores (bench/query.js; docs/BENCHMARKS.md,
 * "Regional comparison and trends from rollups").
 * @param {Sketch | null} target
 * @param {Uint8Array} bytes produced by encodeSketch
 * @returns {Sketch}
 */
function addEncoded (target, bytes) {
  const input = new ByteReader(bytes)
  const version = input.uint8()
  if (version !== ENCODING_VERSION) {
    throw new RangeError(`unknown sketch encoding version ${version} (this build reads version ${ENCODING_VERSION})`)
  }
  const relativeAccuracy = input.float64()
  const sketch = target ?? new DDSketch({ relativeAccuracy })
  if (sketch.mapping.relativeAccuracy !== relativeAccuracy) {
    throw new RangeError(`cannot merge a sketch of relative accuracy ${relativeAccuracy} into one of ${sketch.mapping.relativeAccuracy}`)
  }
  const sum = input.float64()
  const min = input.float64()
  const max = input.float64()
  const zeroCount = input.varuint()

  const binCount = input.varuint()
  let key = 0
  let count = zeroCount
  for (let i = 0; i < binCount; i++) {
    key = i === 0 ? input.varint() : key + input.varuint()
    const binTotal = input.varuint()
    sketch.store.add(key, binTotal)
    count += binTotal
  }
  if (!input.done) {
    throw new RangeError(`sketch encoding has ${input.buf.length - input.pos} trailing byte(s)`)
  }
  if (target) {
    Object.assign(sketch, {
      zeroCount: sketch.zeroCount + zeroCount,
      count: sketch.count + count,
      sum: sketch.sum + sum,
      min: Math.min(sketch.min, min),
      max: Math.max(sketch.max, max)
    })
  } else {
    Object.assign(sketch, { zeroCount, count, sum, min, max })
  }
  return sketch
}

/**
 * @param {Sketch} target
 * @param {Sketch} source
 */
function mergeInto (target, source) {
  if (!target.mergeable(source)) {
    throw new RangeError(`cannot merge a sketch of relative accuracy ${source.mapping.relativeAccuracy} into one of ${target.mapping.relativeAccuracy}`)
  }
  if (source.negativeStore.count > 0) {
    throw new RangeError('cannot merge a sketch holding negative values')
  }
  for (const [key, count] of nonEmptyBins(source)) target.store.add(key, count)
  target.zeroCount += source.zeroCount
  target.count += source.count
  target.sum += source.sum
  target.min = Math.min(target.min, source.min)
  target.max = Math.max(target.max, source.max)
}

/**
 * @param {Sketch} sketch
 * @returns {Array<[key: number, count: number]>} ascending by key
 */
function nonEmptyBins (sketch) {
  const { bins, offset } = sketch.store
  /** @type {Array<[number, number]>} */
  const result = []
  for (let i = 0; i < bins.length; i++) {
    if (bins[i] > 0) result.push([i + offset, bins[i]])
  }
  return result
}
