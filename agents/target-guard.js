// The private-target guard at run time: a run for a monitor reaches public
// addresses only, whatever the page, its redirects, subresources, scripts,
// workers, WebSockets or probes ask for, and whatever DNS answers by then
// (lib/measurement/targets.js checked the monitor when it was saved; DNS may
// have changed since: rebinding). Runs on the lab origin are not guarded
// here: their browser resolves nothing but the lab (lib/measurement/browsers/chromium.js labBrowserFlags).
//
// Resolver pinning, not request interception. Intercepting requests
// (DevTools Fetch domain) lets the agent look a host up, but Chromium then
// looks it up again itself, and a name with a zero TTL can answer a public
// address to the agent and 127.0.0.1 to Chromium a moment later; and it
// sees only the page's own requests, not those of workers or WebSockets
// (a WebSocket to ws://127.0.0.1 still opened a TCP connection: Chromium's
// Local Network Access check refuses it only once connected). Every
// connection Chromium makes starts with its host resolver, so the guard
// sits there:
//
//   - DNS names: Chromium's secure DNS (DNS over HTTPS in "secure" mode, no
//     fallback to the system's resolver; set in the profile's Local State,
//     as no switch sets it) asks a resolver this module serves to the
//     agent's loopback. It resolves the name as the machine does
//     (createResolver: /etc/hosts, then the system's or H3LENS_DNS_SERVERS)
//     and answers NXDOMAIN, and records why, when any address is not
//     public; otherwise it answers exactly the addresses it checked.
//   - Names Chromium answers without DNS (localhost, *.localhost, and the
//     names in /etc/hosts, which secure DNS still reads first) and IP
//     literals, which need no lookup: --host-resolver-rules maps the
//     non-public ones to "not found", as glob patterns drawn from the same
//     ranges as lib/measurement/addresses.js (literalPatterns below).
//   - Multicast DNS names (*.local, RFC 6762): Chromium resolves them with
//     the system's resolver even in secure mode (mDNS, or the machine's DNS
//     where a network names its hosts so), past the guard's resolver; the
//     rules map them to "not found", as no public site is named so.
//   - The resolver itself is reached by a name of its own that the rules map
//     to its loopback port (an IP literal of loopback is refused like any).
//
// What it costs: nothing per request; a lookup takes a local DNS-over-HTTPS
// exchange more (bench/target-guard.js, docs/BENCHMARKS.md "Private-target
// guard"). A refused load is stored as an error that names the guard
// ("blocked by the private-target guard: host X resolves to 127.0.0.1
// (loopback)"), never with what the address would have answered; other
// refused requests of a run are its notes.
import { randomBytes } from 'node:crypto'
import http from 'node:http'
import http2 from 'node:http2'
import { guardedLookup, guardMessage, isLocalhostName, literalReason, nonPublicReason, systemResolver, targetHost } from '../lib/measurement/targets.js'
import { IPV4_RANGES } from '../lib/measurement/addresses.js'
import { buildAnswer, parseQuery, RCODE, TYPE_A, TYPE_AAAA } from './dns-message.js'
import { loopbackCertificate } from './loopback-cert.js'
import { PAC_PORT_OF, proxyScriptPrefs } from '../lib/measurement/browsers/firefox.js'
import { WEBRTC_POLICY } from '../lib/measurement/browsers/chromium.js'
import { parseAltSvc } from '../lib/measurement/alt-svc.js'
import { monotonicNow } from './clock.js'

// Chromium asks for A, AAAA and HTTPS records of a name at once: one lookup
// serves them all. Short, so that what a run sees is what DNS says now.
const VERDICT_TTL_MS = 2000
// TTL of the answers given to Chromium. Every run has a fresh context, and
// with it an empty host cache.
const ANSWER_TTL_S = 30
// /etc/hosts names with a non-public address become resolver rules, at most
// this many: a switch may be 128 KiB long, and block lists map tens of
// thousands of names to 0.0.0.0. Names beyond it are not refused by the
// guard (docs/SECURITY.md says so); the agent logs how many.
const MAX_HOSTS_RULES = 1000
// The name Chromium reaches the guard's resolver by (.invalid never resolves
// elsewhere, RFC 6761).
const RESOLVER_NAME = 'resolver.h3lens.invalid'
// The names of the guard's own check that its resolver is in force
// (inForce): answered "no such name" and never looked up.
const CHECK_SUFFIX = '.guard-check.h3lens.invalid'
// Names no public site has, which a browser may resolve without the guard's
// resolver: Chromium sends *.local to the system's (mDNS).
const MDNS_SUFFIX = '.local'
// How long a blocked name is remembered, to explain the failed request.
const BLOCK_MEMORY_MS = 10 * 60_000
// A name refused this long before a run began still explains its failure:
// a browser may answer it from its own cache of failed lookups.
const RECENT_BLOCK_MS = 60_000
const MAX_DOH_BODY = 4096
const MAX_GUARD_NOTES = 10

/**
 * @typedef {{ resolve: (host: string) => Promise<string[]>, hostsEntries: () => Promise<Map<string, string[]>> }} Resolver
 * @typedef {{ address: string, reason: string, at: number }} Block
 * @typedef {{ addresses: string[] } | { block: { address: string, reason: string } } | { error: any }} Verdict
 * @typedef {Awaited<ReturnType<typeof startTargetGuard>>} TargetGuard
 */

/**
 * Start the guard's resolver. Close it when the agent stops. `listen` is the
 * IPv4 address it answers Chromium on: the agent's loopback, unless its
 * Chromium runs in a network namespace that reaches the agent elsewhere.
 * @param {{ resolver?: Resolver, log?: import('pino').Logger, listen?: string }} [opts]
 */
export async function startTargetGuard ({ resolver = systemResolver, log, listen = '127.0.0.1' } = {}) {
  /** @type {Map<string, { at: number, verdict: Promise<Verdict> }>} */
  const verdicts = new Map()
  /** @type {Map<string, Block>} names refused recently, for explaining failed requests */
  const blocked = new Map()
  const hostsRules = await hostsFileRules(resolver)
  if (hostsRules.blocked.size > MAX_HOSTS_RULES) {
    log?.warn({ names: hostsRules.blocked.size, refused: MAX_HOSTS_RULES }, '/etc/hosts has more non-public names than the private-target guard refuses; the rest are reachable from pages')
  }
  const { cert, key, spki, ca } = loopbackCertificate(listen, RESOLVER_NAME)
  const server = http2.createSecureServer({ cert, key, allowHTTP1: true }, (req, res) => {
    answerDoh(req, res).catch((err) => {
      log?.warn({ err: err.message }, 'the guard\'s resolver failed to answer')
      if (!res.headersSent) res.writeHead(500).end()
    })
  })
  /** What the resolver has done, for benches. */
  const stats = { connections: 0, queries: 0, refused: 0 }
  /** The check names (inForce) the resolver was asked for. @type {Set<string>} */
  const checksSeen = new Set()
  /** The tokens of the checks under way (inForce). @type {Set<string>} */
  const checking = new Set()
  /** Those a browser connected to the check port for. @type {Set<string>} */
  const directHits = new Set()
  /** The outcome of the check by browser, once a browser has made it. @type {Map<string, Promise<void>>} */
  const inForceChecks = new Map()
  server.on('secureConnection', () => { stats.connections++ })
  await new Promise((resolve, reject) => server.once('error', reject).listen(0, listen, () => resolve(undefined)))
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address())
  // The check's private address (inForce): a Firefox whose proxy script is
  // in force never connects here; one that does asks for the check's path.
  const checkServer = http.createServer((req, res) => {
    // Only a check's own path counts (nothing else is kept: a page of an
    // unguarded run could reach this port).
    const token = req.url?.slice(1) ?? ''
    if (checking.has(token)) directHits.add(token)
    res.writeHead(404, { connection: 'close' }).end()
  })
  await new Promise((resolve, reject) => checkServer.once('error', reject).listen(0, listen, () => resolve(undefined)))
  const { port: checkPort } = /** @type {import('node:net').AddressInfo} */ (checkServer.address())
  const rules = [`MAP ${RESOLVER_NAME} ${listen}:${port}`, ...hostsRules.rules, ...mdnsRules(), ...literalRules()]

  /**
   * What a name resolves to, or why it is refused; one lookup serves the
   * queries of the next VERDICT_TTL_MS.
   * @param {string} host
   */
  function verdictOf (host) {
    const now = monotonicNow()
    for (const [h, v] of verdicts) if (now - v.at > VERDICT_TTL_MS) verdicts.delete(h)
    let entry = verdicts.get(host)
    if (!entry) {
      entry = { at: now, verdict: judgeName(host) }
      verdicts.set(host, entry)
    }
    return entry.verdict
  }

  /**
   * @param {string} host
   * @returns {Promise<Verdict>}
   */
  async function judgeName (host) {
    if (isLocalhostName(host)) return { block: { address: 'localhost', reason: 'a loopback name' } }
    let addresses
    try {
      addresses = await resolver.resolve(host)
    } catch (err) {
      return { error: err }
    }
    for (const a of addresses) {
      const why = nonPublicReason(a)
      if (why) return { block: { address: a, reason: why } }
    }
    return { addresses }
  }

  /**
   * Note that a name was refused now: the failed request it causes is explained by it.
   * @param {string} host @param {{ address: string, reason: string }} why
   */
  function remember (host, { address, reason }) {
    const at = monotonicNow()
    if (!blocked.has(host)) log?.info({ host, address, reason }, 'private-target guard refused a name')
    blocked.set(host, { address, reason, at })
    for (const [h, b] of blocked) if (at - b.at > BLOCK_MEMORY_MS) blocked.delete(h)
  }

  /**
   * DNS over HTTPS (RFC 8484): GET with ?dns= or POST of the query.
   * @param {import('node:http2').Http2ServerRequest} req
   * @param {import('node:http2').Http2ServerResponse} res
   */
  async function answerDoh (req, res) {
    let msg
    if (req.method === 'GET') {
      msg = Buffer.from(new URL(req.url, 'https://resolver').searchParams.get('dns') ?? '', 'base64url')
    } else {
      const chunks = []
      let size = 0
      for await (const chunk of req) {
        size += chunk.length
        if (size > MAX_DOH_BODY) return res.writeHead(413).end()
        chunks.push(chunk)
      }
      msg = Buffer.concat(chunks)
    }
    let query
    try {
      query = parseQuery(msg)
    } catch {
      return res.writeHead(400).end()
    }
    stats.queries++
    let answer
    const name = query.name.replace(/\.+$/, '')
    if (name.toLowerCase().endsWith(CHECK_SUFFIX)) {
      checksSeen.add(name.toLowerCase())
      answer = buildAnswer(query, { rcode: RCODE.NXDOMAIN })
    } else if ((query.type !== TYPE_A && query.type !== TYPE_AAAA) || name.split('.').some((l) => l.startsWith('_'))) {
      // HTTPS/SVCB and other records: none (as the system resolver gives
      // Chromium none). They would carry address hints past the check.
      answer = buildAnswer(query, {})
    } else {
      const v = await verdictOf(name)
      if ('block' in v) {
        stats.refused++
        remember(name, v.block)
        answer = buildAnswer(query, { rcode: RCODE.NXDOMAIN })
      } else if ('error' in v) answer = buildAnswer(query, { rcode: ['ENOTFOUND', 'ENODATA'].includes(v.error.code) ? RCODE.NXDOMAIN : RCODE.SERVFAIL })
      else answer = buildAnswer(query, { addresses: v.addresses.filter((a) => a.includes(':') === (query.type === TYPE_AAAA)), ttl: ANSWER_TTL_S })
    }
    res.writeHead(200, { 'content-type': 'application/dns-message', 'content-length': answer.length })
    res.end(answer)
  }

  /**
   * Why a request to `url` is refused whatever DNS says (an IP literal,
   * a localhost name, an /etc/hosts entry), or null.
   * @param {string} url
   */
  function refusedOutright (url) {
    let host, address
    try {
      ({ host, address } = targetHost(url))
    } catch {
      return null
    }
    if (address) {
      const why = literalReason(address)
      return why ? guardMessage(address, address, why) : null
    }
    const listed = hostsRules.blocked.get(host)
    if (listed?.refused) return guardMessage(host, listed.address, listed.reason)
    if (isLocalhostName(host)) return `blocked by the private-target guard: host ${host} is a loopback name`
    if (isMdnsName(host)) return `blocked by the private-target guard: host ${host} is a multicast DNS name (${MDNS_SUFFIX}), which only a local network answers`
    // Firefox finds the resolver by its name at the agent's loopback address
    // (bootstrapAddr), whatever the port: only the resolver's own is its.
    if (host === RESOLVER_NAME && portOf(url) !== port) return `blocked by the private-target guard: host ${host} is the guard's own resolver, which answers on its port only`
    return null
  }

  /**
   * Why a request to `url` was refused by the guard, its resolver's refusals
   * counted since `since`, in the guard's words; null when it was not.
   * @param {string} url
   * @param {number} [since] on the agent's monotonic clock (./clock.js)
   */
  function explain (url, since = 0) {
    const outright = refusedOutright(url)
    if (outright) return outright
    let host
    try {
      ({ host } = targetHost(url))
    } catch {
      return null
    }
    const block = blocked.get(host)
    return block && block.at >= since ? guardMessage(host, block.address, block.reason) : null
  }

  return {
    /**
     * What a guarded browser is launched with: the rules, trust in the
     * resolver's key, and secure DNS through it (its profile's Local State).
     * WebRTC sends its STUN and TURN datagrams to an IP literal without
     * asking the resolver, so the rules never see them: a page could probe
     * UDP services on loopback or a private network. With
     * disable_non_proxied_udp WebRTC uses no UDP without a proxy, and its
     * TCP goes through the rules (a TURN server on 127.0.0.1 fails, 701).
     */
    browser: {
      flags: [`--host-resolver-rules=${rules.join(', ')}`, `--ignore-certificate-errors-spki-list=${spki}`, WEBRTC_POLICY],
      /** What results record of `flags`. */
      recorded: [`--host-resolver-rules=<private-target guard: ${rules.length} rules>`, '--ignore-certificate-errors-spki-list=<private-target guard resolver key>', WEBRTC_POLICY],
      localState: { dns_over_https: { mode: 'secure', templates: `https://${RESOLVER_NAME}/dns-query` } }
    },
    /**
     * What a guarded Firefox run's profile gets (agents/browsers/firefox.js):
     * the same resolver, and refusals of what needs no lookup.
     *   - DNS names: Trusted Recursive Resolver only (network.trr.mode 3:
     *     no fallback to the system's resolver), through this resolver,
     *     which Firefox reaches by its name at the address it listens on
     *     (bootstrapAddr); no name is exempt (localhost, /etc/hosts
     *     entries and the built-in exclusions included), and the
     *     confirmation query Firefox would send for example.com is skipped.
     *     Its certificate's authority is trusted in the run's profile.
     *   - IP literals and names answered without DNS (localhost, which
     *     Firefox always resolves itself, and the resolver's own name, which
     *     bootstrapAddr answers for every port): a proxy auto-config script
     *     sends the non-public ones, and the resolver's name on any port but
     *     its own, to a proxy that is no proxy (this resolver's own TLS
     *     port), with no failover to a direct connection; everything else
     *     goes direct, HTTP/3 included. The literal patterns and the
     *     /etc/hosts names are Chromium's rules' (literalPatterns below).
     *   - WebRTC off (media.peerconnection.enabled): its STUN and TURN
     *     datagrams go to IP literals past both the resolver and the proxy
     *     script, and Firefox has no policy that keeps them to a proxy
     *     (a page's STUN request to a private address reached it).
     */
    firefox: {
      prefs: {
        'network.trr.mode': 3,
        'network.trr.uri': `https://${RESOLVER_NAME}:${port}/dns-query`,
        'network.trr.bootstrapAddr': listen,
        'network.trr.excluded-domains': '',
        'network.trr.builtin-excluded-domains': '',
        'network.trr.exclude-etc-hosts': false,
        'network.trr.allow-rfc1918': false,
        'network.trr.confirmationNS': 'skip',
        ...proxyScriptPrefs(proxyAutoConfig({ names: [...hostsRules.blocked].filter(([, b]) => b.refused).map(([n]) => n), refuseTo: `${listen}:${port}`, resolver: { name: RESOLVER_NAME, port } })),
        'media.peerconnection.enabled': false
      },
      trust: [{ name: 'h3lens agent resolver', pem: ca }],
      recorded: [`firefox: private-target guard (network.trr.mode=3 through the agent's resolver; ${rules.length} refusal rules in a proxy auto-config)`]
    },
    /** A node:net lookup that refuses non-public addresses (the agent's own connections for a monitor, such as its RTT ping). */
    lookup: guardedLookup(resolver.resolve),
    /** The TCP port its resolver listens on, at `listen`. */
    port,
    explain,
    stats,

    /**
     * Put the guard's words on a run it failed: the error of a load whose
     * document (or probe target) it refused, and a note per other refused
     * request.
     * @param {Record<string, any>} result a run's result (agents/measure.js)
     * @param {{ documentUrl: string | null, since: number }} ctx documentUrl: the top frame's last document
     */
    judge (result, { documentUrl, since }) {
      if (result.status === 'error' || result.status === 'timeout') {
        const why = [documentUrl, result.target_url].map((u) => u && explain(u, since - RECENT_BLOCK_MS)).find(Boolean)
        if (why) {
          result.status = 'error'
          result.error = why
          delete result.failure_kind
        }
      }
      /** @type {{ code: string, message: string, source: string }[]} */
      const notes = []
      for (const r of result.requests_detail ?? []) {
        const why = r.failed && explain(r.url, since - RECENT_BLOCK_MS)
        if (why && why !== result.error && !notes.some((n) => n.message === why)) notes.push({ code: 'private_target_blocked', message: why, source: 'agent' })
      }
      // First: the one thing the guard may not have stopped.
      notes.unshift(...privateAltSvc(result.origins ?? []))
      if (notes.length) result.guard_notes = notes.slice(0, MAX_GUARD_NOTES)
    },

    /**
     * Check, once per kind of browser, that the guard is in force in its
     * runs. Secure DNS is a setting of Chromium's profile, and a
     * machine-wide Chromium policy (any file under /etc/chromium/policies,
     * not only one about DNS) makes Chromium ignore it and resolve names
     * with the system's resolver, past every check here but the rules'.
     * Firefox's guard is preferences of its profile, which a machine-wide
     * policy or locked preference overrides: its DNS, and the proxy script
     * that refuses private IP literals.
     * `load` has a guarded browser of that kind load the URLs it is given,
     * in order, and gives each load's error (null if it loaded). The first
     * URL's name exists nowhere; the guard's resolver must be asked for it.
     * Firefox is also given a URL at a loopback port of the guard's own,
     * which its proxy script refuses: it must not connect there (a refused
     * load may fail or wait; it must not load). Where the resolver is not
     * asked and the load says the name was looked up elsewhere (not found,
     * or found and connected to), or Firefox connected, this throws, now and for every later call for that
     * browser: the agent must not run a page outside the lab in it until
     * it is restarted without that policy. A `load` that throws (a browser
     * that would not start), or loads that ended before any lookup or
     * connection (a timeout on a loaded machine), decide nothing: the next
     * run checks again.
     * @param {(urls: string[]) => Promise<(string | null)[]>} load
     * @param {{ browser?: 'chromium' | 'firefox' }} [opts]
     * @returns {Promise<void>}
     */
    inForce (load, { browser = 'chromium' } = {}) {
      const known = inForceChecks.get(browser)
      if (known) return known
      const check = (async () => {
        const token = randomBytes(8).toString('hex')
        const name = `${token}${CHECK_SUFFIX}`
        const urls = [`http://${name}/`, ...(browser === 'firefox' ? [`http://${listen}:${checkPort}/${token}`] : [])]
        const again = (/** @type {string} */ why) => {
          inForceChecks.delete(browser)
          return new Error(`the private-target guard's check did not finish (${why}); the next run checks again`)
        }
        const notInForce = () => {
          log?.error({ browser }, 'the private-target guard is not in force: a guarded browser went past it')
          return new Error(browser === 'firefox' ? GUARD_NOT_IN_FORCE_FIREFOX : GUARD_NOT_IN_FORCE)
        }
        let errors
        checking.add(token)
        try {
          errors = await load(urls)
        } catch (err) {
          inForceChecks.delete(browser)
          throw err
        } finally {
          checking.delete(token)
        }
        const connected = directHits.delete(token)
        if (connected) throw notInForce()
        const [nameError, literalError] = errors
        if (!checksSeen.has(name)) {
          if (nameError !== null && !NETWORK_ERROR.test(nameError)) throw again(nameError)
          throw notInForce()
        }
        // Firefox's second load: refused by its proxy script, it fails or
        // waits; one that loaded went to a proxy the name's load would have
        // shown, or connected here (directHits).
        if (urls.length > 1 && literalError === null) throw notInForce()
      })()
      inForceChecks.set(browser, check)
      return check
    },

    /** The port of the check's loopback address (inForce), at `listen`. */
    checkPort,

    async close () {
      await Promise.all([server, checkServer].map((srv) => new Promise((resolve) => srv.close(() => resolve(undefined)))))
    }
  }
}

/** What a run of a page outside the lab fails with on an agent whose guard is not in force (inForce). */
export const GUARD_NOT_IN_FORCE = 'the private-target guard is not in force on this agent: its Chromium looked a name up without asking the guard\'s resolver, ' +
  'so a page could reach private addresses by name. A machine-wide Chromium policy (a file under /etc/chromium/policies/) turns off the secure DNS ' +
  'the guard sets in each profile; remove it and restart the agent. Until then this agent measures no page outside the lab'

/** The same, for an agent's Firefox (inForce). */
export const GUARD_NOT_IN_FORCE_FIREFOX = 'the private-target guard is not in force in this agent\'s Firefox: it looked a name up without asking the guard\'s resolver, ' +
  'or connected to a private address its proxy script refuses, so a page could reach private addresses. A machine-wide Firefox policy or locked preference ' +
  '(a policies.json under /etc/firefox/policies/ or the installation\'s distribution/ folder, or a locked pref in its defaults) overrides the preferences ' +
  'the guard sets in each profile; remove it and restart the agent. Until then this agent measures no page outside the lab in Firefox'

// A load that failed on the network (Chromium's net::ERR_…, Firefox's
// NS_ERROR_…, as agents/page-metrics.js navigationError words them), not on
// a timeout or a browser gone.
const NETWORK_ERROR = /^(net::ERR_|NS_ERROR_)/

/**
 * Notes for the alternative services a run's origins advertised at a
 * non-public IP literal, a localhost name or the guard resolver's own name
 * (`Alt-Svc: h3="127.0.0.1:5432"`), which a Firefox run reaches at the
 * agent's loopback.
 * Chromium's resolver rules refuse such a host; Firefox connects to an
 * Alt-Svc host that needs no lookup without asking the guard or its proxy
 * script (docs/SECURITY.md names the gap), so the run may have sent it a
 * connection attempt, and its result says so. A name is resolved through
 * the guard by both browsers, so only these are noted.
 * @param {{ origin: string, alt_svc: string | null }[]} origins the run's origins and the Alt-Svc each sent (agents/network.js)
 * @returns {{ code: string, message: string, source: string }[]}
 */
export function privateAltSvc (origins) {
  const notes = []
  for (const o of origins) {
    for (const { protocol, authority, max_age_s: maxAge } of parseAltSvc(o.alt_svc)) {
      // Same host, or expired as it arrives (ma=0): nothing to connect to.
      if (!authority || authority.startsWith(':') || maxAge === 0) continue
      let target
      try { target = targetHost(`http://${authority}`) } catch { continue }
      const why = isLocalhostName(target.host) ? 'a localhost name'
        : target.host === RESOLVER_NAME ? 'the private-target guard\'s resolver, at the agent\'s loopback'
          : target.address ? literalReason(target.address) : null
      if (!why) continue
      notes.push({
        code: 'private_target_alt_svc',
        message: `${o.origin} advertised ${protocol} at ${authority}, a non-public address (${why}): a Chromium run refuses it; ` +
          'Firefox connects to an Alt-Svc host that needs no lookup without asking the private-target guard, so a Firefox run may have sent it a connection attempt',
        source: 'agent'
      })
    }
  }
  return notes
}

/**
 * Resolver rules that refuse non-public IP literals, in Chromium's glob
 * (base::MatchPattern: "*" any run of characters, "?" zero or one), matched
 * against the host as the URL parser wrote it (IPv4 dotted decimal, IPv6
 * compressed, lower case, no brackets). IPv4 ranges come from
 * lib/measurement/addresses.js, each octet the prefix does not fix as
 * "???"; a DNS name caught by one would start with such an octet and have
 * four labels of at most three characters ("10.ab.cd.ef"). IPv6 literals
 * (only they contain ":") follow addresses.js's rule: outside 2000::/3
 * all, inside it 6to4, Teredo and the documentation, benchmarking and
 * ORCHID ranges. test/target-guard-rules.test.js checks them against
 * literalReason.
 * @returns {string[]}
 */
export function literalPatterns () {
  const v4 = IPV4_RANGES.flatMap(([prefix, bits]) => {
    const octets = prefix.split('.')
    const fixed = octets.slice(0, Math.floor(bits / 8))
    const free = (/** @type {number} */ n) => new Array(n).fill('???')
    if (bits % 8 === 0) return [[...fixed, ...free(4 - fixed.length)].join('.')]
    const first = Number(octets[fixed.length])
    return Array.from({ length: 2 ** (8 - bits % 8) }, (_, i) => [...fixed, String(first + i), ...free(3 - fixed.length)].join('.'))
  })
  const hex = (/** @type {number} */ n) => n.toString(16)
  const v6 = [
    '::*', // ::, ::1, IPv4-mapped and -compatible
    '???:*', // a first group below 0x1000
    ...[1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15].map((d) => `${hex(d)}???:*`), // four digits outside 2000::/3
    '2002:*', // 6to4
    '2001::*', '2001:0:*', // Teredo
    '2001:db8:*', // documentation
    '2001:2::*', '2001:2:0:*', // benchmarking
    ...Array.from({ length: 32 }, (_, i) => `2001:${hex(0x10 + i)}:*`), // ORCHID, ORCHIDv2
    '3fff:???:*' // documentation (3fff::/20)
  ]
  return [...v4, ...v6]
}

/**
 * A proxy auto-config script (for Firefox) that refuses what Chromium's
 * resolver rules refuse without DNS: localhost and its subdomains, the
 * /etc/hosts names given, and non-public IP literals by literalPatterns'
 * globs, matched as Chromium matches them ("*" any run, "?" zero or one
 * character). A refused request is sent to `refuseTo`, which is no proxy;
 * everything else goes direct.
 * The resolver's own name is refused on every port but its own.
 * @param {{ names: string[], refuseTo: string, resolver?: { name: string, port: number } }} opts
 */
export function proxyAutoConfig ({ names, refuseTo, resolver }) {
  return `var PATTERNS = ${JSON.stringify(literalPatterns())};
var NAMES = ${JSON.stringify(names)};
var RESOLVER = ${JSON.stringify(resolver ? { name: resolver.name, port: String(resolver.port) } : null)};
${PAC_PORT_OF}
function globMatch (p, s) {
  if (!p.length) return !s.length;
  var c = p.charAt(0);
  if (c === '*') return globMatch(p.slice(1), s) || (s.length > 0 && globMatch(p, s.slice(1)));
  if (c === '?') return globMatch(p.slice(1), s) || (s.length > 0 && globMatch(p.slice(1), s.slice(1)));
  return s.length > 0 && s.charAt(0) === c && globMatch(p.slice(1), s.slice(1));
}
function FindProxyForURL (url, host) {
  var h = host.toLowerCase().replace(/^\\[/, '').replace(/\\]$/, '').replace(/\\.$/, '');
  var refused = h === 'localhost' || /\\.localhost$/.test(h) || NAMES.indexOf(h) >= 0 ||
    (RESOLVER !== null && h === RESOLVER.name && portOf(url) !== RESOLVER.port);
  for (var i = 0; !refused && i < PATTERNS.length; i++) refused = globMatch(PATTERNS[i], h);
  return refused ? 'PROXY ${refuseTo}' : 'DIRECT';
}
`
}

/** Chromium's rules for multicast DNS names. @returns {string[]} */
function mdnsRules () {
  return [`MAP *${MDNS_SUFFIX} ~NOTFOUND`, `MAP *${MDNS_SUFFIX}. ~NOTFOUND`]
}

/** @param {string} host a URL's host as targetHost gives it (lower case, no trailing dot) */
function isMdnsName (host) {
  return host.endsWith(MDNS_SUFFIX)
}

/**
 * A URL's port, its scheme's default when it names none; null when unreadable.
 * @param {string} url
 */
function portOf (url) {
  try {
    const u = new URL(url)
    return u.port ? Number(u.port) : ({ 'http:': 80, 'ws:': 80, 'https:': 443, 'wss:': 443 })[u.protocol] ?? null
  } catch {
    return null
  }
}

/** @returns {string[]} */
function literalRules () {
  return literalPatterns().map((p) => `MAP ${p} ~NOTFOUND`)
}

/**
 * Resolver rules for the names Chromium answers without asking DNS.
 * @param {Resolver} resolver
 * @returns {Promise<{ rules: string[], blocked: Map<string, { address: string, reason: string, refused: boolean }> }>}
 */
async function hostsFileRules (resolver) {
  const rules = ['localhost', '*.localhost'].flatMap((n) => [`MAP ${n} ~NOTFOUND`, `MAP ${n}. ~NOTFOUND`])
  /** @type {Map<string, { address: string, reason: string, refused: boolean }>} */
  const blocked = new Map()
  for (const [name, addresses] of await resolver.hostsEntries()) {
    const address = addresses.find((a) => nonPublicReason(a))
    if (!address || isLocalhostName(name)) continue
    const refused = blocked.size < MAX_HOSTS_RULES
    blocked.set(name, { address, reason: /** @type {string} */ (nonPublicReason(address)), refused })
    if (refused) rules.push(`MAP ${name} ~NOTFOUND`, `MAP ${name}. ~NOTFOUND`)
  }
  return { rules, blocked }
}
