#!/usr/bin/env node
// Where the test suite's CPU goes: runs scripts/run-tests.js (with the
// arguments given, `--checks` included) and, while it runs, moves every new
// process into a cpuacct cgroup of its own kind and test file: Chromium,
// Firefox, PostgreSQL, Schemathesis, the type check, ESLint, Node and the
// rest, each under the test file whose process started it. Prints the CPU
// seconds per kind, per file and per file and kind, beside the machine's
// busy and idle time from /proc/stat over the same run. Not a test: it
// prints.
//
//   node bench/suite-cpu.js [--top 25] [-- run-tests arguments…]
//
// Needs root and the cgroup v1 cpuacct controller (/sys/fs/cgroup/cpuacct).
// A process is the suite's when this bench is among its ancestors. It is
// classified when the sampler first sees it (every 250 ms) and again when it
// execs another program, so a process that starts and ends between two
// looks counts with its parent; one that leaves its parent for init before
// it is seen is not counted. PostgreSQL, the type check and ESLint serve
// every file and count as "shared".
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { CLK_TCK, statFields } from './lib/proc-cpu.js'
import { benchArgs } from './lib/args.js'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const CPUACCT = '/sys/fs/cgroup/cpuacct'
const { values, positionals } = benchArgs(import.meta.url, { options: { top: { type: 'string', default: '25' } }, allowPositionals: true })
const top = Number(values.top)
if (!Number.isInteger(top) || top < 1) throw new Error(`--top must be a whole number ≥ 1, not "${values.top}"`)
if (process.getuid?.() !== 0) throw new Error('needs root, to move processes between cgroups')
if (!fs.existsSync(path.join(CPUACCT, 'cgroup.procs'))) throw new Error(`needs the cgroup v1 cpuacct controller at ${CPUACCT}`)

const base = path.join(CPUACCT, `h3lens-suite-${process.pid}`)
fs.mkdirSync(base)
/** @type {Map<number, string>} pid → the program it ran when last classified */
const seen = new Map()
/** @type {Set<string>} */
const groups = new Set()
/** @type {Map<string, number>} kind → programs of that kind started (a browser's own helper processes not counted) */
const starts = new Map()

const busyIdle = () => {
  const [, user, nice, system, idle, iowait, irq, softirq, steal] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number)
  return { busy: (user + nice + system + irq + softirq) / CLK_TCK, idle: (idle + iowait) / CLK_TCK, steal: steal / CLK_TCK }
}

const before = busyIdle()
const started = Date.now()
const runner = spawn(process.execPath, [path.join(ROOT, 'scripts', 'run-tests.js'), ...(positionals.length ? positionals : ['--checks'])], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
let output = ''
runner.stdout.on('data', (d) => { output += d })
const exited = new Promise((resolve) => runner.on('close', resolve))
let running = true
exited.then(() => { running = false })
for (const sig of /** @type {const} */ (['SIGINT', 'SIGTERM'])) process.on(sig, () => runner.kill(sig))

while (running) {
  for (const entry of fs.readdirSync('/proc')) {
    const pid = Number(entry)
    if (!Number.isInteger(pid) || pid === process.pid) continue
    classify(pid)
  }
  await sleep(250)
}
const code = await exited
const after = busyIdle()
const wall = (Date.now() - started) / 1000
const cores = os.availableParallelism()

/** @type {{ file: string, kind: string, cpu: number }[]} */
const rows = [...groups].map((g) => {
  const [file, kind] = decodeURIComponent(path.basename(g)).split('__')
  return { file, kind, cpu: Number(fs.readFileSync(path.join(g, 'cpuacct.usage'), 'utf8')) / 1e9 }
})
for (const g of groups) release(g)
fs.rmdirSync(base)

const sum = (/** @type {(r: typeof rows[number]) => string} */ by) => {
  /** @type {Map<string, number>} */
  const m = new Map()
  for (const r of rows) m.set(by(r), (m.get(by(r)) ?? 0) + r.cpu)
  return [...m].sort((a, b) => b[1] - a[1])
}
const table = (/** @type {string} */ title, /** @type {[string, number][]} */ entries) => {
  console.log(`\n${title}`)
  for (const [k, v] of entries.slice(0, top)) console.log(`  ${v.toFixed(1).padStart(7)} s  ${k}`)
}
const counted = rows.reduce((a, r) => a + r.cpu, 0)
// The runner's closing summary: its counts, and every failed test with its error.
const summary = output.split('\n')
const failedAt = summary.findIndex((l) => /^# \d+ failed:$/.test(l))
const failures = failedAt < 0 ? [] : summary.slice(failedAt, summary.findIndex((l, i) => i > failedAt && l === ''))
console.log([...failures, ...summary.filter((l) => /^# (tests|the lanes|\d+ files)/.test(l))].join('\n'))
console.log(`\nwall ${wall.toFixed(0)} s; the machine busy ${(after.busy - before.busy).toFixed(0)} s, idle ${(after.idle - before.idle).toFixed(0)} s, steal ${(after.steal - before.steal).toFixed(0)} s (${cores} cores: busy ≤ ${cores} × wall); counted in cgroups ${counted.toFixed(0)} s`)
table('CPU by kind of process', sum((r) => r.kind).map(([k, v]) => [`${k} (${starts.get(k) ?? 0} started)`, v]))
table('CPU by test file (all its processes)', sum((r) => r.file))
table('CPU by test file and kind', sum((r) => `${r.file}: ${r.kind}`))
process.exit(code ?? 1)

/**
 * Put a process into the group of its kind and file, once per program it runs.
 * @param {number} pid
 */
function classify (pid) {
  try {
    const comm = fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
    if (seen.get(pid) === comm) return
    seen.set(pid, comm)
    const cmd = cmdline(pid)
    if (!cmd) return // a kernel thread
    const owner = ownerOf(pid)
    if (!owner) return // not the suite's
    const kind = kindOf(comm, cmd)
    if (!/--type=|-contentproc/.test(cmd) && kind !== 'postgres') starts.set(kind, (starts.get(kind) ?? 0) + 1)
    const file = ['postgres', 'tsc', 'eslint'].includes(kind) ? 'shared' : owner
    const group = path.join(base, encodeURIComponent(`${file}__${kind}`))
    if (!groups.has(group)) {
      fs.mkdirSync(group, { recursive: true })
      groups.add(group)
    }
    fs.writeFileSync(path.join(group, 'cgroup.procs'), String(pid))
  } catch {
    // the process ended while being looked at
  }
}

/** @param {number} pid */
function cmdline (pid) {
  return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()
}

/**
 * @param {string} comm
 * @param {string} cmd
 */
function kindOf (comm, cmd) {
  if (/chrom/.test(comm) || /chrom/.test(cmd.slice(0, 60))) return 'chromium'
  if (/firefox/.test(cmd.slice(0, 80)) || /^(Web Content|Isolated Web Co|Socket Process|RDD Process|Privileged Cont|WebExtensions|Utility Process|Isolated Servic)$/.test(comm)) return 'firefox'
  if (comm.startsWith('postgres') || cmd.slice(0, 120).includes('/postgres')) return 'postgres'
  if (/python|schemathesis/.test(comm + cmd.slice(0, 120))) return 'schemathesis'
  if (/\btsc\b/.test(cmd)) return 'tsc'
  if (/\beslint\b/.test(cmd)) return 'eslint'
  if (comm === 'caddy') return 'caddy'
  if (comm === 'node' || cmd.startsWith(process.execPath)) return `node ${nodeProgram(cmd)}`
  return 'other'
}

/**
 * What a Node process runs, for its kind: "test file" for a test file's own
 * process, otherwise the script's path inside the repository ("-e" for code
 * given on the command line).
 * @param {string} cmd
 */
function nodeProgram (cmd) {
  const args = cmd.split(' ').slice(1)
  // Code given with -e is not a script, and the words of that code are not either.
  const evalAt = args.findIndex((a) => ['-e', '--eval', '-p', '--print'].includes(a))
  const script = (evalAt === -1 ? args : args.slice(0, evalAt)).find((a) => !a.startsWith('-')) ?? '-e'
  if (/\btest\/[\w.-]+\.test\.js$/.test(script)) return 'test file'
  return path.relative(ROOT, path.resolve(ROOT, script)).replace(/^(\.\.\/)+/, '…/')
}

/**
 * The test file whose process started this one (its own or an ancestor's
 * command line names it), "runner" for the runner and what it starts
 * outside the test files, null for a process that is not the suite's.
 * @param {number} pid
 */
function ownerOf (pid) {
  let file = null
  for (let p = pid, hops = 0; p > 1 && hops < 40; hops++) {
    if (p === process.pid) return file ?? 'runner'
    const cmd = cmdline(p)
    if (!cmd.includes('scripts/run-tests.js')) file ??= /\btest\/([\w.-]+\.test\.js)\b/.exec(cmd)?.[1] ?? null
    const parent = statFields(p)?.[1]
    if (parent === undefined) return null // gone while looked at
    p = Number(parent)
  }
  return null
}

/**
 * Move a group's processes (anything still running) back to the root group
 * and remove the group.
 * @param {string} group
 */
function release (group) {
  for (const pid of fs.readFileSync(path.join(group, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
    try { fs.writeFileSync(path.join(CPUACCT, 'cgroup.procs'), pid) } catch {}
  }
  fs.rmdirSync(group)
}
