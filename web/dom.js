// Tiny DOM helpers: build elements without innerHTML, so nothing from the
// API is ever interpreted as markup.

/**
 * h('a', { href: '#/' }, 'text', child)
 * @param {string} tag
 * @param {Record<string, any>} [attrs]
 * @param {...any} children
 */
export function h (tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v)
    else if (k === 'class') el.className = v
    else el.setAttribute(k, v === true ? '' : v)
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue
    el.append(c instanceof Node ? c : document.createTextNode(String(c)))
  }
  return el
}

export function ms (v) {
  if (v === null || v === undefined) return '—'
  return v >= 10000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`
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

export function stateMessage (text, kind = '') {
  return h('p', { class: `state ${kind}` }, text)
}
