// Run detail: why this load took what it took and why it came over its
// protocol. The reason in words, timings (connect and TTFB in RTT units),
// each request with its protocol, Chromium's race outcome and connection,
// and the exact browser and flags.
import { api } from '../api.js'
import { h, ms, bytes, share, timeEl, emptyState } from '../dom.js'
import { href } from '../query.js'
import { browserName, PAGE_METRICS, storedReasonText, usageOf } from '../catalogue.js'
import { timingBars, waterfall } from '../components/waterfall.js'
import { protocolBadge, runName } from '../components/runs-table.js'
import { VISIT_NAMES } from '../components/users-get.js'
import { runFilmstrip } from '../components/filmstrip.js'

const STATUS = { ok: 'ok', error: 'failed', timeout: 'timed out', protocol_mismatch: 'fell back to another protocol' }

export async function render (ctx) {
  const r = await api.result(ctx.params[0])
  // A 404: the monitor was deleted (its results stay until retention); anything else: unknown.
  const [monitor, locations] = await Promise.all([api.monitor(r.monitor_id).catch((err) => (err?.status === 404 ? 'deleted' : null)), api.locations().catch(() => [])])
  const deleted = monitor === 'deleted'
  const loc = locations.find((l) => l.id === r.location_id)
  // The run's own RTT when the agent recorded it, else the location's profile.
  const rtt = r.rtt_ms > 0
    ? { ms: r.rtt_ms, source: 'this run' }
    : loc?.profile?.rtt_ms > 0 ? { ms: loc.profile.rtt_ms, source: `the ${loc.name} profile` } : null
  // Results stored before the API checked their evidence's shape may hold anything there.
  // A time that is no number of ms within the hour a result may span draws as none.
  const atMs = (v) => typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 3_600_000 ? v : null
  const requests = Array.isArray(r.details?.requests)
    ? r.details.requests.filter((q) => q && typeof q === 'object').map((q) => ({ ...q, start_ms: atMs(q.start_ms), end_ms: atMs(q.end_ms) }))
    : []
  // A heavy page's requests beyond the first the agent kept (lib/measurement/result.js MAX_KEPT_REQUESTS, withinRoundLimit).
  const notKept = Number.isInteger(r.details?.requests_not_kept) && r.details.requests_not_kept > 0 ? r.details.requests_not_kept : 0
  const quic = r.observed_protocol === 'h3'
  const monitorName = deleted ? `Monitor ${r.monitor_id} (deleted)` : monitor?.label || monitor?.url || `Monitor ${r.monitor_id}`
  // The page probe's forced arms may have frames (options.filmstrip); on
  // the waterfall's time axis (its last request's end) or the load's, whichever is later.
  const filmed = r.probe === 'page' && r.mode !== 'auto' && r.view === 'first'
  const info = r.details?.filmstrip
  const film = !filmed ? null
    : !info && (r.browser ?? 'chromium') !== 'chromium' ? { missing: `frames come from Chromium's screencast; ${browserName(r.browser)} runs have no filmstrip and no visual metrics.` }
        : !info ? { missing: 'capture was off (the monitor\'s options.filmstrip: "always" films every round, "outliers" only runs above the p99 of recent runs).' }
            : !info.uploaded ? { missing: typeof info.error === 'string' ? info.error : 'its frames were not kept.' }
                : await api.filmstrip(r.id).catch((err) => ({ missing: err.message }))
  const axisMs = Math.max(r.load_ms ?? 0, ...requests.map((q) => q.end_ms ?? q.start_ms ?? 0))

  // The catalogue's summary metrics; those with a floor in round trips say
  // how far above it the run was.
  const tiles = [
    ...PAGE_METRICS.filter((m) => m.summary).map((m) => {
      const v = r[m.column]
      const rtts = m.rttFloor ? r[m.column.replace(/_ms$/, '_rtt')] ?? ratio(v, rtt?.ms) : null
      return tile(m.label, ms(v), m.rttFloor ? withFloor(rtts, quic ? m.rttFloor.h3 : m.rttFloor.tcp) : null)
    }),
    tile('Requests', r.requests ?? requests.length, r.h3_request_share === null || r.h3_request_share === undefined ? null : `${share(r.h3_request_share)} over H3`),
    tile('Transferred', bytes(r.bytes), r.h3_byte_share === null || r.h3_byte_share === undefined ? null : `${share(r.h3_byte_share)} of bytes over H3`)
  ]

  return [
    h('div', { class: 'crumbs' }, h('a', { href: href('/') }, 'Overview'), ' / ',
      deleted ? h('span', {}, monitorName) : h('a', { href: href(`/monitors/${r.monitor_id}`) }, monitorName), ` / Run ${r.id}`),
    h('div', { class: 'page-head' },
      h('div', {},
        h('h1', {}, `${runName(r)} from ${loc?.name ?? r.location_id}`),
        h('p', { class: 'sub' }, timeEl(r.measured_at, new Date(r.measured_at).toLocaleString()), ` · ${r.probe} probe, ${r.view} view · `,
          'observed ', protocolBadge(r), ' · ', h('span', { class: r.status === 'ok' ? '' : 'bad' }, STATUS[r.status] ?? r.status))),
      h('div', { class: 'head-actions' }, deleted
        ? h('p', { class: 'muted', 'data-note': 'monitor-deleted' }, 'Its monitor was deleted; this run is kept until the results retention removes it.')
        : h('a', { class: 'button secondary', href: href(`/monitors/${r.monitor_id}`) }, 'Back to monitor'))),
    r.status !== 'ok'
      ? h('div', { class: 'notice warn', role: 'alert' }, h('strong', {}, r.status === 'protocol_mismatch' ? 'Fallback: ' : 'Error: '),
          r.error ?? (r.mode === 'auto' ? 'the page did not load' : `forced ${r.mode.toUpperCase()}, the page loaded over ${r.observed_protocol ?? 'nothing'}`),
          r.status === 'protocol_mismatch' ? ' This run is shown but not counted in the comparison.' : '')
      : null,
    reasonLine(r),
    h('div', { class: 'tiles' }, tiles),
    r.notes?.length ? panel('Why', 'why', h('ul', { class: 'notes' }, r.notes.map((n) => h('li', {},
      h('span', { class: `badge${n.code === 'connection_reused' ? '' : ' warn'}` }, (n.code ?? 'note').replace(/_/g, ' ')), ' ', n.message,
      n.source ? h('span', { class: 'sub' }, ` — ${n.source}`) : null)))) : null,
    panel('Timings', 'timings', PAGE_METRICS.every((m) => !m.timeline || r[m.column] === null || r[m.column] === undefined) ? emptyState('No timings', 'The page did not load, so there is nothing to show.') : timingBars(r, rtt)),
    film ? panel('Filmstrip', 'filmstrip', film.missing
      ? h('div', { class: 'state film-none' }, h('p', { class: 'state-title' }, 'No filmstrip for this run'), h('p', {}, film.missing.replace(/^no filmstrip for result \d+: /, '')))
      : runFilmstrip(film, { axisMs, label: `${r.mode.toUpperCase()} run ${r.id}` })) : null,
    panel(`Requests (${notKept ? `${requests.length.toLocaleString('en')} of ${(requests.length + notKept).toLocaleString('en')}` : requests.length})`, 'requests',
      [notKept ? h('p', { class: 'sub requests-not-kept' }, (requests.length ? `The first ${requests.length.toLocaleString('en')} requests, in the order they started, are kept; ${notKept.toLocaleString('en')} more are not.` : 'None of its requests are kept.') +
        ` The request count, bytes and H3 shares above are of all ${(requests.length + notKept).toLocaleString('en')}.`) : null,
      requests.length
        ? waterfall(requests)
        : notKept ? null : emptyState('No requests recorded', 'The browser recorded no network requests for this run.')],
      h('span', { class: 'legend' }, key('h3', 'HTTP/3'), key('h2', 'HTTP/2'), key('other', 'other'),
        key('setup', 'connection set-up'), key('wait', 'waiting'))),
    panel('Browser and flags', 'browser', h('dl', { class: 'facts' },
      fact('URL', h('span', { class: 'mono' }, monitor?.url ?? requests[0]?.url ?? '—')),
      fact('Browser', `${browserName(r.browser)}${r.browser_version ? ` (${r.browser_version})` : ''}`),
      fact('Agent', `${r.agent_version ?? '?'}${r.agent_id ? ` (agent ${r.agent_id})` : ''}`),
      fact('Round', timeEl(r.time, new Date(r.time).toLocaleString())),
      fact(r.browser === 'firefox' ? 'Preferences' : 'Flags', r.flags?.length
        ? h('ul', { class: 'flags' }, r.flags.map((f) => h('li', {}, h('code', {}, f))))
        : '—')))
  ]
}

const VISIT_TEXT = {
  first: 'a cold visit in a new browser profile: the origin not yet known',
  returning: 'the browser started again on the first visit\'s profile: what it learnt of the origin (Alt-Svc, QUIC marked broken) kept, no live connection, no cached response',
  repeat: 'a second page view right after the returning visit, on its live connections'
}
const ANNOUNCED = { 'alt-svc': 'H3 announced by Alt-Svc', 'https-record': 'H3 announced by an HTTPS DNS record' }

/**
 * Why the page came over its protocol, prominently: "Not H3: TCP won the race",
 * what the arm forced (or that nothing was), the visit, and Chromium's word.
 * @param {any} r result
 */
function reasonLine (r) {
  const reason = r.protocol_reason
  const auto = r.mode === 'auto'
  const usage = reason?.alternate_protocol_usage ? usageOf(reason.alternate_protocol_usage) : null
  return h('section', { class: 'reason-line', 'aria-label': 'Why this protocol', 'data-code': reason?.code ?? 'unknown' },
    protocolBadge(r),
    h('p', { class: 'reason-text' }, storedReasonText(reason) ?? (r.observed_protocol ? `${r.observed_protocol.toUpperCase()}: no reason recorded for this run` : 'No protocol: the load failed')),
    h('p', { class: 'reason-sub' },
      auto ? `As users get it, nothing forced: the browser chose. ${VISIT_NAMES[r.view] ?? r.view}: ${VISIT_TEXT[r.view] ?? ''}.` : `Forced by the ${r.mode.toUpperCase()} arm's switch.`,
      reason?.h3_announced ? ` ${ANNOUNCED[reason.h3_announced] ?? reason.h3_announced}.` : '',
      usage ? [' Chromium: ', h('span', { class: 'usage', title: reason.alternate_protocol_usage }, usage.text), ` (${reason.alternate_protocol_usage}).`] : null))
}

const ratio = (v, rtt) => (v === null || v === undefined || !(rtt > 0) ? null : v / rtt)

/** "2.7 RTT · floor 2": the floor is a fresh connection without loss. */
function withFloor (rtts, floor) {
  return rtts === null || rtts === undefined ? null : `${rtts.toFixed(1)} RTT · floor ${floor} on a new connection`
}

function tile (label, value, sub) {
  return h('div', { class: 'tile' }, h('span', { class: 'tile-l' }, label), h('span', { class: 'tile-v' }, value), sub ? h('span', { class: 'tile-s' }, sub) : null)
}

function panel (title, id, body, actions) {
  return h('section', { class: 'panel', 'aria-labelledby': `${id}-title` },
    h('div', { class: 'panel-head' }, h('h2', { id: `${id}-title` }, title), actions ?? null),
    h('div', { class: 'section-body' }, body))
}

const fact = (k, v) => h('div', { class: 'fact' }, h('dt', {}, k), h('dd', {}, v))
const key = (cls, text) => h('span', { class: 'legend-item' }, h('span', { class: `key-box ${cls}`, 'aria-hidden': 'true' }), text)
