// Hash router. A view module exports `render(ctx)`, which fetches what it
// needs and returns the nodes to show; the router owns the page states
// (loading, error, refresh) so no view is ever blank, and it re-renders in
// place ("soft") on auto-refresh or when only the query changed.
import { h, loadingState, errorState, toast } from './dom.js'
import { parseHash } from './query.js'
import { loadCatalogue } from './catalogue.js'
import { mountControls, syncControls, setUpdated, setBusy, autoRefreshOn } from './controls.js'
import * as overview from './views/overview.js'
import * as monitor from './views/monitor.js'
import * as monitorForm from './views/monitor-form.js'
import * as result from './views/result.js'
import * as locations from './views/locations.js'
import * as alerts from './views/alerts.js'
import * as rum from './views/rum.js'
import * as rumSite from './views/rum-site.js'

const REFRESH_MS = 30000

// window: uses the time window; refresh: re-fetched periodically.
const routes = [
  { re: /^\/$/, view: overview, nav: 'overview', window: true, refresh: true },
  { re: /^\/new$/, view: monitorForm, nav: 'new', window: false, refresh: false },
  { re: /^\/monitors\/(\d+)\/edit$/, view: monitorForm, nav: 'overview', window: false, refresh: false },
  { re: /^\/monitors\/(\d+)$/, view: monitor, nav: 'overview', window: true, refresh: true },
  { re: /^\/results\/(\d+)$/, view: result, nav: 'overview', window: false, refresh: false },
  { re: /^\/locations$/, view: locations, nav: 'locations', window: false, refresh: true },
  { re: /^\/alerts$/, view: alerts, nav: 'alerts', window: false, refresh: true },
  { re: /^\/rum$/, view: rum, nav: 'rum', window: false, refresh: false },
  { re: /^\/rum\/(\d+)$/, view: rumSite, nav: 'rum', window: true, refresh: true }
]

/** @typedef {typeof routes[number]} Route */

// index.html has it.
const root = /** @type {HTMLElement} */ (document.getElementById('view'))
let generation = 0
let shown = null // { path, disposers }
let inFlight = false

async function render ({ soft = false, fresh = false } = {}) {
  const { path, params } = parseHash()
  const match = routes.map((r) => [r, r.re.exec(path)]).find(([, m]) => m)
  const samePage = shown?.path === path
  soft = soft || samePage
  const gen = ++generation
  if (!match) return show(gen, path, [notFound()], [])
  // find kept only a route whose pattern matched.
  const [route, m] = /** @type {[Route, RegExpExecArray]} */ (match)
  for (const a of /** @type {NodeListOf<HTMLAnchorElement>} */ (document.querySelectorAll('header nav a'))) a.toggleAttribute('aria-current', a.dataset.nav === route.nav)
  syncControls(route)
  if (!soft) {
    dispose()
    root.replaceChildren(loadingState())
  }
  const disposers = []
  const mounted = []
  const ctx = {
    params: m.slice(1),
    query: params,
    soft,
    // The ↻ button: computed answers, not the ones the API keeps for a minute.
    fresh,
    onDispose: (fn) => disposers.push(fn),
    afterMount: (fn) => mounted.push(fn),
    isCurrent: () => gen === generation,
    rerender: () => render({ soft: true })
  }
  inFlight = true
  setBusy(true)
  try {
    await loadCatalogue()
    const nodes = [await route.view.render(ctx)].flat(Infinity).filter(Boolean)
    if (gen !== generation) return disposers.forEach((fn) => fn())
    show(gen, path, nodes, disposers)
    for (const fn of mounted) fn()
    if (route.refresh) setUpdated(new Date())
    if (!soft) document.title = `${titleOf(nodes) ?? 'h3lens'} · h3lens`
  } catch (/** @type {any} */ err) {
    if (gen !== generation) return
    // A refresh that finds the page's subject gone (a monitor deleted
    // meanwhile) says so in place of the page; other failures leave it.
    if (soft && err?.status !== 404 && root.querySelector('.panel, table, form')) return toast(`Could not refresh: ${err.message}`)
    const state = errorState(err, () => render())
    show(gen, path, [state], disposers)
    if (!soft) document.title = `${titleOf([state]) ?? 'Error'} · h3lens`
  } finally {
    if (gen === generation) {
      inFlight = false
      setBusy(false)
    }
  }
}

/** Replace the page, keeping keyboard focus on the same control when it still exists. */
function show (gen, path, nodes, disposers) {
  const focusedId = document.activeElement && root.contains(document.activeElement) ? document.activeElement.id : null
  const scroll = window.scrollY
  const same = shown?.path === path
  dispose()
  root.replaceChildren(...nodes)
  shown = { path, disposers }
  if (focusedId) document.getElementById(focusedId)?.focus({ preventScroll: true })
  if (same) window.scrollTo(0, scroll)
  else if (!root.contains(document.activeElement)) root.focus({ preventScroll: true })
}

function dispose () {
  for (const fn of shown?.disposers ?? []) {
    try { fn() } catch {}
  }
  if (shown) shown.disposers = []
}

function titleOf (nodes) {
  const h1 = nodes.map((n) => (n.matches?.('h1') ? n : n.querySelector?.('h1'))).find(Boolean)
  if (!h1) return nodes.some((n) => n.matches?.('.state.error')) ? nodes.map((n) => n.querySelector?.('.state-title')?.textContent).find(Boolean) ?? null : null
  // The heading's own words: a badge beside them ("paused") is not part of the name.
  const words = [...h1.childNodes].filter((c) => !(c instanceof Element && c.classList.contains('badge'))).map((c) => c.textContent).join('')
  return words.trim() || null
}

function notFound () {
  return h('div', { class: 'state error' }, h('p', { class: 'state-title' }, 'There is no such page'),
    h('p', {}, h('a', { href: '#/' }, 'Go to the overview')))
}

mountControls({ onRefresh: () => render({ soft: true, fresh: true }) })
const skipLink = /** @type {HTMLElement} */ (document.getElementById('skip-link'))
skipLink.addEventListener('click', (ev) => {
  ev.preventDefault()
  root.focus()
})
window.addEventListener('hashchange', () => render())
// Charts pick their colours from the theme; redraw when it changes.
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => render({ soft: true }))
setInterval(() => {
  const route = routes.find((r) => r.re.test(parseHash().path))
  if (!route?.refresh || inFlight || document.hidden || !autoRefreshOn()) return
  // Not while the user is in the middle of something on the page.
  if (document.querySelector('dialog[open], #view details[open], #view [data-hold-refresh]')) return
  render({ soft: true })
}, REFRESH_MS)
render()
