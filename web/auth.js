// "Enter your API key": shown when the API answers 401. Several requests
// failing at once share one prompt.
import { h } from './dom.js'

const KEY_STORAGE = 'h3lens.apiKey'
let pending = null

/**
 * @param {string} [reason] the server's message
 * @returns {Promise<boolean>} true when a key was stored (retry), false when dismissed
 */
export function askForKey (reason) {
  pending ??= prompt(reason).finally(() => { pending = null })
  return pending
}

function prompt (reason) {
  const refused = /not valid|unknown|revoked/i.test(reason ?? '')
  const stored = localStorage.getItem(KEY_STORAGE)
  const dialog = /** @type {HTMLDialogElement} */ (document.getElementById('key-dialog'))
  return new Promise((resolve) => {
    const input = h('input', { id: 'api-key', name: 'api-key', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false', 'aria-describedby': 'api-key-hint api-key-error' })
    const error = h('p', { class: 'field-error', id: 'api-key-error', role: 'alert', hidden: true }, 'Enter the key, or choose Cancel.')
    const form = h('form', { method: 'dialog', class: 'key-form' },
      h('h2', { id: 'key-title' }, 'Enter your API key'),
      refused ? h('p', { class: 'field-error' }, 'The stored key was refused: it is unknown or revoked.') : null,
      h('p', { id: 'api-key-hint', class: 'hint' },
        'This h3lens needs an API key. Its first start leaves an admin key in ', h('code', {}, '<data dir>/admin-key'),
        '; ', h('code', {}, 'h3lens keys create --role read'), ' makes a read-only one. The key stays in this browser (localStorage) and is sent as a bearer token.'),
      h('div', { class: 'field' }, h('label', { for: 'api-key' }, 'API key'), input, error),
      h('div', { class: 'actions' },
        h('button', { type: 'submit', value: 'saved' }, 'Save and retry'),
        h('button', { type: 'button', class: 'secondary', onclick: () => dialog.close('cancel') }, 'Cancel'),
        h('span', { class: 'spacer' }),
        stored ? h('button', { type: 'button', class: 'danger', onclick: forget }, 'Forget stored key') : null))
    function forget () {
      localStorage.removeItem(KEY_STORAGE)
      dialog.close('forgotten')
    }
    form.addEventListener('submit', (ev) => {
      const key = input.value.trim()
      if (!key) {
        ev.preventDefault()
        error.hidden = false
        input.setAttribute('aria-invalid', 'true')
        input.focus()
        return
      }
      localStorage.setItem(KEY_STORAGE, key)
      dialog.returnValue = 'saved'
    })
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'saved'), { once: true })
    dialog.returnValue = ''
    dialog.replaceChildren(form)
    dialog.showModal()
    input.focus()
  })
}
