// uPlot charts: percentile trends over time and CDFs, H2 against H3, and
// the auto arm (as users get it) where the monitor runs it. uPlot is loaded
// on first use, so pages without charts never download it.
import { h, ms, count, plainText } from '../dom.js'

// The minified build (51 KB) rather than the ES module (145 KB): it keeps
// the dashboard well inside its 300 KB budget (bench/ui-payload.js). It is a
// classic script that defines window.uPlot; a script file from this origin
// is allowed by the CSP.
const UPLOT_SRC = '/vendor/uPlot.iife.min.js'
let uPlotLoading = null

function loadUPlot () {
  uPlotLoading ??= new Promise((resolve, reject) => {
    if (window.uPlot) return resolve(window.uPlot)
    const script = document.createElement('script')
    script.src = UPLOT_SRC
    script.addEventListener('load', () => resolve(window.uPlot))
    script.addEventListener('error', () => {
      uPlotLoading = null
      reject(new Error('the chart library could not be loaded'))
    })
    document.head.append(script)
  })
  return uPlotLoading
}

const HEIGHT = 200

function theme () {
  const css = getComputedStyle(document.documentElement)
  const v = (name) => css.getPropertyValue(name).trim()
  return { h2: v('--h2'), h3: v('--h3'), auto: v('--auto'), axis: v('--muted'), grid: v('--line'), font: `11px ${css.fontFamily}` }
}

function axis (t, extra = {}) {
  return { stroke: t.axis, font: t.font, grid: { stroke: t.grid, width: 1 }, ticks: { stroke: t.grid, width: 1, size: 4 }, ...extra }
}

/**
 * Create a uPlot chart in `container` once it has a width, and keep it sized
 * to the container. Returns a disposer.
 * @param {HTMLElement} container
 * @param {(width: number, UPlot: any) => object} makeOptions
 * @param {any[]} data
 */
function mount (container, makeOptions, data) {
  container.classList.add('chart')
  let chart = null
  let disposed = false
  const ro = new ResizeObserver(async () => {
    const width = Math.floor(container.clientWidth)
    if (!width || disposed) return
    if (chart) return chart.setSize({ width, height: HEIGHT })
    chart = 'pending'
    const UPlot = await loadUPlot()
    if (disposed) return
    chart = new UPlot(makeOptions(Math.floor(container.clientWidth), UPlot), data, container)
  })
  ro.observe(container)
  return () => {
    disposed = true
    ro.disconnect()
    if (chart && chart !== 'pending') chart.destroy()
  }
}

/**
 * The arms a chart draws, in order: H2, H3, and the auto arm when the
 * series has it and the page names it.
 * @param {Record<string, any>} series by mode
 * @param {{ h2: string, h3: string, auto?: string | null }} names
 */
const armsOf = (series, names) => ['h2', 'h3', ...(names.auto && series.auto ? ['auto'] : [])]

/**
 * p50 and p95 of H2 and H3 (and the auto arm) over time for one location.
 * @param {{ h2?: any, h3?: any, auto?: any }} series trend series by mode: { points: [{ t, p50, p95 }] }
 * @param {string} label for the text alternative
 * @param {{ from: Date, to: Date }} range the window, so gaps in the data show as gaps
 * @param {{ h2: string, h3: string, auto?: string | null }} [names] auto: the auto arm's line name, or null to leave it out
 * @returns {{ el: HTMLElement, dispose: () => void }}
 */
export function trendChart (series, label, range, names = { h2: 'H2', h3: 'H3' }) {
  const arms = armsOf(series, names)
  const times = [...new Set(arms.flatMap((m) => series[m]?.points.map((p) => p.t) ?? []))].sort()
  const xs = times.map((t) => Date.parse(t) / 1000)
  const column = (mode, key) => {
    const byT = new Map((series[mode]?.points ?? []).map((p) => [p.t, p[key]]))
    return times.map((t) => byT.get(t) ?? null)
  }
  const data = [xs, ...arms.flatMap((m) => [column(m, 'p50'), column(m, 'p95')])]
  // Each point's loads: a bucket's p95 of five loads says so.
  const counts = arms.map((m) => column(m, 'count'))
  const lastAt = (arr) => arr.findLastIndex((v) => v !== null)
  const at = (i) => arms.map((m, k) => {
    const j = i === null ? lastAt(data[1 + 2 * k]) : i
    const n = j < 0 ? null : counts[k][j]
    return `${names[m]} p50 ${ms(j < 0 ? null : data[1 + 2 * k][j])} · p95 ${ms(j < 0 ? null : data[2 + 2 * k][j])}${n ? ` (${count(n)} load${n === 1 ? '' : 's'})` : ''}`
  }).join('   ')
  const values = (i) => i === null
    ? `Latest  ${at(null)}`
    : `${new Date(xs[i] * 1000).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' })}  ${at(i)}`
  const readout = h('p', { class: 'readout', 'aria-hidden': 'true' }, values(null))
  const plot = h('div', { role: 'img', 'aria-label': `${label}: ${values(null)}` })
  const t = theme()
  const line = (name, color, dash) => ({ label: name, stroke: color, width: dash ? 1.25 : 2, dash: dash ? [5, 4] : undefined, spanGaps: false, points: { show: xs.length < 40, size: 4 } })
  const dispose = mount(plot, (width) => ({
    width,
    height: HEIGHT,
    legend: { show: false },
    cursor: { points: { size: 6 } },
    hooks: { setCursor: [(u) => { readout.textContent = plainText(values(u.cursor.idx ?? null)) }] },
    scales: { x: { time: true, range: () => [+range.from / 1000, +range.to / 1000] }, y: { range: (u, min, max) => [0, max * 1.08 || 1] } },
    axes: [axis(t), axis(t, { size: 56, values: (u, vals) => vals.map((v) => ms(v)) })],
    series: [{}, ...arms.flatMap((m) => [line(`${names[m]} p50`, t[m], false), line(`${names[m]} p95`, t[m], true)])]
  }), data)
  const el = h('div', {}, readout, plot)
  return { el, dispose }
}

/**
 * Cumulative distribution of H2 and H3 (and the auto arm) for one location.
 * The x axis ends a little past the largest p99 so one slow outlier does
 * not flatten the curves.
 * @param {{ h2?: any, h3?: any, auto?: any }} series distribution series by mode: { points: [{ q, ms }] }
 * @param {string} label
 * @param {{ h2: string, h3: string, auto?: string | null }} [names]
 */
export function cdfChart (series, label, names = { h2: 'H2', h3: 'H3' }) {
  const arms = armsOf(series, names)
  const xs = [...new Set(arms.flatMap((m) => series[m]?.points.map((p) => p.ms) ?? []))].sort((a, b) => a - b)
  const cdf = (mode) => {
    const pts = series[mode]?.points ?? []
    if (!pts.length) return xs.map(() => null)
    let i = 0
    return xs.map((x) => {
      while (i < pts.length && pts[i].ms <= x) i++
      return i === 0 ? 0 : pts[i - 1].q
    })
  }
  const p = (mode, q) => series[mode]?.points.find((pt) => pt.q >= q)?.ms ?? null
  const xMax = Math.max(...arms.map((m) => p(m, 0.99) ?? 0)) * 1.08 || 1
  const xMin = Math.min(...arms.map((m) => p(m, 0) ?? Infinity))
  const data = [xs, ...arms.map((m) => cdf(m))]
  const share = (v) => (v === null || v === undefined ? '—' : `${Math.round(v * 100)}%`)
  // Over every load that succeeded in the window, not matched rounds: said, with how many.
  const loads = arms.map((m) => `${names[m]} ${count(series[m]?.count ?? 0)}`).join(' · ')
  const values = (i) => i === null
    ? `Median  ${arms.map((m) => `${names[m]} ${ms(p(m, 0.5))}`).join(' · ')}   p95  ${arms.map((m) => `${names[m]} ${ms(p(m, 0.95))}`).join(' · ')}   over every load that succeeded (${loads}), not matched rounds`
    : `Within ${ms(xs[i])}  ${arms.map((m, k) => `${names[m]} ${share(data[1 + k][i])}`).join(' · ')} of loads`
  const readout = h('p', { class: 'readout', 'aria-hidden': 'true' }, values(null))
  const plot = h('div', { role: 'img', 'aria-label': `${label}: ${values(null)}` })
  const t = theme()
  const dispose = mount(plot, (width, UPlot) => ({
    width,
    height: HEIGHT,
    legend: { show: false },
    hooks: { setCursor: [(u) => { readout.textContent = plainText(values(u.cursor.idx ?? null)) }] },
    scales: { x: { time: false, range: () => [Math.max(0, Number.isFinite(xMin) ? xMin * 0.9 : 0), xMax] }, y: { range: () => [0, 1] } },
    axes: [
      axis(t, { values: (u, vals) => vals.map((v) => ms(v)) }),
      axis(t, { size: 44, splits: () => [0, 0.25, 0.5, 0.75, 1], values: (u, vals) => vals.map((v) => `${Math.round(v * 100)}%`) })
    ],
    // A CDF is a step function: draw it as one.
    series: [{}, ...arms.map((m) => ({ label: names[m], stroke: t[m], width: 2, points: { show: false }, paths: UPlot.paths.stepped({ align: 1 }) }))]
  }), data)
  const el = h('div', {}, readout, plot)
  return { el, dispose }
}

/**
 * The share of page views over H3 through time, one line per region (the
 * first, all regions, drawn thicker).
 * @param {{ name: string, points: { t: string, page_views: number, h3_share: { rate: number | null } }[] }[]} series
 * @param {string} label
 * @param {{ from: Date, to: Date }} range
 * @returns {{ el: HTMLElement, dispose: () => void }}
 */
export function shareChart (series, label, range) {
  const times = [...new Set(series.flatMap((s) => s.points.map((p) => p.t)))].sort()
  const xs = times.map((t) => Date.parse(t) / 1000)
  const columns = series.map((s) => {
    const byT = new Map(s.points.map((p) => [p.t, p.h3_share.rate]))
    return times.map((t) => byT.get(t) ?? null)
  })
  const pctOf = (v) => (v === null || v === undefined ? '—' : `${Math.round(v * 100)}%`)
  const lastOf = (/** @type {(number | null)[]} */ col) => [...col].reverse().find((v) => v !== null) ?? null
  const values = (i) => series.map((s, k) => `${s.name} ${pctOf(i === null ? lastOf(columns[k]) : columns[k][i])}`).join(' · ')
  const readout = h('p', { class: 'readout', 'aria-hidden': 'true' }, `Latest  ${values(null)}`)
  const plot = h('div', { role: 'img', 'aria-label': `${label}: ${values(null)}` })
  const t = theme()
  const css = getComputedStyle(document.documentElement)
  const palette = [t.h3, css.getPropertyValue('--h2').trim(), '#7a5af5', '#12a38a', '#c2417a', t.axis]
  const dispose = mount(plot, (width) => ({
    width,
    height: HEIGHT,
    legend: { show: false },
    hooks: { setCursor: [(u) => { readout.textContent = plainText(u.cursor.idx === null || u.cursor.idx === undefined ? `Latest  ${values(null)}` : `${new Date(xs[u.cursor.idx] * 1000).toLocaleString()}  ${values(u.cursor.idx)}`) }] },
    scales: { x: { time: true, range: () => [+range.from / 1000, +range.to / 1000] }, y: { range: () => [0, 1] } },
    axes: [axis(t), axis(t, { size: 44, splits: () => [0, 0.25, 0.5, 0.75, 1], values: (u, vals) => vals.map((v) => `${Math.round(v * 100)}%`) })],
    series: [{}, ...series.map((s, k) => ({ label: s.name, stroke: palette[k % palette.length], width: k === 0 ? 2.5 : 1.5, spanGaps: false, points: { show: xs.length < 40, size: 4 } }))]
  }), [xs, ...columns])
  // Through the CSSOM: the dashboard's policy refuses style attributes.
  const swatch = (/** @type {number} */ k) => {
    const el = h('span', { class: 'key-line', 'aria-hidden': 'true' })
    el.style.color = palette[k % palette.length]
    return el
  }
  const key = h('div', { class: 'legend' }, series.map((s, k) => h('span', { class: 'legend-item' }, swatch(k), s.name)))
  return { el: h('div', {}, key, readout, plot), dispose }
}
