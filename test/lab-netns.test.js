// The lab topology with real namespaces and real packets: a client inside a
// location namespace talks to a server inside the origin namespace through
// linkem, and what the client sees must match the profile.
import { execFileSync, spawn } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { labDown, labUp, netnsExec, netnsSupport } from '../lab/netns.js'

// Own prefix, so these tests never touch a lab that is running.
const PREFIX = 'h3ltest'
/** @type {Omit<import('../lab/profiles.js').Profile, 'name' | 'rtt_ms'>} */
const base = { jitter_ms: 0, loss_pct: 0, loss_model: 'bernoulli', down_kbps: 1_000_000, up_kbps: 1_000_000, queue_packets: 1000 }
const PROFILES = [
  { ...base, name: 't-rtt', rtt_ms: 50 },
  { ...base, name: 't-loss', rtt_ms: 10, loss_pct: 5, seed: 7 },
  { ...base, name: 't-rate', rtt_ms: 20, down_kbps: 10_000, up_kbps: 10_000, queue_packets: 100 },
  { ...base, name: 't-jitter', rtt_ms: 20, jitter_ms: 16 }
]

const support = await netnsSupport()
const skip = support.ok ? false : `needs network namespaces: ${support.reason}`

/**
 * Runs an ES-module script with node inside a namespace. `result` resolves
 * with the JSON the script prints last; `onLine` sees each stdout line.
 * With `realtime`, the script runs SCHED_FIFO like linkem itself: on a busy
 * machine a normal process wakes milliseconds late (up to 84 ms measured
 * with browsers running on 2 vCPUs), which would show up as link delay or
 * as datagrams dropped by a full socket buffer. Only for scripts that mostly
 * wait; the bulk senders stay normal.
 * @param {string} ns
 * @param {string} script
 * @param {object} input  passed as process.argv[1] (JSON)
 * @param {{ timeoutMs?: number, onLine?: (line: string) => void, realtime?: boolean }} [options]
 */
function runIn (ns, script, input, { timeoutMs = 15_000, onLine, realtime = false } = {}) {
  const [cmd, ...args] = netnsExec(ns)
  const rt = realtime ? ['chrt', '-f', '5'] : []
  const child = spawn(cmd, [...args, ...rt, process.execPath, '--input-type=module', '-e', script, JSON.stringify(input)])
  const lines = []
  let buf = ''
  let err = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk) => {
    buf += chunk
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      lines.push(buf.slice(0, i))
      onLine?.(buf.slice(0, i))
      buf = buf.slice(i + 1)
    }
  })
  child.stderr.on('data', (chunk) => { err += chunk })
  const result = new Promise((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      if (signal === 'SIGTERM') return resolve(null) // stopped by the test
      if (code !== 0) return reject(new Error(`script in ${ns} exited ${code ?? signal}: ${err}`))
      try {
        resolve(JSON.parse([...lines, buf].filter(Boolean).at(-1)))
      } catch {
        reject(new Error(`script in ${ns} printed no JSON: ${lines.join('\n')} ${err}`))
      }
    })
  })
  return { result, stop: () => child.kill('SIGTERM') }
}

/** Starts a server script and waits for its "listening" line. */
async function startServer (ns, script, input, { realtime = false } = {}) {
  let timer
  let ready
  const listening = new Promise((resolve) => { ready = resolve })
  const server = runIn(ns, script, input, { realtime, onLine: (line) => line === 'listening' && ready() })
  const late = new Promise((resolve, reject) => { timer = setTimeout(() => reject(new Error(`server in ${ns} not listening after 5 s`)), 5000) })
  await Promise.race([listening, server.result, late])
  clearTimeout(timer)
  return server
}

const TCP_ACCEPT = `
import net from 'node:net'
const { port } = JSON.parse(process.argv[1])
const server = net.createServer((s) => s.destroy())
server.listen(port, () => console.log('listening'))
setTimeout(() => process.exit(0), 10000)
`

const TCP_CONNECT_TIMES = `
import net from 'node:net'
const { host, port, count } = JSON.parse(process.argv[1])
const times = []
for (let i = 0; i < count; i++) {
  const t0 = process.hrtime.bigint()
  await new Promise((resolve, reject) => {
    const s = net.connect({ host, port }, () => { times.push(Number(process.hrtime.bigint() - t0) / 1e6); s.destroy(); resolve() })
    s.on('error', reject)
    s.setTimeout(2000, () => reject(new Error('connect timeout')))
  })
}
console.log(JSON.stringify({ times }))
`

// Sends numbered datagrams in bursts of 50 every 5 ms (10,000 packets/s):
// fast enough that 8 ms of jitter spans many packets, slow enough for the
// receiver's socket buffer.
const UDP_SEND = `
import dgram from 'node:dgram'
const { host, port, count } = JSON.parse(process.argv[1])
const s = dgram.createSocket('udp4')
const buf = Buffer.alloc(200)
for (let i = 0; i < count; i += 50) {
  for (let j = i; j < Math.min(count, i + 50); j++) {
    const b = Buffer.from(buf); b.writeUInt32BE(j, 0)
    await new Promise((resolve) => s.send(b, port, host, resolve))
  }
  await new Promise((resolve) => setTimeout(resolve, 5))
}
s.close()
console.log(JSON.stringify({ sent: count }))
`

// Prints the sequence numbers in arrival order once nothing arrived for
// 500 ms, or after 10 s at the latest.
const UDP_RECEIVE = `
import dgram from 'node:dgram'
const { port } = JSON.parse(process.argv[1])
const seqs = []
// 4 MB (the namespace's rmem_max) holds ~4,000 datagrams: 0.4 s of stall.
const s = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20 })
let idle
const done = () => { s.close(); console.log(JSON.stringify({ seqs })) }
const deadline = setTimeout(done, 10000)
s.on('message', (m) => {
  seqs.push(m.readUInt32BE(0))
  clearTimeout(idle)
  idle = setTimeout(() => { clearTimeout(deadline); done() }, 500)
})
s.bind(port, () => console.log('listening'))
`

// The origin side sends for 3.5 s; the receiver counts bytes from 0.5 s to
// 3 s after its first byte, past TCP slow start (about 5 RTT = 0.1 s here).
const TCP_BULK_SEND = `
import net from 'node:net'
const { port } = JSON.parse(process.argv[1])
const chunk = Buffer.alloc(64 * 1024)
const server = net.createServer((s) => {
  const stop = Date.now() + 3500
  const pump = () => { while (Date.now() < stop) { if (!s.write(chunk)) return s.once('drain', pump) } s.destroy(); server.close() }
  s.on('error', () => {})
  pump()
})
server.listen(port, () => console.log('listening'))
server.on('close', () => console.log(JSON.stringify({ done: true })))
setTimeout(() => process.exit(0), 10000)
`

const TCP_BULK_RECEIVE = `
import net from 'node:net'
const { host, port } = JSON.parse(process.argv[1])
let first = 0, bytes = 0
const s = net.connect({ host, port })
s.on('data', (d) => {
  const t = performance.now()
  if (!first) first = t
  if (t - first >= 500 && t - first < 3000) bytes += d.length
})
s.on('close', () => console.log(JSON.stringify({ mbps: bytes * 8 / 2.5 / 1e6 })))
`

// Runs as nobody, so it works whether or not the tests run as root.
test('without root, netnsSupport says why and labUp refuses with that reason', { skip: process.getuid?.() !== 0 && 'needs root to switch to nobody' }, async () => {
  const script = `
    import { labUp, netnsSupport } from ${JSON.stringify(new URL('../lab/netns.js', import.meta.url).href)}
    const support = await netnsSupport()
    const error = await labUp({ prefix: 'h3lnobod', runDir: '/tmp' }).then(() => null, (err) => err.message)
    console.log(JSON.stringify({ support, error }))
  `
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { uid: 65534, gid: 65534, cwd: '/', encoding: 'utf8' })
  assert.deepEqual(JSON.parse(out), {
    support: { ok: false, reason: 'not running as root' },
    error: 'cannot build the lab regions: not running as root'
  })
})

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

describe('lab topology', { skip }, () => {
  let runDir
  let lab
  const at = (name) => lab.locations.find((l) => l.name === name)

  before(async () => {
    runDir = await mkdtemp(path.join(tmpdir(), 'h3lens-lab-test-'))
    lab = await labUp({ profiles: PROFILES, prefix: PREFIX, runDir })
  })

  after(async () => {
    await labDown({ prefix: PREFIX, runDir })
    await rm(runDir, { recursive: true, force: true })
  })

  test('each location gets its own namespace and a /30 that exists only inside the lab', () => {
    assert.equal(lab.originNs, `${PREFIX}-origin`)
    assert.deepEqual(lab.locations.map((l) => [l.ns, l.address, l.originAddress]), [
      [`${PREFIX}-t-rtt`, '10.213.0.2', '10.213.0.1'],
      [`${PREFIX}-t-loss`, '10.213.1.2', '10.213.1.1'],
      [`${PREFIX}-t-rate`, '10.213.2.2', '10.213.2.1'],
      [`${PREFIX}-t-jitter`, '10.213.3.2', '10.213.3.1']
    ])
    const rootAddresses = execFileSync('ip', ['-o', 'addr', 'show'], { encoding: 'utf8' })
    assert.doesNotMatch(rootAddresses, /10\.213\./)
  })

  test('TCP connects take the profile RTT: median of 20 within ±2 ms of 50 ms', async (t) => {
    const loc = at('t-rtt')
    const server = await startServer(lab.originNs, TCP_ACCEPT, { port: 9101 })
    const { times } = await runIn(loc.ns, TCP_CONNECT_TIMES, { host: loc.originAddress, port: 9101, count: 20 }, { realtime: true }).result
    server.stop()
    const rtt = median(times)
    t.diagnostic(`median connect ${rtt.toFixed(2)} ms`)
    assert.ok(Math.abs(rtt - 50) <= 2, `median connect time ${rtt.toFixed(2)} ms`)
  })

  test('5% Bernoulli loss drops 5 ± 1% of 5,000 datagrams', async (t) => {
    const loc = at('t-loss')
    const receiver = await startServer(loc.ns, UDP_RECEIVE, { port: 9102 }, { realtime: true })
    await runIn(lab.originNs, UDP_SEND, { host: loc.address, port: 9102, count: 5000 }).result
    const { seqs } = await receiver.result
    const lossPct = (1 - seqs.length / 5000) * 100
    const stats = await loc.readStats()
    t.diagnostic(`received ${seqs.length}/5000, loss ${lossPct.toFixed(2)} %`)
    assert.ok(Math.abs(lossPct - 5) <= 1, `measured loss ${lossPct.toFixed(2)} %`)
    // Every datagram the receiver missed is one linkem counted as lost.
    assert.equal(stats.down.in - stats.down.drop_loss, seqs.length)
    assert.equal(stats.down.drop_queue, 0)
  })

  test('a 10 Mbit/s link carries 9–10.5 Mbit/s of bulk TCP', async (t) => {
    const loc = at('t-rate')
    const server = await startServer(lab.originNs, TCP_BULK_SEND, { port: 9103 })
    const { mbps } = await runIn(loc.ns, TCP_BULK_RECEIVE, { host: loc.originAddress, port: 9103 }).result
    server.stop()
    t.diagnostic(`throughput ${mbps.toFixed(2)} Mbit/s`)
    assert.ok(mbps >= 9 && mbps <= 10.5, `throughput ${mbps.toFixed(2)} Mbit/s`)
  })

  test('jitter keeps packet order', async () => {
    const loc = at('t-jitter')
    const receiver = await startServer(loc.ns, UDP_RECEIVE, { port: 9104 }, { realtime: true })
    await runIn(lab.originNs, UDP_SEND, { host: loc.address, port: 9104, count: 2000 }).result
    const { seqs } = await receiver.result
    assert.equal(seqs.length, 2000)
    const outOfOrder = seqs.filter((s, i) => i > 0 && s < seqs[i - 1]).length
    assert.equal(outOfOrder, 0)
  })

  test('labDown leaves no namespace, device, linkem process or pid file behind', async () => {
    const pids = (await Promise.all(lab.locations.map((l) => l.readStats()))).map((s) => s.pid)
    await labDown({ prefix: PREFIX, runDir })
    const namespaces = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    assert.doesNotMatch(namespaces, new RegExp(`^${PREFIX}-`, 'm'))
    const links = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' })
    assert.doesNotMatch(links, new RegExp(`: ${PREFIX}-`))
    // A reaped process has no /proc entry; a zombie has an empty cmdline.
    for (const pid of pids) assert.equal(await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''), '')
    assert.deepEqual((await readdir(runDir)).filter((f) => f.endsWith('.pid')), [])
  })
})
