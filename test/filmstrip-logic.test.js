// The pure parts of filmstrips (docs/FILMSTRIPS.md): thinning frames to the
// per-run cap, the frame checks the API applies, and which round "Side by
// side" shows.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { thinFrames, FILMSTRIP_MAX_BYTES, FILMSTRIP_MAX_FRAMES } from '../lib/measurement/visual.js'
import { checkFrames } from '../lib/store/filmstrips.js'
import { pickRound, whyThisRound } from '../lib/analysis/side-by-side.js'

/** A fake JPEG of `n` bytes (the checks read only its first three). */
const jpeg = (/** @type {number} */ n) => Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), Buffer.alloc(Math.max(0, n - 3))])

test('frames are thinned to one per 100 ms, the last of each step, and the last frame is always kept', () => {
  const frames = [0, 16, 33, 120, 180, 190, 410].map((t) => ({ t_ms: t, jpeg: jpeg(100) }))
  const { frames: kept, step_ms: step, dropped } = thinFrames(frames)
  assert.equal(step, 100)
  assert.deepEqual(kept.map((f) => f.t_ms), [33, 190, 410])
  assert.equal(dropped, 4)
})

test('a run over the byte cap or the frame cap keeps fewer frames, doubling the step until they fit', () => {
  const big = Array.from({ length: 40 }, (_, i) => ({ t_ms: i * 100, jpeg: jpeg(60 * 1024) }))
  const byBytes = thinFrames(big)
  assert.ok(byBytes.frames.reduce((s, f) => s + f.jpeg.length, 0) <= FILMSTRIP_MAX_BYTES)
  // 40 × 60 KB: 20 frames (200 ms) are still 1.2 MB, 10 (400 ms) fit.
  assert.equal(byBytes.step_ms, 400)
  assert.equal(byBytes.frames.at(-1)?.t_ms, 3900)
  const many = Array.from({ length: FILMSTRIP_MAX_FRAMES + 50 }, (_, i) => ({ t_ms: i * 100, jpeg: jpeg(10) }))
  assert.ok(thinFrames(many).frames.length <= FILMSTRIP_MAX_FRAMES)
  // One frame larger than the cap: nothing is kept.
  assert.deepEqual(thinFrames([{ t_ms: 0, jpeg: jpeg(FILMSTRIP_MAX_BYTES + 1) }]).frames, [])
})

test('the API refuses frames that are not JPEG, too close together, out of order or over the cap, naming the field', () => {
  const refused = (/** @type {any[]} */ frames, /** @type {string} */ field) => assert.throws(() => checkFrames(frames), (/** @type {any} */ e) => e.field === field, field)
  refused([], 'frames')
  refused([{ t_ms: 0, jpeg: Buffer.from('GIF89a') }], 'frames[0].jpeg')
  refused([{ t_ms: 0, jpeg: jpeg(10) }, { t_ms: 20, jpeg: jpeg(10) }], 'frames[1].t_ms')
  refused([{ t_ms: 300, jpeg: jpeg(10) }, { t_ms: 100, jpeg: jpeg(10) }], 'frames[1].t_ms')
  refused([{ t_ms: 0, jpeg: jpeg(FILMSTRIP_MAX_BYTES) }, { t_ms: 100, jpeg: jpeg(10) }], 'frames')
  assert.equal(checkFrames([{ t_ms: 0, jpeg: jpeg(10) }, { t_ms: 100, jpeg: jpeg(20) }]), 30)
})

test('side by side shows the round whose H2 − H3 is nearest the percentile\'s Δ, preferring rounds with frames, and says why', () => {
  // 90 rounds with H2 100..189 and H3 10 ms faster; a tail of 10 slow rounds (H2 390..399) where H3 is 40 ms faster.
  const rounds = Array.from({ length: 100 }, (_, i) => {
    const h2 = i >= 90 ? 300 + i : 100 + i
    return { job_id: i + 1, time: new Date(i * 60e3), h2, h3: i >= 90 ? h2 - 40 : h2 - 10, framed: false }
  })
  const bare = pickRound(rounds, 95)
  assert.ok(bare)
  // p95: H2 394.05, H3 354.05, so Δ = 40; of the ten rounds with that gap, the one nearest both percentiles.
  assert.equal(Math.round(bare.percentile_delta_ms * 100) / 100, 40)
  assert.equal(bare.delta_ms, 40)
  assert.equal(bare.round.job_id, 95)
  assert.match(whyThisRound(bare, { percentile: 95, metric: 'Load' }), /no round in the window has frames in both arms/)

  rounds[20].framed = true // Δ 10
  rounds[92].framed = true // Δ 40
  const framed = pickRound(rounds, 95)
  assert.equal(framed?.round.job_id, 93)
  assert.equal(framed?.nearest_unframed, null)
  rounds[92].framed = false
  const fallback = pickRound(rounds, 95)
  assert.equal(fallback?.round.job_id, 21)
  assert.match(whyThisRound(/** @type {any} */ (fallback), { percentile: 95, metric: 'Load' }), /among the 1 rounds with frames in both arms; the nearest of all rounds \(Δ 40 ms\) has no frames/)
  assert.equal(pickRound([], 95), null)
})
