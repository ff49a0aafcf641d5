// What a browser just started costs a page load, and why a round with the
// auto arm runs its forced arms in browsers just started too.
//
//   sudo node bench/fresh-browser.js [--rounds N]   (default 24, 4 to 200)
//
// The auto arm's visits run in a browser started for them (agents/visits.js:
// the returning visit needs a restart on the first visit's profile). A
// pooled Chromium that has loaded pages for a while is faster at its next
// load than one just started, so an auto arm compared with pooled forced
// arms read slower by that difference, whatever its protocol. Two monitors
// of the same page at one lab location (20 ms RTT), their rounds
// interleaved: A runs H2, H3 and auto (its forced arms in browsers just
// started, as agents/job-runner.js does for every round with the auto arm),
// B runs H2 and H3 only (pooled browsers). Prints, per metric, the median of
// A's per-round differences (auto's first visit − A's H2: both over H2; auto's
// returning visit − A's H3: both over H3), which should be near 0, and the
// same visits against B's pooled arms (difference of medians), which is
// what the comparison read before; then the protocols of what the auto
// arm's first visits loaded beside their documents. Needs root (network
// namespaces).
import { setTimeout as sleep } from 'node:timers/promises'
import { benchArgs, countOption } from './lib/args.js'
import { startBenchStack } from './lib/stack.js'
import { freePort } from '../dev/free-port.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createAgentToken } from '../lib/store/agents.js'
import { createMonitor } from '../lib/store/monitors.js'
import { startAgent } from '../agents/main.js'
import { median1 as median } from './lib/median.js'

const { values } = benchArgs(import.meta.url, { options: { rounds: { type: 'string', default: '24' } } })
const rounds = countOption(import.meta.url, values, 'rounds', { min: 4, max: 200 })
const METRICS = ['ttfb_ms', 'fcp_ms', 'load_ms']

const ports = { 'api-port': String(await freePort()), 'lab-port': '8443', 'pg-port': String(await freePort()) }
const stack = await startBenchStack({
  name: 'bench-fresh',
  ports,
  lab: { prefix: 'h3bfb', profiles: [{ name: 'open', rtt_ms: 20, jitter_ms: 0, loss_pct: 0, loss_model: 'bernoulli', down_kbps: 50_000, up_kbps: 20_000, queue_packets: 200 }] }
})
try {
  const { pool: db, origin, api, log, lifecycle } = stack
  const [loc] = /** @type {NonNullable<typeof stack.topology>} */ (stack.topology).locations
  await upsertLocation(db, { id: 'lab-open', name: loc.name, region: 'Bench', kind: 'lab', profile: loc.profile })
  const { token } = await createAgentToken(db, { location: 'lab-open' })
  const agent = await startAgent({
    config: { ...stack.config, apiUrl: api.url, firefoxPath: '' }, log, token, location: 'lab-open',
    lab: { spki: origin.spki, hostname: origin.hostname, address: loc.originAddress, netns: loc.ns }
  })
  lifecycle.add('agent', agent.stop)

  const url = `${origin.baseUrl}/page-15k.html`
  const a = await createMonitor(db, { url, locations: ['lab-open'], interval_s: 3600, modes: ['h2', 'h3', 'auto'] })
  const b = await createMonitor(db, { url, locations: ['lab-open'], interval_s: 3600, modes: ['h2', 'h3'] })
  // Interleaved: A's and B's rounds alternate in due time.
  const { rows } = await db.query(
    `INSERT INTO jobs (monitor_id, location_id, due_at)
     SELECT CASE WHEN g % 2 = 0 THEN $1::int ELSE $2::int END, 'lab-open', date_trunc('second', now()) - make_interval(secs => 2 * $3 - g)
       FROM generate_series(0, 2 * $3 - 1) g RETURNING id`, [a.id, b.id, rounds])
  const ids = rows.map((r) => r.id)
  const until = Date.now() + rounds * 2 * 30_000
  for (;;) {
    const { rows: states } = await db.query("SELECT count(*) FILTER (WHERE state IN ('done', 'failed'))::int AS ended FROM jobs WHERE id = ANY($1)", [ids])
    if (states[0].ended === ids.length) break
    if (Date.now() > until) throw new Error(`rounds not done in ${rounds * 60} s`)
    await sleep(500)
  }
  const { rows: results } = await db.query(
    `SELECT monitor_id, job_id, mode, view, observed_protocol, ${METRICS.join(', ')} FROM results
      WHERE monitor_id = ANY($1) AND probe = 'page' AND status = 'ok'`, [[a.id, b.id]])
  /** @param {number} monitor @param {string} mode @param {string} view */
  const of = (monitor, mode, view) => results.filter((r) => r.monitor_id === monitor && r.mode === mode && r.view === view)
  console.log(`fresh-browser: ${rounds} rounds of each monitor at a 20 ms lab location`)
  for (const [visit, forced, protocol] of /** @type {const} */ ([['first', 'h2', 'h2'], ['returning', 'h3', 'h3']])) {
    const auto = of(a.id, 'auto', visit).filter((r) => r.observed_protocol === protocol)
    const fresh = new Map(of(a.id, forced, 'first').map((r) => [r.job_id, r]))
    const pooled = of(b.id, forced, 'first')
    console.log(`\nauto ${visit} visit over ${protocol} (${auto.length} rounds) against forced ${forced}:`)
    for (const metric of METRICS) {
      // A metric the load did not have (null: no paint, say) drops its pair, not counts as 0.
      const paired = auto.flatMap((r) => r[metric] !== null && fresh.get(r.job_id)?.[metric] != null ? [r[metric] - fresh.get(r.job_id)[metric]] : [])
      const againstPooled = median(auto.map((r) => r[metric])) - median(pooled.map((r) => r[metric]))
      console.log(`  ${metric.padEnd(8)} fresh forced arm, same round: ${String(median(paired)).padStart(6)} ms (median of ${paired.length} differences)   pooled forced arm (${pooled.length} rounds): ${againstPooled.toFixed(1).padStart(6)} ms (difference of medians)`)
    }
  }
  // What the auto arm's first visit loads beside its document: a browser
  // that learns the origin's Alt-Svc from the document may fetch the rest
  // over H3, on a connection of its own, where the forced H2 arm reuses
  // the document's.
  const { rows: subresources } = await db.query(
    `SELECT q->>'protocol' AS protocol, count(*)::int AS n FROM results r, jsonb_array_elements(r.details->'requests') q
      WHERE r.monitor_id = $1 AND r.mode = 'auto' AND r.view = 'first' AND r.status = 'ok' AND q->>'type' <> 'Document'
      GROUP BY 1 ORDER BY 1`, [a.id])
  console.log(`\nauto first visit, requests other than the document, by protocol: ${subresources.map((r) => `${r.protocol} ${r.n}`).join(', ') || 'none'}`)
} finally {
  await stack.stop()
}
