#!/usr/bin/env node
// h3lens's agent beside the tools people would pick instead: browsertime
// (through Debian's chromium-driver) and Lighthouse, all three on the same
// Debian Chromium, loading the same lab pages over loopback, one measured
// load at a time.
//
//   node bench/peers.js [--loads 20] [--peer-loads N] [--pages page-15k,page-1m]
//        [--tools h3lens,browsertime,lighthouse] [--timeout-s 120]
//        [--api-port 18282] [--lab-port 18248] [--pg-port 54522]
//
// The same for every tool:
//   - page: the lab origin's page (Caddy on loopback), https://lab.h3lens.test;
//   - protocol: HTTP/2 over TLS, QUIC switched off (--disable-quic); the lab
//     certificate is trusted by its public-key hash and the lab host name
//     resolved by --host-resolver-rules, the flags h3lens's agent uses;
//   - cold: a fresh profile or incognito context per load, so no cache and no
//     connection survives from one load to the next.
// Each tool runs as it is meant to be run for one cold load: browsertime
// and Lighthouse one process per load (each starts its own browser, with a
// fresh profile); h3lens's agent as a long-running process that claims
// queued rounds (monitor in h2 mode only) from the API and submits them.
//
// Per tool and page: loads per minute, the median and p90 wall time per load
// beyond the page's own load time (loadEventEnd), and the CPU seconds per
// load of the tool and its browsers. The peers' wall is their process's
// (start to exit); h3lens's is the time between one round's results and the
// next's (claim, measure, spool, submit), its first round (browser launch)
// left out. CPU comes from /proc: for a peer, the CPU of the process and of
// every descendant it waited for (cutime of this process); for h3lens, the
// CPU of the agent process and its browsers over the measured rounds.
//
// On first run, the peers are installed from npm into bench/peers/ (its own
// package.json and lock; `npm ci --ignore-scripts`, as the driver packages'
// install scripts download binaries), and Debian's chromium-driver through
// apt-get when missing (as root; otherwise the bench names it and stops).
// Neither is a dependency of h3lens.
import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { createMonitor } from '../lib/store/monitors.js'
import { createAgentToken } from '../lib/store/agents.js'
import { startBenchStack } from './lib/stack.js'
import { baseFlags, labBrowserFlags } from '../lib/measurement/browsers/chromium.js'
import { reapedChildrenCpuS, treeCpuS } from './lib/proc-cpu.js'
import { benchArgs, countOption } from './lib/args.js'

const { values } = benchArgs(import.meta.url, {
  options: {
    loads: { type: 'string', default: '20' },
    'peer-loads': { type: 'string' },
    pages: { type: 'string', default: 'page-15k,page-1m' },
    tools: { type: 'string', default: 'h3lens,browsertime,lighthouse' },
    'timeout-s': { type: 'string', default: '120' },
    'api-port': { type: 'string', default: '18282' },
    'lab-port': { type: 'string', default: '18248' },
    'pg-port': { type: 'string', default: '54522' }
  }
})
const loads = countOption(import.meta.url, values, 'loads', { min: 3 })
const peerLoads = values['peer-loads'] === undefined ? loads : countOption(import.meta.url, values, 'peer-loads', { min: 3 })
const pages = values.pages.split(',')
const tools = values.tools.split(',')
const timeoutMs = Number(values['timeout-s']) * 1000
const CHROMIUM = '/usr/bin/chromium'
const CHROMEDRIVER = '/usr/bin/chromedriver'
const PEERS_DIR = fileURLToPath(new URL('./peers/', import.meta.url))
const AGENT_PROCESS = fileURLToPath(new URL('./lib/agent-process.js', import.meta.url))

ensurePeers()
ensureChromedriver()

const stack = await startBenchStack({ name: 'bench-peers', ports: values })
const { dataDir, pool, origin, api } = stack
/** @type {Record<string, Record<string, Figures>>} */
const table = {}
try {
  const lab = labBrowserFlags({ spki: origin.spki, hostname: origin.hostname, address: /** @type {string} */ (origin.address) })
  const { token } = await createAgentToken(pool, { location: 'local' })

  for (const name of pages) {
    const url = `${origin.baseUrl}${origin.pages[name].path}`
    table[name] = {}
    for (const tool of tools) {
      console.error(`${name}: ${tool} …`)
      if (tool === 'h3lens') table[name][tool] = await runH3lens({ pool, url, token, apiUrl: api.url, lab: { spki: origin.spki, address: origin.address } })
      else if (tool === 'browsertime') table[name][tool] = await runPeer(peerLoads, (dir) => browsertime(url, lab, dir))
      else if (tool === 'lighthouse') table[name][tool] = await runPeer(peerLoads, (dir) => lighthouse(url, lab, dir))
      else throw new Error(`unknown tool ${tool}; expected h3lens, browsertime or lighthouse`)
    }
  }
  print()
} finally {
  await stack.stop()
}

/**
 * @typedef {{ wallMs: number, loadMs: number | null, cpuS: number, protocol: string | null, error: string | null }} Load
 * @typedef {{ loads: Load[], elapsedMs: number, cpuS: number }} Figures
 */

/**
 * h3lens: one agent process drains loads + 1 queued rounds of an h2-only
 * monitor; the first round (browser launch, first context) is left out.
 * @param {{ pool: import('pg').Pool, url: string, token: string, apiUrl: string, lab: { spki: string, address: string | null } }} o
 * @returns {Promise<Figures>}
 */
async function runH3lens ({ pool, url, token, apiUrl, lab }) {
  const monitor = await createMonitor(pool, { url, interval_s: 3600, locations: ['local'], modes: ['h2'], paused: false })
  await pool.query(`INSERT INTO jobs (monitor_id, location_id, due_at)
    SELECT $1, 'local', now() - make_interval(secs => g) FROM generate_series(1, $2) g`, [monitor.id, loads + 1])
  const agentDir = fs.mkdtempSync(path.join(dataDir, 'agent-'))
  const child = spawn(process.execPath, [AGENT_PROCESS], {
    env: { ...process.env, H3LENS_DATA_DIR: agentDir, H3LENS_API_URL: apiUrl, LOG_LEVEL: 'warn', H3LENS_BENCH_AGENT: JSON.stringify({ token, lab }) },
    stdio: ['ignore', 'inherit', 'inherit']
  })
  /** @type {{ at: number, cpuS: number }[]} one sample each time a round's results arrived */
  const marks = []
  const deadline = Date.now() + timeoutMs * (loads + 1)
  try {
    while (marks.length < loads + 1 && Date.now() < deadline) {
      const { rows } = await pool.query("SELECT count(*)::int AS n FROM jobs WHERE monitor_id = $1 AND state IN ('done', 'failed')", [monitor.id])
      while (marks.length < rows[0].n) marks.push({ at: performance.now(), cpuS: treeCpuS(/** @type {number} */ (child.pid)) })
      await sleep(20)
    }
  } finally {
    child.kill('SIGTERM')
    await once(child, 'exit')
  }
  const { rows } = await pool.query(
    `SELECT status, load_ms, observed_protocol, error, measured_at FROM results WHERE monitor_id = $1 ORDER BY measured_at`, [monitor.id])
  const first = marks[0]
  const last = marks[marks.length - 1]
  const measured = []
  for (let i = 1; i < rows.length; i++) {
    const r = rows[i]
    measured.push({
      wallMs: r.measured_at.getTime() - rows[i - 1].measured_at.getTime(),
      loadMs: r.status === 'ok' ? r.load_ms : null,
      cpuS: NaN,
      protocol: r.observed_protocol,
      error: r.status === 'ok' ? null : `${r.status}: ${r.error}`
    })
  }
  return { loads: measured, elapsedMs: last.at - first.at, cpuS: last.cpuS - first.cpuS }
}

/**
 * A peer: `loads` processes, one after the other, each one cold load.
 * @param {number} n
 * @param {(dir: string) => { command: string, args: string[], env?: Record<string, string>, read: () => { loadMs: number | null, protocol: string | null } }} invocation
 * @returns {Promise<Figures>}
 */
async function runPeer (n, invocation) {
  /** @type {Load[]} */
  const done = []
  const started = performance.now()
  for (let i = 0; i < n; i++) {
    const dir = fs.mkdtempSync(path.join(dataDir, 'peer-'))
    const { command, args, env, read } = invocation(dir)
    const cpuBefore = reapedChildrenCpuS()
    const t0 = performance.now()
    const child = spawn(command, args, { cwd: dir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    let output = ''
    child.stdout?.on('data', (d) => { output = (output + d).slice(-4000) })
    child.stderr?.on('data', (d) => { output = (output + d).slice(-4000) })
    const timer = setTimeout(() => { try { process.kill(-(/** @type {number} */ (child.pid)), 'SIGKILL') } catch {} }, timeoutMs)
    const [code] = await once(child, 'exit')
    clearTimeout(timer)
    const wallMs = performance.now() - t0
    const cpuS = reapedChildrenCpuS() - cpuBefore
    /** @type {{ loadMs: number | null, protocol: string | null }} */
    let figures = { loadMs: null, protocol: null }
    let error = code === 0 ? null : `exit ${code}: ${output.trim().split('\n').slice(-3).join(' | ')}`
    try {
      figures = read()
    } catch (/** @type {any} */ err) {
      error ??= `no result: ${err.message}`
    }
    if (figures.loadMs === null) error ??= 'no load time in the result'
    done.push({ wallMs, cpuS, ...figures, error })
    fs.rmSync(dir, { recursive: true, force: true })
  }
  return { loads: done, elapsedMs: performance.now() - started, cpuS: done.reduce((s, l) => s + l.cpuS, 0) }
}

/**
 * browsertime 26 through Debian's chromedriver: one iteration, no video,
 * visual metrics or screenshots (they need ffmpeg and measure what h3lens
 * does not). Its own defaults otherwise, page-complete check included.
 * @param {string} url
 * @param {string[]} lab
 * @param {string} dir
 */
function browsertime (url, lab, dir) {
  const chromeArgs = [...chromeFlags(lab)].filter((f) => f !== '--headless=new').map((f) => f.replace(/^--/, ''))
  return {
    command: path.join(PEERS_DIR, 'node_modules', '.bin', 'browsertime'),
    args: [
      '--browser', 'chrome', '--chrome.binaryPath', CHROMIUM, '--chrome.chromedriverPath', CHROMEDRIVER,
      '-n', '1', '--headless', '--video', 'false', '--visualMetrics', 'false', '--screenshot', 'false',
      ...chromeArgs.flatMap((a) => ['--chrome.args', a]),
      '--resultDir', path.join(dir, 'result'), url
    ],
    read () {
      const [run] = JSON.parse(fs.readFileSync(path.join(dir, 'result', 'browsertime.json'), 'utf8'))
      const har = JSON.parse(fs.readFileSync(path.join(dir, 'result', 'browsertime.har'), 'utf8'))
      const loadMs = run.browserScripts?.[0]?.timings?.navigationTiming?.loadEventEnd ?? null
      return { loadMs, protocol: har.log.entries[0]?.response?.httpVersion ?? null }
    }
  }
}

/**
 * Lighthouse's CLI, performance category only, no throttling (the page as
 * it loads) and no screen emulation: the closest to a plain cold load it
 * offers. It starts its own Chromium (chrome-launcher, fresh profile).
 * @param {string} url
 * @param {string[]} lab
 * @param {string} dir
 */
function lighthouse (url, lab, dir) {
  const flags = chromeFlags(lab).map((f) => (f.includes(' ') ? f.replace(/=(.*)$/, "='$1'") : f)).join(' ')
  const out = path.join(dir, 'lighthouse.json')
  return {
    command: path.join(PEERS_DIR, 'node_modules', '.bin', 'lighthouse'),
    args: [url, '--quiet', '--output', 'json', '--output-path', out, '--only-categories', 'performance',
      '--throttling-method', 'provided', '--screenEmulation.disabled', '--form-factor', 'desktop', `--chrome-flags=${flags}`],
    env: { CHROME_PATH: CHROMIUM },
    read () {
      const report = JSON.parse(fs.readFileSync(out, 'utf8'))
      if (report.runtimeError) throw new Error(report.runtimeError.message)
      const metrics = report.audits?.metrics?.details?.items?.[0]
      return { loadMs: metrics?.observedLoad ?? null, protocol: report.audits?.['network-requests']?.details?.items?.[0]?.protocol ?? null }
    }
  }
}

/**
 * The flags every tool's Chromium gets: h3lens's own base flags, QUIC off,
 * and the lab's certificate and host name rules.
 * @param {string[]} lab
 */
function chromeFlags (lab) {
  return [...baseFlags(), '--disable-quic', ...lab]
}

function ensurePeers () {
  const lock = path.join(PEERS_DIR, 'package-lock.json')
  const installed = path.join(PEERS_DIR, 'node_modules', '.package-lock.json')
  if (fs.existsSync(installed) && fs.statSync(installed).mtimeMs >= fs.statSync(lock).mtimeMs) return
  console.error(`bench/peers.js: installing the peers into ${PEERS_DIR} (npm ci --ignore-scripts)`)
  execFileSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: PEERS_DIR, stdio: 'inherit' })
}

function ensureChromedriver () {
  if (fs.existsSync(CHROMEDRIVER)) return
  if (process.getuid?.() !== 0) {
    console.error(`bench/peers.js needs Debian's chromium-driver (${CHROMEDRIVER}) for browsertime:\n  sudo apt-get install -y chromium-driver`)
    process.exit(2)
  }
  console.error('bench/peers.js: installing chromium-driver (apt-get)')
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'chromium-driver'], { stdio: 'inherit', env })
}

function print () {
  const q = (xs, p) => {
    const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
    return s.length ? s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))] : NaN
  }
  const ms = (x) => (Number.isFinite(x) ? `${Math.round(x)} ms` : '—')
  const load = os.loadavg().map((x) => x.toFixed(2)).join(', ')
  console.log(`peers — ${os.cpus().length} cores (${os.cpus()[0]?.model}), load average now ${load}`)
  console.log(`chromium: ${execFileSync(CHROMIUM, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim()}; h3lens ${loads} loads, peers ${peerLoads} loads each, h2 over TLS, cold per load`)
  for (const [name, byTool] of Object.entries(table)) {
    console.log(`\n${name}`)
    console.log('tool          ok/loads  loads/min  median load  median beyond load  p90 beyond load  CPU s/load  protocols')
    for (const [tool, f] of Object.entries(byTool)) {
      const ok = f.loads.filter((l) => !l.error)
      const beyond = ok.map((l) => l.wallMs - /** @type {number} */ (l.loadMs))
      const protocols = [...new Set(f.loads.map((l) => l.protocol))].join(',')
      console.log([
        tool.padEnd(13),
        `${ok.length}/${f.loads.length}`.padEnd(9),
        (f.loads.length / (f.elapsedMs / 60000)).toFixed(1).padStart(9),
        ms(q(ok.map((l) => l.loadMs), 0.5)).padStart(12),
        ms(q(beyond, 0.5)).padStart(19),
        ms(q(beyond, 0.9)).padStart(16),
        (f.cpuS / f.loads.length).toFixed(2).padStart(11),
        ` ${protocols}`
      ].join(' '))
      for (const l of f.loads.filter((x) => x.error).slice(0, 3)) console.log(`    ${tool} failed: ${l.error}`)
    }
  }
}
