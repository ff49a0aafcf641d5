// Real users: the sites whose visitors send beacons, with their install
// tags, and a form to add one. A site's own page is ./rum-site.js.
import { api } from '../api.js'
import { ask, count, emptyState, h, plainText, toast } from '../dom.js'
import { href } from '../query.js'

export async function render (ctx) {
  const sites = await api.rumSites()
  const head = h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Real users'),
    h('p', { class: 'sub' }, 'Beacons from the visitors of your sites: the protocol, connection and web vitals of every page view, per region, beside the lab.')))
  // The list is redrawn in place when a site is added, the form and its install tag kept.
  const list = h('div', { id: 'rum-sites' }, siteList(sites, ctx))
  return [head, list, addForm(ctx, async () => list.replaceChildren(siteList(await api.rumSites(), ctx)))]
}

/**
 * @param {any[]} sites
 * @param {any} ctx
 */
function siteList (sites, ctx) {
  return sites.length
    ? h('div', { class: 'table-scroll' }, h('table', { class: 'grid rum-sites' },
        h('thead', {}, h('tr', {}, ['Site', 'Origins', 'Sample rate', 'Key', ''].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, sites.map((s) => h('tr', {},
          h('th', { scope: 'row' }, h('a', { href: href(`/rum/${s.id}`) }, s.name)),
          h('td', { class: 'mono' }, s.origins.join(' ')),
          h('td', {}, `${Math.round(s.sample_rate * 1000) / 10}% of page views`),
          h('td', { class: 'mono' }, s.key),
          h('td', {}, h('button', { type: 'button', class: 'secondary small', onclick: () => revoke(s, ctx) }, 'Revoke')))))))
    : emptyState('No site yet', 'Add one below, then put its install tag in the <head> of its pages.')
}

async function revoke (site, ctx) {
  if (!ask(`Revoke the key of ${site.name}? Its beacons are refused from then on; the ones stored stay.`)) return
  try {
    await api.revokeRumSite(site.id)
    toast(`${site.name} revoked`)
    ctx.rerender()
  } catch (/** @type {any} */ err) {
    toast(err.message)
  }
}

/**
 * @param {any} ctx
 * @param {() => Promise<void>} onAdded redraws the list of sites
 */
function addForm (ctx, onAdded) {
  const error = h('p', { class: 'form-error', role: 'alert', hidden: true })
  const result = h('div', { class: 'install', hidden: true })
  const form = h('form', { class: 'panel form rum-form', 'aria-labelledby': 'rum-add-title' },
    h('div', { class: 'panel-head' }, h('h2', { id: 'rum-add-title' }, 'Add a site')),
    h('div', { class: 'section-body' },
      h('label', { for: 'rum-name' }, 'Name'), h('input', { id: 'rum-name', name: 'name', type: 'text', required: true, maxlength: 100, placeholder: 'shop' }),
      h('label', { for: 'rum-origins' }, 'Origins its pages are served from, one a line'),
      h('textarea', { id: 'rum-origins', name: 'origins', class: 'code', rows: 2, required: true, placeholder: 'https://www.example.com' }),
      h('p', { class: 'hint' }, 'A beacon is accepted only when its Origin header is one of these.'),
      h('label', { for: 'rum-sample' }, 'Share of page views that send a beacon'),
      h('input', { id: 'rum-sample', name: 'sample', type: 'number', min: 0.001, max: 1, step: 'any', value: '1' }),
      error,
      h('button', { type: 'submit' }, 'Add site'),
      result))
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault()
    error.hidden = true
    const data = new FormData(form)
    try {
      const site = await api.createRumSite({
        name: String(data.get('name')),
        // One a line: a line is one origin as typed, spaces and all, so a mistake is named whole.
        origins: String(data.get('origins')).split(/\r?\n/).map((o) => o.trim()).filter(Boolean),
        sample_rate: Number(data.get('sample'))
      })
      result.hidden = false
      result.replaceChildren(h('p', {}, h('b', {}, `${site.name} added. `), 'Put this in the <head> of its pages:'),
        h('pre', { class: 'mono tag' }, site.install.tag),
        h('p', {}, h('a', { href: href(`/rum/${site.id}`) }, `Open the Real users page of ${site.name}`), ` · key ${site.key} · ${count(site.origins.length)} origin${site.origins.length === 1 ? '' : 's'}`))
      form.dataset.holdRefresh = 'true'
      await onAdded().catch(() => {})
    } catch (/** @type {any} */ err) {
      error.hidden = false
      // The API's message names its field already ("origins.0: …").
      error.textContent = plainText(err.field && !String(err.message).startsWith(`${err.field}:`) ? `${err.field}: ${err.message}` : err.message)
    }
  })
  ctx.onDispose(() => form.remove())
  return form
}
