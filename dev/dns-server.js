// A DNS server on loopback whose answers a test sets and changes: this
// machine has no outside DNS, and the private-target guard must be shown
// what a name resolves to when a monitor is saved and what it resolves to
// later (rebinding). The API and agents under test resolve through it with
// H3LENS_DNS_SERVERS=127.0.0.1:<port> (after /etc/hosts, as they always do).
import dgram from 'node:dgram'
import net from 'node:net'
import { buildAnswer, parseQuery, RCODE, TYPE_A, TYPE_AAAA } from '../agents/dns-message.js'

/**
 * Public names the tests use, with the addresses they really have: what a
 * resolver with outside access would answer (createTestApp resolves through
 * a server with these unless a test brings its own).
 * @type {Record<string, string[]>}
 */
export const PUBLIC_ZONE = {
  'example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'www.example.com': ['93.184.215.14'],
  'hooks.example.com': ['93.184.215.14'],
  'example.org': ['96.7.128.175'],
  'example.net': ['96.7.128.186']
}

/**
 * @param {Record<string, string[]>} [records] name → addresses (both families)
 * @param {{ address?: string, port?: number }} [listen] where it answers (loopback, any free port)
 */
export async function startDnsServer (records = {}, { address = '127.0.0.1', port: wanted = 0 } = {}) {
  /** @type {Map<string, string[]>} */
  const names = new Map(Object.entries(records))
  /** @type {{ name: string, type: number }[]} */
  const asked = []
  const socket = dgram.createSocket('udp4')
  socket.on('message', (msg, from) => {
    let query
    try {
      query = parseQuery(msg)
    } catch {
      return
    }
    asked.push({ name: query.name, type: query.type })
    const addresses = names.get(query.name)
    const family = query.type === TYPE_A ? 4 : query.type === TYPE_AAAA ? 6 : 0
    const answer = addresses === undefined
      ? buildAnswer(query, { rcode: RCODE.NXDOMAIN })
      : buildAnswer(query, { addresses: addresses.filter((a) => net.isIP(a) === family), ttl: 0 })
    socket.send(answer, from.port, from.address)
  })
  await new Promise((resolve) => socket.bind(wanted, address, () => resolve(undefined)))
  const { port } = socket.address()
  return {
    /** For H3LENS_DNS_SERVERS. */
    server: `${address}:${port}`,
    /** Make `name` resolve to `addresses` from now on (none: NXDOMAIN). */
    set (/** @type {string} */ name, /** @type {string[] | undefined} */ addresses) {
      if (addresses === undefined) names.delete(name)
      else names.set(name, addresses)
    },
    asked,
    close: () => new Promise((resolve) => socket.close(() => resolve(undefined)))
  }
}
