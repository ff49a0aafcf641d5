// A webhook receiver for alert tests: a real HTTP server on 127.0.0.1 that
// records every request (headers and raw body) and can be stopped and
// started again on the same port, as a receiver that goes down for a while.
import http from 'node:http'

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
