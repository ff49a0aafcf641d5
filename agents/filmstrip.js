// Capturing what a run showed while it loaded: frames through DevTools'
// screencast (Page.startScreencast), JPEG about 400 px wide. The screencast
// was chosen over the trace's screenshots by bench/filmstrip-capture.js
// (docs/BENCHMARKS.md): it sends a frame only when the page's pixels
// changed, already scaled and encoded by the browser, where the trace's
// screenshot category sends every composited frame at full size.
//
// Capture starts on the blank page before the navigation, so the first
// frame is what a person saw before anything arrived; it stops when the page
// has loaded and then shown no change for QUIET_MS (at most SETTLE_MAX_MS
// after load, and never past the round's deadline). The visual metrics are
// computed here, from every frame received; the frames kept are thinned to
// one per 100 ms and capped (lib/measurement/visual.js).
import { FRAME_WIDTH, thinFrames, visualMetrics } from '../lib/measurement/visual.js'

/** After load, capture stops once no frame came for this long... */
export const QUIET_MS = 1000
/** ...or this long after load at the latest (an animation never goes quiet). */
export const SETTLE_MAX_MS = 5000

/**
 * @typedef {{ t_ms: number, jpeg: Buffer }} Frame
 * @typedef {{ frames: Frame[], step_ms: number, dropped: number, captured: number, method: string,
 *   progress: import('../lib/measurement/visual.js').ProgressPoint[] }} Filmstrip
 */

/**
 * Start capturing `page`. `finish` waits for the page to settle, stops, and
 * returns the visual metrics (result columns) and the filmstrip; `stop`
 * discards (a failed load).
 * @param {import('puppeteer-core').Page} page
 * @param {{ quietMs?: number, settleMaxMs?: number }} [opts]
 */
export async function startFilmstrip (page, { quietMs = QUIET_MS, settleMaxMs = SETTLE_MAX_MS } = {}) {
  const cdp = await page.createCDPSession()
  /** @type {{ wallMs: number, data: string }[]} */
  const received = []
  let lastAt = performance.now()
  cdp.on('Page.screencastFrame', ({ data, metadata, sessionId }) => {
    received.push({ wallMs: (metadata.timestamp ?? Date.now() / 1000) * 1000, data })
    lastAt = performance.now()
    cdp.send('Page.screencastFrameAck', { sessionId }).catch(() => {})
  })
  await cdp.send('Page.startScreencast', { format: 'jpeg', quality: 60, maxWidth: FRAME_WIDTH, maxHeight: FRAME_WIDTH * 2, everyNthFrame: 1 })
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    await cdp.send('Page.stopScreencast').catch(() => {})
    await cdp.detach().catch(() => {})
  }
  return {
    stop,
    /**
     * @param {{ deadline?: number | null }} [o] deadline: Date.now() scale
     * @returns {Promise<{ metrics: Record<string, number>, filmstrip: Filmstrip }>}
     */
    async finish ({ deadline = null } = {}) {
      const loadedAt = performance.now()
      const until = Math.min(loadedAt + settleMaxMs, deadline === null ? Infinity : performance.now() + (deadline - Date.now()))
      while (performance.now() < until && performance.now() - lastAt < quietMs) {
        await new Promise((resolve) => setTimeout(resolve, Math.min(100, quietMs)))
      }
      const timeOrigin = await page.evaluate(() => performance.timeOrigin)
      const endMs = Date.now() - timeOrigin
      await stop()
      const frames = received.map((f) => ({ t_ms: Math.round((f.wallMs - timeOrigin) * 10) / 10, jpeg: Buffer.from(f.data, 'base64') }))
        .sort((a, b) => a.t_ms - b.t_ms)
      const visual = await visualMetrics(frames, { endMs })
      const kept = thinFrames(frames.map((f) => ({ ...f, t_ms: Math.max(0, f.t_ms) })))
      return {
        metrics: visual?.metrics ?? {},
        filmstrip: { ...kept, captured: frames.length, method: 'screencast', progress: visual?.progress ?? [] }
      }
    }
  }
}
