// What capturing frames does to a load: A/B against capture off, on the
// same lab page, in the same browsers, interleaved in one run (docs/BENCHMARKS.md,
// "Filmstrip capture").
//
//   node bench/filmstrip-capture.js [runs per arm and protocol, default 20] [page, default page-15k]
//
// Four arms, in a shuffled order every round, each run in a fresh context
// of one browser per protocol (forced H2, forced H3):
//   - off:        no capture (twice, "off" and "off2": the A/A noise);
//   - screencast: agents/filmstrip.js, as the agent runs it;
//   - trace:      the trace's screenshot category (what Lighthouse reads).
// Per arm: TTFB and load p50 (Navigation Timing), their shift against off
// (and off2 against off: the noise), the browser's CPU per run (its whole
// process tree, /proc, from before the context to after it closed), the
// agent's own CPU per run (decoding frames, Speed Index) and the frames and
// bytes kept. Capture runs wait for the page to go quiet after load; that
// wait is after the timings and is in the CPU figures.
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import puppeteer from 'puppeteer-core'
import { baseFlags, labBrowserFlags, modeFlags } from '../lib/measurement/browsers/chromium.js'
import { startOrigin } from '../lab/origin.js'
import { freePort } from '../dev/free-port.js'
import { startFilmstrip, QUIET_MS } from '../agents/filmstrip.js'
import { treeCpuS } from './lib/proc-cpu.js'
import { benchArgs } from './lib/args.js'

const { positionals: [runsArg = '20', pageName = 'page-15k'] } = benchArgs(import.meta.url, { allowPositionals: true })
const runs = Number(runsArg)
const ARMS = /** @type {const} */ (['off', 'off2', 'screencast', 'trace'])

/** @param {number[]} xs @param {number} q */
const quantile = (xs, q) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  if (!s.length) return NaN
  const i = (s.length - 1) * q
  return s[Math.floor(i)] + (s[Math.ceil(i)] - s[Math.floor(i)]) * (i - Math.floor(i))
}
const mean = (/** @type {number[]} */ xs) => xs.reduce((a, b) => a + b, 0) / xs.length
const r1 = (/** @type {number} */ v) => Math.round(v * 10) / 10

/**
 * One load in a fresh context with the arm's capture.
 * @param {import('puppeteer-core').Browser} browser
 * @param {string} url
 * @param {typeof ARMS[number]} arm
 */
async function runOnce (browser, url, arm) {
  const pid = /** @type {number} */ (browser.process()?.pid)
  const cpu0 = treeCpuS(pid)
  const agent0 = process.cpuUsage()
  const context = await browser.createBrowserContext()
  const page = await context.newPage()
  let frames = 0
  let bytes = 0
  const film = arm === 'screencast' ? await startFilmstrip(page) : null
  if (arm === 'trace') await page.tracing.start({ screenshots: true, categories: ['disabled-by-default-devtools.screenshot'] })
  await page.goto(url, { waitUntil: 'load', timeout: 30_000 })
  const t = await page.evaluate(() => {
    const n = /** @type {PerformanceNavigationTiming} */ (performance.getEntriesByType('navigation')[0])
    return { ttfb: n.responseStart, load: n.loadEventEnd || performance.now(), protocol: n.nextHopProtocol }
  })
  if (film) {
    const { filmstrip } = await film.finish()
    frames = filmstrip.frames.length
    bytes = filmstrip.frames.reduce((s, f) => s + f.jpeg.length, 0)
  }
  if (arm === 'trace') {
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS))
    const trace = JSON.parse(Buffer.from(/** @type {Uint8Array} */ (await page.tracing.stop())).toString())
    const shots = (trace.traceEvents ?? trace).filter((/** @type {any} */ e) => e.name === 'Screenshot')
    frames = shots.length
    bytes = shots.reduce((/** @type {number} */ s, /** @type {any} */ e) => s + Buffer.byteLength(e.args.snapshot, 'base64'), 0)
  }
  await context.close()
  const agent = process.cpuUsage(agent0)
  return { ...t, cpu_ms: (treeCpuS(pid) - cpu0) * 1000, agent_cpu_ms: (agent.user + agent.system) / 1000, frames, bytes }
}

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-bench-film-'))
const origin = await startOrigin({ dataDir, port: await freePort() })
/** @type {import('puppeteer-core').Browser[]} */
const browsers = []
try {
  const extraFlags = labBrowserFlags({ spki: origin.spki, hostname: origin.hostname, address: /** @type {string} */ (origin.address) })
  const url = origin.baseUrl + origin.pages[pageName].path
  /** @type {Record<string, Record<string, Awaited<ReturnType<typeof runOnce>>[]>>} */
  const rows = {}
  for (const mode of /** @type {const} */ (['h2', 'h3'])) {
    const browser = await puppeteer.launch({
      executablePath: process.env.H3LENS_CHROMIUM ?? '/usr/bin/chromium',
      args: [...baseFlags(), ...modeFlags(mode, url, { lab: true }), ...extraFlags, `--user-data-dir=${await mkdtemp(path.join(dataDir, 'profile-'))}`],
      headless: true,
      pipe: true,
      defaultViewport: { width: 1366, height: 768 }
    })
    browsers.push(browser)
    rows[mode] = Object.fromEntries(ARMS.map((a) => [a, []]))
    for (const arm of ARMS) await runOnce(browser, url, arm) // warm-up, not counted
    for (let i = 0; i < runs; i++) {
      const order = [...ARMS].sort(() => Math.random() - 0.5)
      for (const arm of order) {
        const r = await runOnce(browser, url, arm)
        if (r.protocol !== mode) throw new Error(`${mode} run came over ${r.protocol}`)
        rows[mode][arm].push(r)
      }
    }
  }
  console.log(`\n${pageName}, ${runs} runs per arm and protocol, interleaved; Chromium ${await browsers[0].version()}, ${os.cpus().length} cores`)
  console.log('proto arm         ttfb p50  shift   load p50  shift   browser CPU/run  agent CPU/run  frames  KB kept')
  for (const [mode, byArm] of Object.entries(rows)) {
    const base = byArm.off
    for (const arm of ARMS) {
      const rs = byArm[arm]
      const ttfb = quantile(rs.map((r) => r.ttfb), 0.5)
      const load = quantile(rs.map((r) => r.load), 0.5)
      const shift = (/** @type {number} */ v, /** @type {number} */ b) => arm === 'off' ? '' : `${v >= b ? '+' : ''}${r1((v / b - 1) * 100)}%`
      console.log([
        mode.padEnd(5), arm.padEnd(11),
        String(r1(ttfb)).padStart(8), shift(ttfb, quantile(base.map((r) => r.ttfb), 0.5)).padStart(7),
        String(r1(load)).padStart(9), shift(load, quantile(base.map((r) => r.load), 0.5)).padStart(7),
        `${r1(mean(rs.map((r) => r.cpu_ms)))} ms`.padStart(16), `${r1(mean(rs.map((r) => r.agent_cpu_ms)))} ms`.padStart(14),
        String(r1(mean(rs.map((r) => r.frames)))).padStart(7), String(r1(mean(rs.map((r) => r.bytes)) / 1024)).padStart(8)
      ].join(' '))
    }
  }
} finally {
  for (const b of browsers) await b.close().catch(() => {})
  await origin.stop()
  await rm(dataDir, { recursive: true, force: true })
}
