// linkem on its own: its command line, its counters, and the properties of
// the link it emulates that the profiles cannot show (reproducible drops,
// bursty loss, reordering when order is not kept, tail drop, a UDP block).
import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { buildLinkem, readLinkemStats, startLinkem } from '../lab/linkem.js'
import { labDown, netnsExec, netnsSupport } from '../lab/netns.js'

const execFileP = promisify(execFile)
// Named like a lab with prefix "h3lk", so labDown({ prefix: 'h3lk' }) also
// sweeps whatever a failed run of this file leaves behind.
const PREFIX = 'h3lk'
const ORIGIN = `${PREFIX}-origin`
const LOCATION = `${PREFIX}-loc`

const support = await netnsSupport()
const skip = support.ok ? false : `needs network namespaces: ${support.reason}`

async function linkemCli (args) {
  const bin = await buildLinkem()
  return execFileP(bin, args).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }))
}

describe('linkem command line', () => {
  test('--help describes every per-direction option', async () => {
    const { code, stdout } = await linkemCli(['--help'])
    assert.equal(code, 0)
    for (const opt of ['--dev-a', '--seed', '--stats', 'X-delay', 'X-jitter', 'X-keep-order', 'X-block-udp', 'X-loss', 'X-ge', 'X-rate', 'X-queue']) {
      assert.match(stdout, new RegExp(opt))
    }
  })

  for (const [args, option] of /** @type {[string[], string][]} */ ([
    [['--dev-a', 'a', '--dev-b', 'b', '--down-loss', '150'], '--down-loss'],
    [['--dev-a', 'a', '--dev-b', 'b', '--up-ge', '0.1,0.2'], '--up-ge'],
    [['--dev-a', 'a', '--dev-b', 'b', '--up-delay', '-1'], '--up-delay'],
    [['--dev-a', 'a', '--dev-b', 'b', '--down-queue', '1.5'], '--down-queue'],
    [['--dev-a', 'a', '--dev-b', 'b', '--up-block-udp=yes'], '--up-block-udp'],
    [['--dev-a', 'a', '--dev-b', 'b', '--seed', 'x'], '--seed'],
    [['--dev-a', 'a', '--dev-b', 'b', '--down-loss', '1', '--down-ge', '0,1,1,1'], '--down-ge'],
    [['--dev-a', 'a'], '--dev-b'],
    [['--dev-a', 'a', '--dev-b', 'b', '--sideways-delay', '1'], '--sideways-delay']
  ])) {
    test(`rejects ${args.slice(4).join(' ') || 'a missing --dev-b'} naming ${option}`, async () => {
      const { code, stderr } = await linkemCli(args)
      assert.notEqual(code, 0)
      assert.match(stderr, new RegExp(`^linkem: .*${option}`))
    })
  }
})

const UDP_SEND = `
import dgram from 'node:dgram'
const { host, port, count, size = 200 } = JSON.parse(process.argv[1])
const s = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4')
for (let i = 0; i < count; i += 50) {
  for (let j = i; j < Math.min(count, i + 50); j++) {
    const b = Buffer.alloc(size); b.writeUInt32BE(j, 0)
    await new Promise((resolve) => s.send(b, port, host, resolve))
  }
  await new Promise((resolve) => setTimeout(resolve, 5))
}
s.close()
`

const UDP_RECEIVE = `
import dgram from 'node:dgram'
const { port, type = 'udp4', deadlineMs = 10000 } = JSON.parse(process.argv[1])
const seqs = []
const s = dgram.createSocket({ type, recvBufferSize: 4 << 20 })
let idle
const done = () => { s.close(); console.log(JSON.stringify(seqs)) }
const deadline = setTimeout(done, deadlineMs)
s.on('message', (m) => {
  seqs.push(m.readUInt32BE(0))
  clearTimeout(idle)
  idle = setTimeout(() => { clearTimeout(deadline); done() }, 500)
})
s.bind(port, () => console.log('listening'))
`

// The receiver runs SCHED_FIFO, as linkem does, and with a 4 MB socket
// buffer: on a busy machine a normal process can stall for tens of ms, and
// datagrams it then drops would look like link loss.
function nodeIn (ns, script, input, { realtime = false } = {}) {
  const [cmd, ...args] = netnsExec(ns)
  const rt = realtime ? ['chrt', '-f', '5'] : []
  return spawn(cmd, [...args, ...rt, process.execPath, '--input-type=module', '-e', script, JSON.stringify(input)])
}

/**
 * Sends `count` numbered datagrams of `size` bytes from one namespace to
 * the other (by default from the origin to the location's IPv4 address) and
 * returns the sequence numbers in the order they arrived. The receiver
 * stops 500 ms after the last arrival, or `deadlineMs` after it started.
 * @returns {Promise<number[]>}
 */
async function sendNumbered (count, { from = ORIGIN, to = LOCATION, host = '10.213.0.2', size = 200, deadlineMs = 10000 } = {}) {
  const type = host.includes(':') ? 'udp6' : 'udp4'
  const receiver = nodeIn(to, UDP_RECEIVE, { port: 9300, type, deadlineMs }, { realtime: true })
  let out = ''
  receiver.stdout.setEncoding('utf8')
  const listening = new Promise((resolve) => receiver.stdout.on('data', (chunk) => {
    out += chunk
    if (out.includes('listening\n')) resolve(undefined)
  }))
  const exited = new Promise((resolve) => receiver.on('exit', resolve))
  await Promise.race([listening, exited])
  const sender = nodeIn(from, UDP_SEND, { host, port: 9300, count, size })
  await new Promise((resolve) => sender.on('exit', resolve))
  await exited
  return JSON.parse(out.split('\n').filter(Boolean).at(-1) ?? '')
}

const ip = (...args) => execFileP('ip', args)

// The location sends `bytes` over TCP to an echo server in the origin
// namespace and prints how many came back.
const TCP_ECHO = `
import net from 'node:net'
const { port } = JSON.parse(process.argv[1])
const server = net.createServer((s) => { s.on('error', () => {}); s.pipe(s) })
server.listen(port, () => console.log('listening'))
setTimeout(() => process.exit(0), 10000)
`
const TCP_ROUND_TRIP = `
import net from 'node:net'
const { host, port, bytes } = JSON.parse(process.argv[1])
let back = 0
const s = net.connect({ host, port }, () => s.end(Buffer.alloc(bytes, 7)))
s.on('data', (d) => { back += d.length })
s.on('close', () => console.log(JSON.stringify(back)))
setTimeout(() => process.exit(1), 10000).unref()
`

/**
 * Runs a script in a namespace to its end and returns the JSON it printed last.
 * @param {import('node:child_process').ChildProcessWithoutNullStreams} child
 */
async function lastJson (child) {
  let out = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk) => { out += chunk })
  const [code] = await once(child, 'exit')
  assert.equal(code, 0, `script exited ${code}`)
  return JSON.parse(out.split('\n').filter(Boolean).at(-1) ?? '')
}

describe('linkem between two namespaces', { skip }, () => {
  let runDir
  let link = null

  before(async () => {
    runDir = await mkdtemp(path.join(tmpdir(), 'h3lens-linkem-test-'))
    await labDown({ prefix: PREFIX, runDir })
    for (const ns of [ORIGIN, LOCATION]) await ip('netns', 'add', ns)
  })

  after(async () => {
    await link?.stop()
    await labDown({ prefix: PREFIX, runDir })
    await rm(runDir, { recursive: true, force: true })
  })

  /** (Re)starts the link with these per-direction arguments. */
  async function relink (args) {
    await link?.stop()
    link = await startLinkem({
      devA: `${PREFIX}-0-o`,
      devB: `${PREFIX}-0-l`,
      netnsA: ORIGIN,
      netnsB: LOCATION,
      args,
      statsFile: path.join(runDir, 'linkem.json')
    })
    for (const [ns, dev, cidr] of [[ORIGIN, `${PREFIX}-0-o`, '10.213.0.1/30'], [LOCATION, `${PREFIX}-0-l`, '10.213.0.2/30']]) {
      await ip('-n', ns, 'link', 'set', 'dev', dev, 'addrgenmode', 'none')
      await ip('-n', ns, 'addr', 'add', cidr, 'dev', dev)
      await ip('-n', ns, 'link', 'set', 'dev', dev, 'up')
    }
  }

  test('the same seed drops the same packets; another seed drops others', async () => {
    const runs = []
    for (const seed of ['42', '42', '43']) {
      await relink(['--seed', seed, '--down-loss', '10'])
      const seqs = await sendNumbered(2000)
      runs.push(seqs)
    }
    assert.ok(runs[0].length > 1700 && runs[0].length < 1900, `received ${runs[0].length} of 2000 at 10 % loss`)
    assert.deepEqual(runs[1], runs[0])
    assert.notDeepEqual(runs[2], runs[0])
  })

  test('Gilbert–Elliott loss comes in bursts at its long-run rate', async (t) => {
    // p = 0.01, r = 0.25, h = 0, k = 1: loss 0.01 / 0.26 = 3.85 %, bursts of
    // 1/r = 4 packets on average (Bernoulli at 3.85 % gives 1.04).
    await relink(['--seed', '7', '--down-ge', '0.01,0.25,0,1'])
    const seqs = await sendNumbered(5000)
    const received = new Set(seqs)
    const bursts = []
    let run = 0
    for (let i = 0; i < 5000; i++) {
      if (!received.has(i)) run++
      else if (run > 0) { bursts.push(run); run = 0 }
    }
    const lossPct = (1 - seqs.length / 5000) * 100
    const meanBurst = bursts.reduce((a, b) => a + b, 0) / bursts.length
    t.diagnostic(`loss ${lossPct.toFixed(2)} %, mean burst ${meanBurst.toFixed(2)} packets`)
    assert.ok(Math.abs(lossPct - 3.85) <= 1.5, `loss ${lossPct.toFixed(2)} %`)
    assert.ok(meanBurst >= 2.5, `mean burst ${meanBurst.toFixed(2)} packets`)
  })

  test('jitter reorders packets unless order is kept', async () => {
    await relink(['--down-delay', '10', '--down-jitter', '5'])
    const loose = await sendNumbered(1000)
    await relink(['--down-delay', '10', '--down-jitter', '5', '--down-keep-order'])
    const kept = await sendNumbered(1000)
    const inversions = (seqs) => seqs.filter((s, i) => i > 0 && s < seqs[i - 1]).length
    assert.equal(loose.length, 1000)
    assert.ok(inversions(loose) > 50, `${inversions(loose)} inversions without --down-keep-order`)
    assert.equal(kept.length, 1000)
    assert.equal(inversions(kept), 0)
  })

  test('a full queue drops at the tail, and the counters add up', async () => {
    // 10,000 packets/s of 228-byte IP packets is 18 Mbit/s into a 1 Mbit/s
    // link: most of the 2,000 must be tail-dropped by the 20-packet queue.
    await relink(['--down-rate', '1000', '--down-queue', '20'])
    const seqs = await sendNumbered(2000)
    const stats = await link.readStats()
    const { down } = stats
    assert.equal(down.in, 2000)
    assert.equal(down.out, seqs.length)
    assert.ok(down.drop_queue > 1000, `${down.drop_queue} tail drops`)
    assert.equal(down.in, down.out + down.drop_loss + down.drop_queue + down.drop_error + down.in_flight)
    // The survivors are the head of each burst: order is kept.
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b))
  })

  test('--X-block-udp drops every UDP packet, IPv4 and IPv6, fragments too, and counts it apart from loss; TCP passes', async () => {
    await relink(['--down-block-udp', '--up-block-udp'])
    // IPv6 as well, which the lab's own links do not carry.
    await ip('-n', ORIGIN, 'addr', 'add', 'fd13::1/64', 'dev', `${PREFIX}-0-o`, 'nodad')
    await ip('-n', LOCATION, 'addr', 'add', 'fd13::2/64', 'dev', `${PREFIX}-0-l`, 'nodad')
    const before = await link.readStats()
    // 200-byte datagrams are one packet each; 3,000-byte ones leave as three
    // fragments (1,500-byte MTU), of which only the first has a UDP header.
    const down4 = await sendNumbered(100, { deadlineMs: 1500 })
    const down6 = await sendNumbered(100, { host: 'fd13::2', deadlineMs: 1500 })
    const up4 = await sendNumbered(100, { from: LOCATION, to: ORIGIN, host: '10.213.0.1', deadlineMs: 1500 })
    const frag6 = await sendNumbered(10, { host: 'fd13::2', size: 3000, deadlineMs: 1500 })
    const afterUdp = await link.readStats()
    assert.deepEqual([down4, down6, up4, frag6], [[], [], [], []], 'no datagram arrives')
    assert.equal(afterUdp.down.drop_udp - before.down.drop_udp, 100 + 100 + 10 * 3)
    assert.equal(afterUdp.up.drop_udp - before.up.drop_udp, 100)
    assert.equal(afterUdp.down.drop_loss + afterUdp.up.drop_loss, 0, 'a blocked packet is not a lost one')

    const echo = nodeIn(ORIGIN, TCP_ECHO, { port: 9301 })
    await Promise.race([once(echo.stdout, 'data'), once(echo, 'exit').then(() => { throw new Error('the echo server exited before listening') })])
    const back = await lastJson(nodeIn(LOCATION, TCP_ROUND_TRIP, { host: '10.213.0.1', port: 9301, bytes: 1 << 20 }))
    echo.kill('SIGTERM')
    const afterTcp = await link.readStats()
    assert.equal(back, 1 << 20, 'a megabyte over TCP goes there and back whole')
    for (const dir of /** @type {const} */ (['down', 'up'])) {
      const d = afterTcp[dir]
      assert.equal(d.drop_udp, afterUdp[dir].drop_udp, `${dir}: no TCP packet counted as UDP`)
      assert.ok(d.out - afterUdp[dir].out > 100, `${dir}: TCP packets passed`)
      assert.equal(d.in, d.out + d.drop_loss + d.drop_queue + d.drop_error + d.drop_udp + d.in_flight)
    }
  })

  test('SIGUSR1 refreshes the counters; SIGTERM writes final ones and removes the devices', async () => {
    await relink([])
    const first = await link.readStats()
    const second = await link.readStats()
    assert.equal(second.requests, first.requests + 1)
    assert.equal(second.final, false)
    const final = await link.stop()
    link = null
    assert.equal(final.final, true)
    assert.deepEqual(await readLinkemStats(path.join(runDir, 'linkem.json')), final)
    const { stdout } = await ip('-n', ORIGIN, '-o', 'link', 'show')
    assert.doesNotMatch(stdout, new RegExp(`${PREFIX}-0-o`))
  })
})
