// Overview: every monitor × location as a heat table of verdicts at p50 and
// p95 over the selected window, with fallback and error badges.
import { api } from '../api.js'
import { h, ms, pct, share, srOnly, emptyState, duration, VERDICT, verdictClass } from '../dom.js'
import { href, metricOf, metricLabel, timeWindow } from '../query.js'
import { metricPicker, verdictLegend } from '../components/metric-picker.js'

const PERCENTILES = [50, 95]

export async function render (ctx) {
  const metric = metricOf(ctx.query)
  const win = timeWindow(ctx.query)
  const [monitors, locations] = await Promise.all([api.monitors(), api.locations()])
  const head = h('div', { class: 'page-head' },
    h('div', {}, h('h1', {}, 'Overview'),
      h('p', { class: 'sub' }, `Is HTTP/3 faster than HTTP/2? ${metricLabel(metric)} at p50 and p95, ${win.label}.`)),
    h('div', { class: 'head-actions' }, metricPicker(metric), h('a', { class: 'button', href: '#/new' }, '+ Add URL')))
  if (!monitors.length) {
    return [head, emptyState('No monitors yet',
      'Add a URL and h3lens loads it over HTTP/2 and HTTP/3 from every location, then compares them here.',
      h('a', { class: 'button', href: '#/new' }, 'Add your first URL'))]
  }

  const settled = await Promise.allSettled(monitors.map((m) =>
    api.comparison(m.id, { from: win.from, to: win.to, metric, percentiles: PERCENTILES })))
  const used = new Set(monitors.flatMap((m) => m.locations))
  const columns = [{ id: null, name: 'All locations', region: null }, ...locations.filter((l) => used.has(l.id))]
  const rows = monitors.map((m, i) => row(m, settled[i], columns))

  return [
    head,
    win.error ? h('p', { class: 'notice warn', role: 'alert' }, win.error) : null,
    summary(settled),
    h('section', { class: 'panel', 'aria-labelledby': 'heat-title' },
      h('div', { class: 'panel-head' }, h('h2', { id: 'heat-title' }, 'Monitors by location'), verdictLegend()),
      h('div', { class: 'table-scroll' },
        h('table', { class: 'heat' },
          h('caption', { class: 'sr-only' }, `Verdict per monitor and location for ${metricLabel(metric)}, ${win.label}`),
          h('thead', {}, h('tr', {},
            h('th', { scope: 'col', class: 'mon-col' }, 'Monitor'),
            columns.map((c) => h('th', { scope: 'col' }, c.name, c.profile?.rtt_ms ? h('span', { class: 'th-sub' }, `RTT ${c.profile.rtt_ms} ms`) : c.id === null ? h('span', { class: 'th-sub' }, 'combined') : h('span', { class: 'th-sub' }, c.region ?? ''))))),
          h('tbody', {}, rows))))
  ]
}

function row (m, outcome, columns) {
  const name = h('th', { scope: 'row', class: 'mon-col' },
    h('a', { href: href(`/monitors/${m.id}`), class: 'mon-name' }, m.label || m.url),
    h('div', { class: 'sub ellipsis', title: m.url }, m.url),
    h('div', { class: 'mon-meta' }, `every ${duration(m.interval_s)}`, m.paused ? h('span', { class: 'badge warn' }, 'paused') : null))
  if (outcome.status === 'rejected') {
    return h('tr', {}, name, h('td', { colspan: columns.length, class: 'cell-error' }, `Comparison unavailable: ${outcome.reason.message}`))
  }
  const byLoc = new Map(outcome.value.locations.map((l) => [l.location_id, l]))
  return h('tr', {}, name, columns.map((c) => {
    if (c.id !== null && !m.locations.includes(c.id) && !byLoc.has(c.id)) return h('td', { class: 'heat-cell off' }, h('span', { class: 'muted' }, '—'), srOnly('not measured here'))
    return cell(byLoc.get(c.id))
  }))
}

function cell (loc) {
  if (!loc || loc.insufficient_data) {
    const n = loc ? `${loc.n_h2} H2 · ${loc.n_h3} H3 runs` : 'no runs'
    return h('td', { class: 'heat-cell v-none', title: loc?.reason ?? 'No runs in this window' },
      h('span', { class: 'none-text' }, 'Not enough data'), h('span', { class: 'cell-sub' }, n), badges(loc))
  }
  return h('td', { class: 'heat-cell' },
    h('div', { class: 'chips' }, loc.rows.map((r) => chip(r))),
    h('span', { class: 'cell-sub' }, `n ${loc.n_h2} / ${loc.n_h3}`),
    badges(loc))
}

function chip (r) {
  const v = VERDICT[r.verdict] ?? VERDICT.insufficient_data
  const title = `p${r.percentile}: H2 ${ms(r.h2_ms)}, H3 ${ms(r.h3_ms)}, Δ ${ms(r.delta_ms, { signed: true })} (${pct(r.delta_pct, { signed: true })}), 95% CI ${ms(r.ci_low_ms, { signed: true })} … ${ms(r.ci_high_ms, { signed: true })} — ${v.label}`
  return h('span', { class: `chip ${verdictClass(r.verdict, r.delta_pct)}`, title },
    h('span', { class: 'chip-p' }, `p${r.percentile}`),
    h('span', { class: 'glyph', 'aria-hidden': 'true' }, v.glyph),
    h('span', { class: 'chip-v' }, pct(r.delta_pct, { signed: true })),
    srOnly(` ${v.label}, ${ms(r.delta_ms, { signed: true })}`))
}

function badges (loc) {
  if (!loc) return null
  const out = []
  const fb = Math.max(loc.fallback_rate?.h2 ?? 0, loc.fallback_rate?.h3 ?? 0)
  const er = Math.max(loc.error_rate?.h2 ?? 0, loc.error_rate?.h3 ?? 0)
  if (fb > 0) out.push(h('span', { class: 'badge warn', title: `Fallback: H2 ${share(loc.fallback_rate.h2)}, H3 ${share(loc.fallback_rate.h3)} of runs loaded over another protocol` }, `${share(fb)} fallback`))
  if (er > 0) out.push(h('span', { class: 'badge bad', title: `Errors: H2 ${share(loc.error_rate.h2)}, H3 ${share(loc.error_rate.h3)} of runs failed or timed out` }, `${share(er)} errors`))
  return out.length ? h('div', { class: 'badges' }, out) : null
}

/** Counts of per-location verdicts at p95 across all monitors. */
function summary (settled) {
  const counts = { h3_faster: 0, h3_slower: 0, no_significant_difference: 0, insufficient_data: 0 }
  let monitorsOk = 0
  for (const s of settled) {
    if (s.status !== 'fulfilled') continue
    monitorsOk++
    for (const l of s.value.locations) {
      if (l.location_id === null) continue
      const p95 = l.rows.find((r) => r.percentile === 95)
      counts[l.insufficient_data || !p95 ? 'insufficient_data' : p95.verdict]++
    }
  }
  const total = Object.values(counts).reduce((a, b) => a + b, 0)
  const tile = (key, label) => h('div', { class: `stat ${VERDICT[key].cls}` },
    h('span', { class: 'stat-n' }, counts[key]), h('span', { class: 'stat-l' }, label))
  return h('div', { class: 'stats', role: 'group', 'aria-label': `At p95, across ${monitorsOk} monitors and ${total} monitor–location pairs` },
    tile('h3_faster', 'pairs where H3 is faster at p95'),
    tile('h3_slower', 'where H3 is slower'),
    tile('no_significant_difference', 'no significant difference'),
    tile('insufficient_data', 'not enough data yet'))
}
