// How faithfully the lab's links reproduce their profiles. For each default
// profile it measures, with real packets between the origin namespace and
// the location namespace:
//   - RTT: median TCP connect time of 20 connects (node adds ~0.3 ms; it
//     measured 0.3 ms over a link with 0 ms RTT);
//   - one-way delay and loss: 20,000 timestamped 200-byte datagrams at
//     10,000/s toward the location (both ends read the same monotonic clock);
//   - link rate: 1,400-byte datagrams at 1.2× the down rate for 2 s, rate of
//     IP bytes received from 0.5 s on;
//   - TCP: bulk download for 3 s (below the link rate where loss limits
//     TCP: at 1.5 % loss and 90 ms, Mathis et al. predict ~1.3 Mbit/s);
//   - linkem's own lateness (how long after its due time a packet left), and
//     the loss it applied, which the receiver's figure exceeds when the
//     receiving process falls behind and its socket buffer overflows.
// On a busy machine the probes' own scheduling shows up in the tails, and
// the TCP endpoints run at normal priority. linkem runs SCHED_FIFO; a bare SCHED_FIFO timer loop
// on the 2-vCPU machine this was written on woke up to 3.7 ms late while
// other browsers ran, and up to 84 ms late without SCHED_FIFO, so compare
// linkem's lateness with that floor before blaming the emulator.
// Run as root: node bench/lab-fidelity-net.js  (about 40 s)
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { netnsExec, netnsSupport } from '../lab/netns.js'
import { DEFAULT_PROFILES } from '../lab/profiles.js'
import { benchArgs } from './lib/args.js'
import { benchLab, benchScratch } from './lib/scratch.js'

const PREFIX = 'h3lbench'
// Its probes are UDP, which lab-udp-blocked drops by design.
const PROFILES = DEFAULT_PROFILES.filter((p) => !p.block_udp)

// Probes that mostly wait (connects, receivers) run SCHED_FIFO like linkem,
// so that their own wake-up latency stays out of the figures.
function runIn (ns, script, input, onLine, realtime = false) {
  const [cmd, ...args] = netnsExec(ns)
  const rt = realtime ? ['chrt', '-f', '5'] : []
  const child = spawn(cmd, [...args, ...rt, process.execPath, '--input-type=module', '-e', script, JSON.stringify(input)])
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk) => {
    out += chunk
    if (out.includes('listening\n')) onLine?.()
  })
  child.stderr.on('data', (chunk) => { err += chunk })
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
  const result = new Promise((resolve, reject) => child.on('exit', (code, signal) => {
    clearTimeout(timer)
    if (signal === 'SIGTERM') return resolve(null)
    if (code !== 0) return reject(new Error(`${ns}: exit ${code ?? signal}: ${err}`))
    const json = out.split('\n').filter((l) => l.startsWith('{')).at(-1)
    resolve(json ? JSON.parse(json) : null)
  }))
  return { result, stop: () => child.kill('SIGTERM') }
}

async function server (ns, script, input, realtime = false) {
  let ready
  const listening = new Promise((resolve) => { ready = resolve })
  const s = runIn(ns, script, input, () => ready(), realtime)
  await Promise.race([listening, s.result])
  return s
}

const ACCEPT = `
import net from 'node:net'
net.createServer((s) => s.destroy()).listen(JSON.parse(process.argv[1]).port, () => console.log('listening'))
`

const CONNECT = `
import net from 'node:net'
const { host, port } = JSON.parse(process.argv[1])
const times = []
for (let i = 0; i < 20; i++) {
  const t0 = process.hrtime.bigint()
  await new Promise((resolve, reject) => {
    const s = net.connect({ host, port }, () => { times.push(Number(process.hrtime.bigint() - t0) / 1e6); s.destroy(); resolve() })
    s.on('error', reject)
  })
}
console.log(JSON.stringify({ times }))
`

// Sends whatever is due every millisecond: bursts of ~10 at 10,000/s, without
// spinning a CPU that the link emulator and the receiver need.
const UDP_SEND = `
import dgram from 'node:dgram'
const { host, port, count, size, pps, resume } = JSON.parse(process.argv[1])
const s = dgram.createSocket('udp4')
await new Promise((resolve) => s.connect(port, host, resolve))
let start = process.hrtime.bigint()
let i = 0
while (i < count) {
  await new Promise((resolve) => setTimeout(resolve, 1))
  const now = process.hrtime.bigint()
  // For the delay probe, resume the pace after a stall of the sender instead
  // of catching up in one burst that the link's queue would tail-drop; the
  // rate probe wants the overload.
  const behind = now - (start + BigInt(Math.round(i * 1e9 / pps)))
  if (resume && behind > 5_000_000n) start += behind
  while (i < count && start + BigInt(Math.round(i * 1e9 / pps)) <= now) {
    const b = Buffer.alloc(size); b.writeBigUInt64BE(process.hrtime.bigint(), 0); b.writeUInt32BE(i++, 8)
    s.send(b)
  }
}
await new Promise((resolve) => setTimeout(resolve, 100))
s.close()
console.log('{}')
`

const UDP_RECEIVE = `
import dgram from 'node:dgram'
const { port, windowFromMs } = JSON.parse(process.argv[1])
const owd = []
let first = 0, bytes = 0, last = 0
const s = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20 })
let idle
const done = () => {
  s.close()
  owd.sort((a, b) => a - b)
  const q = (f) => owd[Math.min(owd.length - 1, Math.floor(owd.length * f))]
  console.log(JSON.stringify({ received: owd.length, p01: q(0.01), p50: q(0.5), p99: q(0.99), mbps: bytes * 8 / (last - first - windowFromMs) / 1e3 }))
}
s.on('message', (m) => {
  const t = performance.now()
  if (!first) first = t
  if (t - first >= windowFromMs) { bytes += m.length + 28; last = t }
  owd.push(Number(process.hrtime.bigint() - m.readBigUInt64BE(0)) / 1e6)
  clearTimeout(idle)
  idle = setTimeout(done, 1000)
})
s.bind(port, () => console.log('listening'))
`

const BULK_SEND = `
import net from 'node:net'
const chunk = Buffer.alloc(64 * 1024)
const server = net.createServer((s) => {
  const stop = Date.now() + 3000
  const pump = () => { while (Date.now() < stop) { if (!s.write(chunk)) return s.once('drain', pump) } s.destroy(); server.close() }
  s.on('error', () => {})
  pump()
})
server.listen(JSON.parse(process.argv[1]).port, () => console.log('listening'))
`

const BULK_RECEIVE = `
import net from 'node:net'
const { host, port } = JSON.parse(process.argv[1])
let first = 0, bytes = 0
const s = net.connect({ host, port })
s.on('data', (d) => { if (!first) first = performance.now(); bytes += d.length })
s.on('close', () => console.log(JSON.stringify({ mbps: bytes * 8 / (performance.now() - first) / 1e3 })))
`

/**
 * Network figures of one lab location (see the header).
 * @param {Awaited<ReturnType<typeof import('../lab/netns.js').labUp>>} lab
 * @param {any} loc one of lab.locations
 */
export async function measureLink (lab, loc) {
  const p = loc.profile
  const accept = await server(lab.originNs, ACCEPT, { port: 9401 })
  const { times } = await runIn(loc.ns, CONNECT, { host: loc.originAddress, port: 9401 }, null, true).result
  accept.stop()
  times.sort((a, b) => a - b)

  let receiver = await server(loc.ns, UDP_RECEIVE, { port: 9402, windowFromMs: 0 }, true)
  await runIn(lab.originNs, UDP_SEND, { host: loc.address, port: 9402, count: 20000, size: 200, pps: 10000, resume: true }).result
  const owd = await receiver.result

  const pps = Math.round(p.down_kbps * 1000 * 1.2 / 8 / 1428)
  receiver = await server(loc.ns, UDP_RECEIVE, { port: 9403, windowFromMs: 500 }, true)
  await runIn(lab.originNs, UDP_SEND, { host: loc.address, port: 9403, count: pps * 2, size: 1400, pps }).result
  const rate = await receiver.result

  const bulk = await server(lab.originNs, BULK_SEND, { port: 9404 })
  const tcp = await runIn(loc.ns, BULK_RECEIVE, { host: loc.originAddress, port: 9404 }).result
  bulk.stop()

  const { down } = await loc.readStats()
  const linkLoss = (down.drop_loss / down.in) * 100
  return {
    location: p.name,
    'rtt ms': `${p.rtt_ms} → ${times[10].toFixed(2)}`,
    'one-way ms p1/p50/p99': `${(p.rtt_ms / 2).toFixed(1)}±${(p.jitter_ms / 2).toFixed(1)} → ${owd.p01.toFixed(2)}/${owd.p50.toFixed(2)}/${owd.p99.toFixed(2)}`,
    'loss % link/recv': `${p.loss_pct} → ${linkLoss.toFixed(2)}/${((1 - owd.received / 20000) * 100).toFixed(2)}`,
    'link Mbit/s': `${p.down_kbps / 1000} → ${rate.mbps.toFixed(2)}`,
    'tcp Mbit/s': tcp.mbps.toFixed(2),
    'queue drops': `${down.drop_queue} of ${down.in}`,
    'linkem late avg/max us, >1ms': `${down.late_avg_us}/${down.late_max_us}, ${down.late_1ms}`
  }
}

async function main () {
  const support = await netnsSupport()
  if (!support.ok) {
    console.error(`lab-fidelity-net: needs network namespaces: ${support.reason}`)
    process.exit(1)
  }
  // Ctrl-C or SIGTERM takes the lab down too: no namespace, link or linkem is left.
  const { dataDir, lifecycle } = benchScratch('bench-links')
  const lab = await benchLab(lifecycle, { profiles: PROFILES, prefix: PREFIX, runDir: path.join(dataDir, 'run') })
  try {
    const rows = []
    for (const loc of lab.locations) rows.push(await measureLink(lab, loc))
    console.table(rows)
  } finally {
    await lifecycle.stopAll('done')
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  benchArgs(import.meta.url)
  await main()
}
