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
import { putEvidence } from './http.js'
import { evaluateIsolated } from './page-metrics.js'
import { MAX_ERROR_LENGTH, storableText } from '../lib/runtime/text.js'
import { monotonicNow } from './clock.js'

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
     * @param {{ deadline?: number | null }} [o] deadline: on the agent's monotonic clock (./clock.js)
     * @returns {Promise<{ metrics: Record<string, number>, filmstrip: Filmstrip }>}
     */
    async finish ({ deadline = null } = {}) {
      const loadedAt = performance.now()
      const until = Math.min(loadedAt + settleMaxMs, deadline === null ? Infinity : performance.now() + (deadline - monotonicNow()))
      while (performance.now() < until && performance.now() - lastAt < quietMs) {
        await new Promise((resolve) => setTimeout(resolve, Math.min(100, quietMs)))
      }
      // Nothing of the page is on screen before its first paint: frames
      // from before it show the blank page or a surface not painted yet,
      // and are not the page's progress.
      const { timeOrigin, firstPaint, endMs } = await evaluateIsolated(page, () => ({
        timeOrigin: performance.timeOrigin,
        firstPaint: performance.getEntriesByName('first-paint')[0]?.startTime ?? 0,
        endMs: performance.now()
      }))
      await stop()
      const frames = received.map((f) => ({ t_ms: Math.round((f.wallMs - timeOrigin) * 10) / 10, jpeg: Buffer.from(f.data, 'base64') }))
        .sort((a, b) => a.t_ms - b.t_ms)
      // The frames kept are the ones measured: one from before the first
      // paint may still show what the tab held before (a previous load's
      // last surface), which no curve counts and a filmstrip must not show.
      const painted = frames.filter((f) => f.t_ms >= Math.max(0, firstPaint))
      const visual = await visualMetrics(painted, { endMs })
      const kept = thinFrames(painted)
      return {
        metrics: visual?.metrics ?? {},
        filmstrip: { ...kept, captured: frames.length, method: 'screencast', progress: visual?.progress ?? [] }
      }
    }
  }
}

/**
 * Upload each result's frames (`filmstrip`, set by the measurement) under
 * its key and leave in its place what the result keeps (details.filmstrip):
 * how many frames, their bytes, the visual progress, and the upload's error
 * if it failed. A result whose frames could not be kept keeps its visual
 * metrics: they were computed on the agent.
 * @param {Record<string, any>[]} results
 * @param {{ jobId: number, upload: ((jobId: number, f: { mode: string, view: string, probe: string, frames: Frame[] }) => Promise<unknown>) | null,
 *   log: import('pino').Logger }} ctx
 */
export async function keepFilmstrips (results, { jobId, upload, log }) {
  for (const r of results) {
    /** @type {(Filmstrip & { kind: string, reason?: string, error?: string }) | undefined} */
    const film = r.filmstrip
    if (!film || !Array.isArray(film.frames)) continue
    const { frames, progress, ...about } = film
    const info = {
      ...about, frames: frames.length, bytes: frames.reduce((sum, f) => sum + f.jpeg.length, 0),
      progress: progress.map((p) => [p.t_ms, p.progress]), uploaded: false, error: /** @type {string | null} */ (about.error ?? null)
    }
    if (info.error) { /* said why already */ } else if (!frames.length) info.error = 'no frame was captured'
    else if (!upload) info.error = 'this agent has no API to upload frames to'
    else {
      try {
        await upload(jobId, { mode: r.mode, view: r.view, probe: r.probe, frames })
        info.uploaded = true
      } catch (/** @type {any} */ err) {
        info.error = err.message
        log.warn({ job: jobId, mode: r.mode, err: err.message }, 'filmstrip not kept')
      }
    }
    // Within what the API takes (a load's error names its URL, up to 2 KB).
    if (info.error) info.error = storableText(info.error, MAX_ERROR_LENGTH)
    r.filmstrip = info
  }
}

/**
 * @param {{ apiUrl: string, token: string, timeoutMs?: number, ca?: string[] }} opts
 */
export function createFilmstripUploader ({ apiUrl, token, timeoutMs = 60_000, ca }) {
  /**
   * @param {number} jobId
   * @param {{ mode: string, view: string, probe: string, frames: Frame[] }} f
   */
  return async function uploadFilmstrip (jobId, { mode, view, probe, frames }) {
    const body = JSON.stringify({ mode, view, probe, frames: frames.map((f) => ({ t_ms: f.t_ms, jpeg: f.jpeg.toString('base64') })) })
    return putEvidence(`${apiUrl}/api/v1/agent/jobs/${jobId}/filmstrip`, {
      what: 'filmstrip upload', apiUrl, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body, timeoutMs, ca
    })
  }
}
