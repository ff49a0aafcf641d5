#!/usr/bin/env node
// How fast one agent measures, and what it costs beyond the page itself.
// Runs the real parts in one process: embedded PostgreSQL (or DATABASE_URL),
// the API, the lab origin on loopback and one agent; queues ROUNDS rounds of
// the lab's 15 KB page and lets the agent drain them back to back.
//
//   node bench/agent-throughput.js [--rounds 20] [--modes h2,h3] [--browser chromium] [--api-port 18181] [--lab-port 18543] [--pg-port 54391]
//
// --modes h2,h3,auto measures what the auto arm adds to a round.
// --browser firefox measures Firefox's rounds (H3LENS_FIREFOX, Debian's
// firefox-esr by default): a browser of its own per run, on a fresh
// profile that trusts the lab's authority (docs/BROWSERS.md).
//
// Prints runs per minute and the median per-run overhead = the agent's wall
// time per run (context creation, navigation, metric collection, context
// close) minus the page's own load time (loadEventEnd). The loop wall per run
// is given twice: over the whole bench (with the agent's start: two browser
// launches and the redirect discovery) and in the steady state, from the
// first round's submission to the last's (the jobs' finished_at), which is
// what an agent that has been running a while costs per run. The CPU per run
// of each part (Chromium with all its processes, PostgreSQL, Caddy, and this
// process: the API, the agent and the bench) is read from /proc over the
// steady state.
import fs from 'node:fs'
import os from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { createMonitor } from '../lib/store/monitors.js'
import { createAgentToken } from '../lib/store/agents.js'
import { startBenchStack } from './lib/stack.js'
import { startAgent } from '../agents/main.js'
import { processTable, reapedChildrenCpuS, treeCpuS } from './lib/proc-cpu.js'
import { benchArgs, countOption } from './lib/args.js'
import { median } from './lib/median.js'

const { values } = benchArgs(import.meta.url, {
  options: {
    rounds: { type: 'string', default: '20' },
    modes: { type: 'string', default: 'h2,h3' },
    browser: { type: 'string', default: 'chromium' },
    'api-port': { type: 'string', default: '18181' },
    'lab-port': { type: 'string', default: '18543' },
    'pg-port': { type: 'string', default: '54391' }
  }
})
// The steady state runs from the first round's submission to the last's.
const rounds = countOption(import.meta.url, values, 'rounds', { min: 2 })
const stack = await startBenchStack({ name: 'bench', ports: values })
const { config, log, lifecycle, pool, origin, api } = stack
try {
  const modes = values.modes.split(',').map((m) => m.trim())
  const browser = values.browser
  if (!['chromium', 'firefox'].includes(browser)) throw new Error(`--browser ${browser}: chromium or firefox`)
  const monitor = await createMonitor(pool, { url: `${origin.baseUrl}/page-15k.html`, interval_s: 10, locations: ['local'], modes, browsers: [browser], paused: false })
  await pool.query(`INSERT INTO jobs (monitor_id, location_id, browser, due_at)
    SELECT $1, 'local', $3, now() - make_interval(secs => g) FROM generate_series(1, $2) g`, [monitor.id, rounds, browser])
  const { token } = await createAgentToken(pool, { location: 'local' })
  const started = performance.now()
  const agent = await startAgent({ config: { ...config, apiUrl: api.url }, log, token, location: 'local', lab: { spki: origin.spki, caPath: origin.caPath, address: '127.0.0.1' } })
  lifecycle.add('agent', agent.stop)
  /** @type {{ done: number, cpu: Record<string, number> | null } | null} */
  let steadyFrom = null
  let done = 0
  for (;;) {
    const { rows } = await pool.query("SELECT count(*)::int AS n FROM jobs WHERE monitor_id = $1 AND state IN ('done', 'failed')", [monitor.id])
    done = rows[0].n
    if (done >= rounds) break
    if (!steadyFrom && done >= 1) steadyFrom = { done, cpu: cpuByPart() }
    await sleep(50)
  }
  const elapsedMs = performance.now() - started
  const cpuEnd = cpuByPart()
  const { rows } = await pool.query(
    `SELECT mode, status, load_ms, connect_ms, (details->>'wall_ms')::float AS wall_ms,
       (details->'context'->>'prepared')::boolean AS prepared, (details->'context'->>'ready_ms')::float AS ready_ms,
       details->'requests'->0->>'connection_reused' AS reused, details->'requests'->0->>'from_cache' AS cached
     FROM results WHERE monitor_id = $1`, [monitor.id])
  const ok = rows.filter((r) => r.status === 'ok' && r.wall_ms !== null)
  const overhead = ok.map((r) => r.wall_ms - r.load_ms).sort((a, b) => a - b)
  const loads = ok.map((r) => r.load_ms).sort((a, b) => a - b)
  const perRunWall = elapsedMs / rows.length
  console.log(`agent throughput — ${rounds} rounds of ${monitor.url} in ${browser}, modes ${modes.join('+')}, ${os.cpus().length} cores`)
  console.log(`  runs                      ${rows.length} (${ok.length} ok)`)
  console.log(`  runs per minute           ${(rows.length / (elapsedMs / 60000)).toFixed(1)}`)
  console.log(`  median page load          ${median(loads).toFixed(1)} ms`)
  console.log(`  median per-run overhead   ${median(overhead).toFixed(1)} ms   (measure wall − load; goal ≤ 100 ms)`)
  console.log(`  p90 per-run overhead      ${overhead[Math.floor(overhead.length * 0.9)]?.toFixed(1)} ms`)
  const ready = ok.map((r) => r.ready_ms ?? NaN).filter((x) => !Number.isNaN(x)).sort((a, b) => a - b)
  console.log(`  loop wall per run         ${perRunWall.toFixed(1)} ms   (elapsed / runs, includes claim, spool and submit)`)
  console.log(`  loop overhead per run     ${(perRunWall - median(loads)).toFixed(1)} ms   (loop wall − median load; ratio ${(perRunWall / median(loads)).toFixed(2)}×, goal ≤ 2.5×)`)
  console.log(`  runs on a prepared context ${ok.filter((r) => r.prepared).length} of ${ok.length}; median wait for it ${median(ready).toFixed(1)} ms, p90 ${ready[Math.floor(ready.length * 0.9)]?.toFixed(1)} ms`)
  const { rows: [span] } = await pool.query(
    `SELECT extract(epoch FROM max(finished_at) - min(finished_at)) * 1000 AS ms, count(*)::int AS n
     FROM jobs WHERE monitor_id = $1 AND state = 'done'`, [monitor.id])
  const steadyRuns = (span.n - 1) * (rows.length / rounds)
  const steadyWall = span.ms / steadyRuns
  console.log(`  steady loop wall per run  ${steadyWall.toFixed(1)} ms   (first round's submission to the last's over ${steadyRuns} runs; ratio ${(steadyWall / median(loads)).toFixed(2)}×)`)
  console.log(`  steady loop wall per round ${(span.ms / (span.n - 1)).toFixed(1)} ms   (what a round of these modes costs the agent)`)
  const runsIn = steadyFrom ? (done - steadyFrom.done) * (rows.length / rounds) : 0
  const cpuFrom = steadyFrom?.cpu
  if (cpuFrom && cpuEnd && runsIn > 0) {
    const parts = Object.keys(cpuEnd).map((k) => `${k} ${((cpuEnd[k] - cpuFrom[k]) / runsIn).toFixed(0)}`)
    const total = Object.keys(cpuEnd).reduce((sum, k) => sum + cpuEnd[k] - cpuFrom[k], 0) / runsIn
    console.log(`  CPU per run (steady)      ${total.toFixed(0)} ms: ${parts.join(', ')} (ms, over ${runsIn} runs)`)
    console.log(`  CPU per round (steady)    ${(total * rows.length / rounds).toFixed(0)} ms`)
  }
  // Coldness, from each run's own evidence: the document came over a new
  // connection (connect > 0, not reused) and nothing came from a cache.
  // Firefox's requests say nothing of reuse (null): connect > 0 says it.
  const warm = ok.filter((r) => !(r.connect_ms > 0) || r.reused === 'true' || (browser === 'chromium' && r.reused !== 'false') || r.cached !== 'false')
  console.log(`  cold runs                 ${ok.length - warm.length} of ${ok.length} (document on a new connection with connect > 0, nothing from cache)`)
} finally {
  await stack.stop()
}

/**
 * CPU time used so far, in ms, by this process ('node': the API, the agent
 * and the bench) and by each kind of process started under it, with its
 * children: 'chromium' (the browsers, their renderers, GPU and network
 * processes; a renderer that exited is in its zygote's reaped-children
 * time), 'firefox' (a browser per run: those that exited are in this
 * process's reaped-children time, the only children it starts and waits
 * for), 'postgres', 'caddy'. From /proc; all processes alive at the time.
 * Null without /proc (not Linux).
 * @returns {Record<string, number> | null}
 */
function cpuByPart () {
  if (!fs.existsSync('/proc/self/stat')) return null
  const table = processTable()
  const { user, system } = process.cpuUsage()
  /** @type {Record<string, number>} */
  const parts = { node: (user + system) / 1000, chromium: 0, firefox: reapedChildrenCpuS() * 1000, postgres: 0, caddy: 0 }
  for (const pid of table.children.get(process.pid) ?? []) {
    let cmd = ''
    try { cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8') } catch { continue }
    const part = /chrom/.test(cmd) ? 'chromium' : /firefox/.test(cmd) ? 'firefox' : /postgres/.test(cmd) ? 'postgres' : /caddy/.test(cmd) ? 'caddy' : null
    if (part) parts[part] += treeCpuS(pid, table) * 1000
  }
  return parts
}
