// The private-target guard: which hosts a monitor may point agents at, and a
// webhook the scheduler at. An agent runs inside someone's network: a monitor
// on http://169.254.169.254/ or http://10.0.0.5:8080/admin would have it
// fetch the cloud metadata service or an internal admin page, and the
// results (status, size, timings, per-request URLs) would report back what
// is there. So unless H3LENS_ALLOW_PRIVATE_TARGETS=true, a target must be a
// host that resolves, and only to public addresses (lib/measurement/
// addresses.js); the lab origin, reached by lab locations only, is the one
// exception (lib/store/monitors.js).
//
// It is checked twice: here when a monitor or webhook is saved (a clear 400
// naming the field), and again when the target is fetched — by the agent on
// every request of a run (agents/target-guard.js) and by the scheduler when
// a webhook connects (guardedLookup) — because a name may resolve elsewhere
// by then (DNS rebinding). docs/SECURITY.md says what it blocks and when.
import dns from 'node:dns'
import { readFile } from 'node:fs/promises'
import net from 'node:net'
import { ValidationError } from '../runtime/errors.js'
import { literalReason, nonPublicReason } from './addresses.js'

export { nonPublicReason, literalReason } from './addresses.js'

// A monitor is saved by a person waiting for the answer, and the agent's
// resolver answers Chromium during a page load: a resolver that does not
// answer in this time does not hold either up.
export const RESOLVE_TIMEOUT_MS = 2000
const HOSTS_FILE = '/etc/hosts'
// /etc/hosts is read again at most this often.
const HOSTS_TTL_MS = 5000

/**
 * A URL's host as the guard judges it: lower case, without brackets or
 * trailing dots ("localhost." is localhost), and, when what is left is an
 * IP address in any form the URL parser reads (2130706433, 0x7f.1, 0177.0.0.1,
 * [::ffff:127.0.0.1]), that address in its usual form. The URL parser has
 * already turned international names into punycode and case-folded them.
 * @param {string | URL} url
 * @returns {{ host: string, address: string | null }}
 */
export function targetHost (url) {
  const hostname = new URL(url).hostname
  let host = hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.+$/, '')
  if (!net.isIP(host) && host !== hostname && /^[\d.a-fx]+$/.test(host)) {
    // "127.0.0.1.." stays a name for the URL parser; without its dots it is an address.
    try { host = new URL(`http://${host}/`).hostname } catch {}
  }
  return { host, address: net.isIP(host) ? host : null }
}

/** Names that are loopback by definition (RFC 6761), whatever DNS says. */
export function isLocalhostName (/** @type {string} */ host) {
  return host === 'localhost' || host.endsWith('.localhost')
}

/**
 * The guard's one sentence for a refused fetch, as stored in a run's error
 * and a webhook attempt's.
 * @param {string} host
 * @param {string} address
 * @param {string} reason what the address is (nonPublicReason)
 */
export function guardMessage (host, address, reason) {
  return host === address
    ? `blocked by the private-target guard: host ${host} is a non-public address (${reason})`
    : `blocked by the private-target guard: host ${host} resolves to ${address} (${reason})`
}

/**
 * What a host resolves to, as the machine resolves it: the system's resolver
 * (getaddrinfo, which reads /etc/hosts first), or with `servers` (host or
 * host:port, H3LENS_DNS_SERVERS) /etc/hosts and then those DNS servers.
 * Both families, every address.
 * @param {{ servers?: string[], hostsFile?: string, timeoutMs?: number }} [opts]
 * @returns {{ resolve: (host: string) => Promise<string[]>, hostsEntries: () => Promise<Map<string, string[]>> }}
 */
export function createResolver ({ servers = [], hostsFile = HOSTS_FILE, timeoutMs = RESOLVE_TIMEOUT_MS } = {}) {
  /** @type {{ at: number, entries: Promise<Map<string, string[]>> } | null} */
  let hosts = null
  const hostsEntries = () => {
    if (!hosts || Date.now() - hosts.at > HOSTS_TTL_MS) hosts = { at: Date.now(), entries: readHosts(hostsFile) }
    return hosts.entries
  }
  /** @type {import('node:dns').promises.Resolver | null} */
  let resolver = null
  if (servers.length) {
    resolver = new dns.promises.Resolver({ timeout: Math.ceil(timeoutMs / 2), tries: 2 })
    resolver.setServers(servers)
  }

  /** @param {string} host */
  async function resolve (host) {
    if (!resolver) {
      const found = await withTimeout(dns.promises.lookup(host, { all: true, verbatim: true }), timeoutMs, host)
      return found.map((a) => a.address)
    }
    const listed = (await hostsEntries()).get(host)
    if (listed) return listed
    const families = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)])
    const addresses = families.flatMap((r) => r.status === 'fulfilled' ? r.value : [])
    if (addresses.length) return addresses
    const failed = families.map((r) => r.status === 'rejected' ? r.reason : null).find((e) => e && e.code !== 'ENODATA')
    throw failed ?? Object.assign(new Error(`${host} has no address`), { code: 'ENODATA' })
  }
  return { resolve, hostsEntries }
}

/** The system resolver, for callers that were given none. */
export const systemResolver = createResolver()

/**
 * The guard's settings for a process, from its configuration: whether
 * private targets are allowed, the lab origin's port, and the resolver.
 * @param {{ allowPrivateTargets?: boolean, labPort?: number | null, dnsServers?: string[] | null }} config
 */
export function targetPolicy ({ allowPrivateTargets = false, labPort = null, dnsServers = null }) {
  const resolver = dnsServers?.length ? createResolver({ servers: dnsServers }) : systemResolver
  return { allowPrivateTargets, labPort, resolve: resolver.resolve }
}

/**
 * Refuses a URL whose host is not public: a non-public literal address, a
 * localhost name, a name that does not resolve, or one that resolves to any
 * non-public address.
 * @param {string} url an http(s) URL
 * @param {{ resolve?: (host: string) => Promise<string[]>, field?: string, subject?: string }} [opts]
 *   field: the field to name in the error; subject: who may not target it ("monitors", "webhooks")
 * @throws {ValidationError}
 */
export async function checkPublicTarget (url, { resolve = systemResolver.resolve, field = 'url', subject = 'monitors' } = {}) {
  const { host, address } = targetHost(url)
  const refuse = (/** @type {string} */ what) => new ValidationError(
    `${field} points at ${what}, which ${subject} may not target (set H3LENS_ALLOW_PRIVATE_TARGETS=true to allow private targets)`, field)
  if (address) {
    const why = literalReason(address)
    if (why) throw refuse(`the non-public address ${address} (${why})`)
    return
  }
  if (isLocalhostName(host)) throw refuse(`${host}, a loopback name`)
  let addresses
  try {
    addresses = await resolve(host)
  } catch (/** @type {any} */ err) {
    throw new ValidationError(`${field}'s host ${host} does not resolve (${err.code ?? err.message}); ${subject} may only target hosts that resolve ` +
      'to public addresses (set H3LENS_ALLOW_PRIVATE_TARGETS=true to allow any target)', field)
  }
  for (const a of addresses) {
    const why = nonPublicReason(a)
    if (why) throw refuse(`${host}, which resolves to the non-public address ${a} (${why})`)
  }
}

/**
 * A `lookup` for node:http(s) and node:net that refuses, at connect time,
 * a host that resolves to any non-public address: what the host resolves to
 * now is what the connection uses. IP literals never reach a lookup; check
 * them with targetHost and literalReason first.
 * @param {(host: string) => Promise<string[]>} resolve
 * @returns {import('node:net').LookupFunction}
 */
export function guardedLookup (resolve = systemResolver.resolve) {
  return (hostname, options, callback) => {
    const host = hostname.toLowerCase().replace(/\.+$/, '')
    const refused = (/** @type {string} */ address, /** @type {string} */ why) =>
      callback(Object.assign(new Error(guardMessage(host, address, why)), { code: 'EPRIVATETARGET' }), '', 0)
    if (isLocalhostName(host)) {
      return callback(Object.assign(new Error(`blocked by the private-target guard: host ${host} is a loopback name`), { code: 'EPRIVATETARGET' }), '', 0)
    }
    resolve(host).then((addresses) => {
      for (const a of addresses) {
        const why = nonPublicReason(a)
        if (why) return refused(a, why)
      }
      const family = options.family === 6 || options.family === 'IPv6' ? 6 : options.family === 4 || options.family === 'IPv4' ? 4 : 0
      const usable = addresses.map((a) => ({ address: a, family: net.isIPv6(a) ? 6 : 4 })).filter((a) => !family || a.family === family)
      if (!usable.length) return callback(Object.assign(new Error(`${host} has no IPv${family} address`), { code: 'ENOTFOUND' }), '', 0)
      if (options.all) return /** @type {any} */ (callback)(null, usable)
      callback(null, usable[0].address, usable[0].family)
    }, (err) => callback(err, '', 0))
  }
}

/**
 * /etc/hosts as name → addresses (lower case, without trailing dots).
 * A missing file is an empty one.
 * @param {string} file
 */
async function readHosts (file) {
  /** @type {Map<string, string[]>} */
  const entries = new Map()
  const text = await readFile(file, 'utf8').catch(() => '')
  for (const line of text.split('\n')) {
    const [address, ...names] = line.replace(/#.*/, '').trim().split(/\s+/)
    if (!address || !net.isIP(address.replace(/%.*/, ''))) continue
    for (const name of names) {
      const key = name.toLowerCase().replace(/\.+$/, '')
      entries.set(key, [...(entries.get(key) ?? []), address.replace(/%.*/, '')])
    }
  }
  return entries
}

/**
 * @template T
 * @param {Promise<T>} promise
 * @param {number} ms
 * @param {string} host
 * @returns {Promise<T>}
 */
async function withTimeout (promise, ms, host) {
  let timer
  const late = new Promise((_resolve, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`${host} did not resolve within ${ms / 1000} s`), { code: 'ETIMEOUT' })), ms)
  })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}
