// The forms that add an alert rule and a webhook channel. Each field is
// checked before sending (the same limits as the API), and a refusal from
// the API is shown next to the field it names.
import { api } from '../api.js'
import { h, plainText, toast } from '../dom.js'
import { METRICS, metricLabel } from '../query.js'
import { catalogue } from '../catalogue.js'

const KINDS = [
  { id: 'h3_regression', label: 'HTTP/3 regression', uses: ['metric', 'percentile', 'min_effect_pct', 'min_effect_ms'] },
  { id: 'h3_failure', label: 'HTTP/3 failure or fallback', uses: ['threshold_pct'] },
  { id: 'location_silent', label: 'Location silent', uses: [] },
  { id: 'error_rate', label: 'Error rate', uses: ['threshold_pct'] },
  { id: 'h3_share_drop', label: 'H3 share drop (returning visits)', uses: ['threshold_pct', 'min_drop_points'] }
]
// The longest window a rule may look back over, in minutes (30 days: lib/store/alert-rules.js).
const MAX_WINDOW_MIN = 30 * 1440
// An H3 share rule needs this many returning visits in its window (lib/analysis/alert-h3-share.js).
const MIN_VISITS = 10
// Each kind's window to start from, in minutes: a regression's percentile
// needs its rounds in the window (p95: 200 per location), which a day holds
// at the default interval, as the shipped rule's; a silent location is
// news within a quarter of an hour.
const DEFAULT_WINDOW_MIN = { h3_regression: '1440', h3_failure: '60', location_silent: '15', error_rate: '60', h3_share_drop: '60' }

/**
 * The kind of a rule form's kind select, whose options are KINDS.
 * @param {string} id
 */
const kindOf = (id) => /** @type {typeof KINDS[number]} */ (KINDS.find((k) => k.id === id))

/** A rule in words: "p95 H3 regression ≥ 10% over 1 h, 3 evaluations". */
export function ruleText (r) {
  const over = r.window_s % 3600 === 0 ? `${r.window_s / 3600} h` : `${Math.round(r.window_s / 60)} min`
  const evals = r.evaluations > 1 ? `, ${r.evaluations} evaluations` : ''
  if (r.kind === 'h3_regression') {
    const by = [r.min_effect_pct != null ? `${r.min_effect_pct}%` : null, r.min_effect_ms != null ? `${r.min_effect_ms} ms` : null].filter(Boolean).join(' and ')
    return `p${r.percentile} ${metricLabel(r.metric ?? catalogue.defaultMetric)} H3 regression ≥ ${by} over ${over}${evals}`
  }
  if (r.kind === 'h3_failure') return `H3 failure ≥ ${r.threshold_pct}% over ${over}${evals}`
  if (r.kind === 'error_rate') return `Error rate > ${r.threshold_pct}% over ${over}${evals}`
  if (r.kind === 'h3_share_drop') {
    const when = [r.threshold_pct != null ? `below ${r.threshold_pct}%` : null, r.min_drop_points != null ? `down ≥ ${r.min_drop_points} points` : null].filter(Boolean).join(' or ')
    return `H3 share of returning visits ${when} over ${over}${evals}`
  }
  return `Location silent for ${over}`
}

/** Field plumbing shared by both forms: labelled controls with an error line each. */
function fields () {
  const errors = {}
  const field = (name, label, control, hint) => {
    control.setAttribute('aria-describedby', `${name}-error`)
    errors[name] = h('p', { class: 'field-error', id: `${name}-error`, role: 'alert', hidden: true })
    return h('div', { class: 'field', 'data-field': name }, h('label', { for: control.id }, label), control,
      hint ? h('p', { class: 'hint' }, hint) : null, errors[name])
  }
  const show = (form, name, message) => {
    const el = errors[name] ?? errors._form
    el.textContent = plainText(message)
    el.hidden = false
    form.querySelector(`[name="${name}"]`)?.setAttribute('aria-invalid', 'true')
  }
  const clear = (form) => {
    for (const el of Object.values(errors)) el.hidden = true
    for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid')
  }
  errors._form = h('p', { class: 'field-error', role: 'alert', hidden: true })
  return { field, show, clear, formError: errors._form }
}

const num = (id, attrs = {}) => h('input', { id, name: id.replace(/^rule-/, ''), type: 'number', step: 'any', ...attrs })

export function ruleForm ({ monitors, locations, channels, onSaved }) {
  const f = fields()
  const kind = h('select', { id: 'rule-kind', name: 'kind' }, KINDS.map((k) => h('option', { value: k.id }, k.label)))
  const monitor = h('select', { id: 'rule-monitor', name: 'monitor_id' }, h('option', { value: '' }, 'Every monitor'),
    monitors.map((m) => h('option', { value: String(m.id) }, m.label || m.url)))
  const metric = h('select', { id: 'rule-metric', name: 'metric' }, METRICS.map((m) => h('option', { value: m.id }, m.long)))
  const percentile = num('rule-percentile', { value: 95, min: 1, max: 99 })
  const minPct = num('rule-min_effect_pct', { value: 10, min: 0 })
  const minMs = num('rule-min_effect_ms', { min: 0, placeholder: 'optional' })
  const threshold = num('rule-threshold_pct', { value: 5, min: 0, max: 100 })
  const minDrop = num('rule-min_drop_points', { value: 20, min: 0, max: 100 })
  const windowMin = h('input', { id: 'rule-window', name: 'window_s', type: 'number', min: 1, max: MAX_WINDOW_MIN, step: 1, value: DEFAULT_WINDOW_MIN[KINDS[0].id] })
  const evaluations = h('input', { id: 'rule-evaluations', name: 'evaluations', type: 'number', min: 1, max: 100, step: 1, value: 3 })
  const severity = h('select', { id: 'rule-severity', name: 'severity' }, ['warning', 'critical', 'info'].map((s) => h('option', { value: s }, s)))
  const description = h('input', { id: 'rule-description', name: 'description', type: 'text', maxlength: 500, placeholder: 'optional' })
  const locBoxes = locations.map((l) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'locations', value: l.id }), ` ${l.name}`))
  const chanBoxes = channels.map((c) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'channels', value: String(c.id) }), ` ${c.name}`))
  const kindFields = {
    metric: f.field('metric', 'Metric', metric),
    percentile: f.field('percentile', 'Percentile', percentile, 'The comparison cell watched, above 0 and below 100'),
    min_effect_pct: f.field('min_effect_pct', 'H3 slower by at least (%)', minPct),
    min_effect_ms: f.field('min_effect_ms', 'H3 slower by at least (ms)', minMs, 'Either or both'),
    threshold_pct: f.field('threshold_pct', 'Threshold (%)', threshold, 'Above 0 and below 100'),
    min_drop_points: f.field('min_drop_points', 'Drop by at least (points)', minDrop, 'Percentage points below the 7 days before the window. Either field, or both')
  }
  // The threshold reads differently for a share (fires below it) than for a rate (fires above it).
  const thresholdText = {
    rate: ['Threshold (%)', 'Above 0 and below 100'],
    share: ['Fire below (% over H3)', `When the share of returning visits over H3 is confidently below it (at least ${MIN_VISITS} visits in the window)`]
  }
  const form = h('form', { class: 'card-form', novalidate: true, id: 'rule-form', onsubmit: submit },
    h('div', { class: 'row-2' }, f.field('kind', 'Kind', kind), f.field('monitor_id', 'Monitor', monitor)),
    h('div', { class: 'row-2' }, kindFields.metric, kindFields.percentile, kindFields.threshold_pct, kindFields.min_drop_points),
    h('div', { class: 'row-2' }, kindFields.min_effect_pct, kindFields.min_effect_ms),
    h('div', { class: 'row-2' }, f.field('window_s', 'Window (minutes)', windowMin, '1 minute to 30 days (43,200)'), f.field('evaluations', 'Evaluations in a row', evaluations, 'To fire, and to resolve')),
    h('div', { class: 'row-2' }, f.field('severity', 'Severity', severity), f.field('description', 'Description', description)),
    h('fieldset', { id: 'locations-group' }, h('legend', {}, 'Locations'), h('p', { class: 'hint' }, 'None ticked: every location of the monitor'), h('div', { class: 'checks' }, locBoxes)),
    h('fieldset', { id: 'channels-group' }, h('legend', {}, 'Notify'), chanBoxes.length ? h('div', { class: 'checks' }, chanBoxes) : h('p', { class: 'hint' }, 'No channels yet: the alert shows here and in /metrics.')),
    f.formError,
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Add rule')))
  let shownKind = kind.value
  const sync = () => {
    const uses = kindOf(kind.value).uses
    for (const [name, el] of Object.entries(kindFields)) el.hidden = !uses.includes(name)
    // The new kind's window, unless the window was changed from the last kind's.
    if (windowMin.value === DEFAULT_WINDOW_MIN[shownKind]) windowMin.value = DEFAULT_WINDOW_MIN[kind.value]
    shownKind = kind.value
    const share = kind.value === 'h3_share_drop'
    // A 5% floor suits a failure rate, not a share; a share's floor starts at half.
    if (share && threshold.value === '5') threshold.value = '50'
    if (!share && threshold.value === '50') threshold.value = '5'
    const [label, hint] = thresholdText[share ? 'share' : 'rate']
    const el = kindFields.threshold_pct
    for (const [selector, text] of [['label', label], ['.hint', hint]]) {
      const part = el.querySelector(selector)
      if (part) part.textContent = plainText(text)
    }
  }
  kind.addEventListener('change', sync)
  form.addEventListener('input', () => f.clear(form))
  sync()

  function body () {
    const uses = kindOf(kind.value).uses
    const n = (el) => (el.value === '' ? null : Number(el.value))
    const b = { kind: kind.value, window_s: Math.round(Number(windowMin.value) * 60), evaluations: Number(evaluations.value), severity: severity.value }
    if (monitor.value) b.monitor_id = Number(monitor.value)
    if (description.value.trim()) b.description = description.value.trim()
    if (uses.includes('metric')) b.metric = metric.value
    for (const [name, el] of /** @type {[string, HTMLInputElement][]} */ ([['percentile', percentile], ['min_effect_pct', minPct], ['min_effect_ms', minMs], ['threshold_pct', threshold], ['min_drop_points', minDrop]])) {
      if (uses.includes(name) && n(el) !== null) b[name] = n(el)
    }
    const ticked = (name) => [...form.querySelectorAll(`input[name="${name}"]:checked`)].map((i) => /** @type {HTMLInputElement} */ (i).value)
    if (ticked('locations').length) b.locations = ticked('locations')
    b.channels = ticked('channels').map(Number)
    return b
  }

  /** The API's limits, checked here first. */
  function problems (b) {
    const out = []
    if (b.percentile !== undefined && !(b.percentile > 0 && b.percentile < 100)) out.push(['percentile', 'Give a percentile above 0 and below 100, such as 95.'])
    if (b.kind === 'h3_regression' && b.min_effect_pct === undefined && b.min_effect_ms === undefined) out.push(['min_effect_pct', 'Say how much slower is a regression: a percentage, milliseconds or both.'])
    if (b.min_effect_pct !== undefined && !(b.min_effect_pct > 0)) out.push(['min_effect_pct', 'Must be above 0.'])
    if (b.min_effect_ms !== undefined && !(b.min_effect_ms > 0)) out.push(['min_effect_ms', 'Must be above 0.'])
    if ((b.kind === 'h3_failure' || b.kind === 'error_rate') && !(b.threshold_pct > 0 && b.threshold_pct < 100)) out.push(['threshold_pct', 'A rate above 0% and below 100%: 100% can never be exceeded.'])
    if (b.kind === 'h3_share_drop') out.push(...shareProblems(b))
    if (!Number.isInteger(b.window_s) || b.window_s < 60 || b.window_s > MAX_WINDOW_MIN * 60) out.push(['window_s', `A whole number of minutes from 1 to ${MAX_WINDOW_MIN.toLocaleString('en')} (30 days).`])
    if (!Number.isInteger(b.evaluations) || b.evaluations < 1 || b.evaluations > 100) out.push(['evaluations', 'A whole number from 1 to 100.'])
    return out
  }

  /** An H3 share rule: a floor, a drop or both; a monitor that runs the auto arm, often enough for the window. */
  function shareProblems (b) {
    const out = []
    if (b.threshold_pct === undefined && b.min_drop_points === undefined) out.push(['threshold_pct', 'Give a share to fire below, a drop in points, or both.'])
    if (b.threshold_pct !== undefined && !(b.threshold_pct > 0 && b.threshold_pct < 100)) out.push(['threshold_pct', 'A share above 0% and below 100%.'])
    if (b.min_drop_points !== undefined && !(b.min_drop_points > 0 && b.min_drop_points < 100)) out.push(['min_drop_points', 'Percentage points above 0 and below 100.'])
    const m = monitors.find((x) => x.id === b.monitor_id)
    if (m && !m.modes?.includes('auto')) out.push(['monitor_id', `This monitor does not run the auto arm (its modes: ${m.modes.join(', ')}): there are no returning visits to watch.`])
    else if (m && b.window_s < MIN_VISITS * m.interval_s) {
      const every = m.interval_s % 60 ? `${m.interval_s} s` : `${m.interval_s / 60} min`
      out.push(['window_s', `This monitor runs every ${every}: the window needs at least ${Math.ceil(MIN_VISITS * m.interval_s / 60)} minutes for ${MIN_VISITS} returning visits.`])
    }
    return out
  }

  async function submit (ev) {
    ev.preventDefault()
    f.clear(form)
    const b = body()
    const bad = problems(b)
    for (const [name, message] of bad) f.show(form, name, message)
    if (bad.length) return /** @type {HTMLElement | null} */ (form.querySelector('[aria-invalid]'))?.focus()
    try {
      await api.createRule(b)
      toast('Rule added')
      onSaved()
    } catch (/** @type {any} */ err) {
      f.show(form, err.field ?? '_form', err.message)
    }
  }
  return form
}

export function channelForm ({ onSaved }) {
  const f = fields()
  const name = h('input', { id: 'channel-name', name: 'name', type: 'text', maxlength: 200, placeholder: 'On-call' })
  const url = h('input', { id: 'channel-url', name: 'url', type: 'url', placeholder: 'https://hooks.example.com/h3lens', spellcheck: 'false' })
  const secret = h('input', { id: 'channel-secret', name: 'secret', type: 'password', autocomplete: 'new-password', minlength: 16 })
  const format = h('select', { id: 'channel-format', name: 'format' }, h('option', { value: 'json' }, 'JSON (documented body)'), h('option', { value: 'slack' }, 'Slack incoming webhook'))
  const form = h('form', { class: 'card-form', novalidate: true, id: 'channel-form', onsubmit: submit },
    h('div', { class: 'row-2' }, f.field('name', 'Name', name), f.field('format', 'Format', format)),
    f.field('url', 'Webhook URL', url, 'http(s); private addresses only when the server allows them'),
    f.field('secret', 'Signing secret', secret, 'At least 16 characters; signs X-H3lens-Signature. It is never shown again.'),
    f.formError,
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Add webhook')))
  form.addEventListener('input', () => f.clear(form))

  async function submit (ev) {
    ev.preventDefault()
    f.clear(form)
    const bad = []
    if (!name.value.trim()) bad.push(['name', 'Give the channel a name.'])
    if (!/^https?:\/\/[^/\s]+/.test(url.value.trim())) bad.push(['url', 'A full http:// or https:// address.'])
    if (secret.value.length < 16) bad.push(['secret', 'At least 16 characters.'])
    for (const [n, m] of bad) f.show(form, n, m)
    if (bad.length) return /** @type {HTMLElement | null} */ (form.querySelector('[aria-invalid]'))?.focus()
    try {
      await api.createChannel({ kind: 'webhook', name: name.value.trim(), url: url.value.trim(), secret: secret.value, format: format.value })
      toast('Webhook added')
      onSaved()
    } catch (/** @type {any} */ err) {
      f.show(form, err.field ?? '_form', err.message)
    }
  }
  return form
}
