// Metric switch (TTFB, load, FCP, LCP, connect) kept in the hash query.
import { h } from '../dom.js'
import { METRICS, setParams } from '../query.js'

/** @param {string} current metric id */
export function metricPicker (current) {
  return h('fieldset', { class: 'segmented', id: 'metric-group' },
    h('legend', { class: 'sr-only' }, 'Metric'),
    METRICS.map((m) => h('span', { class: 'seg' },
      h('input', { type: 'radio', name: 'metric', id: `metric-${m.id}`, value: m.id, checked: m.id === current, onchange: () => setParams({ metric: m.id }) }),
      h('label', { for: `metric-${m.id}`, title: m.long }, m.label))))
}

/** Colour key for verdicts, shown next to every table coloured by them. */
export function verdictLegend () {
  const item = (cls, glyph, text) => h('span', { class: 'legend-item' }, h('span', { class: `swatch ${cls}`, 'aria-hidden': 'true' }, glyph), text)
  return h('div', { class: 'legend', role: 'note', 'aria-label': 'Colour key' },
    item('v-faster', '▼', 'H3 faster'),
    item('v-slower', '▲', 'H3 slower'),
    item('v-same', '=', 'No significant difference'),
    item('v-none', '·', 'Not enough data'),
    h('span', { class: 'legend-note' }, 'Significant = the 95% interval of the difference excludes 0'))
}
