// The one way tests, benches and scripts pick a port for a server they are
// about to start on loopback.
import dgram from 'node:dgram'
import fs from 'node:fs'
import net from 'node:net'

/** Where the ports come from when the kernel's ephemeral range leaves room below it. */
const LOWEST = 20000

/**
 * A loopback port that was free a moment ago for both TCP and UDP: the lab
 * origin (Caddy) takes both, HTTP/1.1 and HTTP/2 on TCP and HTTP/3 on UDP,
 * and a port free for TCP alone may be held for UDP by another process.
 *
 * It is drawn at random from below the kernel's ephemeral range
 * (/proc/sys/net/ipv4/ip_local_port_range), not asked of the kernel: a port
 * the kernel hands out for a listen on port 0 comes from that range, and so
 * does the local port of every outgoing connection, so between the pick and
 * the server's own listen any connection of any process (a browser's, an
 * agent's) could take it. One did, in a full run of the suite: `h3lens
 * start` then failed with EADDRINUSE on the port the test had picked for it.
 * Below the range only another server can take it. Where the range leaves
 * no room, the kernel's pick is used.
 */
export async function freePort () {
  const first = firstEphemeralPort()
  for (let i = 0; first - LOWEST >= 1000 && i < 50; i++) {
    const port = await listenTcp(LOWEST + Math.floor(Math.random() * (first - LOWEST)))
    if (port !== null && await udpFree(port)) return port
  }
  for (let i = 0; i < 20; i++) {
    const port = await listenTcp(0)
    if (port !== null && await udpFree(port)) return port
  }
  throw new Error('no loopback port was free for both TCP and UDP in 20 tries')
}

/** The first of the kernel's ephemeral ports. */
function firstEphemeralPort () {
  try {
    const first = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    if (Number.isInteger(first)) return first
  } catch {}
  return 32768 // Linux's default, where the file cannot be read
}

/**
 * Listen on a loopback TCP port for a moment: `port`, or the kernel's pick
 * for 0.
 * @param {number} port
 * @returns {Promise<number | null>} the port it got, null when it was taken
 */
async function listenTcp (port) {
  const server = net.createServer()
  const got = await new Promise((resolve) => {
    server.once('error', () => resolve(null))
    server.listen(port, '127.0.0.1', () => resolve(/** @type {import('node:net').AddressInfo} */ (server.address()).port))
  })
  if (got !== null) await new Promise((resolve) => server.close(resolve))
  return got
}

/** @param {number} port */
async function udpFree (port) {
  const socket = dgram.createSocket('udp4')
  const free = await new Promise((resolve) => {
    socket.once('error', () => resolve(false))
    socket.bind(port, '127.0.0.1', () => resolve(true))
  })
  await new Promise((resolve) => socket.close(() => resolve(undefined)))
  return free
}
