// Demo data: a day of realistic, deterministic results (no measurement
// needed) for the lab's locations and pages, as the dashboard shows them.
// Seeded by the UI tests, scripts/screenshots.js, scripts/wpt-screenshot.js
// and the benches that want a database full of results.
import { upsertLocation } from '../lib/store/locations.js'
import { createAgentToken, touchAgent } from '../lib/store/agents.js'
import { createMonitor } from '../lib/store/monitors.js'
import { insertRoundResults } from '../lib/store/results.js'
import { rebuildRollups } from '../lib/analysis/rollups.js'
import { createApiKey } from '../lib/store/api-keys.js'
import { rttAccounting } from '../lib/measurement/rtt.js'
import { protocolReason } from '../lib/measurement/protocol-reason.js'
import { CHROMIUM_FLAGS } from './chromium-flags.js'

// Profiles as the lab publishes them (RTT grows 1×/2×/3× with loss).
export const LOCATIONS = [
  { id: 'lab-na', name: 'Lab North America', region: 'North America', profile: { rtt_ms: 30, jitter_ms: 1, loss_pct: 0.1, loss_model: 'bernoulli', down_kbps: 50000, up_kbps: 20000, queue_packets: 128 } },
  { id: 'lab-eu', name: 'Lab Europe', region: 'Europe', profile: { rtt_ms: 60, jitter_ms: 2, loss_pct: 0.5, loss_model: 'bernoulli', down_kbps: 40000, up_kbps: 15000, queue_packets: 200 } },
  { id: 'lab-asia', name: 'Lab Asia', region: 'Asia', profile: { rtt_ms: 90, jitter_ms: 4, loss_pct: 1.5, loss_model: 'gilbert-elliott', down_kbps: 25000, up_kbps: 10000, queue_packets: 192 } }
]
const LOCAL_SPEED_KBPS = 2_000_000
// Rounds stored by one INSERT while seeding (two results each).
const ROUNDS_PER_BATCH = 50

// kb = page weight; subs = sub-resources after the document.
export const PAGES = [
  { label: 'Lab page-15k', file: 'page-15k.html', kb: 15, subs: 3 },
  { label: 'Lab page-1m', file: 'page-1m.html', kb: 1000, subs: 6 },
  { label: 'Lab page-many', file: 'page-many.html', kb: 80, subs: 12 }
]

/**
 * @typedef {ReturnType<typeof random>} Rnd
 * @typedef {typeof PAGES[number]} DemoPage
 * @typedef {{ id: string, profile: Record<string, any> }} DemoLocation
 * @typedef {{ monitor: Record<string, any>, page: DemoPage, loc: DemoLocation, k: number, due: Date, unsupported?: boolean }} DemoJob
 */

/**
 * Small seeded PRNG (mulberry32), so every seeding draws the same data.
 * @param {number} seed
 */
export function random (seed) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const normal = () => Math.sqrt(-2 * Math.log(next() || 1e-12)) * Math.cos(2 * Math.PI * next())
  return { next, logNormal: (/** @type {number} */ sigma) => Math.exp(sigma * normal()) }
}

/**
 * One page load, modelled on what the lab shows: H2 needs TCP + TLS 1.3
 * (2 RTT) before the request, H3 one combined handshake (1 RTT); losses cost
 * H2 more (a retransmission timeout and head-of-line blocking); on loopback
 * QUIC's user-space stack makes H3 slower for big transfers.
 * @param {{ rnd: Rnd, page: DemoPage, loc: DemoLocation, mode: string, time: number, labPort: number, i: number }} o
 */
export function sampleLoad ({ rnd, page, loc, mode, time, labPort, i }) {
  const p = loc.profile
  const rtt = (p.rtt_ms || 0.2) * (1 + 0.12 * Math.sin(time / 86400e3 * 2 * Math.PI)) + (p.jitter_ms ?? 0) * (rnd.next() - 0.5)
  const loss = (p.loss_pct ?? 0) / 100
  const kbps = p.down_kbps ?? LOCAL_SPEED_KBPS
  const noise = () => rnd.logNormal(0.12)
  const lost = () => rnd.next() < loss * (mode === 'h2' ? 8 : 5)
  const penalty = () => (mode === 'h2' ? 200 + 3 * rtt : 1.5 * rtt + 25) * rnd.next()
  const dns = 0.2 + rnd.next() * 0.8
  // On loopback the handshake is CPU, not round trips: QUIC's costs as much.
  const handshake = p.rtt_ms ? (mode === 'h2' ? 2 : 1) * rtt : 0.5 * noise()
  const connect = handshake * noise() + 0.6 + (lost() ? penalty() : 0)
  const tls = mode === 'h2' ? rtt * noise() + 0.4 : connect - 0.1
  const ttfb = dns + connect + rtt * noise() + 4 * noise()
  const cpu = mode === 'h3' && !p.down_kbps ? 1.6 : 1
  const transfer = page.kb * 8 / kbps * 1000 * cpu * noise() + (page.kb > 500 ? 12 * cpu : 0)
  const hol = mode === 'h2' ? page.kb * loss * 9 * rnd.next() : 0
  const dcl = ttfb + Math.min(transfer, 40) + rtt * noise() + 6
  const fcp = dcl + 12 * noise()
  const load = Math.max(dcl, ttfb + transfer + Math.ceil(page.subs / 6) * rtt * noise() + hol + (lost() ? penalty() : 0) + 8)
  const lcp = Math.min(load, fcp + page.kb / 40 * noise())
  const r1 = (/** @type {number} */ v) => Math.round(v * 10) / 10
  const requests = detailRequests({ page, mode, labPort, dns, connect, ttfb, load, i })
  return {
    dns_ms: r1(dns), connect_ms: r1(connect), tls_ms: r1(tls), ttfb_ms: r1(ttfb), dcl_ms: r1(dcl),
    fcp_ms: r1(fcp), lcp_ms: r1(lcp), load_ms: r1(load), rtt_ms: p.rtt_ms ? r1(rtt) : null,
    bytes: requests.reduce((n, r) => n + r.bytes, 0), requests: requests.length,
    details: { requests, wall_ms: r1(load + 30), rtt_source: p.rtt_ms ? 'profile' : null }
  }
}

/**
 * @param {{ page: DemoPage, mode: string, labPort: number, dns: number, connect: number, ttfb: number, load: number, i: number }} o
 */
function detailRequests ({ page, mode, labPort, dns, connect, ttfb, load, i }) {
  const origin = `https://lab.h3lens.test:${labPort}`
  const conn = 100 + i
  const docBytes = Math.round(page.kb * 1024 / (page.subs + 1)) + 400
  const r1 = (/** @type {number} */ v) => Math.round(v * 10) / 10
  const docEnd = ttfb * 1.1
  const doc = {
    url: `${origin}/${page.file}`, type: 'Document', method: 'GET', protocol: mode, status: 200, bytes: docBytes,
    start_ms: 0, end_ms: r1(docEnd), connection_id: conn, connection_reused: false, from_cache: false,
    alternate_protocol_usage: mode === 'h3' ? 'dnsAlpnH3JobWonRace' : 'unspecifiedReason',
    timing: { dns_ms: r1(dns), connect_ms: r1(connect), ssl_ms: r1(mode === 'h3' ? connect : connect / 2), send_ms: 0.1, wait_ms: r1(ttfb - dns - connect), receive_ms: r1(docEnd - ttfb) }
  }
  /** @type {Record<string, any>[]} */
  const out = [doc]
  const names = ['site.css', 'app.js', 'hero.jpg', 'logo.svg', 'font.woff2', 'photo-1.jpg', 'photo-2.jpg', 'photo-3.jpg', 'data.json', 'chart.js', 'icon.png', 'analytics.js']
  for (let k = 0; k < page.subs; k++) {
    const start = docEnd + (load - docEnd) * (k / page.subs) * 0.5
    const end = Math.min(load - 2, start + (load - start) * (0.35 + 0.1 * (k % 4)))
    const wait = (end - start) * 0.45
    out.push({
      url: `${origin}/assets/${names[k % names.length]}`, type: k % 3 ? 'Image' : 'Script', method: 'GET', protocol: mode, status: 200, bytes: docBytes,
      start_ms: r1(start), end_ms: r1(end), connection_id: conn, connection_reused: true, from_cache: false, alternate_protocol_usage: null,
      timing: { dns_ms: null, connect_ms: null, ssl_ms: null, send_ms: 0.1, wait_ms: r1(wait), receive_ms: r1(end - start - wait - 0.1) }
    })
  }
  return out
}

/** @type {Record<string, string[]>} */
const FLAGS = {
  h2: ['--disable-quic'],
  h3: ['--enable-quic', '--origin-to-force-quic-on=lab.h3lens.test:PORT']
}

/**
 * Monitors, locations, agents, finished jobs and their results over the last
 * `hours`, one round every `stepMinutes` per monitor and location; rollups
 * are rebuilt so the comparison reads them. Also makes a write API key.
 * @param {import('pg').Pool} db
 * @param {{ hours?: number, stepMinutes?: number, labPort?: number, seed?: number, end?: number }} [opts]
 *   end: the time (ms) the rounds lead up to, default now; two databases
 *   seeded with the same end and seed hold the same results
 */
export async function seedDemo (db, { hours = 24, stepMinutes = 5, labPort = 8443, seed = 7, end: endAt = Date.now() } = {}) {
  const rnd = random(seed)
  const locations = [{ id: 'local', profile: {} }]
  for (const l of LOCATIONS) locations.push(await upsertLocation(db, { ...l, kind: 'lab' }))
  /** @type {Record<string, number>} location → its agent's id */
  const agents = {}
  for (const l of locations) {
    const { agent } = await createAgentToken(db, { location: l.id, name: `${l.id}-agent` })
    await touchAgent(db, agent.id, { version: '0.1.0', browser_version: 'Chromium 156.0.8078.79' })
    agents[l.id] = agent.id
  }
  // One agent that stopped reporting, so the health column has something to say.
  await db.query("UPDATE agents SET last_seen_at = now() - interval '42 minutes' WHERE id = $1", [agents['lab-asia']])

  const monitors = []
  // Their rounds hold the forced arms only (dev/demo-auto-arm.js adds the auto arm's visits where a test wants them).
  for (const page of PAGES) {
    monitors.push(await createMonitor(db, { url: `https://lab.h3lens.test:${labPort}/${page.file}`, label: page.label, interval_s: stepMinutes * 60, locations: locations.map((l) => l.id), modes: ['h2', 'h3'] }))
  }
  // An origin that serves HTTP/2 only: every H3 attempt meets a refused QUIC handshake.
  const h2Only = await createMonitor(db, { url: `https://lab.h3lens.test:${labPort + 1}/page-15k.html`, label: 'Lab h2-only origin', interval_s: stepMinutes * 60, locations: ['lab-eu', 'lab-na'] })
  // A monitor added moments ago: nothing measured yet.
  const fresh = await createMonitor(db, { url: 'https://example.com/', label: 'example.com', interval_s: 300, locations: ['lab-eu', 'lab-na'] }, { allowPrivateTargets: true })
  const step = stepMinutes * 60e3
  const end = Math.floor(endAt / step) * step
  const rounds = Math.floor(hours * 3600e3 / step)
  /** @type {DemoJob[]} */
  const jobs = []
  for (const [m, monitor] of monitors.entries()) {
    for (const loc of locations) {
      for (let k = rounds; k >= 1; k--) jobs.push({ monitor, page: PAGES[m], loc, k, due: new Date(end - k * step + m * 7000) })
    }
  }
  for (const loc of locations.filter((l) => h2Only.locations.includes(l.id))) {
    for (let k = rounds; k >= 1; k--) jobs.push({ monitor: h2Only, page: PAGES[0], loc, k, unsupported: true, due: new Date(end - k * step + 21000) })
  }
  const { rows } = await db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at, state, attempts, lease_owner, finished_at)
     SELECT m, l, d, 'done', 1, a, d + interval '5 seconds'
       FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::bigint[]) AS t(m, l, d, a)
     RETURNING id`,
    [jobs.map((j) => j.monitor.id), jobs.map((j) => j.loc.id), jobs.map((j) => j.due), jobs.map((j) => agents[j.loc.id])])
  // The rounds' results, drawn and stored in job order, a batch of one
  // agent's consecutive rounds an INSERT (one fold of the round summaries
  // for the batch, not one for every round), one INSERT at a time: result
  // ids follow the jobs, so two seedings with the same options store the
  // same rows in the same order.
  /** @type {{ agentId: number, rounds: Parameters<typeof insertRoundResults>[1]['rounds'] }[]} */
  const batches = []
  for (const [n, j] of jobs.entries()) {
    const results = ['h2', 'h3'].map((mode) => withReason(resultFor({ rnd, j, mode, labPort, i: n })))
    const agentId = agents[j.loc.id]
    let batch = batches.at(-1)
    if (!batch || batch.agentId !== agentId || batch.rounds.length === ROUNDS_PER_BATCH) batches.push(batch = { agentId, rounds: [] })
    batch.rounds.push({ job: { id: rows[n].id, monitor_id: j.monitor.id, location_id: j.loc.id, due_at: j.due }, results })
  }
  for (const batch of batches) await insertRoundResults(db, { ...batch, agentVersion: '0.1.0' })
  await rebuildRollups(db)
  const { secret: apiKey } = await createApiKey(db, { name: 'dashboard', role: 'write' })
  const { rows: [latest] } = await db.query(
    "SELECT id FROM results WHERE monitor_id = $1 AND mode = 'h3' AND status = 'ok' AND rtt_ms IS NOT NULL ORDER BY time DESC, location_id LIMIT 1", [monitors[2].id])
  return { monitors, h2Only, fresh, apiKey, locations: locations.map((l) => l.id), results: jobs.length * 2, latestResultId: latest.id }
}

/**
 * A result with its protocol reason, as an agent's submission has it
 * (lib/measurement/result.js toSubmission).
 * @param {Record<string, any>} r
 */
function withReason (r) {
  const details = r.details ?? {}
  return { ...r, details: { ...details, protocol_reason: protocolReason({ ...r, requests_detail: details.requests ?? [] }) } }
}

/** @param {{ rnd: Rnd, j: DemoJob, mode: string, labPort: number, i: number }} o */
function resultFor ({ rnd, j, mode, labPort, i }) {
  const base = {
    mode,
    measured_at: new Date(+j.due + 2000 + rnd.next() * 3000),
    browser_version: 'Chrome/156.0.8078.79',
    flags: [...CHROMIUM_FLAGS, ...FLAGS[mode].map((f) => f.replace('PORT', String(labPort))),
      `--host-resolver-rules=MAP lab.h3lens.test 127.0.0.1, MAP * ~NOTFOUND`]
  }
  const roll = rnd.next()
  const lossy = (j.loc.profile.loss_pct ?? 0) > 1
  if (mode === 'h3' && j.unsupported) {
    return { ...base, status: 'error', protocol_ok: false, observed_protocol: null, error: 'QUIC handshake failed: the origin does not speak HTTP/3 and advertises no Alt-Svc h3', details: { failure_kind: 'h3_unsupported' } }
  }
  // On the lossy path QUIC is dropped now and then: one H3 load in six times
  // out while H2 loads in the same round, so the failure test has something
  // to find and intention to treat differs from the matched rounds.
  if (mode === 'h3' && lossy && j.k % 6 === 0) return { ...base, status: 'timeout', protocol_ok: false, observed_protocol: null, error: 'page load timed out after 30000 ms' }
  if (mode === 'h3' && lossy && roll < 0.03) {
    return { ...base, ...sampleLoad({ rnd, page: j.page, loc: j.loc, mode: 'h2', time: +j.due, labPort, i }), status: 'protocol_mismatch', protocol_ok: false, observed_protocol: 'h2', error: 'the page loaded over h2, not h3 (QUIC was blocked or broken)' }
  }
  if (roll > 0.995) return { ...base, status: 'timeout', protocol_ok: false, observed_protocol: null, error: 'page load timed out after 30000 ms' }
  const m = sampleLoad({ rnd, page: j.page, loc: j.loc, mode, time: +j.due, labPort, i })
  const rtt = rttAccounting({ protocol: mode, connect_ms: m.connect_ms, ttfb_ms: m.ttfb_ms }, m.rtt_ms)
  return { ...base, ...m, ...rtt, status: 'ok', protocol_ok: true, observed_protocol: mode, h3_request_share: mode === 'h3' ? 1 : 0, h3_byte_share: mode === 'h3' ? 1 : 0 }
}
