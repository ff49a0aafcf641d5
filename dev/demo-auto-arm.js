// The auto arm's visits over the dashboard's demo data (dev/demo-data.js
// seedDemo), as an agent submits them: each visit goes through
// toSubmission (lib/measurement/result.js), which reads its protocol reason
// from its requests and the origin's Alt-Svc as on an agent. Three stories,
// as the lab shows them with real Chromium (test/auto-arm.test.js):
//   - a normal path (Lab North America): first visits over H2, the origin
//     not yet known to speak H3; returning visits over H3, learnt from
//     Alt-Svc, except one round in twelve in which TCP won the race;
//   - UDP blocked (Lab Europe): forced H3 fails in every round; the auto
//     arm's visits come over H2, the returning ones because H3 was marked
//     broken or TCP won the race;
//   - the lab's h2-only origin (seedDemo's h2Only monitor): H3 never
//     announced, every visit over H2.
// Shared by test/ui-auto.test.js and scripts/screenshots.js.
import { createMonitor } from '../lib/store/monitors.js'
import { insertRoundResults } from '../lib/store/results.js'
import { rebuildRollups } from '../lib/analysis/rollups.js'
import { toSubmission } from '../lib/measurement/result.js'
import { LOCATIONS, PAGES, random, sampleLoad } from './demo-data.js'
import { CHROMIUM_FLAGS } from './chromium-flags.js'

// One round in this many the returning visit on the normal path races and TCP wins.
const TCP_WINS_EVERY = 12

/**
 * @param {import('pg').Pool} db
 * @param {{ h2Only: { id: number } }} seeded what seedDemo returned
 * @param {{ hours?: number, stepMinutes?: number, labPort?: number, seed?: number, end?: number }} [opts] as given to seedDemo
 */
export async function seedAutoArm (db, seeded, { hours = 24, stepMinutes = 5, labPort = 8443, seed = 11, end: endAt = Date.now() } = {}) {
  const rnd = random(seed)
  const page = PAGES[0]
  const monitor = await createMonitor(db, {
    url: `https://lab.h3lens.test:${labPort}/${page.file}`, label: 'Lab auto arm', interval_s: stepMinutes * 60, locations: ['lab-na', 'lab-eu'], modes: ['h2', 'h3', 'auto']
  })
  const step = stepMinutes * 60e3
  const end = Math.floor(endAt / step) * step
  const rounds = Math.floor(hours * 3600e3 / step)
  const origin = `https://lab.h3lens.test:${labPort}`
  let i = 0
  /** @type {Parameters<typeof insertRoundResults>[1]['rounds']} stored together at the end, one INSERT and one fold for all */
  const visits = []
  for (const locId of ['lab-na', 'lab-eu']) {
    const loc = /** @type {typeof LOCATIONS[number]} */ (LOCATIONS.find((l) => l.id === locId))
    const blocked = locId === 'lab-eu'
    for (let k = rounds; k >= 1; k--) {
      const due = new Date(end - k * step + 14000)
      const job = await doneJob(db, monitor.id, locId, due)
      const load = (/** @type {string} */ mode, /** @type {string} */ protocol) => sampleLoad({ rnd, page, loc, mode: protocol, time: +due, labPort, i: i++ })
      const results = [
        visit({ m: load('h2', 'h2'), mode: 'h2', view: 'first', protocol: 'h2', usage: 'unspecifiedReason', origin, advertised: true, due, labPort }),
        blocked
          ? quicFailed(due, labPort)
          : visit({ m: load('h3', 'h3'), mode: 'h3', view: 'first', protocol: 'h3', usage: 'dnsAlpnH3JobWonRace', origin, advertised: true, due, labPort }),
        visit({ m: load('auto', 'h2'), mode: 'auto', view: 'first', protocol: 'h2', usage: 'mappingMissing', origin, advertised: true, due, labPort })
      ]
      const tcpWins = k % TCP_WINS_EVERY === 0
      if (blocked) {
        results.push(visit({ m: load('auto', 'h2'), mode: 'auto', view: 'returning', protocol: 'h2', usage: k % 2 ? 'broken' : 'mainJobWonRace', origin, advertised: true, due, labPort }))
      } else {
        results.push(visit({ m: load('auto', tcpWins ? 'h2' : 'h3'), mode: 'auto', view: 'returning', protocol: tcpWins ? 'h2' : 'h3', usage: tcpWins ? 'mainJobWonRace' : 'alternativeJobWonRace', origin, advertised: true, due, labPort }))
      }
      visits.push({ job, results })
    }
  }
  // The h2-only origin's rounds get the auto arm's visits: nothing announces H3 there.
  const { rows: jobs } = await db.query('SELECT id, monitor_id, location_id, due_at FROM jobs WHERE monitor_id = $1 ORDER BY due_at', [seeded.h2Only.id])
  const h2Origin = `https://lab.h3lens.test:${labPort + 1}`
  for (const job of jobs) {
    const loc = /** @type {typeof LOCATIONS[number]} */ (LOCATIONS.find((l) => l.id === job.location_id))
    const results = ['first', 'returning'].map((view) => visit({
      m: sampleLoad({ rnd, page, loc, mode: 'h2', time: +job.due_at, labPort: labPort + 1, i: i++ }), mode: 'auto', view, protocol: 'h2', usage: 'unspecifiedReason', origin: h2Origin, advertised: false, due: job.due_at, labPort: labPort + 1
    }))
    visits.push({ job, results })
  }
  await insertRoundResults(db, { rounds: visits, agentId: null, agentVersion: '0.1.0' })
  await rebuildRollups(db)
  const id = async (/** @type {string} */ where, /** @type {unknown[]} */ args) => (await db.query(`SELECT id FROM results WHERE ${where} ORDER BY time DESC LIMIT 1`, args)).rows[0].id
  return {
    monitor,
    returningH3: await id("monitor_id = $1 AND location_id = 'lab-na' AND mode = 'auto' AND view = 'returning' AND observed_protocol = 'h3'", [monitor.id]),
    returningTcpWon: await id("monitor_id = $1 AND location_id = 'lab-eu' AND mode = 'auto' AND view = 'returning' AND details->'protocol_reason'->>'code' = 'tcp_won'", [monitor.id])
  }
}

/**
 * @param {import('pg').Pool} db
 * @param {number} monitorId
 * @param {string} locationId
 * @param {Date} due
 */
async function doneJob (db, monitorId, locationId, due) {
  const { rows: [job] } = await db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at, state, attempts, finished_at) VALUES ($1, $2, $3, 'done', 1, $3::timestamptz + interval '5 seconds')
     RETURNING id, monitor_id, location_id, due_at`, [monitorId, locationId, due])
  return job
}

/**
 * One loaded visit as the agent submits it: the page's document came over
 * `protocol` with Chromium's alternateProtocolUsage `usage`; its
 * sub-resources on the same connection.
 * @param {{ m: ReturnType<typeof sampleLoad>, mode: string, view: string, protocol: string, usage: string, origin: string, advertised: boolean, due: Date, labPort: number }} o
 */
function visit ({ m, mode, view, protocol, usage, origin, advertised, due, labPort }) {
  const requests = m.details.requests.map((r, n) => ({ ...r, url: r.url.replace(/^https:\/\/[^/]+/, origin), protocol, alternate_protocol_usage: n === 0 ? usage : null }))
  const submission = toSubmission({
    mode, view, probe: 'page', status: 'ok', observed_protocol: protocol, protocol_ok: true,
    dns_ms: m.dns_ms, connect_ms: m.connect_ms, tls_ms: m.tls_ms, ttfb_ms: m.ttfb_ms, dcl_ms: m.dcl_ms, fcp_ms: m.fcp_ms, lcp_ms: m.lcp_ms, load_ms: m.load_ms,
    bytes: m.bytes, requests: m.requests, h3_request_share: protocol === 'h3' ? 1 : 0, h3_byte_share: protocol === 'h3' ? 1 : 0,
    browser_version: 'Chrome/156.0.8078.79', flags: flagsOf(mode, labPort),
    requests_detail: requests,
    origins: [{ origin, alt_svc: advertised ? `h3=":${labPort}"; ma=2592000` : null, h3_advertised: advertised, requests: { h3: protocol === 'h3' ? requests.length : 0, h2: protocol === 'h2' ? requests.length : 0, other: 0 } }],
    wall_ms: m.details.wall_ms
  }, { rtt: m.rtt_ms, rttSource: 'profile' })
  return { ...submission, measured_at: new Date(+due + 2000) }
}

/**
 * The forced H3 arm on a path that drops UDP: the QUIC handshake never completes.
 * @param {Date} due
 * @param {number} labPort
 */
function quicFailed (due, labPort) {
  const submission = toSubmission({
    mode: 'h3', view: 'first', probe: 'page', status: 'error', observed_protocol: null, protocol_ok: false,
    error: 'net::ERR_QUIC_PROTOCOL_ERROR: the QUIC handshake did not complete (no UDP reply)', bytes: 0, requests: 0,
    browser_version: 'Chrome/156.0.8078.79', flags: flagsOf('h3', labPort), requests_detail: []
  }, { rtt: null })
  return { ...submission, measured_at: new Date(+due + 2000) }
}

/** @param {string} mode @param {number} labPort */
function flagsOf (mode, labPort) {
  const arm = { h2: ['--disable-quic'], h3: ['--enable-quic', `--origin-to-force-quic-on=lab.h3lens.test:${labPort}`], auto: [] }[mode] ?? []
  return [...CHROMIUM_FLAGS, ...arm, '--host-resolver-rules=MAP lab.h3lens.test 127.0.0.1, MAP * ~NOTFOUND']
}
