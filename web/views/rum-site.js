// One site's real users: per region its page views, the share over HTTP/3
// beside the lab's returning-visit share, the association of H3 with TTFB
// and LCP within strata, the share over time, and each protocol's
// percentiles per region and browser.
import { api } from '../api.js'
import { h, count, section, errorState, emptyState } from '../dom.js'
import { href, timeWindow } from '../query.js'
import { associationNotice, regionsTable, protocolTable } from '../components/real-users.js'
import { shareChart } from '../components/charts.js'

export async function render (ctx) {
  const id = ctx.params[0]
  const win = timeWindow(ctx.query)
  const range = { from: win.from, to: win.to }
  const site = await api.rumSite(id)
  const bucket = +win.to - +win.from > 3 * 86400e3 ? '1d' : '1h'
  const regions = section('Regions', { id: 'rum-regions', intro: 'A region is a location and the countries it stands for (set with h3lens rum countries, or PATCH /api/v1/locations/{id}; the Locations page shows them). H3 share: page views whose document came over the network with a known protocol. Beside it, the lab\'s auto arm at that location on its returning visit.' })
  const trend = section('Share over HTTP/3 over time', { id: 'rum-trend' })
  // Each protocol's own page views, as they came: no comparison (the regions table above makes that).
  const asObserved = 'Each protocol\'s own page views as they came, with the number each percentile rests on. Not a comparison: the page views over H3 and over H2 differ in more than their protocol (country, network, returning visits, browsers). The H3 − H2 columns of the regions table compare like with like.'
  const ttfb = section('TTFB by protocol, as observed', { id: 'rum-ttfb', flush: true, intro: asObserved })
  const lcp = section('LCP by protocol, as observed', { id: 'rum-lcp', flush: true, intro: asObserved })
  const summary = api.rumSummary(id, range)
  const fills = [
    summary.then((s) => regions.fill(s.regions[0].page_views ? [associationNotice(s), regionsTable(s), legend(), labNote(s)] : emptyState('No page views in this window', 'Beacons appear once pages with the install tag are visited.')), (err) => regions.fill(errorState(err))),
    summary.then((s) => { ttfb.fill(protocolTable(s, 'ttfb_ms')); lcp.fill(protocolTable(s, 'lcp_ms')) }, (err) => { ttfb.fill(errorState(err)); lcp.fill(errorState(err)) }),
    api.rumTrends(id, { ...range, bucket }).then((t) => {
      if (!t.series.length) return trend.fill(emptyState('No page views in this window'))
      // All regions and the locations' regions; the rest are too thin to follow hour by hour.
      const chart = shareChart(t.series.filter((x) => x.region_id !== 'other' && x.region_id !== 'unknown').slice(0, 6), `Share of page views over HTTP/3, ${site.name}`, range)
      ctx.onDispose(chart.dispose)
      trend.fill(chart.el)
    }, (err) => trend.fill(errorState(err)))
  ]
  if (ctx.soft) await Promise.all(fills)
  return [
    h('div', { class: 'crumbs' }, h('a', { href: href('/rum') }, 'Real users'), ' / ', site.name),
    h('div', { class: 'page-head' }, h('div', {},
      h('h1', {}, `${site.name}: real users`, site.revoked_at ? h('span', { class: 'badge warn' }, 'revoked') : null),
      h('p', { class: 'sub' }, h('span', { class: 'mono' }, site.origins.join(' ')), ` · ${Math.round(site.sample_rate * 1000) / 10}% of page views sampled (a changed rate takes effect with the new tag on the pages) · ${win.label}`))),
    h('details', { class: 'install-tag' }, h('summary', {}, 'Install tag'), h('pre', { class: 'mono tag' }, site.install.tag),
      h('p', { class: 'hint' }, 'One line in the <head> of every page. The integrity attribute pins the snippet\'s bytes; after an upgrade of h3lens that changes them, replace the tag.')),
    regions.el, trend.el, ttfb.el, lcp.el
  ]
}

function labNote (s) {
  if (!s.lab_monitor) return h('p', { class: 'muted' }, 'No monitor of this site runs the auto arm, so there is no lab share to show beside real users.')
  return h('p', { class: 'muted' }, 'Lab: the auto arm of ', h('a', { href: href(`/monitors/${s.lab_monitor.id}`) }, s.lab_monitor.label ?? s.lab_monitor.url), `, ${count(s.regions.reduce((n, r) => n + (r.lab?.returning_visits ?? 0), 0))} returning visits in this window.`)
}

function legend () {
  return h('p', { class: 'legend-note' }, h('b', {}, 'Green or red: '), 'H3 page views faster or slower under the rules of the synthetic verdicts (false-discovery correction, minimum effect of 2% and 1 ms); ',
    h('b', {}, 'grey: '), 'no clear difference; ', h('b', {}, 'hatched: '), 'too few page views per protocol in any stratum. Hover a cell for its interval and strata.')
}
