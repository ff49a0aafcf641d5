// A relay in front of a lab origin that makes its QUIC slow and leaves its
// TCP alone: on `port`, TCP is passed straight to the origin's port, and
// every UDP datagram from a client reaches the origin `delayMs` late (the
// origin's answers come back at once). A browser that races TCP against a
// QUIC connection that is slow to come up takes TCP here; one that waits
// for QUIC gets HTTP/3, `delayMs` later per round trip.
import dgram from 'node:dgram'
import net from 'node:net'
import { once } from 'node:events'

/**
 * @param {{ port: number, target: number, delayMs: number, host?: string }} o
 */
export async function startSlowQuicRelay ({ port, target, delayMs, host = '127.0.0.1' }) {
  /** @type {Set<import('node:net').Socket>} */
  const sockets = new Set()
  const tcp = net.createServer((client) => {
    const upstream = net.connect(target, host)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('error', () => { client.destroy(); upstream.destroy() })
      s.on('close', () => sockets.delete(s))
    }
    client.pipe(upstream).pipe(client)
  })
  tcp.listen(port, host)
  await once(tcp, 'listening')

  const udp = dgram.createSocket('udp4')
  /** @type {Map<string, import('node:dgram').Socket>} one socket towards the origin per client address */
  const upstreams = new Map()
  let datagrams = 0
  udp.on('message', (msg, from) => {
    const key = `${from.address}:${from.port}`
    let up = upstreams.get(key)
    if (!up) {
      const socket = dgram.createSocket('udp4')
      socket.on('message', (answer) => udp.send(answer, from.port, from.address))
      socket.on('error', () => {})
      upstreams.set(key, socket)
      up = socket
    }
    const to = up
    datagrams++
    setTimeout(() => { try { to.send(msg, target, host) } catch {} }, delayMs).unref()
  })
  udp.bind(port, host)
  await once(udp, 'listening')

  return {
    /** How many datagrams clients sent: whether QUIC was tried at all. */
    datagrams: () => datagrams,
    close: async () => {
      for (const s of sockets) s.destroy()
      for (const s of upstreams.values()) s.close()
      udp.close()
      await new Promise((resolve) => tcp.close(resolve))
    }
  }
}
