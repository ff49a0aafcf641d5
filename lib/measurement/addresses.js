// Which IP addresses are public. A monitor's agent runs inside someone's
// network, and a webhook is sent from the scheduler's: an address that is
// not globally reachable (loopback, private, link-local, the cloud metadata
// service at 169.254.169.254, …) is one only the machine or its network can
// reach, and what answers there is none of the monitor's business
// (docs/SECURITY.md).
//
// The ranges are IANA's special-purpose registries (IPv4 and IPv6) minus
// what is globally reachable. IPv6 addresses that carry an IPv4 address say
// which in their reason, so [::ffff:7f00:1], [64:ff9b::a9fe:a9fe] and
// [2002:a9fe:a9fe::] read as what they are: 127.0.0.1 and 169.254.169.254.
// Every IPv6 address outside the global unicast range 2000::/3 is
// non-public, IPv4-mapped and -compatible ones (::/96) included; so are the
// deprecated 6to4 (2002::/16) and Teredo (2001::/32) whatever they carry.
// NAT64 (64:ff9b::/96) of a public address is public: an agent on an
// IPv6-only network with DNS64 gets such answers for every IPv4-only site;
// written as a literal in a URL it is refused (literalReason), since the
// IPv4 address says the same.
import net from 'node:net'

/** @type {[string, number, string][]} prefix, length, what it is */
export const IPV4_RANGES = [
  ['0.0.0.0', 8, 'this network'], // 0.0.0.0 reaches localhost on Linux
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared address space (carrier-grade NAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, '6to4 relay anycast'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'] // and 255.255.255.255, broadcast
]

/** @type {[string, number, string][]} inside 2000::/3, the global unicast range */
const IPV6_GLOBAL_EXCEPTIONS = [
  ['2001:2::', 48, 'benchmarking'],
  ['2001:10::', 28, 'ORCHID'],
  ['2001:20::', 28, 'ORCHIDv2'],
  ['2001:db8::', 32, 'documentation'],
  ['3fff::', 20, 'documentation']
]

/** @type {[string, number, string][]} outside 2000::/3: named for the message; all are refused */
const IPV6_NAMED = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['64:ff9b:1::', 48, 'local-use NAT64'],
  ['100::', 64, 'discard-only'],
  ['fc00::', 7, 'unique local'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast']
]

const v4 = rangeLookup(IPV4_RANGES, 'ipv4')
const v6Global = rangeLookup(IPV6_GLOBAL_EXCEPTIONS, 'ipv6')
const v6Named = rangeLookup(IPV6_NAMED, 'ipv6')

/**
 * Why an address is not public, or null when it is.
 * @param {string} address a literal IPv4 or IPv6 address (IPv6 without brackets)
 * @returns {string | null} e.g. "loopback", "private, as IPv4-mapped 10.0.0.1"
 */
export function nonPublicReason (address) {
  if (net.isIPv4(address)) return v4(address)
  const groups = parseIPv6(address)
  if (!groups) return 'not an IP address'
  const named = v6Named(address)
  if (named) return named
  const carried = carriedIPv4(groups)
  if (carried) {
    const why = v4(carried.address)
    if (why) return `${why}, as ${carried.how} ${carried.address}`
    if (carried.how === 'NAT64') return null
    if (carried.how === 'IPv4-mapped') return `IPv4-mapped ${carried.address}; write the IPv4 address instead`
    return `${carried.how} of ${carried.address} (deprecated)`
  }
  // Everything outside 2000::/3 is reserved, local or special.
  if ((groups[0] & 0xe000) !== 0x2000) return 'not global unicast'
  return v6Global(address)
}

/**
 * Why an address written in a URL is refused, or null: as nonPublicReason,
 * and NAT64 of a public address too (write the IPv4 address instead).
 * @param {string} address
 * @returns {string | null}
 */
export function literalReason (address) {
  const why = nonPublicReason(address)
  if (why || net.isIPv4(address)) return why
  const carried = carriedIPv4(/** @type {number[]} */ (parseIPv6(address)))
  return carried?.how === 'NAT64' ? `NAT64 of ${carried.address}; write the IPv4 address instead` : null
}

/**
 * The IPv4 address an IPv6 address carries, and how, for the forms that
 * carry one.
 * @param {number[]} g the eight 16-bit groups
 * @returns {{ address: string, how: string } | null}
 */
function carriedIPv4 (g) {
  const quad = (/** @type {number} */ hi, /** @type {number} */ lo) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
  const zeros = (/** @type {number} */ from, /** @type {number} */ to) => g.slice(from, to).every((x) => x === 0)
  if (zeros(0, 5) && g[5] === 0xffff) return { address: quad(g[6], g[7]), how: 'IPv4-mapped' }
  if (zeros(0, 6)) return { address: quad(g[6], g[7]), how: 'IPv4-compatible' } // :: and ::1 are named before
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return { address: quad(g[6], g[7]), how: 'NAT64' }
  if (g[0] === 0x2002) return { address: quad(g[1], g[2]), how: '6to4' }
  if (g[0] === 0x2001 && g[1] === 0) {
    // Teredo: the server's address, then the client's, stored inverted.
    const server = quad(g[2], g[3])
    const client = quad(~g[6] & 0xffff, ~g[7] & 0xffff)
    return { address: v4(server) ? server : client, how: 'Teredo' }
  }
  return null
}

/**
 * The eight 16-bit groups of an IPv6 address, or null when it is not one.
 * @param {string} address
 * @returns {number[] | null}
 */
export function parseIPv6 (address) {
  if (!net.isIPv6(address)) return null
  let text = address.toLowerCase()
  const dotted = text.match(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number)
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.split('::')
  const part = (/** @type {string | undefined} */ s) => (s ? s.split(':').map((x) => parseInt(x, 16)) : [])
  const left = part(head)
  const right = part(tail)
  const fill = tail === undefined ? [] : new Array(8 - left.length - right.length).fill(0)
  return [...left, ...fill, ...right]
}

/**
 * @param {[string, number, string][]} ranges
 * @param {'ipv4' | 'ipv6'} type
 * @returns {(address: string) => string | null} what the first range holding the address is
 */
function rangeLookup (ranges, type) {
  const lists = ranges.map(([prefix, bits, what]) => {
    const list = new net.BlockList()
    list.addSubnet(prefix, bits, type)
    return { list, what }
  })
  return (address) => lists.find(({ list }) => list.check(address, type))?.what ?? null
}
