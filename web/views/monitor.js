// One monitor: the regional comparison table, what users get of it (the
// auto arm), p50/p95 trends and CDFs per location, fallback and error rates,
// recent runs and exports, all for the selected window and metric.
import { api, exportUrl, downloadWithKey } from '../api.js'
import { h, ms, pct, count, section, emptyState, errorState, toast, duration, armNames, VERDICT, verdictClass } from '../dom.js'
import { BUCKET_NAMES, bucketFor, href, metricOf, metricLabel, analysisOf, setParams, timeWindow } from '../query.js'
import { browserName, browsersInOrder, isBrowser, PAGE_METRICS } from '../catalogue.js'
import { metricPicker, analysisPicker, verdictLegend } from '../components/metric-picker.js'
import { comparisonTable } from '../components/comparison-table.js'
import { reliabilityTable, failureSentence } from '../components/reliability.js'
import { runsTable } from '../components/runs-table.js'
import { trendChart, cdfChart } from '../components/charts.js'
import { alertBadges } from '../components/alert-badges.js'
import { usersGet, VISIT_NAMES } from '../components/users-get.js'
import { sideBySide } from '../components/filmstrip.js'

const TREND_PERCENTILES = [50, 95]
// The auto arm's table has two contrasts and the received gain per visit;
// the median and the tail keep it readable.
const USERS_PERCENTILES = [50, 95]
const RUNS_PAGE = 20

export async function render (ctx) {
  const id = ctx.params[0]
  const win = timeWindow(ctx.query)
  const analysis = analysisOf(ctx.query)
  const [monitor, locations, firing] = await Promise.all([api.monitor(id), api.locations(),
    api.alerts({ monitor_id: id, state: 'firing' }).then((a) => a.current, () => [])])
  const bucket = bucketFor(win, monitor.interval_s, ctx.query)
  // A journey's whole run and each named step are probes to switch between (docs/JOURNEYS.md).
  const probes = probeChoices(monitor)
  const probe = pick(ctx.query.get('probe'), probes.map(([value]) => value))
  const isJourney = probe === 'journey' || probe.startsWith('journey:')
  // A journey step is compared by its duration unless another metric is asked for.
  const metric = isJourney && !ctx.query.get('metric') ? 'step_ms' : metricOf(ctx.query)
  const view = pick(ctx.query.get('view'), monitor.repeat_view ? ['first', 'repeat'] : ['first'])
  // Whose rounds the page shows: a round is one browser's (docs/BROWSERS.md).
  // A browser the monitor no longer runs is offered too while the window
  // has its rounds, and read when the address names it: its rounds are
  // still in the windows it ran in.
  const range = { from: win.from, to: win.to }
  const ran = monitor.browsers ?? ['chromium']
  const asked = ctx.query.get('browser')
  const before = await api.browsersWithRounds(id, { ...range, probe }).then((b) => b.browsers, () => [])
  const browsers = browsersInOrder([...ran, ...before, isBrowser(asked) ? asked : null])
  const browser = asked !== null && browsers.includes(asked) ? asked : ran[0]
  const filters = { ...range, metric, probe, view, browser }
  const names = new Map(locations.map((l) => [l.id, l]))
  const nameOf = (lid) => names.get(lid)?.name ?? lid
  const label = metricLabel(metric)

  // An A/A calibration monitor runs one protocol in both arms (A and B).
  const aa = monitor.aa_protocol ?? null
  // An A/A monitor's arms are A and B of one protocol, in the charts too.
  const arms = armNames({ aa_protocol: aa })
  const compare = section(aa ? `${label}: arm B against arm A by percentile (A/A, both ${aa})` : `${label}: HTTP/3 against HTTP/2 by percentile`, {
    id: 'comparison',
    actions: analysisPicker(analysis),
    intro: `${aa ? 'Δ = B − A, so negative means arm B was faster.' : 'Δ = H3 − H2, so negative means HTTP/3 is faster.'} Every number of a location comes from the same rounds: both arms of a round ran there moments apart.`
  })
  const users = section('As users get it', {
    id: 'users-get',
    intro: 'The auto arm loads the page as a user\'s browser does: nothing forced, QUIC used once the origin announces it (Alt-Svc or an HTTPS record) and raced against TCP. ' +
      'Each round it makes a first visit and a returning visit; Δ = auto − forced arm, so negative means users\' browsers were faster. p50 and p95.'
  })
  // The auto arm's line in the charts is its visit of the chosen view (first or repeat).
  const auto = !aa && monitor.modes.includes('auto') ? `Auto (${VISIT_NAMES[view].toLowerCase()})` : null
  const trends = section(`${label} over time: p50 and p95`, { id: 'trends', actions: [protocolKey(true, arms, auto), bucketPicker(bucket)] })
  const cdfs = section(`${label} distribution (CDF)`, { id: 'cdf', actions: protocolKey(false, arms, auto) })
  const rates = section('Fallbacks and errors', { id: 'rates', intro: 'Failures are data. A round in which an arm failed or loaded over another protocol than the one forced is left out of the matched comparison above and counted here, with 95% intervals; the last column tests whether one arm fails or falls back more often than the other in the same rounds.', flush: true })
  const runs = section('Recent runs', { id: 'runs', flush: true })
  const steps = monitor.journey && (monitor.probes ?? []).includes('journey')
    ? section('Journey steps: HTTP/3 against HTTP/2', {
        id: 'journey-steps',
        flush: true,
        intro: 'Each named step\'s duration, and the whole journey\'s, at the median of matched rounds, per location. Δ = H3 − H2; choose a step under Probe for its full table, trends and runs.'
      })
    : null
  // Frames are Chromium's (docs/FILMSTRIPS.md).
  const sbs = aa || browser !== 'chromium' || !monitor.modes.includes('h2') || !monitor.modes.includes('h3') ? null : section('Side by side', {
    id: 'side-by-side',
    intro: `What a person saw in one round, HTTP/2 and HTTP/3 on one time axis: the round of the location whose H2 − H3 ${label} is nearest the Δ at the chosen percentile, in this window. ` +
      'Frames every 100 ms; the scrubber shows both arms at one moment. Needs the monitor\'s options.filmstrip ("always" films every round).'
  })
  const cross = browsers.length > 1
    ? section(`${label}: Chromium against Firefox`, {
        id: 'browsers',
        flush: true,
        intro: 'The H3 gain (Δ = H3 − H2) at p50 in each browser, each from its own rounds, with 95% intervals. Both browsers share the server and the path, not their HTTP/3 stacks: ' +
        'a gain both show is the server\'s and the path\'s; a gain only one browser shows is that browser\'s.'
      })
    : null

  const comparison = api.comparison(id, { ...filters, analysis }, { fresh: ctx.fresh })
  // Real users of the monitor's origin, when a site has it: a row under each region.
  const realUsers = api.rumOfMonitor(id, range).catch(() => null)
  const fills = [
    fill(compare, Promise.all([comparison, realUsers]).then(([c, rum]) => [headline(c), verdictLegend(c, { unsupported: c.locations.some((l) => l.h3_supported === false) }),
      comparisonTable(c, { highlight: Number(ctx.query.get('percentile')) || null, realUsers: rum }), computedNote(c)])),
    fill(rates, comparison.then((c) => reliabilityTable(c))),
    // The auto arm's visits are the page probe's; a journey's auto runs are in its own table.
    isJourney ? null : fill(users, api.auto(id, { ...range, metric, browser, percentiles: USERS_PERCENTILES }).then((a) => usersGet(a, { monitor, label }))),
    steps ? fill(steps, journeySteps(id, monitor, { ...range, view }, nameOf)) : null,
    cross ? fill(cross, api.browsers(id, { ...range, metric, analysis }, { fresh: ctx.fresh }).then((b) => crossBrowserTable(b, { label }))) : null,
    fill(trends, api.trends(id, { ...filters, bucket, percentiles: TREND_PERCENTILES })
      .then((t) => chartGrid(t.series, monitor, nameOf, (s, name) => trendChart(s, `${label} p50 and p95 over time, ${name}`, range, { ...arms, auto }), ctx))),
    fill(cdfs, api.distribution(id, filters)
      .then((d) => chartGrid(d.series, monitor, nameOf, (s, name) => cdfChart(s, `${label} CDF, ${name}`, { ...arms, auto }), ctx))),
    // Every view: a round's runs (the forced arms, the auto arm's visits) belong together.
    fill(runs, api.results(id, { ...range, probe, browser, limit: RUNS_PAGE }).then((page) => page.items.length
      ? pagedRuns(id, { ...range, probe, browser }, page, nameOf)
      : emptyState('No runs in this window', `This monitor runs every ${duration(monitor.interval_s)}; choose a longer window or wait for the next round.`))),
    sbs ? fill(sbs, Promise.resolve(sideBySidePanel(id, monitor, { ...range, metric }, nameOf, { percentile: Number(ctx.query.get('percentile')) || 95, location: ctx.query.get('location') }))) : null
  ]
  // A refresh swaps the page only once everything is in, so nothing flickers.
  if (ctx.soft) await Promise.all(fills.filter(Boolean))

  return [
    h('div', { class: 'crumbs' }, h('a', { href: href('/') }, 'Overview'), ' / ', monitor.label || monitor.url),
    h('div', { class: 'page-head' },
      h('div', {},
        h('h1', {}, monitor.label || monitor.url, monitor.paused ? h('span', { class: 'badge warn' }, 'paused') : null),
        h('p', { class: 'sub' }, h('span', { class: 'mono' }, monitor.url), ` · every ${duration(monitor.interval_s)} · ${aa ? `A/A, both arms ${aa.toUpperCase()}` : monitor.modes.map((m) => m.toUpperCase()).join(' + ')} · ${ran.map((b) => browserName(b)).join(' and ')}${ran.includes(browser) ? '' : ` (showing ${browserName(browser)}'s rounds, from when it ran there)`} · ${monitor.locations.length} location${monitor.locations.length === 1 ? '' : 's'}`)),
      h('div', { class: 'head-actions' },
        exportMenu(id, { ...filters, bucket }, ctx.onDispose),
        h('a', { class: 'button secondary', href: href(`/monitors/${id}/edit`) }, 'Edit'))),
    win.error ? h('p', { class: 'notice warn', role: 'alert' }, win.error) : null,
    firing.length ? h('p', { class: 'notice warn alert-notice' }, `${firing.length} alert${firing.length === 1 ? '' : 's'} firing:`, alertBadges(firing), ' ', h('a', { href: '#/alerts' }, 'All alerts')) : null,
    h('div', { class: 'view-controls' }, metricPicker(metric, { browser }),
      browsers.length > 1 ? browserSwitch(browser, browsers) : null,
      probes.length > 1 ? choice('probe', 'Probe', probe, probes) : null,
      monitor.repeat_view ? choice('view', 'View', view, ['first', 'repeat']) : null,
      h('span', { class: 'sub' }, win.label)),
    steps?.el ?? null, compare.el, cross ? cross.el : null, isJourney ? null : users.el, isJourney ? null : sbs?.el ?? null, trends.el, cdfs.el, rates.el, runs.el
  ]
}

const SBS_PERCENTILES = [50, 75, 90, 95, 99]

/**
 * The side-by-side panel's controls (location, percentile) and the round
 * they pick, drawn again when either changes.
 * @param {string} id monitor
 * @param {any} monitor
 * @param {{ from: Date, to: Date, metric: string }} q
 * @param {(lid: string) => string} nameOf
 * @param {{ percentile: number, location: string | null }} first what the link asks for (?percentile=, ?location=)
 */
function sideBySidePanel (id, monitor, q, nameOf, first) {
  const state = {
    location: monitor.locations.includes(first.location) ? first.location : monitor.locations[0],
    percentile: SBS_PERCENTILES.includes(first.percentile) ? first.percentile : 95
  }
  // Only metrics with a value per load pick a round; others fall back to load.
  const metric = PAGE_METRICS.some((m) => m.id === q.metric && m.comparable) ? q.metric : 'load_ms'
  const body = h('div', { class: 'sbs-body' })
  const draw = async () => {
    body.replaceChildren(h('p', { class: 'muted' }, 'Finding the round…'))
    try {
      const data = await api.sideBySide(id, { location: state.location, percentile: state.percentile, metric, from: q.from, to: q.to })
      body.replaceChildren(data.round ? sideBySide(data) : emptyState('No round to show', data.why))
    } catch (/** @type {any} */ err) {
      body.replaceChildren(errorState(err))
    }
  }
  const select = (name, text, options, value, label) => h('label', { class: 'inline-select', for: `sbs-${name}` }, `${text} `,
    h('select', { id: `sbs-${name}`, onchange: (ev) => { state[name] = name === 'percentile' ? Number(ev.target.value) : ev.target.value; draw() } },
      options.map((o) => h('option', { value: o, selected: o === value }, label(o)))))
  draw()
  return [h('div', { class: 'view-controls sbs-controls' },
    select('location', 'Location', monitor.locations, state.location, nameOf),
    select('percentile', 'Percentile', SBS_PERCENTILES, state.percentile, (p) => `p${p}`),
    h('span', { class: 'sub' }, `by ${metricLabel(metric)}`)), body]
}

/** Runs table with a "Show more" button that follows next_cursor. */
function pagedRuns (id, range, first, nameOf) {
  const items = [...first.items]
  let cursor = first.next_cursor
  const wrap = h('div', {})
  const draw = () => {
    const more = cursor
      ? h('button', { type: 'button', class: 'secondary small', id: 'runs-more', onclick: loadMore }, 'Show more runs')
      : null
    // replaceChildren would print a null as the text "null".
    wrap.replaceChildren(...[runsTable(items, nameOf), more ? h('div', { class: 'more' }, more) : null].filter((n) => n !== null))
  }
  async function loadMore (ev) {
    ev.currentTarget.disabled = true
    try {
      const page = await api.results(id, { ...range, limit: RUNS_PAGE, cursor })
      items.push(...page.items)
      cursor = page.next_cursor
      // Auto-refresh would drop the runs paged in so far.
      wrap.dataset.holdRefresh = 'true'
      draw()
      document.getElementById('runs-more')?.focus()
    } catch (/** @type {any} */ err) {
      toast(`Could not load more runs: ${err.message}`)
      ev.currentTarget.disabled = false
    }
  }
  draw()
  return wrap
}

/** Fill a section from a promise; its failure stays inside the section. */
function fill (sec, promise) {
  return promise.then((nodes) => sec.fill(nodes), (err) => sec.fill(errorState(err)))
}

/** One sentence answering the question for all locations together, and what it may not be read as. */
/** When the table was computed: the API serves a computed comparison again for a short while. */
function computedNote (c) {
  if (!c.computed_at) return null
  return h('p', { class: 'muted computed-at' }, `Computed at ${new Date(c.computed_at).toLocaleTimeString()} from the rounds stored by then.`)
}

function headline (c) {
  // A metric this browser does not give (Firefox has no filmstrip, so no Speed Index): its rounds have no value to compare.
  const metric = PAGE_METRICS.find((m) => m.id === c.metric)
  if (c.browser && metric?.browsers && !metric.browsers.includes(c.browser)) {
    return h('p', { class: 'headline muted' }, `${browserName(c.browser)} does not give ${metric.label}: its rounds have no value of it to compare. Choose another metric.`)
  }
  const names = armNames(c)
  const all = c.locations.find((l) => l.location_id === null)
  const places = c.locations.filter((l) => l.location_id !== null)
  if (names.aa) {
    const tested = c.cells?.tested ?? 0
    const flagged = c.cells?.flagged ?? 0
    return h('p', { class: 'headline aa' }, h('b', {}, 'A/A calibration monitor. '),
      `Both arms load over ${names.aa}, so a coloured cell is a false positive: ${count(flagged)} of ${count(tested)} cells tested are flagged${tested ? ` (${pct(flagged / tested * 100)})` : ''}. `,
      h('span', { class: 'muted' }, 'About 5% or fewer is what the method promises.'))
  }
  if (all?.h3_supported === false) return h('p', { class: 'headline muted' }, 'H3 not supported: the origin refused QUIC and advertises no Alt-Svc h3, so there is no HTTP/3 to compare.')
  const failure = all?.failure?.verdict === 'h3_fails_more' || all?.failure?.verdict === 'h3_fails_less'
    ? [h('span', { class: `v-text ${all.failure.verdict === 'h3_fails_more' ? 'slower' : 'faster'}` }, ` ${failureSentence(all, names).text}.`),
        c.analysis === 'itt' ? null : h('span', { class: 'muted' }, ' Those rounds are left out above; “Intention to treat” counts them.')]
    : null
  if (!all || all.rows.every((r) => r.verdict === 'insufficient_data')) {
    return h('p', { class: 'headline muted' }, all?.reason ? `Not enough data yet: ${all.reason}.` : 'Not enough data yet: no percentile has the matched rounds it needs.', failure)
  }
  const shown = all.rows.filter((r) => r.percentile === 50 || r.percentile === 95)
  const parts = (shown.length ? shown : all.rows.slice(0, 2)).map((r) => {
    if (r.verdict === 'h3_faster') return h('span', { class: 'v-text faster' }, `${pct(-r.delta_pct)} faster at p${r.percentile} (${ms(-r.delta_ms)})`)
    if (r.verdict === 'h3_slower') return h('span', { class: 'v-text slower' }, `${pct(r.delta_pct)} slower at p${r.percentile} (${ms(r.delta_ms)})`)
    if (r.reason_code === 'faster_arm_fails_more') {
      const arm = r.delta_ms < 0 ? 'it is' : `${names.h2} is`
      return h('span', { class: 'v-text' }, `${pct(Math.abs(r.delta_pct))} faster at p${r.percentile} among the loads that completed, which is no verdict while ${arm} failing more`)
    }
    if (r.reason_code === 'faster_arm_missing') {
      return h('span', { class: 'v-text' }, `${pct(Math.abs(r.delta_pct))} ${r.delta_ms < 0 ? 'faster' : 'slower'} at p${r.percentile} in the rounds with both arms, which is no verdict: ${r.delta_ms < 0 ? names.h3 : names.h2} has no result in some rounds`)
    }
    if (r.reason_code === 'faster_arm_failures') {
      const arm = r.delta_ms < 0 ? 'its' : `${names.h2}'s`
      return h('span', { class: 'v-text' }, `${pct(Math.abs(r.delta_pct))} ${r.delta_ms < 0 ? 'faster' : 'slower'} at p${r.percentile} among the loads that completed, which is no verdict: ${arm} failed loads could account for it`)
    }
    if (r.reason_code === 'locations_disagree') return h('span', { class: 'v-text' }, `not clearly different at p${r.percentile}: the locations disagree, and their mean in ms leans to the slowest`)
    if (r.verdict === 'no_clear_difference') return h('span', { class: 'v-text' }, `not clearly different at p${r.percentile}`)
    return h('span', { class: 'v-text muted' }, `not yet measurable at p${r.percentile} (too few rounds)`)
  })
  const tested = places.filter((l) => l.rows.find((r) => r.percentile === 95 && r.verdict !== 'insufficient_data'))
  const faster = tested.filter((l) => l.rows.find((r) => r.percentile === 95)?.verdict === 'h3_faster').length
  const slower = tested.filter((l) => l.rows.find((r) => r.percentile === 95)?.verdict === 'h3_slower').length
  return h('p', { class: 'headline' },
    `Across all locations (the mean of their differences in ms, so the slowest locations weigh most)${c.analysis === 'itt' ? ', counting failed loads at the timeout,' : ''} HTTP/3 is `,
    parts.flatMap((p, i) => (i ? [' and ', p] : [p])), '.', failure, ' ',
    tested.length ? h('span', { class: 'muted' }, `At p95 it is clearly faster in ${faster} and clearly slower in ${slower} of ${tested.length} location${tested.length === 1 ? '' : 's'} with enough rounds.`) : null)
}

/**
 * One chart per location (small multiples), in the monitor's location order.
 * @param {any[]} series API series with location_id and mode
 */
function chartGrid (series, monitor, nameOf, make, ctx) {
  if (!series.length) return emptyState('No data in this window', 'Charts appear after the first successful runs.')
  const byLoc = new Map()
  for (const s of series) {
    if (!byLoc.has(s.location_id)) byLoc.set(s.location_id, {})
    byLoc.get(s.location_id)[s.mode] = s
  }
  const order = [...monitor.locations.filter((l) => byLoc.has(l)), ...[...byLoc.keys()].filter((l) => !monitor.locations.includes(l))]
  return h('div', { class: 'charts' }, order.map((lid) => {
    const chart = make(byLoc.get(lid), nameOf(lid))
    ctx.onDispose(chart.dispose)
    return h('figure', { class: 'chart-card' }, h('figcaption', {}, nameOf(lid)), chart.el)
  }))
}

/**
 * @param {boolean} withDash
 * @param {{ aa: string | null, h2: string, h3: string }} arms
 * @param {string | null} auto the auto arm's line name, when the monitor runs it
 */
function protocolKey (withDash, arms, auto) {
  const item = (cls, text, dashed) => h('span', { class: 'legend-item' }, h('span', { class: `key-line ${cls}${dashed ? ' dashed' : ''}`, 'aria-hidden': 'true' }), text)
  return h('div', { class: 'legend', role: 'note', 'aria-label': 'Line key' },
    withDash
      ? [item('h2', `${arms.h2} p50`), item('h2', `${arms.h2} p95`, true), item('h3', `${arms.h3} p50`), item('h3', `${arms.h3} p95`, true),
          auto ? [item('auto', `${auto} p50`), item('auto', `${auto} p95`, true)] : null]
      : (arms.aa ? [item('h2', arms.h2), item('h3', arms.h3)] : [item('h2', 'HTTP/2'), item('h3', 'HTTP/3'), auto ? item('auto', auto) : null]))
}

/**
 * The browser whose rounds the page shows: the comparison, what users get,
 * the charts and the runs follow it.
 * @param {string} current
 * @param {string[]} browsers the monitor's
 */
function browserSwitch (current, browsers) {
  return h('fieldset', { class: 'segmented', id: 'browser-group' },
    h('legend', { class: 'sr-only' }, 'Browser'),
    browsers.map((b) => h('span', { class: 'seg' },
      h('input', { type: 'radio', name: 'browser', id: `browser-${b}`, value: b, checked: b === current, onchange: () => setParams({ browser: b }) }),
      h('label', { for: `browser-${b}`, title: `Rounds run in ${browserName(b)}` }, browserName(b)))))
}

/**
 * Each location's H3 gain in every browser side by side, with intervals,
 * and what they say together (GET /monitors/{id}/browsers).
 * @param {any} b
 * @param {{ label: string }} o
 */
function crossBrowserTable (b, { label }) {
  const gainCell = (g) => {
    if (!g || g.delta_ms === null) return h('td', { class: 'muted' }, g?.reason ?? 'no rounds')
    const cls = g.verdict === 'h3_faster' ? 'faster' : g.verdict === 'h3_slower' ? 'slower' : ''
    return h('td', { class: `num v-text ${cls}`, title: g.reason ?? '' },
      `${ms(g.delta_ms)} `, h('span', { class: 'muted' }, `[${ms(g.ci_low_ms)}, ${ms(g.ci_high_ms)}] · ${count(g.rounds)} rounds`))
  }
  return h('div', { class: 'table-scroll' }, h('table', { class: 'grid cross-browser' },
    h('caption', { class: 'sr-only' }, `${label}: H3 − H2 at p${b.percentile} in each browser`),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Location'),
      b.browsers.map((x) => h('th', { scope: 'col' }, `${browserName(x)} Δ p${b.percentile}`)),
      h('th', { scope: 'col' }, 'Reading'))),
    h('tbody', {}, b.locations.map((l) => h('tr', { 'data-location': l.location_id ?? 'all' },
      h('th', { scope: 'row' }, l.name),
      b.browsers.map((x) => gainCell(l.gains[x])),
      h('td', { 'data-reading': l.reading.code }, l.reading.text))))))
}

/** The query's value when the monitor has it, else the first allowed. */
const pick = (value, allowed) => (allowed.includes(value) ? value : allowed[0])

/** @param {Array<string | [string, string]>} options values, or [value, label] */
function choice (name, text, current, options) {
  return h('label', { class: 'inline-select', for: `${name}-select` }, `${text} `,
    h('select', { id: `${name}-select`, onchange: (ev) => setParams({ [name]: ev.target.value }) },
      options.map((o) => {
        const [value, label] = Array.isArray(o) ? o : [o, o]
        return h('option', { value, selected: value === current }, label)
      })))
}

/**
 * The monitor's probes as [value, label], a journey's whole run followed by
 * its named steps (a step with a name, or a measure_start's name).
 * @param {any} monitor
 * @returns {[string, string][]}
 */
function probeChoices (monitor) {
  return (monitor.probes ?? ['page']).flatMap((p) => {
    if (p !== 'journey') return [[p, p]]
    const names = (monitor.journey?.steps ?? []).filter((s) => s.name && s.action !== 'measure_end').map((s) => s.name)
    return [['journey', 'journey: total'], ...names.map((n) => [`journey:${n}`, `journey step: ${n}`])]
  })
}

/**
 * The per-step table: for the whole journey and each named step, per
 * location, the median step_ms of each arm, Δ and the verdict, from matched rounds.
 * @param {number} id
 * @param {any} monitor
 * @param {{ from: any, to: any, view: string }} q
 * @param {(id: string) => string} nameOf
 */
async function journeySteps (id, monitor, { from, to, view }, nameOf) {
  const probes = probeChoices(monitor).filter(([p]) => p === 'journey' || p.startsWith('journey:'))
  const answers = await Promise.all(probes.map(([p]) => api.comparison(id, { from, to, metric: 'step_ms', percentiles: [50], probe: p, view, analysis: 'matched' })))
  const locations = [...new Set(answers.flatMap((c) => c.locations.map((l) => l.location_id)).filter((l) => l !== null))]
  const names = armNames(answers[0] ?? {})
  const rows = probes.flatMap(([p, label], i) => locations.map((loc, k) => {
    const l = answers[i].locations.find((x) => x.location_id === loc)
    const r = l?.rows?.find((x) => x.percentile === 50)
    const verdict = r?.verdict ?? (l?.insufficient_data ? 'insufficient_data' : null)
    // A step that failed (or was not run after an earlier one failed) in
    // the rounds of the window says so: those rounds are no data to compare.
    const failedIn = (/** @type {'h2' | 'h3'} */ arm) => (l?.arms?.[arm]?.failed ?? 0) + (l?.arms?.[arm]?.unsupported ?? 0)
    const failures = l?.arms && (failedIn('h2') || failedIn('h3'))
      ? h('div', { class: 'sub' }, `failed: ${names.h2} ${count(failedIn('h2'))} of ${count(l.arms.h2.attempted)}, ${names.h3} ${count(failedIn('h3'))} of ${count(l.arms.h3.attempted)} rounds`)
      : null
    return h('tr', { 'data-probe': p, 'data-location': loc },
      k === 0 ? h('th', { scope: 'rowgroup', rowspan: locations.length }, h('a', { href: href(`/monitors/${id}`, { probe: p }) }, p === 'journey' ? 'Whole journey' : label.replace('journey step: ', ''))) : null,
      h('td', {}, nameOf(loc)),
      h('td', { class: 'num' }, ms(r?.h2_ms ?? null)),
      h('td', { class: 'num' }, ms(r?.h3_ms ?? null)),
      h('td', { class: 'num' }, r?.delta_ms == null ? '—' : `${ms(r.delta_ms, { signed: true })} (${pct(r.delta_pct, { signed: true })})`),
      h('td', { class: r ? verdictClass(r.verdict, r.delta_pct) : 'v-none' }, verdict ? (VERDICT[verdict]?.label ?? verdict.replaceAll('_', ' ')) : '—', failures),
      h('td', { class: 'num' }, count(l?.rounds?.used ?? 0)))
  }))
  if (!rows.length) return emptyState('No journey rounds in this window', 'Each round runs the journey in every arm; choose a longer window or wait for the next round.')
  return h('div', { class: 'table-scroll' },
    h('table', { class: 'grid', id: 'journey-step-table' },
      h('caption', { class: 'sr-only' }, `Journey steps, median duration, ${names.h3} against ${names.h2} per location`),
      h('thead', {}, h('tr', {}, ['Step', 'Location', `${names.h2} p50`, `${names.h3} p50`, 'Δ', 'Verdict', 'Rounds'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows)))
}

function bucketPicker (bucket) {
  return h('label', { class: 'inline-select', for: 'bucket-select' }, 'Bucket ',
    h('select', { id: 'bucket-select', onchange: (ev) => setParams({ bucket: ev.target.value }) },
      BUCKET_NAMES.map((b) => h('option', { value: b, selected: b === bucket }, b))))
}

function exportMenu (id, { from, to, metric, probe, view, browser, bucket }, onDispose) {
  const link = (text, url, file) => h('a', { href: url, download: file, onclick: (ev) => downloadWithKey(ev).catch((err) => toast(err.message)) }, text)
  const trends = { from, to, metric, probe, view, browser, bucket, percentiles: [50, 95] }
  const menu = h('details', { class: 'menu', onkeydown: (ev) => { if (ev.key === 'Escape' && menu.open) closeMenu(menu) } },
    h('summary', { class: 'button secondary', id: 'export-menu' }, 'Export'),
    h('div', { class: 'menu-list' },
      h('p', { class: 'menu-note' }, 'Current window and metric'),
      link('Trends as CSV', exportUrl.trends(id, trends, 'csv'), `h3lens-trends-${id}-${metric}.csv`),
      link('Trends as JSON', exportUrl.trends(id, trends, 'json'), `h3lens-trends-${id}-${metric}.json`),
      // Every run of the window, whatever the view shows: an import of the
      // file gives the same comparisons, the auto arm's returning visits and
      // the other probes included.
      h('p', { class: 'menu-note' }, 'Every run in the window'),
      link('Raw results as CSV', exportUrl.results({ monitor: id, from, to }, 'csv'), `h3lens-results-${id}.csv`),
      link('Raw results as NDJSON', exportUrl.results({ monitor: id, from, to }, 'ndjson'), `h3lens-results-${id}.ndjson`)))
  const outside = (ev) => { if (menu.open && !menu.contains(ev.target)) menu.open = false }
  document.addEventListener('click', outside)
  onDispose(() => document.removeEventListener('click', outside))
  return menu
}

function closeMenu (menu) {
  menu.open = false
  menu.querySelector('summary').focus()
}
