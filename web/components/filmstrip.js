// What a person saw while the page loaded (docs/FILMSTRIPS.md): a run's
// frames on its time axis, and the H2 and H3 loads of one round side by
// side on one axis in 100 ms steps, with a scrubber and both arms' visual
// progress curves. Frames are fetched with the API key (an <img> cannot
// send it) and shown from blob URLs.
import { frameUrl } from '../api.js'
import { h, ms } from '../dom.js'

const SVG = 'http://www.w3.org/2000/svg'
const STEP_MS = 100
/** A time on the axis: "0 ms" rather than "0.0 ms". */
const at = (t) => (t === 0 ? '0 ms' : ms(t))

/** Visual progress at `t` (the last point at or before it), 0 before the first. */
function progressAt (progress, t) {
  let p = 0
  for (const x of progress) if (x.t_ms <= t) p = x.progress
  return p
}

/**
 * An <img> of a frame, filled once its bytes arrive.
 * @param {string} url the frame's API URL
 * @param {string} alt
 * @param {Record<string, any>} [attrs]
 */
export function frameImage (url, alt, attrs = {}) {
  const img = h('img', { alt, ...attrs, 'data-src': url })
  frameUrl(url).then((blob) => { img.src = blob }, () => { img.alt = `${alt} (could not be loaded)` })
  return img
}

/** The frame on screen at `t`: the last one painted at or before it, or null (still blank). */
export function frameAt (frames, t) {
  let shown = null
  for (const f of frames) if (f.t_ms <= t) shown = f
  return shown
}

/**
 * A run's filmstrip on its time axis (0 to `axisMs`); a click on a frame
 * shows it larger below.
 * @param {any} film GET /results/{id}/filmstrip
 * @param {{ axisMs: number, label: string }} opts
 */
export function runFilmstrip (film, { axisMs, label }) {
  const large = h('figure', { class: 'frame-large', hidden: true })
  const show = (f) => {
    large.hidden = false
    large.replaceChildren(frameImage(f.url, `${label} at ${ms(f.t_ms)}`), h('figcaption', {}, `${ms(f.t_ms)} after the navigation's start`))
  }
  const axis = Math.max(axisMs, ...film.frames.map((f) => f.t_ms), 1)
  const strip = h('ol', { class: 'filmstrip', 'aria-label': `${label}: frames on the page's time axis` }, film.frames.map((f) => {
    const item = h('li', { class: 'film-frame' },
      h('button', { type: 'button', class: 'frame-button', title: `Show the frame at ${ms(f.t_ms)} larger`, onclick: () => show(f) },
        frameImage(f.url, `${label} at ${ms(f.t_ms)}`, { loading: 'lazy' }), h('span', { class: 'frame-t' }, ms(f.t_ms))))
    // The frame's own width slides with its time, so the first frame starts
    // at the axis' start and the last one ends at its end, inside the card.
    const pct = f.t_ms / axis * 100
    item.style.left = `${pct}%`
    item.style.transform = `translateX(-${pct}%)`
    return item
  }))
  return h('div', { class: 'filmstrip-wrap' }, strip, axisTicks(axis), progressNote(film), large)
}

function progressNote (film) {
  if (film.kind === 'wpt_screen') return h('p', { class: 'hint' }, 'A WebPageTest agent sends one screenshot, taken at the end of the load; it films a load only when it records video (ffmpeg on its host).')
  return film.kind === 'rerun'
    ? h('p', { class: 'hint' }, 'These frames are from a load of the same arm run again at once because this run was an outlier (capture slows a load, so it never films the timed one).')
    : h('p', { class: 'hint' }, 'These frames are from a load of the same arm right after the round\'s timed loads: capture slows a load, so it never films the timed one.')
}

function axisTicks (axis) {
  const step = axis > 4000 ? 1000 : axis > 1500 ? 500 : 250
  const ticks = []
  for (let t = 0; t <= axis; t += step) {
    const tick = h('span', { class: 'axis-tick' }, at(t))
    tick.style.left = `${t / axis * 100}%`
    ticks.push(tick)
  }
  return h('div', { class: 'film-axis', 'aria-hidden': 'true' }, ticks)
}

/**
 * The round's two arms on one axis in 100 ms steps, a scrubber showing both
 * at one moment larger, and their visual progress curves.
 * @param {any} data GET /monitors/{id}/side-by-side
 */
export function sideBySide (data) {
  const arms = ['h2', 'h3'].map((mode) => ({ mode, ...data.round.arms[mode] }))
  const films = arms.filter((a) => a.filmstrip)
  const end = Math.max(STEP_MS, ...films.flatMap((a) => [...a.filmstrip.frames.map((f) => f.t_ms), ...a.filmstrip.progress.map((p) => p.t_ms)]))
  const steps = Math.ceil(end / STEP_MS) + 1
  const label = { h2: 'HTTP/2', h3: 'HTTP/3' }

  const rows = arms.map((a) => {
    if (!a.filmstrip) return h('div', { class: `sbs-row ${a.mode}`, 'data-arm': a.mode }, h('span', { class: `sbs-arm proto ${a.mode}` }, label[a.mode]), h('p', { class: 'sbs-none' }, a.no_filmstrip))
    const cells = []
    let before = null
    for (let i = 0; i < steps; i++) {
      const f = frameAt(a.filmstrip.frames, i * STEP_MS)
      const changed = f !== before
      before = f
      cells.push(h('li', { class: `sbs-cell${changed ? ' changed' : ''}`, 'data-t': i * STEP_MS },
        f ? frameImage(f.url, `${label[a.mode]} at ${ms(i * STEP_MS)}`) : h('span', { class: 'blank', title: 'nothing painted yet' }),
        h('span', { class: 'frame-t' }, at(i * STEP_MS))))
    }
    return h('div', { class: `sbs-row ${a.mode}`, 'data-arm': a.mode },
      h('span', { class: `sbs-arm proto ${a.mode}` }, label[a.mode]),
      h('ol', { class: 'sbs-strip', 'aria-label': `${label[a.mode]} frames every 100 ms` }, cells))
  })

  // The scrubber: both arms at one moment, larger, and where that is on the curves.
  const holders = arms.map(() => h('div', { class: 'sbs-big-frame' }))
  const bigs = arms.map((a, i) => h('figure', { class: `sbs-big ${a.mode}` }, h('figcaption', { class: `proto ${a.mode}` }, label[a.mode]), holders[i]))
  const readout = h('output', { class: 'sbs-t', for: 'sbs-scrubber' })
  const curves = progressCurves(arms, end)
  const scrub = (t) => {
    readout.textContent = `${at(t)} after the navigation's start`
    arms.forEach((a, i) => {
      const holder = holders[i]
      const f = a.filmstrip ? frameAt(a.filmstrip.frames, t) : null
      if ((holder.dataset.seq ?? '') === String(f?.seq ?? '')) return
      holder.dataset.seq = String(f?.seq ?? '')
      holder.replaceChildren(f ? frameImage(f.url, `${label[a.mode]} at ${ms(t)}`) : h('span', { class: 'blank' }, a.filmstrip ? 'nothing painted yet' : 'no frames'))
    })
    curves.at(t)
    for (const cell of rows.flatMap((r) => [...r.querySelectorAll('.sbs-cell')])) cell.classList.toggle('now', Number(cell.getAttribute('data-t')) === Math.round(t / STEP_MS) * STEP_MS)
  }
  // The scrubber starts where the two arms' pictures differ most.
  let start = 0
  if (films.length === 2) {
    let most = -1
    for (let i = 0; i < steps; i++) {
      const d = Math.abs(progressAt(films[0].filmstrip.progress, i * STEP_MS) - progressAt(films[1].filmstrip.progress, i * STEP_MS))
      if (d > most) { most = d; start = i * STEP_MS }
    }
  }
  const scrubber = h('input', { type: 'range', id: 'sbs-scrubber', min: 0, max: (steps - 1) * STEP_MS, step: STEP_MS, value: start, 'aria-label': 'Time since the navigation\'s start', oninput: (ev) => scrub(Number(ev.target.value)) })
  scrub(start)

  return h('div', { class: 'sbs', 'data-job': data.round.job_id },
    h('p', { class: 'sbs-why' }, data.why),
    h('p', { class: 'sub' }, `Round of ${new Date(data.round.time).toLocaleString()} · ${arms.map((a) => `${label[a.mode]} ${ms(a.value_ms)}${a.speed_index_ms !== null ? `, Speed Index ${ms(a.speed_index_ms)}` : ''}`).join(' · ')} · `,
      ...arms.map((a, i) => [i ? ' · ' : '', a.result_id ? h('a', { href: `#/results/${a.result_id}` }, `${label[a.mode]} run`) : null])),
    h('div', { class: 'sbs-rows' }, rows),
    h('div', { class: 'sbs-scrub' }, h('label', { for: 'sbs-scrubber' }, 'Scrub '), scrubber, readout),
    h('div', { class: 'sbs-bigs' }, bigs),
    curves.el,
    films.length ? progressNote(films[0].filmstrip) : null)
}

/**
 * Both arms' visual progress (0–100 %) over time, as steps (progress holds
 * until the next frame), with a line at the scrubber's moment.
 * @param {any[]} arms
 * @param {number} end
 */
function progressCurves (arms, end) {
  const W = 600
  const H = 140
  const pad = { l: 36, r: 8, t: 8, b: 22 }
  const x = (t) => pad.l + t / end * (W - pad.l - pad.r)
  const y = (p) => pad.t + (1 - p / 100) * (H - pad.t - pad.b)
  const svg = document.createElementNS(SVG, 'svg')
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`)
  svg.setAttribute('class', 'sbs-curves')
  svg.setAttribute('role', 'img')
  svg.setAttribute('aria-label', `Visual progress over time: ${arms.map((a) => `${a.mode.toUpperCase()} ${a.speed_index_ms !== null ? `Speed Index ${Math.round(a.speed_index_ms)} ms` : 'no frames'}`).join(', ')}`)
  const el = (name, attrs) => {
    const n = document.createElementNS(SVG, name)
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v))
    svg.append(n)
    return n
  }
  for (const p of [0, 50, 100]) {
    el('line', { x1: pad.l, x2: W - pad.r, y1: y(p), y2: y(p), class: 'grid' })
    el('text', { x: pad.l - 4, y: y(p) + 4, 'text-anchor': 'end', class: 'sbs-tick' }).textContent = `${p}%`
  }
  for (const t of [0, end / 2, end]) el('text', { x: x(t), y: H - 6, 'text-anchor': t === 0 ? 'start' : t === end ? 'end' : 'middle', class: 'sbs-tick' }).textContent = at(t)
  for (const a of arms) {
    if (!a.filmstrip?.progress?.length) continue
    let d = `M ${x(0)} ${y(0)}`
    let last = 0
    for (const p of a.filmstrip.progress) {
      d += ` H ${x(p.t_ms)} V ${y(p.progress)}`
      last = p.progress
    }
    d += ` H ${x(end)} V ${y(last)}`
    el('path', { d, class: `curve ${a.mode}`, 'data-arm': a.mode })
  }
  const now = el('line', { x1: x(0), x2: x(0), y1: pad.t, y2: H - pad.b, class: 'now' })
  return {
    el: h('figure', { class: 'sbs-curves-fig' }, svg, h('figcaption', { class: 'hint' }, 'Visual progress: how far each frame has come from the blank page to the finished one (colour histograms, as Speed Index reads them). Speed Index is the area above each curve.')),
    at (t) { now.setAttribute('x1', String(x(t))); now.setAttribute('x2', String(x(t))) }
  }
}
