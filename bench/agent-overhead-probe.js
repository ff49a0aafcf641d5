// What one measured page load costs the agent beyond the load itself, and
// what HTTP/2 and HTTP/3 look like on unshaped loopback.
//
//   node bench/agent-overhead-probe.js [runs per mode, default 10] [page, default page-15k]
//
// Prints medians per mode: TTFB, load, wall time of the run (asking for a
// context to the results read; this probe never calls pool.settle(), so
// every run makes its own context and closing it is left to the pool) and
// overhead = wall - load. Browser launch happens once
// per flag set and is reported separately. Loopback has no RTT, so the TTFB
// gap is CPU time (QUIC's user-space crypto and packet handling), not network.
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { baseFlags, labBrowserFlags, modeFlags } from '../lib/measurement/browsers/chromium.js'
import { measurePage } from '../agents/measure.js'
import { startOrigin } from '../lab/origin.js'
import { freePort } from '../dev/free-port.js'
import { benchArgs } from './lib/args.js'
import { median1 as median } from './lib/median.js'

const { positionals: [runsArg = '10', pageName = 'page-15k'] } = benchArgs(import.meta.url, { allowPositionals: true })
const runs = Number(runsArg)

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-bench-'))
// Outside a namespace the origin has an address (loopback).
const origin = await startOrigin({ dataDir, port: await freePort() })
const pool = createBrowserPool({ dataDir })
try {
  const extraFlags = labBrowserFlags({ spki: origin.spki, hostname: origin.hostname, address: /** @type {string} */ (origin.address) })
  const url = origin.baseUrl + origin.pages[pageName].path
  for (const mode of /** @type {const} */ (['h3', 'h2'])) {
    const t0 = performance.now()
    await pool.acquire({ flags: [...baseFlags(), ...modeFlags(mode, url), ...extraFlags] })
    console.log(`${mode}: browser launch ${Math.round(performance.now() - t0)} ms`)
    await measurePage({ pool, url, mode, extraFlags }) // warm-up, not counted
  }
  /** @type {{ h3: Record<string, any>[], h2: Record<string, any>[] }} */
  const rows = { h3: [], h2: [] }
  for (let i = 0; i < runs; i++) {
    /** @type {import('../lib/measurement/modes.js').Mode[]} */
    const order = i % 2 ? ['h2', 'h3'] : ['h3', 'h2'] // alternate who goes first
    for (const mode of order) {
      const r = await measurePage({ pool, url, mode, extraFlags })
      if (r.status !== 'ok') console.log(`${mode} run ${i}: ${r.status} ${r.error}`)
      rows[mode].push(r)
    }
  }
  console.log(`\n${pageName}, ${runs} runs per mode, medians in ms`)
  console.log('mode  ttfb  connect  fcp    load   wall   overhead(wall-load)')
  for (const [mode, rs] of Object.entries(rows)) {
    const cells = [
      median(rs.map((r) => r.ttfb_ms)), median(rs.map((r) => r.connect_ms)), median(rs.map((r) => r.fcp_ms)),
      median(rs.map((r) => r.load_ms)), median(rs.map((r) => r.wall_ms)), median(rs.map((r) => r.wall_ms - r.load_ms))
    ]
    console.log(`${mode.padEnd(5)} ${cells.map((c) => String(c).padEnd(6)).join(' ')}`)
  }
} finally {
  await pool.close()
  await origin.stop()
  await rm(dataDir, { recursive: true, force: true })
}
