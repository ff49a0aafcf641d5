// The one way tests, benches and scripts pick a port for a server they are
// about to start on loopback.
import dgram from 'node:dgram'
import net from 'node:net'

/**
 * A loopback port that was free a moment ago for both TCP and UDP: the lab
 * origin (Caddy) takes both, HTTP/1.1 and HTTP/2 on TCP and HTTP/3 on UDP,
 * and a port free for TCP alone may be held for UDP by another process.
 */
export async function freePort () {
  for (let i = 0; i < 20; i++) {
    const port = await freeTcpPort()
    if (await udpFree(port)) return port
  }
  throw new Error('no loopback port was free for both TCP and UDP in 20 tries')
}

async function freeTcpPort () {
  const server = net.createServer()
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)))
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address())
  await new Promise((resolve) => server.close(resolve))
  return port
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
