// A webhook receiver for alert tests: a real HTTP server on 127.0.0.1 that
// records every request (headers and raw body) and can be stopped and
// started again on the same port, as a receiver that goes down for a while.
import http from 'node:http'
import { once } from 'node:events'

/**
 * @param {{ status?: number, delayMs?: number }} [o] answer status and delay
 */
export async function startReceiver ({ status = 204, delayMs = 0 } = {}) {
  /** @type {{ headers: http.IncomingHttpHeaders, body: string, json: any }[]} */
  const requests = []
  let server = null
  let port = 0
  const listen = () => new Promise((resolve, reject) => {
    server = http.createServer((req, res) => {
      const chunks = []
      req.on('data', (c) => chunks.push(c))
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8')
        let json = null
        try { json = JSON.parse(body) } catch {}
        requests.push({ headers: req.headers, body, json })
        setTimeout(() => res.writeHead(status).end(), delayMs)
      })
    })
    server.once('error', reject)
    // A failed test that never closes it must not keep the test process alive.
    server.unref()
    server.listen(port, '127.0.0.1', () => {
      port = /** @type {import('node:net').AddressInfo} */ (server.address()).port
      resolve(undefined)
    })
  })
  await listen()
  return {
    requests,
    get url () { return `http://127.0.0.1:${port}/hook` },
    /** Stops answering: connections are refused until start(). */
    async stop () {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
    start: listen,
    close () {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(resolve))
    }
  }
}

/**
 * What an attacker would want an agent to read: a service on 127.0.0.1
 * that answers a secret and records every connection it gets (by remote
 * address), for tests that show nothing reaches it.
 */
export async function startInternalService () {
  /** @type {(string | undefined)[]} */
  const connections = []
  const server = http.createServer((req, res) => res.end('internal secret: do not store'))
  server.on('connection', (socket) => connections.push(socket.remoteAddress))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { port: /** @type {import('node:net').AddressInfo} */ (server.address()).port, connections, close: () => server.close() }
}
