import { api, ApiError } from '../api.js'
import { h } from '../dom.js'

/** Add (or edit) a monitor; errors from the API appear next to their field. */
export async function renderMonitorForm (view, id) {
  const [locations, monitor] = await Promise.all([api.locations(), id ? api.monitor(id) : null])
  const errors = {}
  const field = (name, label, control, hint) => {
    errors[name] = h('p', { class: 'field-error', id: `${name}-error`, role: 'alert', hidden: true })
    control.setAttribute('aria-describedby', `${name}-error`)
    return h('div', { class: 'field' }, h('label', { for: name }, label), control, hint ? h('p', { class: 'hint' }, hint) : null, errors[name])
  }
  const url = h('input', { id: 'url', name: 'url', type: 'text', inputmode: 'url', required: true, placeholder: 'https://example.com/', value: monitor?.url ?? '', autocomplete: 'url' })
  const label = h('input', { id: 'label', name: 'label', type: 'text', value: monitor?.label ?? '' })
  const interval = h('input', { id: 'interval_s', name: 'interval_s', type: 'number', min: 10, step: 1, value: monitor?.interval_s ?? 300 })
  const locBoxes = locations.map((l) => h('label', { class: 'check' },
    h('input', { type: 'checkbox', name: 'locations', value: l.id, checked: monitor ? monitor.locations.includes(l.id) : true }), ` ${l.id}`, h('span', { class: 'muted' }, ` ${l.region}`)))
  const modeBoxes = ['h2', 'h3'].map((m) => h('label', { class: 'check' },
    h('input', { type: 'checkbox', name: 'modes', value: m, checked: monitor ? monitor.modes.includes(m) : true }), ` ${m.toUpperCase()}`))
  const formError = h('p', { class: 'field-error', role: 'alert', hidden: true })
  const submit = h('button', { type: 'submit' }, monitor ? 'Save' : 'Add monitor')

  const form = h('form', { novalidate: true, onsubmit: onSubmit },
    field('url', 'URL', url, 'The page to load, with http:// or https://'),
    field('label', 'Label (optional)', label),
    field('interval_s', 'Interval in seconds', interval, 'At least 60; lab pages may use 10'),
    h('fieldset', {}, h('legend', {}, 'Locations'), locBoxes, (errors.locations = h('p', { class: 'field-error', role: 'alert', hidden: true }))),
    h('fieldset', {}, h('legend', {}, 'Modes'), modeBoxes, (errors.modes = h('p', { class: 'field-error', role: 'alert', hidden: true }))),
    formError,
    h('div', { class: 'actions' }, submit, monitor ? h('button', { type: 'button', class: 'danger', onclick: onDelete }, 'Delete') : null))

  function showError (name, message) {
    const el = errors[name] ?? formError
    el.textContent = message
    el.hidden = false
    const input = form.querySelector(`[name="${name}"]`)
    input?.setAttribute('aria-invalid', 'true')
    input?.focus()
  }

  async function onSubmit (ev) {
    ev.preventDefault()
    for (const el of [...Object.values(errors), formError]) el.hidden = true
    form.querySelectorAll('[aria-invalid]').forEach((el) => el.removeAttribute('aria-invalid'))
    const checked = (name) => [...form.querySelectorAll(`input[name="${name}"]:checked`)].map((i) => i.value)
    if (!url.value.trim()) return showError('url', 'Enter the URL of the page to measure.')
    const body = {
      url: url.value.trim(),
      label: label.value.trim() || null,
      interval_s: Number(interval.value),
      locations: checked('locations'),
      modes: checked('modes')
    }
    if (!Number.isInteger(body.interval_s)) return showError('interval_s', 'Enter a whole number of seconds.')
    if (!body.locations.length) return showError('locations', 'Choose at least one location.')
    if (!body.modes.length) return showError('modes', 'Choose at least one mode.')
    submit.disabled = true
    try {
      const saved = monitor ? await api.updateMonitor(monitor.id, body) : await api.createMonitor(body)
      location.hash = `#/monitors/${saved.id}`
    } catch (err) {
      if (err instanceof ApiError) showError((err.field ?? '').split('.')[0], err.message)
      else showError('', `Could not save: ${err.message}`)
    } finally {
      submit.disabled = false
    }
  }

  async function onDelete () {
    if (!confirm('Delete this monitor? Its results stay available for export.')) return
    await api.deleteMonitor(monitor.id)
    location.hash = '#/'
  }

  view.replaceChildren(h('h1', {}, monitor ? 'Edit monitor' : 'Add a URL'), form)
  url.focus()
}
