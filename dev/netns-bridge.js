// A TCP port on this machine's loopback, reachable from inside a network
// namespace at the same address and port, with no link and no address added
// to this machine's own namespace. Every Chromium on the machine takes an
// address change here for a network change: it fails the loads under way
// with ERR_NETWORK_CHANGED and closes its connections, in whichever test
// file they are. A veth pair to the namespace needs an address on this
// side; the bridge does not.
//
// A process inside the namespace listens on its 127.0.0.1:<port> and
// carries each connection over a Unix socket, a file that both namespaces
// see, to a server in this process, which carries it on to 127.0.0.1:<port>
// here.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'

/**
 * @param {{ ns: string, port: number, dir: string }} opts the namespace, the
 *   loopback port to bridge, a directory for the Unix socket
 * @returns {Promise<{ close: () => Promise<void> }>}
 */
export async function bridgeIntoNetns ({ ns, port, dir }) {
  const socketPath = path.join(dir, `bridge-${port}.sock`)
  /** @type {Set<import('node:net').Socket>} */
  const open = new Set()
  const server = net.createServer((inbound) => {
    const outbound = net.connect(port, '127.0.0.1')
    for (const s of [inbound, outbound]) open.add(s.once('close', () => open.delete(s)))
    splice(inbound, outbound)
  })
  await new Promise((resolve, reject) => server.once('error', reject).listen(socketPath, () => resolve(undefined)))
  const inside = spawn('ip', ['netns', 'exec', ns, process.execPath, '--input-type=module', '-e', `
    import net from 'node:net'
    ${splice.toString()}
    net.createServer((inbound) => splice(inbound, net.connect(${JSON.stringify(socketPath)})))
      .listen(${port}, '127.0.0.1', () => console.log('ready'))
  `], { stdio: ['ignore', 'pipe', 'inherit'] })
  const close = async () => {
    if (inside.exitCode === null && inside.signalCode === null) {
      inside.kill('SIGKILL')
      await once(inside, 'exit')
    }
    // What is still open would keep the server from closing.
    for (const s of open) s.destroy()
    await new Promise((resolve) => server.close(() => resolve(undefined)))
    fs.rmSync(socketPath, { force: true })
  }
  // Its first output is "ready"; an exit (or a failed spawn) comes first otherwise.
  const started = await Promise.race([once(inside.stdout, 'data'), once(inside, 'exit')]).catch((err) => [err])
  if (!(started[0] instanceof Buffer)) {
    await close()
    throw new Error(`the bridge into network namespace ${ns} did not listen on 127.0.0.1:${port}: ${started[0] instanceof Error ? started[0].message : `it exited (code ${started[0]})`}`)
  }
  return { close }
}

/**
 * Carry bytes both ways between two sockets; an error or the end of either
 * ends both.
 * @param {import('node:net').Socket} a
 * @param {import('node:net').Socket} b
 */
function splice (a, b) {
  a.pipe(b).pipe(a)
  a.on('error', () => b.destroy())
  b.on('error', () => a.destroy())
}
