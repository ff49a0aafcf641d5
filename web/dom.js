// Tiny DOM helpers and formatters. Elements are built without innerHTML, so
// nothing that comes from the API is ever interpreted as markup.

// The attributes a browser shows or reads aloud, as text.
const SHOWN_ATTRIBUTES = new Set(['title', 'aria-label', 'alt', 'placeholder'])

/**
 * h('a', { href: '#/', class: 'x', onclick: fn }, 'text', child, [more])
 * @template {string} K
 * @param {K} tag
 * @param {Record<string, any> | null} [attrs]
 * @param {...any} children
 * @returns {K extends keyof HTMLElementTagNameMap ? HTMLElementTagNameMap[K] : HTMLElement} the element createElement makes for the tag
 */
export function h (tag, attrs = {}, ...children) {
  const el = /** @type {K extends keyof HTMLElementTagNameMap ? HTMLElementTagNameMap[K] : HTMLElement} */ (document.createElement(tag))
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v)
    else if (k === 'class') el.className = Array.isArray(v) ? v.filter(Boolean).join(' ') : v
    else if (k === 'value' || k === 'checked') el[k] = v
    else el.setAttribute(k, v === true ? '' : SHOWN_ATTRIBUTES.has(k) ? plainText(v) : v)
  }
  append(el, children)
  return el
}

function append (el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue
    el.append(c instanceof Node ? c : document.createTextNode(plainText(c)))
  }
}

// Unicode's directional embeddings, overrides and isolates (U+202A–U+202E,
// U+2066–U+2069). Shown, one in a label would reverse the text after it,
// the rest of the label's sentence included, or make a name read as another
// (U+202E then "moc.elpmaxe" shows as "example.com"). Right-to-left text
// needs none of them: the browser orders it by itself.
const DIRECTIONAL = /[\u202A-\u202E\u2066-\u2069]/g

/**
 * Text as the dashboard shows it: without directional formatting characters
 * (what is stored keeps them; a form shows the stored value as it is).
 * @param {unknown} text
 */
export function plainText (text) {
  return String(text).replace(DIRECTIONAL, '')
}

/** A confirmation dialog, its text shown as the dashboard shows text. @param {string} text */
export function ask (text) {
  return confirm(plainText(text))
}

/** Text only for screen readers. */
export const srOnly = (text) => h('span', { class: 'sr-only' }, text)

export function ms (v, { signed = false } = {}) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—'
  // Below the last digit shown it is zero, not "−0.0 ms"; a value under a
  // tenth gets a second digit, so an interval that excludes 0 by 0.03 ms
  // does not read as reaching it.
  if (Math.abs(v) < 0.005) v = 0
  const sign = signed && v > 0 ? '+' : v < 0 ? '−' : ''
  const a = Math.abs(v)
  if (a >= 10000) return `${sign}${(a / 1000).toFixed(1)} s`
  if (a >= 100) return `${sign}${Math.round(a)} ms`
  if (a >= 10) return `${sign}${a.toFixed(0)} ms`
  return `${sign}${a.toFixed(a > 0 && a < 0.05 ? 2 : 1)} ms`
}

export function pct (v, { signed = false, digits = 1 } = {}) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—'
  // Below the last digit shown it is zero, not "−0.0%".
  if (Math.abs(v) < 0.5 * 10 ** -digits) v = 0
  const sign = signed && v > 0 ? '+' : v < 0 ? '−' : ''
  return `${sign}${Math.abs(v).toFixed(Math.abs(v) >= 10 ? 0 : digits)}%`
}

/**
 * A 0..1 share as a percentage; none at all is "0%" (below 1e-9 is none:
 * a Wilson bound of 0 of n computes as 1e-17 or so).
 */
export const share = (v) => (v === null || v === undefined ? '—' : Math.abs(v) < 1e-9 ? '0%' : pct(v * 100, { digits: v > 0 && v < 0.01 ? 2 : 1 }))

export function bytes (v) {
  if (v === null || v === undefined) return '—'
  if (v >= 1048576) return `${(v / 1048576).toFixed(1)} MB`
  if (v >= 1024) return `${(v / 1024).toFixed(v >= 10240 ? 0 : 1)} kB`
  return `${v} B`
}

export function kbps (v) {
  if (v === null || v === undefined) return '—'
  return v >= 1000 ? `${(v / 1000).toFixed(v % 1000 ? 1 : 0)} Mbit/s` : `${v} kbit/s`
}

/** Seconds as "5 min", "1 h", "90 s". */
export function duration (s) {
  if (s % 3600 === 0) return `${s / 3600} h`
  if (s % 60 === 0) return `${s / 60} min`
  return `${s} s`
}

export function ago (iso) {
  if (!iso) return 'never'
  const s = Math.round((Date.now() - Date.parse(iso)) / 1000)
  if (s < 5) return 'just now'
  if (s < 90) return `${s} s ago`
  if (s < 5400) return `${Math.round(s / 60)} min ago`
  if (s < 129600) return `${Math.round(s / 3600)} h ago`
  return `${Math.round(s / 86400)} d ago`
}

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })
const dateTimeFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' })
export const clock = (d) => timeFmt.format(new Date(d))
export const when = (d) => dateTimeFmt.format(new Date(d))

/** <time> with the full date as a tooltip. */
export const timeEl = (iso, text) => h('time', { datetime: iso, title: new Date(iso).toLocaleString() }, text ?? when(iso))

export const VERDICT = {
  h3_faster: { label: 'H3 faster', short: 'faster', glyph: '▼', cls: 'v-faster' },
  h3_slower: { label: 'H3 slower', short: 'slower', glyph: '▲', cls: 'v-slower' },
  no_clear_difference: { label: 'No clear difference', short: 'no clear diff.', glyph: '=', cls: 'v-same' },
  insufficient_data: { label: 'Not enough data', short: 'no data', glyph: '·', cls: 'v-none' },
  h3_not_supported: { label: 'H3 not supported', short: 'no H3', glyph: '✕', cls: 'v-unsupported' }
}

/** Verdict class, stronger shade when the effect is large (|Δ| ≥ 15%). */
export function verdictClass (verdict, deltaPct) {
  const v = VERDICT[verdict] ?? VERDICT.insufficient_data
  const strong = (verdict === 'h3_faster' || verdict === 'h3_slower') && Math.abs(deltaPct ?? 0) >= 15
  return `${v.cls}${strong ? ' strong' : ''}`
}

/**
 * What to call the two arms of a comparison: H2 and H3, or for an A/A
 * calibration monitor (both arms load with one protocol) "A (h2)" and "B (h2)".
 * @param {{ aa_protocol?: string | null }} [cmp]
 */
export function armNames (cmp) {
  const aa = cmp?.aa_protocol
  if (!aa) return { aa: null, h2: 'H2', h3: 'H3', verdict: (v) => (VERDICT[v] ?? VERDICT.insufficient_data).label }
  const names = { h3_faster: 'B faster', h3_slower: 'B slower' }
  return { aa, h2: `A (${aa})`, h3: `B (${aa})`, verdict: (v) => names[v] ?? (VERDICT[v] ?? VERDICT.insufficient_data).label }
}

/** A whole number with thousands separators: 1,000. */
export const count = (n) => (n === null || n === undefined ? '—' : Number(n).toLocaleString('en-US'))

/** "p = 0.003", "p < 0.001". */
export function pValue (p) {
  if (p === null || p === undefined || !Number.isFinite(p)) return 'p —'
  if (p < 0.001) return 'p < 0.001'
  return `p = ${p >= 0.1 ? p.toFixed(2) : p.toFixed(3)}`
}

/** A signed interval of milliseconds: "−12 ms … −3.1 ms". */
export function msInterval (lo, hi) {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return '—'
  return `${ms(lo, { signed: true })} … ${ms(hi, { signed: true })}`
}

/** A share with its 95% interval: "3.1% (1.2–6.0%)". */
export function shareInterval (x) {
  if (!x || x.rate === null || x.rate === undefined) return '—'
  if (x.lo === null || x.lo === undefined) return share(x.rate)
  return `${share(x.rate)} (${share(x.lo).replace('%', '')}–${share(x.hi)})`
}

// ---- Designed states: loading, empty, error. Never a blank page. ----

export function loadingState (text = 'Loading…') {
  return h('div', { class: 'state loading', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), text)
}

/** A skeleton block of roughly the final height while a section loads. */
export function skeleton (height = 160, label = 'Loading…') {
  const el = h('div', { class: 'skeleton', role: 'status' }, srOnly(label))
  el.style.height = `${height}px`
  return el
}

export function emptyState (title, detail, action) {
  return h('div', { class: 'state empty' }, h('p', { class: 'state-title' }, title), detail ? h('p', {}, detail) : null, action ?? null)
}

export function errorState (err, retry) {
  const message = err?.message ?? String(err)
  return h('div', { class: 'state error', role: 'alert' },
    h('p', { class: 'state-title' }, err?.title ?? 'Something went wrong'),
    h('p', {}, message),
    err?.status === 404
      ? h('a', { class: 'button secondary', href: '#/' }, 'Go to the overview')
      : retry ? h('button', { type: 'button', class: 'secondary', onclick: retry }, err?.status === 401 ? 'Enter API key' : 'Try again') : null)
}

/**
 * A titled section whose body is filled in later (its own loading/error states).
 * @param {string} title
 * @param {{ id?: string, actions?: any, intro?: any, flush?: boolean }} [opts]
 */
export function section (title, { id, actions, intro, flush = false } = {}) {
  const body = h('div', { class: `section-body${flush ? ' flush' : ''}` }, skeleton())
  const el = h('section', { class: 'panel', id, 'aria-labelledby': id ? `${id}-title` : null },
    h('div', { class: 'panel-head' }, h('h2', { id: id ? `${id}-title` : null }, title), actions ? h('div', { class: 'panel-actions' }, actions) : null),
    intro ? h(typeof intro === 'string' ? 'p' : 'div', { class: 'panel-intro' }, intro) : null,
    body)
  return { el, body, fill: (...nodes) => body.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false)) }
}

let toastTimer = null
/** A short message at the bottom of the screen (refresh failures, saved). */
export function toast (text) {
  // index.html has it.
  const el = /** @type {HTMLElement} */ (document.getElementById('toast'))
  el.textContent = plainText(text)
  el.hidden = false
  clearTimeout(toastTimer)
  toastTimer = setTimeout(() => { el.hidden = true }, 6000)
}
