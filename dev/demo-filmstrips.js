// Filmstrips for the demo data (docs/FILMSTRIPS.md): every round of one
// monitor at one location gets frames in both arms, as options.filmstrip =
// always would store them. The frames are real JPEGs that Chromium renders
// of a page painting in four steps (bands on white, 400 × 225), timed to each
// arm's own load so the faster arm also paints sooner; their visual
// progress comes from lib/measurement/visual.js like an agent's. Every round
// shows the same five pictures at its own times, so their progress is
// measured once, and each round's metrics follow from it
// (handPaintedMetrics): measuring each round's frames again decoded the
// same JPEGs ~700 times, 20 s of CPU for six hours of demo rounds.
import { handPaintedMetrics, visualMetrics, thinFrames } from '../lib/measurement/visual.js'

const SHARES = [0.4, 0.3, 0.2, 0.1]
/** When each band appears, as a share of the arm's load time. */
const AT = [0.35, 0.6, 0.85, 1]

/**
 * @param {import('pg').Pool} db
 * @param {import('puppeteer-core').Browser} browser renders the frames
 * @param {{ monitorId: number, locationId: string }} where
 * @returns {Promise<{ rounds: number }>}
 */
export async function seedFilmstrips (db, browser, { monitorId, locationId }) {
  const images = await renderSteps(browser)
  // Each picture's visual progress (%), measured as an agent's frames are.
  const measured = await visualMetrics(images.map((jpeg, i) => ({ t_ms: i * 1000, jpeg })))
  const shown = images.map((_, i) => [...(measured?.progress ?? [])].reverse().find((p) => p.t_ms <= i * 1000)?.progress ?? 0)
  const { rows } = await db.query(
    `SELECT id, job_id, mode, view, probe, load_ms, details FROM results
      WHERE monitor_id = $1 AND location_id = $2 AND probe = 'page' AND view = 'first' AND mode IN ('h2', 'h3') AND status = 'ok' AND load_ms IS NOT NULL`,
    [monitorId, locationId])
  const jobs = new Set()
  for (const r of rows) {
    const frames = [{ t_ms: 0, jpeg: images[0] }, ...AT.map((a, i) => ({ t_ms: Math.round(r.load_ms * a), jpeg: images[i + 1] }))]
    const kept = thinFrames(frames)
    const progress = frames.map((f, i) => ({ t_ms: f.t_ms, progress: shown[i] }))
    const steps = progress.slice(1).map((p, i) => ({ at_ms: p.t_ms, share: (p.progress - shown[i]) / 100 }))
    const hand = handPaintedMetrics(steps)
    const m = { ...hand, speed_index_ms: Math.round(hand.speed_index_ms * 10) / 10 }
    const filmstrip = {
      kind: 'capture', step_ms: kept.step_ms, dropped: kept.dropped, captured: frames.length, method: 'screencast',
      frames: kept.frames.length, bytes: kept.frames.reduce((s, f) => s + f.jpeg.length, 0),
      progress: progress.map((p) => [p.t_ms, p.progress]), uploaded: true, error: null
    }
    await db.query(
      `INSERT INTO filmstrip_frames (job_id, mode, view, probe, seq, t_ms, jpeg, monitor_id, location_id)
       SELECT $1, $2, $3, $4, f.seq - 1, f.t_ms, f.jpeg, $5, $6
         FROM unnest($7::double precision[], $8::bytea[]) WITH ORDINALITY AS f(t_ms, jpeg, seq)
       ON CONFLICT DO NOTHING`,
      [r.job_id, r.mode, r.view, r.probe, monitorId, locationId, kept.frames.map((f) => f.t_ms), kept.frames.map((f) => f.jpeg)])
    await db.query(
      `UPDATE results SET details = jsonb_set(coalesce(details, '{}'), '{filmstrip}', $2::jsonb),
              first_visual_change_ms = $3, speed_index_ms = $4, visually_complete_85_ms = $5, visually_complete_ms = $6, last_visual_change_ms = $7
        WHERE id = $1`,
      [r.id, JSON.stringify(filmstrip), m.first_visual_change_ms ?? null, m.speed_index_ms ?? null, m.visually_complete_85_ms ?? null, m.visually_complete_ms ?? null, m.last_visual_change_ms ?? null])
    jobs.add(r.job_id)
  }
  return { rounds: jobs.size }
}

/**
 * The blank page, then the page after each step, as Chromium paints them.
 * @param {import('puppeteer-core').Browser} browser
 * @returns {Promise<Buffer[]>}
 */
async function renderSteps (browser) {
  const page = await browser.newPage()
  try {
    await page.setViewport({ width: 400, height: 225 })
    /** @type {Buffer[]} */
    const out = []
    for (let shown = 0; shown <= SHARES.length; shown++) {
      const bands = SHARES.map((s, i) => `<div style="height:${s * 100}vh;background:${i < shown ? ['#1d3557', '#457b9d', '#e63946', '#2a9d8f'][i] : '#fff'}"></div>`).join('')
      await page.setContent(`<!doctype html><html><body style="margin:0;background:#fff;overflow:hidden">${bands}</body></html>`)
      out.push(Buffer.from(await page.screenshot({ type: 'jpeg', quality: 60 })))
    }
    return out
  } finally {
    await page.close()
  }
}
