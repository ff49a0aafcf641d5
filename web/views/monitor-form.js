// Add or edit a monitor. Every problem is shown next to its field: first the
// checks the browser can make, then whatever the API says (it names the field).
import { api, ApiError } from '../api.js'
import { askForKey } from '../auth.js'
import { h, plainText, toast } from '../dom.js'
import { href } from '../query.js'
import { PROBES } from '../catalogue.js'
import { journeyEditor } from '../components/journey-editor.js'

/** The lab's two origins (one server answers both). */
const LAB_HOSTS = ['lab.h3lens.test', 'lab2.h3lens.test']

export async function render (ctx) {
  const id = ctx.params[0]
  const [locations, monitor] = await Promise.all([api.locations(), id ? api.monitor(id) : null])
  const errors = {}
  const errorEl = (name) => (errors[name] = h('p', { class: 'field-error', id: `${name}-error`, role: 'alert', hidden: true }))
  const field = (name, label, control, hint) => {
    control.setAttribute('aria-describedby', [hint ? `${name}-hint` : null, `${name}-error`].filter(Boolean).join(' '))
    return h('div', { class: 'field' }, h('label', { for: name }, label), control,
      hint ? h('p', { class: 'hint', id: `${name}-hint` }, hint) : null, errorEl(name))
  }
  const group = (name, legend, boxes, hint, note) => h('fieldset', { id: `${name}-group`, 'aria-describedby': `${name}-error` },
    h('legend', {}, legend), hint ? h('p', { class: 'hint' }, hint) : null, h('div', { class: 'checks' }, boxes), note ?? null, errorEl(name))
  const box = (name, value, label, checked, extra) => h('label', { class: 'check' },
    h('input', { type: 'checkbox', name, value, checked }), label, extra ? h('span', { class: 'muted' }, extra) : null)

  const url = h('input', { id: 'url', name: 'url', type: 'url', inputmode: 'url', required: true, placeholder: 'https://example.com/', value: monitor?.url ?? '', autocomplete: 'url', spellcheck: 'false' })
  const label = h('input', { id: 'label', name: 'label', type: 'text', maxlength: 200, value: monitor?.label ?? '', placeholder: 'Home page' })
  const interval = h('input', { id: 'interval_s', name: 'interval_s', type: 'number', min: 10, max: 86400, step: 1, required: true, value: monitor?.interval_s ?? 300 })
  const repeat = h('input', { type: 'checkbox', id: 'repeat_view', name: 'repeat_view', checked: monitor?.repeat_view ?? false })
  const aa = h('select', { id: 'aa_protocol', name: 'aa_protocol' },
    [['', 'Off: HTTP/2 against HTTP/3'], ['h2', 'A/A over HTTP/2 (h2 vs h2)'], ['h3', 'A/A over HTTP/3 (h3 vs h3)']]
      .map(([value, text]) => h('option', { value, selected: (monitor?.aa_protocol ?? '') === value }, text)))
  // Frames and visual metrics (docs/FILMSTRIPS.md); the select is named
  // `options`, the field the API names when it refuses one.
  const filmstrip = h('select', { id: 'options', name: 'options' },
    [['outliers', 'Outliers: runs above the p99 of recent runs'], ['always', 'Always: every round, both arms'], ['off', 'Off']]
      .map(([value, text]) => h('option', { value, selected: (monitor?.options?.filmstrip ?? 'outliers') === value }, text)))
  const minPct = h('input', { id: 'min_effect_pct', name: 'min_effect_pct', type: 'number', min: 0, max: 100, step: 'any', required: true, value: monitor?.min_effect_pct ?? 2 })
  const minMs = h('input', { id: 'min_effect_ms', name: 'min_effect_ms', type: 'number', min: 0, step: 'any', required: true, value: monitor?.min_effect_ms ?? 1 })
  const paused = monitor ? h('input', { type: 'checkbox', id: 'paused', name: 'paused', checked: monitor.paused }) : null
  const formError = h('p', { class: 'field-error', role: 'alert', tabindex: '-1', hidden: true })
  // A read-only key gets 403 on save: offer to enter a write key and retry.
  const writeKey = h('button', { type: 'button', class: 'secondary small', hidden: true, onclick: async () => { if (await askForKey()) form.requestSubmit() } }, 'Enter a write key')
  const submit = h('button', { type: 'submit' }, monitor ? 'Save changes' : 'Add monitor')
  // Writing a journey ticks the journey probe: a journey nobody runs would be a surprise.
  const journey = journeyEditor({
    monitor,
    locations,
    url: () => url.value.trim(),
    onText: (text) => {
      const probe = /** @type {HTMLInputElement | null} */ (form.querySelector('input[name="probes"][value="journey"]'))
      if (probe && text.trim() && !probe.checked) probe.checked = true
    }
  })
  errors.journey = journey.error

  // A new monitor's locations: those with an agent seen lately (every
  // location when none has one). The API's default, for a monitor created
  // without locations, also counts agents enrolled but not seen lately: the
  // form knows only the live ones (the locations' capacity).
  const anyStaffed = locations.some((l) => l.capacity?.agents_alive)
  const staffed = (/** @type {any} */ l) => !anyStaffed || Boolean(l.capacity?.agents_alive)

  const form = h('form', { class: 'card-form', novalidate: true, onsubmit: onSubmit },
    field('url', 'URL', url, 'The page to load, starting with http:// or https://'),
    h('div', { class: 'row-2' },
      field('label', 'Label (optional)', label),
      field('interval_s', 'Interval (seconds)', interval, `At least 60; lab pages on ${LAB_HOSTS.join(' or ')} may use 10`)),
    group('locations', 'Locations', locations.map((l) => box('locations', l.id, ` ${l.name}`, monitor ? monitor.locations.includes(l.id) : staffed(l),
      ` ${l.profile?.rtt_ms ? `${l.profile.rtt_ms} ms RTT` : l.region}${l.capacity?.agents_alive ? '' : ' · no agent'}`)),
    monitor ? undefined : 'Ticked: the locations with an agent; a location without one runs no rounds.'),
    group('modes', 'Modes', [box('modes', 'h2', ' HTTP/2', monitor ? monitor.modes.includes('h2') : true, ' QUIC disabled'),
      box('modes', 'h3', ' HTTP/3', monitor ? monitor.modes.includes('h3') : true, ' QUIC forced'),
      box('modes', 'auto', ' As users get it (auto)', monitor ? monitor.modes.includes('auto') : true, ' nothing forced')],
    'HTTP/2 and HTTP/3 are both needed for a comparison; auto shows how much of its gain users get.',
    h('p', { class: 'hint cost', id: 'auto-cost' }, 'Auto is a third arm with a first and a returning visit: two more page loads and two browser starts per round.')),
    group('browsers', 'Browsers', [box('browsers', 'chromium', ' Chromium', monitor ? (monitor.browsers ?? ['chromium']).includes('chromium') : true, ' its own QUIC stack'),
      box('browsers', 'firefox', ' Firefox', monitor ? (monitor.browsers ?? []).includes('firefox') : false, ' another QUIC stack (neqo)')],
    'A round runs in one browser; with both, a gain both show is the server\'s, one only one shows is that browser\'s. Firefox runs only where a location\'s agents have it.'),
    group('probes', 'Probes', PROBES.map((p) => box('probes', p.id, ` ${p.label}`, monitor ? (monitor.probes ?? ['page']).includes(p.id) : p.id === 'page', ` ${p.hint}`))),
    journey.el,
    h('div', { class: 'field' },
      h('label', { class: 'check', for: 'repeat_view' }, repeat, ' Also measure a repeat view'),
      h('p', { class: 'hint' }, 'A second navigation in the same browser context: warm cache, reused connection or 0-RTT.'), errorEl('repeat_view')),
    field('options', 'Filmstrip', filmstrip, 'Frames of a load of each arm, for Speed Index and Side by side. Captured in an extra load after the timed ones (capture slows a load): "always" adds one load per arm to every round.'),
    field('aa_protocol', 'A/A calibration', aa, 'Both arms load with one protocol; the comparison then shows this location\'s noise floor. Needs exactly HTTP/2 and HTTP/3 under Modes, without auto.'),
    h('div', { class: 'row-2' },
      field('min_effect_pct', 'Minimum effect (%)', minPct, 'A verdict needs at least this difference…'),
      field('min_effect_ms', 'Minimum effect (ms)', minMs, '…and at least this many milliseconds.')),
    paused ? h('div', { class: 'field' }, h('label', { class: 'check', for: 'paused' }, paused, ' Paused'), h('p', { class: 'hint' }, 'A paused monitor keeps its results but runs no new rounds.')) : null,
    formError, writeKey,
    h('div', { class: 'actions' }, submit,
      h('a', { class: 'button secondary', href: monitor ? href(`/monitors/${monitor.id}`) : href('/') }, 'Cancel'),
      h('span', { class: 'spacer' }),
      monitor ? h('button', { type: 'button', class: 'danger', onclick: onDelete }, 'Delete monitor') : null))

  for (const input of /** @type {NodeListOf<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>} */ (form.querySelectorAll('input, select, textarea'))) input.addEventListener('input', () => clearError(input.name))

  function clearError (name) {
    if (!errors[name]) return
    errors[name].hidden = true
    form.querySelector(`#${name}`)?.removeAttribute('aria-invalid')
    form.querySelector(`#${name}-group`)?.removeAttribute('aria-invalid')
  }

  function showError (name, message) {
    const el = errors[name] ?? formError
    el.textContent = plainText(message)
    // The journey's live check may say the same already, just above.
    el.hidden = name === 'journey' && journey.said(el.textContent)
    // A message that names no field (a refused key, a failed delete) goes under the form.
    const target = name ? form.querySelector(`#${name}`) ?? form.querySelector(`#${name}-group`) : null
    target?.setAttribute('aria-invalid', 'true')
    return target ?? el
  }

  const checked = (name) => [...form.querySelectorAll(`input[name="${name}"]:checked`)].map((i) => /** @type {HTMLInputElement} */ (i).value)

  /** Checks made before sending; each problem names its field. */
  function problems (body) {
    const out = []
    let parsed = null
    try { parsed = new URL(body.url) } catch {}
    if (!body.url) out.push(['url', 'Enter the URL of the page to measure.'])
    else if (!parsed) out.push(['url', `“${body.url}” is not a full URL; write it like https://example.com/`])
    else if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') out.push(['url', `The URL must start with http:// or https://, not ${parsed.protocol}//`])
    const min = parsed && LAB_HOSTS.includes(parsed.hostname) ? 10 : 60
    if (!Number.isInteger(body.interval_s)) out.push(['interval_s', 'Enter a whole number of seconds.'])
    else if (body.interval_s < min) out.push(['interval_s', `The interval must be at least ${min} seconds${min === 60 ? ` (only lab pages on ${LAB_HOSTS.join(' or ')} may run every 10 s)` : ''}.`])
    else if (body.interval_s > 86400) out.push(['interval_s', 'The interval can be at most 86400 seconds (one day).'])
    if (!body.locations.length) out.push(['locations', 'Choose at least one location.'])
    if (!body.modes.length) out.push(['modes', 'Choose at least one mode.'])
    if (!body.browsers.length) out.push(['browsers', 'Choose at least one browser.'])
    if (!body.probes.length) out.push(['probes', 'Choose at least one probe.'])
    if (body.probes.includes('journey') && !body.journey) out.push(['journey', 'The journey probe runs the journey: write its steps, or untick the probe.'])
    if (!(body.min_effect_pct >= 0 && body.min_effect_pct <= 100)) out.push(['min_effect_pct', 'Enter a percentage from 0 to 100.'])
    if (!(body.min_effect_ms >= 0)) out.push(['min_effect_ms', 'Enter a number of milliseconds, 0 or more.'])
    return out
  }

  async function onSubmit (ev) {
    ev.preventDefault()
    for (const name of Object.keys(errors)) clearError(name)
    formError.hidden = true
    writeKey.hidden = true
    const body = {
      url: url.value.trim(),
      label: label.value.trim() || null,
      interval_s: interval.value === '' ? NaN : Number(interval.value),
      locations: checked('locations'),
      modes: checked('modes'),
      browsers: checked('browsers'),
      probes: checked('probes'),
      repeat_view: repeat.checked,
      options: { ...(monitor?.options ?? {}), filmstrip: filmstrip.value },
      aa_protocol: aa.value || null,
      min_effect_pct: minPct.value === '' ? NaN : Number(minPct.value),
      min_effect_ms: minMs.value === '' ? NaN : Number(minMs.value),
      // The text as written (the API reads YAML or JSON and names the step at fault); empty removes it.
      // Left out when there is none to keep or remove.
      journey: journey.text.value.trim() ? journey.text.value : monitor?.journey ? null : undefined
    }
    if (paused) body.paused = paused.checked
    const found = problems(body)
    if (found.length) {
      const targets = found.map(([name, message]) => showError(name, message))
      return focusFirst(targets[0])
    }
    submit.disabled = true
    try {
      const saved = monitor ? await api.updateMonitor(monitor.id, body) : await api.createMonitor(body)
      toast(monitor ? 'Saved' : 'Monitor added; the first round runs now')
      location.hash = href(`/monitors/${saved.id}`)
    } catch (/** @type {any} */ err) {
      const name = err instanceof ApiError ? (err.field ?? '').split('.')[0] : ''
      writeKey.hidden = err.status !== 403
      focusFirst(showError(name, err instanceof ApiError ? capitalise(err.message) : `Could not save: ${err.message}`))
    } finally {
      submit.disabled = false
    }
  }

  async function onDelete () {
    if (!confirm('Delete this monitor? It stops running; its results stay available for export.')) return
    try {
      await api.deleteMonitor(monitor.id)
      toast('Monitor deleted')
      location.hash = href('/')
    } catch (/** @type {any} */ err) {
      focusFirst(showError('', `Could not delete: ${err.message}`))
    }
  }

  ctx.afterMount(() => url.focus())
  return [
    h('div', { class: 'crumbs' }, h('a', { href: href('/') }, 'Overview'), monitor ? [' / ', h('a', { href: href(`/monitors/${monitor.id}`) }, monitor.label || monitor.url)] : null),
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, monitor ? 'Edit monitor' : 'Add a URL'),
      h('p', { class: 'sub' }, 'h3lens loads the page over HTTP/2 and HTTP/3 from each location, every interval, in a fresh browser context.'))),
    form
  ]
}

function focusFirst (el) {
  const target = el.matches?.('fieldset') ? el.querySelector('input') : el
  target?.focus?.()
}

// A message that begins with the field it is about ("url: port 6000 …",
// "journey.steps[0].selector: …") keeps the field's name as written.
const capitalise = (s) => (/^[a-z_][\w.[\]]*:/.test(s) ? s : s.charAt(0).toUpperCase() + s.slice(1))
