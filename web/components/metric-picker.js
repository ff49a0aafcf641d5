// Metric switch (TTFB, load, FCP, LCP, connect) and the analysis switch
// (matched rounds or intention to treat), kept in the hash query; and the
// verdict legend that says what the colours promise.
import { h, count, armNames } from '../dom.js'
import { METRICS, ANALYSES, setParams } from '../query.js'

/**
 * @param {string} current metric id
 * @param {{ browser?: string }} [opts] browser: the metrics that browser gives (Firefox has no visual metrics)
 */
export function metricPicker (current, { browser } = {}) {
  return h('fieldset', { class: 'segmented', id: 'metric-group' },
    h('legend', { class: 'sr-only' }, 'Metric'),
    METRICS.filter((m) => !browser || !m.browsers || m.browsers.includes(browser) || m.id === current).map((m) => h('span', { class: 'seg' },
      h('input', { type: 'radio', name: 'metric', id: `metric-${m.id}`, value: m.id, checked: m.id === current, onchange: () => setParams({ metric: m.id }) }),
      h('label', { for: `metric-${m.id}`, title: m.long }, m.label))))
}

/**
 * "Matched rounds | Intention to treat", with one line saying what the
 * chosen one counts.
 * @param {string} current analysis id
 */
export function analysisPicker (current) {
  const chosen = ANALYSES.find((a) => a.id === current) ?? ANALYSES[0]
  return h('div', { class: 'analysis-picker' },
    h('fieldset', { class: 'segmented', id: 'analysis-group', 'aria-describedby': 'analysis-note' },
      h('legend', { class: 'sr-only' }, 'Rounds compared'),
      ANALYSES.map((a) => h('span', { class: 'seg' },
        h('input', { type: 'radio', name: 'analysis', id: `analysis-${a.id}`, value: a.id, checked: a.id === chosen.id, onchange: () => setParams({ analysis: a.id }) }),
        h('label', { for: `analysis-${a.id}`, title: a.long }, a.label)))),
    h('p', { class: 'analysis-note', id: 'analysis-note' }, h('b', {}, `${chosen.label}: `), chosen.long))
}

/**
 * Colour key for verdicts and what a coloured cell promises. With a
 * comparison, the monitor's own practical minimum, the number of cells
 * tested and the rounds each percentile needs.
 * @param {any} [cmp] response of GET /monitors/:id/comparison
 * @param {{ unsupported?: boolean }} [opts] show the "H3 not supported" key
 */
export function verdictLegend (cmp, { unsupported = false } = {}) {
  const names = armNames(cmp)
  const item = (cls, glyph, text) => h('span', { class: 'legend-item' }, h('span', { class: `swatch ${cls}`, 'aria-hidden': 'true' }, glyph), text)
  const min = cmp?.min_effect
  const minText = min ? `max(${min.pct}% of ${names.h2}, ${min.ms} ms)` : 'the monitor\'s practical minimum (by default max(2% of H2, 1 ms))'
  const tested = cmp?.cells?.tested
  const needs = cmp ? minRoundsText(cmp) : null
  const promise = [
    h('b', {}, 'Green or red'), ` only when Δ is significant after correcting for ${tested ? `the ${count(tested)} cells tested in this view` : 'the cells tested in the view'} (a screen per location column, then Benjamini–Hochberg within it), its 95% interval excludes 0 and |Δ| is at least ${minText}. `,
    h('b', {}, 'Grey'), ': no clear difference — the data do not show a difference of that size; it does not prove the arms equal, and where the interval is wide a difference of that size may still be there. ',
    h('b', {}, 'Hatched'), `: not enough matched rounds for that percentile${needs ? ` (${needs})` : ''}; the values shown are not tested.`
  ]
  return h('div', { class: 'legend-block', role: 'note', 'aria-label': 'What the colours mean' },
    h('div', { class: 'legend' },
      item('v-faster', '▼', names.verdict('h3_faster')),
      item('v-slower', '▲', names.verdict('h3_slower')),
      item('v-same', '=', 'No clear difference'),
      item('v-none', '·', 'Not enough data'),
      unsupported ? item('v-unsupported', '✕', 'H3 not supported') : null),
    h('p', { class: 'legend-note' }, promise),
    names.aa ? h('p', { class: 'legend-note aa-note' }, h('b', {}, 'A/A calibration: '), `both arms load over ${names.aa}, so every green or red cell is a false positive; their share is this location's noise floor.`) : null)
}

/** "p50 needs 20 rounds, p95 200, p99 1,000" from the rows of a comparison. */
function minRoundsText (cmp) {
  const first = cmp.locations?.find((l) => l.location_id !== null && l.rows?.length) ?? cmp.locations?.[0]
  const rows = (first?.rows ?? []).filter((r) => r.min_rounds)
  if (!rows.length) return null
  const parts = rows.map((r, i) => (i === 0 ? `p${r.percentile} needs ${count(r.min_rounds)} rounds` : `p${r.percentile} ${count(r.min_rounds)}`))
  return parts.join(', ')
}
