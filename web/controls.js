// The header's controls: the time window (kept in the hash query), the
// custom from/to range, "last updated" and auto-refresh.
import { h, plainText } from './dom.js'
import { askForKey } from './auth.js'
import { WINDOWS, DEFAULT_WINDOW, parseHash, setParams, timeWindow } from './query.js'

const AUTO_KEY = 'h3lens.autoRefresh'
const CHOICES = [...Object.keys(WINDOWS), 'custom']

/**
 * An element index.html always has (toolbar, subbar, view).
 * @param {string} id
 */
const byId = (id) => /** @type {HTMLElement} */ (document.getElementById(id))

let els = null

/** Build the controls once. `onRefresh` reloads the current view. */
export function mountControls ({ onRefresh }) {
  const radios = CHOICES.map((w) => {
    const input = h('input', { type: 'radio', name: 'window', id: `window-${w}`, value: w, onchange: () => chooseWindow(w) })
    return h('span', { class: 'seg' }, input, h('label', { for: `window-${w}` }, w === 'custom' ? 'Custom' : w))
  })
  const windowGroup = h('fieldset', { class: 'segmented', id: 'window-group' }, h('legend', { class: 'sr-only' }, 'Time window'), radios)
  const updated = h('span', { class: 'updated', id: 'updated' })
  const auto = h('input', { type: 'checkbox', id: 'auto-refresh', checked: autoRefreshOn(), onchange: (ev) => localStorage.setItem(AUTO_KEY, ev.target.checked ? '1' : '0') })
  const refresh = h('button', { type: 'button', class: 'icon-button', id: 'refresh-now', title: 'Refresh now', onclick: onRefresh },
    h('span', { 'aria-hidden': 'true' }, '↻'), h('span', { class: 'sr-only' }, 'Refresh now'))
  const refreshGroup = h('div', { class: 'refresh' }, updated, refresh, h('label', { class: 'auto', for: 'auto-refresh' }, auto, ' Auto-refresh'))
  // Shown once a key is stored: change it (say, read → write) or forget it.
  const key = h('button', { type: 'button', class: 'secondary small', id: 'api-key-button', title: 'Change or forget the stored API key', onclick: async () => { if (await askForKey()) onRefresh(); else syncKeyButton() } }, 'API key')
  byId('toolbar').replaceChildren(windowGroup, refreshGroup, key)

  const from = h('input', { type: 'datetime-local', id: 'custom-from', name: 'from', required: true, 'aria-describedby': 'custom-error' })
  const to = h('input', { type: 'datetime-local', id: 'custom-to', name: 'to', 'aria-describedby': 'custom-error custom-hint' })
  const error = h('p', { class: 'field-error', id: 'custom-error', role: 'alert', hidden: true })
  const form = h('form', { class: 'custom-range', novalidate: true, onsubmit: applyCustom },
    h('label', { for: 'custom-from' }, 'From'), from,
    h('label', { for: 'custom-to' }, 'To'), to,
    h('span', { class: 'hint', id: 'custom-hint' }, 'Leave “To” empty for now'),
    h('button', { type: 'submit', class: 'small' }, 'Apply'), error)
  byId('subbar').replaceChildren(form)
  els = { windowGroup, updated, refreshGroup, from, to, error, refresh, key }
  syncKeyButton()
}

function syncKeyButton () {
  let stored = null
  try { stored = localStorage.getItem('h3lens.apiKey') } catch {}
  els.key.hidden = !stored
}

function chooseWindow (w) {
  if (w !== 'custom') return setParams({ window: w, from: null, to: null })
  // Start the custom range from what is on screen now.
  const current = timeWindow(parseHash().params)
  els.from.value = toLocalInput(current.from)
  els.to.value = ''
  byId('subbar').hidden = false
  els.from.focus()
}

function applyCustom (ev) {
  ev.preventDefault()
  const from = Date.parse(els.from.value)
  const to = els.to.value ? Date.parse(els.to.value) : null
  let problem = null
  if (!Number.isFinite(from)) problem = 'Choose when the window starts.'
  else if (to !== null && !(to > from)) problem = '“To” must be after “From”.'
  else if (from > Date.now()) problem = '“From” is in the future.'
  els.error.textContent = plainText(problem ?? '')
  els.error.hidden = !problem
  els.from.toggleAttribute('aria-invalid', Boolean(problem))
  if (problem) return els.from.focus()
  setParams({ window: 'custom', from: new Date(from).toISOString(), to: to === null ? null : new Date(to).toISOString() })
}

/**
 * Show the controls a view uses and reflect the current query.
 * @param {{ window: boolean, refresh: boolean }} uses
 */
export function syncControls (uses) {
  const params = parseHash().params
  const name = params.get('window') ?? DEFAULT_WINDOW
  els.windowGroup.hidden = !uses.window
  els.refreshGroup.hidden = !uses.refresh
  for (const input of els.windowGroup.querySelectorAll('input')) input.checked = input.value === name
  const custom = uses.window && name === 'custom'
  byId('subbar').hidden = !custom
  if (custom) {
    const w = timeWindow(params)
    els.from.value = toLocalInput(w.from)
    els.to.value = params.get('to') ? toLocalInput(w.to) : ''
    els.error.hidden = true
  }
}

export function setUpdated (date) {
  syncKeyButton()
  els.updated.textContent = `Updated ${date.toLocaleTimeString()}`
  els.updated.title = date.toLocaleString()
}

export function setBusy (busy) {
  els.refresh.classList.toggle('spinning', busy)
  byId('view').setAttribute('aria-busy', busy ? 'true' : 'false')
}

export function autoRefreshOn () {
  try { return localStorage.getItem(AUTO_KEY) !== '0' } catch { return true }
}

/** A Date as the value of a datetime-local input, in local time. */
function toLocalInput (d) {
  const t = new Date(+d - new Date(d).getTimezoneOffset() * 60e3)
  return t.toISOString().slice(0, 16)
}
