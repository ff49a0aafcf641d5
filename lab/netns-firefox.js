// Firefox inside a lab network namespace, so a browser measures through that
// namespace's emulated link. Run as
//   ip netns exec <ns> node lab/netns-firefox.js <socket> <firefox> <args…>
// Firefox's WebDriver BiDi server listens on the namespace's own loopback,
// which the agent outside cannot reach (Chromium needs no such thing: it is
// driven over a pipe, which Firefox's BiDi does not offer). So this process
// forwards a Unix socket, which lives in the file system and is reachable
// from every namespace, to that port, and says so on stderr:
//   h3lens: WebDriver BiDi on port <port> forwarded to <socket>
// (the port, because Firefox checks the Host header of the connection).
// Firefox's own output passes through. It exits when Firefox does, with its
// status; SIGTERM and SIGINT are passed on to Firefox.
import { spawn } from 'node:child_process'
import net from 'node:net'
import { createInterface } from 'node:readline'
import { rmSync } from 'node:fs'

const BIDI_LINE = /^WebDriver BiDi listening on ws:\/\/(127\.0\.0\.1|localhost|\[::1\]):(\d+)/

const [socketPath, firefox, ...args] = process.argv.slice(2)
if (!socketPath || !firefox) {
  process.stderr.write('usage: node lab/netns-firefox.js <socket> <firefox> <args…>\n')
  process.exit(2)
}

const child = spawn(firefox, args, { stdio: ['ignore', 'inherit', 'pipe'] })
/** @type {net.Server | null} */
let server = null
for (const signal of /** @type {const} */ (['SIGTERM', 'SIGINT'])) process.on(signal, () => child.kill(signal))
child.on('error', (err) => {
  process.stderr.write(`h3lens: could not start ${firefox}: ${err.message}\n`)
  process.exit(127)
})
child.on('exit', (code, signal) => {
  server?.close()
  rmSync(socketPath, { force: true })
  process.exit(code ?? (signal ? 128 : 1))
})

createInterface({ input: /** @type {import('node:stream').Readable} */ (child.stderr) }).on('line', (line) => {
  process.stderr.write(`${line}\n`)
  const m = BIDI_LINE.exec(line)
  if (!m || server) return
  const port = Number(m[2])
  rmSync(socketPath, { force: true })
  server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1')
    client.pipe(upstream).pipe(client)
    const end = () => { client.destroy(); upstream.destroy() }
    client.on('error', end).on('close', end)
    upstream.on('error', end).on('close', end)
  })
  server.listen(socketPath, () => process.stderr.write(`h3lens: WebDriver BiDi on port ${port} forwarded to ${socketPath}\n`))
})
