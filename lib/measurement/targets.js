// Which addresses a monitor may point agents at. An agent on a real location
// runs inside someone's network: a monitor on http://169.254.169.254/ or
// http://10.0.0.5:8080/admin would have it fetch the cloud metadata service
// or an internal admin page, and the results (status, size, timings, per-
// request URLs) would report back what is there. So monitors that run on
// real locations may not target loopback, private, link-local or other
// non-public addresses unless H3LENS_ALLOW_PRIVATE_TARGETS=true. Lab
// locations measure the lab's own origin on this machine and are exempt.
//
// What is checked: literal IPv4/IPv6 addresses (in any form the URL parser
// accepts — 2130706433, 0x7f.1 and [::ffff:127.0.0.1] all normalise to a
// loopback address), the names localhost and *.localhost, and every address
// the host name resolves to when the monitor is saved. What is not: a name
// that resolves to a public address now and a private one later (DNS
// rebinding), and redirects the page follows. Where that matters, limit the
// agents' outbound traffic with a firewall as well.
import dns from 'node:dns/promises'
import net from 'node:net'
import { ValidationError } from '../runtime/errors.js'

const BLOCKED = new net.BlockList()
for (const [prefix, bits] of /** @type {[string, number][]} */ ([
  ['0.0.0.0', 8], // "this network"; 0.0.0.0 reaches localhost on Linux
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4] // reserved, broadcast
])) BLOCKED.addSubnet(prefix, bits, 'ipv4')
for (const [prefix, bits] of /** @type {[string, number][]} */ ([
  ['::', 128], // unspecified
  ['::1', 128],
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
  ['64:ff9b::', 96] // NAT64 of IPv4 addresses
])) BLOCKED.addSubnet(prefix, bits, 'ipv6')

// A monitor is saved by a person waiting for the answer; a resolver that
// does not answer in this time is not allowed to hold the request up.
const RESOLVE_TIMEOUT_MS = 2000

/** @param {string} address a literal IPv4 or IPv6 address */
export function isPrivateAddress (address) {
  const type = net.isIPv6(address) ? 'ipv6' : 'ipv4'
  // BlockList also checks an IPv4-mapped IPv6 address (::ffff:a.b.c.d)
  // against the IPv4 rules.
  return BLOCKED.check(address, type)
}

/**
 * @param {string} url an http(s) URL that validateMonitorUrl accepted
 * @param {{ resolve?: (host: string) => Promise<string[]> }} [opts]
 * @throws {ValidationError} when the URL's host is, or resolves to, a non-public address
 */
export async function checkPublicTarget (url, { resolve = resolveHost } = {}) {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase()
  const why = (/** @type {string} */ what) => new ValidationError(
    `url points at ${what}, which monitors on real locations may not target (set H3LENS_ALLOW_PRIVATE_TARGETS=true to allow it)`, 'url')
  if (net.isIP(host)) {
    if (isPrivateAddress(host)) throw why(`the non-public address ${host}`)
    return
  }
  if (host === 'localhost' || host.endsWith('.localhost')) throw why(host)
  let addresses = []
  try {
    addresses = await resolve(host)
  } catch {
    // Unknown or unresolvable here: the agent will report that, and nothing
    // private was revealed.
    return
  }
  const bad = addresses.find(isPrivateAddress)
  if (bad) throw why(`${host}, which resolves to the non-public address ${bad}`)
}

/** @param {string} host */
async function resolveHost (host) {
  let timer
  const timeout = new Promise((resolve, reject) => { timer = setTimeout(() => reject(new Error('timeout')), RESOLVE_TIMEOUT_MS) })
  try {
    const found = await Promise.race([dns.lookup(host, { all: true, verbatim: true }), timeout])
    return /** @type {{ address: string }[]} */ (found).map((a) => a.address)
  } finally {
    clearTimeout(timer)
  }
}
