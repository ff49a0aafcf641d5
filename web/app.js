// Hash router: each view is a small module that renders into <main>.
import { stateMessage } from './dom.js'
import { renderMonitors } from './views/monitors.js'
import { renderMonitor } from './views/monitor.js'
import { renderMonitorForm } from './views/monitor-form.js'
import { renderLocations } from './views/locations.js'

const routes = [
  [/^#?\/?$/, () => renderMonitors],
  [/^#\/new$/, () => renderMonitorForm],
  [/^#\/monitors\/(\d+)\/edit$/, () => renderMonitorForm],
  [/^#\/monitors\/(\d+)$/, () => renderMonitor],
  [/^#\/locations$/, () => renderLocations]
]

let cleanup = null

async function route () {
  const view = document.getElementById('view')
  const hash = location.hash.split('?')[0] || '#/'
  cleanup?.()
  cleanup = null
  for (const [re, pick] of routes) {
    const m = re.exec(hash)
    if (!m) continue
    view.replaceChildren(stateMessage('Loading…'))
    try {
      cleanup = await pick()(view, ...m.slice(1)) ?? null
    } catch (err) {
      view.replaceChildren(stateMessage(`Could not load this page: ${err.message}`, 'error'))
    }
    for (const a of document.querySelectorAll('header nav a')) {
      a.toggleAttribute('aria-current', a.getAttribute('href') === hash)
    }
    return
  }
  view.replaceChildren(stateMessage('There is no such page.', 'error'))
}

window.addEventListener('hashchange', route)
route()
