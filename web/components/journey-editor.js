// The journey editor of the monitor form (docs/JOURNEYS.md): the steps as
// YAML or JSON text, checked by the API as one types (its message names the
// step and field), and "Try it", which has one location's agent run the
// journey once in the H2 arm and shows each step's outcome and the last
// frame. A trial stores nothing as a result.
import { api, ApiError } from '../api.js'
import { h, ms, plainText } from '../dom.js'

const CHECK_DELAY_MS = 400
const TRIAL_POLL_MS = 500
// A trial's journey has at most 3 minutes; the agent may be busy with a round first.
const TRIAL_WAIT_MS = 6 * 60_000

/**
 * @param {{ monitor: any, locations: any[], url: () => string, onText: (text: string) => void }} o
 *   url: the form's URL field now; onText: called as the text changes
 */
export function journeyEditor ({ monitor, locations, url, onText }) {
  const text = h('textarea', {
    id: 'journey', name: 'journey', rows: 12, spellcheck: 'false', class: 'code',
    placeholder: 'steps:\n  - { action: navigate, url: /login, name: open }\n  - { action: type, selector: "#user", text: demo }\n  - { action: type, selector: "#password", secret: "…" }\n  - { action: click, selector: "#login", name: login }'
  })
  text.value = monitor?.journey ? JSON.stringify(monitor.journey, null, 2) : ''
  const status = h('p', { class: 'hint', id: 'journey-status', 'aria-live': 'polite' })
  const where = h('select', { id: 'journey-location', 'aria-label': 'Location to try the journey at' },
    locations.map((l) => h('option', { value: l.id }, l.name)))
  const tryButton = h('button', { type: 'button', class: 'secondary small', id: 'journey-try', onclick: tryIt }, 'Try it')
  const trial = h('div', { id: 'journey-trial', 'aria-live': 'polite' })
  let timer = null
  let checked = 0

  async function check () {
    const mine = ++checked
    const value = text.value
    if (!value.trim()) {
      status.className = 'hint'
      status.textContent = 'No journey: the monitor loads its URL only.'
      return
    }
    try {
      const body = monitor && !url() ? { monitor_id: monitor.id, journey: value } : { url: url() || 'https://example.com/', journey: value }
      const answer = await api.checkJourney(body)
      if (mine !== checked) return
      status.className = 'hint ok'
      status.textContent = `${answer.steps} step${answer.steps === 1 ? '' : 's'}; measured on their own: ${answer.named_steps.length ? answer.named_steps.join(', ') : 'none (name a step, or use measure_start / measure_end)'}.`
      text.removeAttribute('aria-invalid')
    } catch (/** @type {any} */ err) {
      if (mine !== checked) return
      status.className = 'field-error'
      status.textContent = plainText(err instanceof ApiError ? err.message : `Cannot check: ${err.message}`)
      if (err instanceof ApiError && String(err.field ?? '').startsWith('journey')) text.setAttribute('aria-invalid', 'true')
    }
  }

  text.addEventListener('input', () => {
    onText(text.value)
    clearTimeout(timer)
    timer = setTimeout(check, CHECK_DELAY_MS)
  })

  async function tryIt () {
    tryButton.disabled = true
    trial.replaceChildren(h('p', { class: 'hint' }, 'Asking an agent at ', where.selectedOptions[0]?.textContent ?? where.value, '…'))
    try {
      const body = { location_id: where.value, journey: text.value, ...(monitor ? { monitor_id: monitor.id } : {}), ...(url() ? { url: url() } : {}) }
      let t = await api.tryJourney(body)
      const until = Date.now() + TRIAL_WAIT_MS
      while (t.state !== 'done' && Date.now() < until) {
        trial.replaceChildren(h('p', { class: 'hint' }, t.state === 'queued' ? 'Waiting for an agent of this location to take it…' : 'Running in the H2 arm…'))
        await new Promise((resolve) => setTimeout(resolve, TRIAL_POLL_MS))
        // Nobody is looking once the form has left the page: stop asking.
        if (!trial.isConnected) return
        t = await api.journeyTrial(t.id)
      }
      const shown = t.state === 'done' ? trialOutcome(t) : [h('p', { class: 'field-error' }, 'No agent of this location took the trial; is one running?')]
      trial.replaceChildren(...shown.filter((n) => n !== null))
    } catch (/** @type {any} */ err) {
      trial.replaceChildren(h('p', { class: 'field-error' }, err.message))
    } finally {
      tryButton.disabled = false
    }
  }

  if (text.value) check()
  const el = h('div', { class: 'field journey-editor' },
    h('label', { for: 'journey' }, 'Journey (optional)'),
    h('p', { class: 'hint', id: 'journey-hint' }, 'Steps in YAML or JSON: navigate, click, type (text or secret), select, wait_for, assert, eval, measure_start / measure_end. ',
      'A step with a name is compared on its own. A secret is stored encrypted and shown only as { stored: … }.'),
    text, status, h('p', { class: 'field-error', id: 'journey-error', role: 'alert', hidden: true }),
    h('div', { class: 'journey-try' }, tryButton, ' at ', where, h('span', { class: 'hint' }, ' once, in the H2 arm; nothing is stored as a result')),
    trial)
  text.setAttribute('aria-describedby', 'journey-hint journey-status journey-error')
  /** Whether the live check shows this message now (as an error). @param {string} message */
  const said = (message) => status.classList.contains('field-error') && status.textContent?.toLowerCase() === message.toLowerCase()
  return { el, text, said, error: /** @type {HTMLElement} */ (el.querySelector('#journey-error')) }
}

/** A trial's outcome: its verdict, each step, and the last frame. @param {any} t */
function trialOutcome (t) {
  const o = t.outcome ?? { status: 'error', error: 'no outcome', steps: [] }
  const ok = o.status === 'ok'
  return [
    h('p', { class: ok ? 'notice ok' : 'notice warn', id: 'journey-verdict' }, ok ? `Every step passed, over ${o.observed_protocol ?? 'H2'}.` : o.error ?? `The journey ended: ${o.status}`),
    h('div', { class: 'table-scroll' },
      h('table', { class: 'grid', id: 'journey-steps' },
        h('thead', {}, h('tr', {}, ['#', 'Action', 'Name', 'Outcome', 'Time', 'TTFB'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, (o.steps ?? []).map((s) => h('tr', { class: s.ok ? null : 'bad' },
          h('td', { class: 'num' }, s.index + 1), h('td', {}, s.action), h('td', {}, s.name ?? ''),
          h('td', {}, s.ok ? 'ok' : `${s.status}: ${s.error ?? ''}`), h('td', { class: 'num' }, ms(s.ms)), h('td', { class: 'num' }, s.navigated ? ms(s.ttfb_ms) : '')))))),
    t.screenshot ? h('img', { id: 'journey-shot', class: 'journey-shot', alt: 'The page as the journey left it', src: `data:image/jpeg;base64,${t.screenshot}` }) : null
  ]
}
