// Overview: every monitor × location as a heat table of verdicts at p50 and
// p95 over the selected window, with failure-asymmetry, fallback, error and
// "H3 not supported" badges, and what users get (the auto arm's H3 share of
// returning visits, or the story of a path where they never get H3); A/A
// calibration monitors show their share of flagged cells instead.
import { api } from '../api.js'
import { h, ms, pct, share, shareInterval, count, pValue, srOnly, emptyState, duration, VERDICT, verdictClass } from '../dom.js'
import { href, metricOf, metricLabel, analysisOf, timeWindow } from '../query.js'
import { metricPicker, verdictLegend } from '../components/metric-picker.js'
import { alertBadges, firingByMonitor } from '../components/alert-badges.js'
import { browserName, PROBES } from '../catalogue.js'

const PERCENTILES = [50, 95]

export async function render (ctx) {
  const metric = metricOf(ctx.query)
  const win = timeWindow(ctx.query)
  const analysis = analysisOf(ctx.query)
  const [monitors, locations] = await Promise.all([api.monitors(), api.locations()])
  const head = h('div', { class: 'page-head' },
    h('div', {}, h('h1', {}, 'Overview'),
      h('p', { class: 'sub' }, `Is HTTP/3 faster than HTTP/2? ${metricLabel(metric)} at p50 and p95, ${win.label}${analysis === 'itt' ? ', intention to treat (failed loads at the timeout)' : ', matched rounds'}.`)),
    h('div', { class: 'head-actions' }, metricPicker(metric), h('a', { class: 'button', href: '#/new' }, '+ Add URL')))
  if (!monitors.length) {
    return [head, emptyState('No monitors yet',
      'Add a URL and h3lens loads it over HTTP/2 and HTTP/3 from every location, then compares them here.',
      h('a', { class: 'button', href: '#/new' }, 'Add your first URL'))]
  }

  const [firing, settled] = await Promise.all([firingByMonitor(api), Promise.allSettled(monitors.map((m) =>
    api.comparison(m.id, { from: win.from, to: win.to, metric, percentiles: PERCENTILES, analysis }, { fresh: ctx.fresh })))])
  const used = new Set(monitors.flatMap((m) => m.locations))
  const columns = [{ id: null, name: 'All locations', region: null }, ...locations.filter((l) => used.has(l.id))]
  const rows = monitors.map((m, i) => row(m, settled[i], columns, firing.get(m.id)))

  return [
    head,
    win.error ? h('p', { class: 'notice warn', role: 'alert' }, win.error) : null,
    summary(monitors, settled),
    h('section', { class: 'panel', 'aria-labelledby': 'heat-title' },
      h('div', { class: 'panel-head' }, h('h2', { id: 'heat-title' }, 'Monitors by location')),
      h('div', { class: 'panel-intro' }, verdictLegend(undefined, { unsupported: true })),
      h('div', { class: 'table-scroll' },
        h('table', { class: 'heat' },
          h('caption', { class: 'sr-only' }, `Verdict per monitor and location for ${metricLabel(metric)}, ${win.label}`),
          h('thead', {}, h('tr', {},
            h('th', { scope: 'col', class: 'mon-col' }, 'Monitor'),
            columns.map((c) => h('th', { scope: 'col' }, c.name, c.profile?.rtt_ms ? h('span', { class: 'th-sub' }, `RTT ${c.profile.rtt_ms} ms`) : c.id === null ? h('span', { class: 'th-sub', title: 'Per-location effects averaged with equal weight' }, 'stratified') : h('span', { class: 'th-sub' }, c.region ?? ''))))),
          h('tbody', {}, rows))))
  ]
}

function row (m, outcome, columns, firing) {
  const name = h('th', { scope: 'row', class: 'mon-col' },
    h('a', { href: href(`/monitors/${m.id}`), class: 'mon-name' }, m.label || m.url),
    alertBadges(firing),
    h('div', { class: 'sub ellipsis', title: m.url }, m.url),
    h('div', { class: 'mon-meta' }, `every ${duration(m.interval_s)}`, m.paused ? h('span', { class: 'badge warn' }, 'paused') : null,
      (m.backed_off ?? []).map((b) => backedOffBadge(b, m.locations.length > 1)),
      outcome.status === 'fulfilled' && outcome.value.aa_protocol ? h('span', { class: 'badge', title: `Both arms load over ${outcome.value.aa_protocol}: every flagged cell is a false positive` }, `A/A ${outcome.value.aa_protocol}`) : null))
  if (outcome.status === 'rejected') {
    return h('tr', {}, name, h('td', { colspan: columns.length, class: 'cell-error' }, `Comparison unavailable: ${outcome.reason.message}`))
  }
  const away = elsewhere(m)
  if (away) {
    return h('tr', { 'data-browsers': (m.browsers ?? ['chromium']).join(' '), 'data-elsewhere': away.why }, name, h('td', { colspan: columns.length, class: 'heat-cell v-none' },
      h('span', { class: 'none-text' }, away.what),
      h('span', { class: 'cell-sub' }, `${away.shows}; `, h('a', { href: href(`/monitors/${m.id}`, away.query) }, away.link), ' is on the monitor\'s page')))
  }
  const cmp = outcome.value
  const byLoc = new Map(cmp.locations.map((l) => [l.location_id, l]))
  return h('tr', { class: cmp.aa_protocol ? 'aa' : null }, name, columns.map((c) => {
    if (c.id !== null && !m.locations.includes(c.id) && !byLoc.has(c.id)) return h('td', { class: 'heat-cell off' }, h('span', { class: 'muted' }, '—'), srOnly('not measured here'))
    const loc = byLoc.get(c.id)
    return cmp.aa_protocol ? calibrationCell(loc, cmp) : cell(loc, cmp)
  }))
}

/**
 * A monitor whose rounds at a location keep timing out runs there on a
 * stretched interval until one loads (lib/store/round-backoffs.js).
 * @param {{ location_id: string, timeouts: number, interval_s: number, until: string }} b
 * @param {boolean} named say which location
 */
function backedOffBadge (b, named) {
  return h('span', {
    class: 'badge warn',
    title: `Its rounds${named ? ` at ${b.location_id}` : ''} kept timing out, so they run every ${duration(b.interval_s)} until one loads; the next at ${new Date(b.until).toLocaleString()}. The rounds in between are skipped.`
  }, `backed off${named ? ` at ${b.location_id}` : ''}: the last ${b.timeouts} rounds timed out`)
}

/** Rounds a cell rests on: "288 matched rounds". */
function roundsText (loc, cmp) {
  if (!loc?.rounds?.total) return 'no rounds yet'
  const r = loc.rounds
  return cmp.analysis === 'itt' ? `${count(r.available)} of ${count(r.total)} rounds` : `${count(r.matched)} of ${count(r.total)} rounds matched`
}

function cell (loc, cmp) {
  if (loc?.h3_supported === false) {
    return h('td', { class: 'heat-cell v-unsupported', title: loc.reason ?? 'The origin refused QUIC and advertises no Alt-Svc h3' },
      h('span', { class: 'none-text' }, 'H3 not supported'), h('span', { class: 'cell-sub' }, 'the origin refused QUIC'), badges(loc))
  }
  if (!loc || loc.rows.every((r) => r.verdict === 'insufficient_data')) {
    return h('td', { class: 'heat-cell v-none', title: loc?.reason ?? loc?.rows?.[0]?.reason ?? 'No runs in this window' },
      h('span', { class: 'none-text' }, 'Not enough data'), h('span', { class: 'cell-sub' }, roundsText(loc, cmp)), badges(loc))
  }
  const partial = partialRows(loc, cmp)
  return h('td', { class: 'heat-cell' },
    h('div', { class: 'chips' }, loc.rows.map((r) => chip(r))),
    h('span', { class: 'cell-sub' }, roundsText(loc, cmp)),
    partial.map((r) => h('span', { class: 'cell-sub' }, `p${r.percentile}: ${r.locations.length} of ${partial.of} locations, ${count(r.rounds)} rounds`)),
    badges(loc))
}

/**
 * The All locations cell's tested percentiles that average fewer locations
 * than have rounds (the others have too few for that percentile): each
 * says which share of the cell's rounds it rests on.
 * @returns {any[] & { of?: number }}
 */
function partialRows (loc, cmp) {
  if (loc.location_id !== null) return []
  const of = cmp.locations.filter((l) => l.location_id !== null && l.rounds?.total).length
  const rows = loc.rows.filter((r) => r.verdict !== 'insufficient_data' && Array.isArray(r.locations) && r.locations.length < of)
  return Object.assign(rows, { of })
}

/** A/A monitor: the share of this location's tested cells that claim a difference. */
function calibrationCell (loc, cmp) {
  const tested = loc?.cells?.tested ?? 0
  const flagged = loc?.cells?.flagged ?? 0
  if (!tested) {
    return h('td', { class: 'heat-cell v-none calibration' },
      h('span', { class: 'none-text' }, 'calibration: not enough rounds'), h('span', { class: 'cell-sub' }, roundsText(loc, cmp)))
  }
  const share = flagged / tested * 100
  return h('td', { class: `heat-cell calibration ${flagged ? 'flagged' : ''}`, title: `A/A: both arms load over ${cmp.aa_protocol}; ${flagged} of ${tested} tested cells claim a difference, all of them false` },
    h('span', { class: 'calibration-text' }, `calibration: ${pct(share)} of cells flagged`),
    h('span', { class: 'cell-sub' }, `${count(flagged)} of ${count(tested)} cells · ${roundsText(loc, cmp)}`))
}

function chip (r) {
  const v = VERDICT[r.verdict] ?? VERDICT.insufficient_data
  const tested = r.verdict !== 'insufficient_data'
  const rests = Array.isArray(r.locations) && r.rounds !== undefined
    ? ` (average of ${r.locations.length} location${r.locations.length === 1 ? '' : 's'}: ${r.locations.join(', ')}; ${count(r.rounds)} rounds)`
    : r.rounds !== undefined ? ` (${count(r.rounds)} rounds)` : ''
  const title = tested
    ? `p${r.percentile}: H2 ${ms(r.h2_ms)}, H3 ${ms(r.h3_ms)}, Δ ${ms(r.delta_ms, { signed: true })} (${pct(r.delta_pct, { signed: true })}), 95% CI ${ms(r.ci_low_ms, { signed: true })} … ${ms(r.ci_high_ms, { signed: true })} — ${v.label}${rests}`
    : `p${r.percentile}: ${v.label}${r.reason ? ` — ${r.reason}` : ''}`
  return h('span', { class: `chip ${tested ? verdictClass(r.verdict, r.delta_pct) : 'v-none'}`, title },
    h('span', { class: 'chip-p' }, `p${r.percentile}`),
    h('span', { class: 'glyph', 'aria-hidden': 'true' }, v.glyph),
    h('span', { class: 'chip-v' }, tested ? pct(r.delta_pct, { signed: true }) : 'few rounds'),
    srOnly(tested ? ` ${v.label}, ${ms(r.delta_ms, { signed: true })}` : ` ${v.label}`))
}

// Stories in which users never get H3 on the path, told in the cell's badge.
const NO_H3_STORIES = new Set(['not_announced', 'quic_blocked', 'broken', 'tcp_wins', 'h2_mostly'])

/**
 * What users get (the auto arm): "H3 63% returning", or the story where
 * none of its visits came over H3; the tooltip gives the visits it rests on.
 * @param {any} u the location's users_get, or null
 */
function usersBadge (u) {
  if (!u || u.story.code === 'no_data') return null
  const r = u.returning
  // The errors badge counts the forced arms only: a page that fails as
  // users load it while the forced arms load says so here.
  if (u.story.code === 'page_fails') {
    return h('span', { class: 'badge bad users', title: `As users get it (the auto arm, nothing forced): ${u.story.text}.`, 'data-story': u.story.code }, 'Users\' loads mostly fail')
  }
  const rests = r.loaded
    ? `H3 on ${count(r.h3)} of ${count(r.loaded)} returning visits that loaded (95% interval ${shareInterval(r.navigation_share)})${r.visits > r.loaded ? `; ${count(r.visits - r.loaded)} more did not load` : ''}`
    : 'No returning visit loaded in this window'
  const title = `As users get it (the auto arm, nothing forced): ${u.story.text}. ${rests}.`
  if (r.h3 === 0 && NO_H3_STORIES.has(u.story.code)) {
    // The story's words without its numbers, which the tooltip has.
    return h('span', { class: 'badge users no-h3', title, 'data-story': u.story.code }, u.story.text.replace(/ \(.*\)$/, ''))
  }
  if (!r.loaded) return null
  // Too few visits to tell a story: the badge says how few.
  const of = u.story.code === 'undecided' ? ` of ${count(r.loaded)}` : ''
  // The share is of the visits that loaded; those that did not are said beside it.
  const failed = r.visits > r.loaded ? `, ${count(r.visits - r.loaded)} of ${count(r.visits)} failed` : ''
  return h('span', { class: 'badge users', title, 'data-story': u.story.code }, `H3 ${share(r.navigation_share.rate)}${of} returning${failed}`)
}

function badges (loc) {
  if (!loc) return null
  const out = []
  const users = usersBadge(loc.users_get)
  if (users) out.push(users)
  const f = loc.failure
  if (f?.verdict === 'h3_fails_more') out.push(h('span', { class: 'badge bad failure', title: `In the same rounds, only H3 failed or fell back in ${f.h3_only} and only H2 in ${f.h2_only} (exact McNemar, ${pValue(f.p_adjusted ?? f.p)} adjusted)` }, `H3 fails more: ${count(f.h3_only)} vs ${count(f.h2_only)}`))
  if (f?.verdict === 'h3_fails_less') out.push(h('span', { class: 'badge ok failure', title: `In the same rounds, only H3 failed or fell back in ${f.h3_only} and only H2 in ${f.h2_only}` }, `H3 fails less: ${count(f.h3_only)} vs ${count(f.h2_only)}`))
  const arms = loc.arms
  if (arms && loc.h3_supported !== false) {
    const fb = Math.max(arms.h2.fallback_rate?.rate ?? 0, arms.h3.fallback_rate?.rate ?? 0)
    const er = Math.max(arms.h2.failure_rate?.rate ?? 0, arms.h3.failure_rate?.rate ?? 0)
    if (fb > 0) out.push(h('span', { class: 'badge warn', title: `Fallback: H2 ${share(arms.h2.fallback_rate.rate)}, H3 ${share(arms.h3.fallback_rate.rate)} of rounds loaded over another protocol` }, `${share(fb)} fallback`))
    if (er > 0) out.push(h('span', { class: 'badge bad', title: `Failed: H2 ${share(arms.h2.failure_rate.rate)}, H3 ${share(arms.h3.failure_rate.rate)} of rounds failed or timed out` }, `${share(er)} errors`))
  }
  return out.length ? h('div', { class: 'badges' }, out) : null
}

/**
 * Why the overview has nothing of a monitor, and where its comparison is:
 * the overview compares Chromium's page loads, so a monitor that runs in
 * other browsers only, or runs no page probe (a journey, the parallel or
 * upload probe alone), has none here. Null for the others.
 * @param {any} m
 * @returns {{ why: string, what: string, shows: string, link: string, query: Record<string, string> } | null}
 */
function elsewhere (m) {
  if (m.browsers && !m.browsers.includes('chromium')) {
    const names = m.browsers.map((b) => browserName(b)).join(' and ')
    return { why: 'browser', what: `Runs in ${names} only`, shows: 'this overview shows Chromium\'s rounds', link: `${names}'s comparison`, query: { browser: m.browsers[0] } }
  }
  if (m.probes && !m.probes.includes('page')) {
    const labels = m.probes.map((/** @type {string} */ id) => PROBES.find((p) => p.id === id)?.label?.toLowerCase() ?? id)
    const names = labels.join(' and ')
    return { why: 'probe', what: `Runs the ${names} probe${labels.length > 1 ? 's' : ''} only`, shows: 'this overview compares page loads', link: `the ${names} comparison`, query: { probe: m.probes[0] } }
  }
  return null
}

/** Counts of per-location verdicts at p95 across all monitors (A/A calibration monitors, and those the overview has nothing of, left out). */
function summary (monitors, settled) {
  const counts = { h3_faster: 0, h3_slower: 0, no_clear_difference: 0, insufficient_data: 0, h3_not_supported: 0 }
  let monitorsOk = 0
  for (const [i, s] of settled.entries()) {
    if (s.status !== 'fulfilled' || s.value.aa_protocol || elsewhere(monitors[i])) continue
    monitorsOk++
    for (const l of s.value.locations) {
      if (l.location_id === null) continue
      const p95 = l.rows.find((r) => r.percentile === 95)
      counts[l.h3_supported === false ? 'h3_not_supported' : !p95 ? 'insufficient_data' : p95.verdict]++
    }
  }
  const total = Object.values(counts).reduce((a, b) => a + b, 0)
  const tile = (key, label) => h('div', { class: `stat ${VERDICT[key].cls}` },
    h('span', { class: 'stat-n' }, counts[key]), h('span', { class: 'stat-l' }, label))
  return h('div', { class: 'stats', role: 'group', 'aria-label': `At p95, across ${monitorsOk} monitors and ${total} monitor–location pairs` },
    tile('h3_faster', `${counts.h3_faster === 1 ? 'pair' : 'pairs'} where H3 is clearly faster at p95`),
    tile('h3_slower', 'where H3 is clearly slower'),
    tile('no_clear_difference', 'no clear difference'),
    tile('insufficient_data', 'not enough data yet'),
    counts.h3_not_supported ? tile('h3_not_supported', 'where H3 is not supported') : null)
}
