// Locations and agents: each location's network profile, and its agents'
// health, last-seen time and versions.
import { api } from '../api.js'
import { h, ago, kbps, emptyState, timeEl } from '../dom.js'
import { browserName } from '../catalogue.js'

/** @type {[string, string, (v: any, p: Record<string, any>) => string][]} */
const PROFILE_FIELDS = [
  ['rtt_ms', 'RTT', (v) => `${v} ms`],
  ['jitter_ms', 'Jitter', (v) => `±${v} ms`],
  ['loss_pct', 'Loss', (v, p) => `${v}%${p.loss_model ? ` ${p.loss_model === 'gilbert-elliott' ? '(bursty, Gilbert–Elliott)' : `(${p.loss_model})`}` : ''}`],
  ['down_kbps', 'Down', kbps],
  ['up_kbps', 'Up', kbps],
  ['queue_packets', 'Queue', (v) => `${v} packets`],
  ['block_udp', 'UDP', (v) => v ? 'blocked: QUIC cannot connect' : 'passes']
]

/** What each location kind is called, and what it means. */
const KIND_LABEL = { lab: 'lab', real: 'real', wpt: 'WebPageTest' }
const KIND_TITLE = {
  lab: 'An emulated network path on this machine',
  real: 'h3lens agents somewhere on the Internet',
  wpt: 'WebPageTest agents (wptagent) serving this location'
}

export async function render () {
  const [{ items: locations, lab_origin: labOrigin }, agents] = await Promise.all([api.locationsAndLab(), api.agents()])
  const head = h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Locations and agents'),
    h('p', { class: 'sub' }, 'Where measurements come from. Lab locations emulate a network path on this machine; real ones are agents elsewhere; WebPageTest ones are wptagent nodes.')))
  const originWarning = labOrigin && !labOrigin.running ? originDown(labOrigin) : labOrigin?.distorts_h3 ? distortionNotice(labOrigin) : null
  if (!locations.length) return [head, originWarning, emptyState('No locations', 'Start the lab or register an agent with `h3lens agents token --location ID`.')].filter(Boolean)
  const live = agents.filter((a) => !a.revoked_at)
  const healthy = live.filter((a) => a.alive).length
  return [
    head,
    originWarning,
    h('div', { class: 'tiles' },
      h('div', { class: 'tile' }, h('span', { class: 'tile-l' }, 'Locations'), h('span', { class: 'tile-v' }, locations.length)),
      h('div', { class: 'tile' }, h('span', { class: 'tile-l' }, 'Agents healthy'), h('span', { class: `tile-v${healthy < live.length ? ' bad' : ''}` }, `${healthy} / ${live.length}`)),
      labOrigin ? h('div', { class: 'tile' }, h('span', { class: 'tile-l' }, 'Lab origin'),
        h('span', { class: `tile-v${labOrigin.distorts_h3 || !labOrigin.running ? ' bad' : ''}` }, `Caddy ${labOrigin.version ?? '?'}${labOrigin.running ? '' : ' (down)'}`)) : null),
    h('div', { class: 'loc-grid' }, locations.map((l) => card(l, agents.filter((a) => a.location_id === l.id))))
  ].filter(Boolean)
}

/** The lab origin exited while serving: every lab round fails until h3lens is restarted. */
function originDown (labOrigin) {
  return h('div', { class: 'notice warn', role: 'alert' }, h('strong', {}, 'The lab origin is down: '),
    'its Caddy exited ', labOrigin.exited_at ? timeEl(labOrigin.exited_at, ago(labOrigin.exited_at)) : 'while serving',
    ', so every round at a lab location fails until h3lens is restarted. The log says why ("lab origin (Caddy) exited unexpectedly").')
}

/** Debian's Caddy 2.6.2 as the lab origin slows some lab H3 connects (lab/caddy.js). */
function distortionNotice (labOrigin) {
  return h('div', { class: 'notice warn', role: 'alert' }, h('strong', {}, 'Lab H3 connects may be distorted: '),
    `the lab origin runs Caddy ${labOrigin.version ?? '(unknown version)'}, which drops part of Chromium's two-packet ClientHello ` +
    '(quic-go 3760), so some lab H3 connects take an extra round trip or more. Run ',
    h('code', {}, 'node scripts/setup.js'), ' to install Caddy 2.11.7, then restart.')
}

function card (l, agents) {
  const p = l.profile ?? {}
  const fields = PROFILE_FIELDS.filter(([k]) => p[k] !== undefined && p[k] !== null)
  return h('section', { class: 'panel loc-card', 'aria-labelledby': `loc-${l.id}` },
    h('div', { class: 'panel-head' },
      h('div', {}, h('h2', { id: `loc-${l.id}` }, l.name), h('p', { class: 'sub' }, h('span', { class: 'mono' }, l.id), ` · ${l.region}`,
        l.kind === 'wpt' ? null : h('span', { class: 'browsers', title: 'The browsers this location\'s agents have: a monitor\'s rounds here run in those of its browsers' },
          ` · ${(l.browsers ?? ['chromium']).map((b) => browserName(b)).join(' and ')}`))),
      h('span', { class: `badge${l.kind === 'lab' ? '' : ' ok'}`, title: KIND_TITLE[l.kind] ?? '' }, KIND_LABEL[l.kind] ?? l.kind)),
    h('div', { class: 'section-body' },
      fields.length
        ? h('dl', { class: 'profile' }, fields.map(([k, label, fmt]) => h('div', {}, h('dt', {}, label), h('dd', {}, fmt(p[k], p)))))
        : h('p', { class: 'muted' }, l.kind === 'lab' ? 'Unshaped: loopback with no added delay or loss.' : 'No network profile: a real network path.'),
      l.countries?.length ? h('p', { class: 'muted' }, `Real users from ${l.countries.join(', ')} are shown under this location.`) : null,
      capacityBlock(l),
      l.kind === 'wpt' ? h('p', { class: 'muted' }, 'Measured by WebPageTest agents (wptagent) polling ', h('code', {}, '/work/'), '; each round is one WPT test per arm.') : null,
      refusalBlock(l.last_refusal),
      h('h3', { class: 'mini-title' }, `Agents (${agents.filter((a) => !a.revoked_at).length})`),
      agents.length ? agentTable(agents) : h('p', { class: 'muted' }, 'No agent registered for this location; its rounds are not measured.')))
}

/**
 * The last upload of the location's WebPageTest agents that h3lens refused
 * or stored as an error: the agent ignores the answer and logs nothing of
 * it, so this is where a missing round is explained.
 * @param {{ at: string, agent: string | null, test_id: string | null, status: number, reason: string } | null | undefined} r
 */
function refusalBlock (r) {
  if (!r) return null
  const what = r.status === 200 ? 'Last upload stored as an error' : `Last refused upload (HTTP ${r.status})`
  return h('div', { class: 'notice warn refusal', role: 'status' },
    h('strong', {}, `${what}: `), timeEl(r.at, ago(r.at)),
    r.agent ? [' from agent ', h('span', { class: 'mono' }, r.agent)] : null,
    r.test_id ? [', test ', h('span', { class: 'mono' }, r.test_id)] : null,
    h('p', {}, r.reason))
}

/**
 * Rounds per hour asked of the location against what its agents can take,
 * and the rounds skipped because the previous one was still pending.
 */
function capacityBlock (l) {
  const c = l.capacity
  if (!c || (c.demand_per_hour === 0 && c.skipped === 0)) return null
  const perHour = (v) => `${Math.round(v).toLocaleString('en')} rounds/h`
  const can = c.capacity_per_hour === null
    ? 'not measured yet'
    : c.agents_alive === 0 ? 'none (no agent running)' : `${perHour(c.capacity_per_hour)} (${c.agents_alive} agent${c.agents_alive === 1 ? '' : 's'}, ${c.round_s.toFixed(1)} s per round)`
  return [
    h('h3', { class: 'mini-title' }, 'Capacity'),
    h('dl', { class: 'profile capacity' },
      h('div', {}, h('dt', {}, 'Asked'), h('dd', {}, perHour(c.demand_per_hour))),
      h('div', {}, h('dt', {}, 'Can take'), h('dd', {}, can)),
      h('div', {}, h('dt', {}, 'Skipped: location busy (last hour)'), h('dd', { class: c.skipped_busy ? 'bad' : null }, String(c.skipped_busy)))),
    c.over_capacity
      ? h('div', { class: 'notice warn', role: 'alert' }, h('strong', {}, 'Demand exceeds capacity: '),
          c.agents_alive === 0
            ? 'no agent is running here, so its rounds are not measured.'
            : `its monitors ask for ${perHour(c.demand_per_hour)} but its agents take about ${perHour(c.capacity_per_hour)}. ` +
            'Rounds that cannot start before the next one is due are skipped. Add agents, lengthen intervals, or fix slow pages.')
      : null
  ]
}

function agentTable (agents) {
  return h('div', { class: 'table-scroll' }, h('table', { class: 'grid agents' },
    h('thead', {}, h('tr', {}, ['Agent', 'Kind', 'Health', 'Last seen', 'Last result', 'Faults', 'Version', 'Browser'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, agents.map((a) => {
      const state = health(a)
      return h('tr', { class: a.revoked_at ? 'revoked' : null },
        h('td', {}, a.name),
        h('td', {}, a.kind === 'wpt' ? 'WebPageTest' : 'h3lens'),
        h('td', {}, h('span', { class: `dot ${state.cls}`, 'aria-hidden': 'true' }), ` ${state.text}`),
        h('td', {}, a.last_seen_at ? timeEl(a.last_seen_at, ago(a.last_seen_at)) : 'never'),
        h('td', {}, a.last_result_at ? timeEl(a.last_result_at, ago(a.last_result_at)) : '—'),
        h('td', {}, faults(a)),
        h('td', { class: 'mono' }, a.version ?? '—'),
        h('td', {}, a.browser_version ?? '—'))
    }))))
}

/**
 * Infrastructure faults: rounds the agent could not run (its browser did not
 * start or went away). Each ran again; none was stored as the page's error.
 */
function faults (a) {
  if (!a.faults) return 'none'
  return h('span', { title: a.last_fault ?? '' }, `${a.faults}, the last `, timeEl(a.last_fault_at, ago(a.last_fault_at)), a.last_fault ? h('div', { class: 'sub ellipsis' }, a.last_fault) : null)
}

function health (a) {
  if (a.revoked_at) return { cls: '', text: 'revoked' }
  if (a.alive && a.faulty) return { cls: 'warn', text: 'infrastructure faults (last hour)' }
  if (a.alive) return { cls: 'ok', text: 'healthy' }
  if (!a.last_seen_at) return { cls: 'warn', text: 'never connected' }
  return { cls: 'bad', text: 'not seen recently' }
}
