// Visual metrics from a run's frames, and how frames are thinned and capped
// for storage. The metrics are Speed Index and its companions as Lighthouse
// computes them: speedline-core reads the frames' colour histograms (white
// pixels left out) and gives each frame a visual progress, 0 to 100 % of
// the way from the first (blank) frame to the last.
import speedline from 'speedline-core'

/** Frames are kept at most one per this many ms (the view's step). */
export const FRAME_STEP_MS = 100
/** Frames are about this wide (the screencast's maxWidth). */
export const FRAME_WIDTH = 400
/** A run's stored frames never add up to more than this (JPEG bytes). */
export const FILMSTRIP_MAX_BYTES = 1024 * 1024
/** ...nor to more frames than this (30 s at one per 100 ms). */
export const FILMSTRIP_MAX_FRAMES = 300

/** The visual metrics' results columns, in catalogue order. */
export const VISUAL_COLUMNS = Object.freeze(['first_visual_change_ms', 'speed_index_ms', 'visually_complete_85_ms', 'visually_complete_ms', 'last_visual_change_ms'])

/** Any positive trace clock origin: speedline skips events at ts 0. */
const ORIGIN_US = 1_000_000

/**
 * @typedef {{ t_ms: number, jpeg: Buffer }} Frame
 * t_ms: when the frame was painted, ms since the navigation's start
 * @typedef {{ t_ms: number, progress: number }} ProgressPoint
 */

/**
 * The visual metrics of a load from its frames (any order; those before
 * the navigation's start are left out), and the
 * visual progress at each distinct frame. `endMs`: when capture stopped.
 * Null when there is no frame after the start.
 * @param {Frame[]} frames
 * @param {{ endMs?: number }} [opts]
 * @returns {Promise<{ metrics: Record<string, number>, progress: ProgressPoint[] } | null>}
 */
export async function visualMetrics (frames, { endMs } = {}) {
  // Frames from before the start show the blank page the navigation left
  // (or, at times, a surface not painted yet): speedline begins with a white
  // frame of its own.
  const sorted = frames.filter((f) => f.t_ms >= 0).sort((a, b) => a.t_ms - b.t_ms)
  if (!sorted.length) return null
  const last = sorted[sorted.length - 1].t_ms
  const events = [
    { name: 'start', cat: 'h3lens', ts: ORIGIN_US, ph: 'I' },
    ...sorted.map((f) => ({
      name: 'Screenshot', cat: 'disabled-by-default-devtools.screenshot', ph: 'O',
      ts: ORIGIN_US + Math.max(0, f.t_ms) * 1000, args: { snapshot: f.jpeg.toString('base64') }
    })),
    { name: 'end', cat: 'h3lens', ts: ORIGIN_US + Math.max(endMs ?? last, last, 1) * 1000, ph: 'I' }
  ]
  const out = await speedline(/** @type {any} */ (events), { timeOrigin: ORIGIN_US, include: 'speedIndex' })
  const progress = out.frames.map((f) => ({ t_ms: round(f.getTimeStamp() - ORIGIN_US / 1000), progress: f.getProgress() }))
  const changes = progress.filter((p, i) => i > 0 && p.progress !== progress[i - 1].progress)
  if (!changes.length) return { metrics: {}, progress }
  const reach = (/** @type {number} */ pct) => progress.find((p) => p.progress >= pct)?.t_ms ?? null
  /** @type {Record<string, number>} */
  const metrics = {
    first_visual_change_ms: changes[0].t_ms,
    speed_index_ms: round(out.speedIndex),
    visually_complete_85_ms: /** @type {number} */ (reach(85)),
    visually_complete_ms: /** @type {number} */ (reach(100)),
    last_visual_change_ms: changes[changes.length - 1].t_ms
  }
  return { metrics, progress }
}

/**
 * The metrics of a page that paints `steps` (each a share of the visual
 * progress at a time), by hand: Speed Index is the area above the progress
 * curve, ∫ (1 − progress) dt.
 * @param {readonly { at_ms: number, share: number }[]} steps in time order
 */
export function handPaintedMetrics (steps) {
  let done = 0
  let before = 0
  let speedIndex = 0
  let vc85 = null
  for (const s of steps) {
    speedIndex += (s.at_ms - before) * (1 - done)
    done += s.share
    before = s.at_ms
    if (vc85 === null && done >= 0.85 - 1e-9) vc85 = s.at_ms
  }
  return {
    first_visual_change_ms: steps[0].at_ms,
    speed_index_ms: speedIndex,
    visually_complete_85_ms: vc85,
    visually_complete_ms: steps[steps.length - 1].at_ms,
    last_visual_change_ms: steps[steps.length - 1].at_ms
  }
}

/**
 * The frames a run keeps: at most one per `stepMs` (the last of each step,
 * which is what the page showed at its end), the step doubled until they
 * fit in `maxBytes` and `maxFrames`; the last frame is always kept.
 * @param {Frame[]} frames in time order
 * @param {{ stepMs?: number, maxBytes?: number, maxFrames?: number }} [limits]
 * @returns {{ frames: Frame[], step_ms: number, dropped: number }}
 */
export function thinFrames (frames, { stepMs = FRAME_STEP_MS, maxBytes = FILMSTRIP_MAX_BYTES, maxFrames = FILMSTRIP_MAX_FRAMES } = {}) {
  if (!frames.length) return { frames: [], step_ms: stepMs, dropped: 0 }
  for (let step = stepMs; ; step *= 2) {
    /** @type {Map<number, Frame>} */
    const byStep = new Map()
    for (const f of frames) byStep.set(Math.floor(Math.max(0, f.t_ms) / step), f)
    const kept = [...byStep.values()]
    const bytes = kept.reduce((sum, f) => sum + f.jpeg.length, 0)
    if ((bytes <= maxBytes && kept.length <= maxFrames) || kept.length === 1) {
      if (bytes > maxBytes) return { frames: [], step_ms: step, dropped: frames.length }
      return { frames: kept, step_ms: step, dropped: frames.length - kept.length }
    }
  }
}

/** @param {number} v */
function round (v) {
  return Math.round(v * 10) / 10
}
