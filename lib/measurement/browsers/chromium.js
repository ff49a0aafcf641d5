// Chromium command-line flags, each set defined once. The mode flags are what
// makes a run an HTTP/3 or an HTTP/2 run; the lab flags are only ever added
// for lab origins, never for real sites.
import { LAB_HOSTNAME, LAB_HOSTNAMES } from '../../runtime/lab-host.js'
import { forcedOrigins, MODES } from '../modes.js'

/**
 * Flags every measurement browser gets. Debian's Chromium otherwise reaches
 * out to the network on start (component updates, sync, first-run pages),
 * which both pollutes timings and fails on hosts without outside access.
 * Even with these, a net log (--log-net-log) of Chromium 156 still shows a
 * network-time query to clients2.google.com, hence the disabled feature; it
 * also shows requests these flags cannot stop (accounts.google.com
 * ListAccounts, an on-demand component check at update.googleapis.com),
 * which is why lab runs also fail every other hostname at the resolver.
 *
 * Every run has a context of its own, and headless Chromium gives each new
 * context two renderers besides the page's: a spare one for the next
 * navigation in that context, which never comes (SpareRendererForSitePerProcess),
 * and one for the window's omnibox popup, a WebUI nobody sees in headless
 * (WebUIOmniboxPopup and its variants). Without them a run costs one
 * renderer, and Chromium's CPU per run on the lab's 15 KB page is
 * 0.20-0.21 s against 0.41-0.45 s with them, nearly all of the difference
 * the popup's (node bench/agent-throughput.js; docs/BENCHMARKS.md, "Agent
 * throughput"). Chromium reads one --disable-features list, so they all go
 * into one switch.
 * @returns {string[]}
 */
export function baseFlags () {
  return [
    '--headless=new',
    '--no-sandbox',
    '--disable-gpu',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    // No proxy from the agent's environment (http_proxy, https_proxy): it
    // would carry every request, QUIC included, and is asked for names the
    // private-target guard then never sees.
    '--no-proxy-server',
    '--disable-features=NetworkTimeServiceQuerying,SpareRendererForSitePerProcess,WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup'
  ]
}

/**
 * Flags that force the protocol for a page: HTTP/3 straight away (no Alt-Svc
 * discovery round) for the page's origin, or QUIC off altogether; in auto
 * mode, none: QUIC on as Chromium ships it, used once the origin announces
 * it. In h3 mode `forceOrigins` adds more origins to force (a monitor's
 * H3-capable origins); Chromium reads one comma-separated list, and a
 * repeated switch would only keep its last value.
 *
 * `lab`: the page is a lab origin. Chromium will not use QUIC it learnt
 * from Alt-Svc with a certificate that no public root issued (the lab's
 * own authority issued it, lab/cert.js): the handshake fails with CERTIFICATE_VERIFY_FAILED and the
 * origin's H3 is marked broken, even with the certificate pinned. Naming
 * the lab hosts on a port nothing listens on (1) in the force list lifts
 * that check for those hosts while forcing nothing: the page's own port is
 * still learnt from Alt-Svc and raced against TCP, as for a real site
 * (the auto arm's lab test shows H2 on the first visit and H3 once learnt).
 * @param {import('../modes.js').Mode} mode
 * @param {string | URL} url
 * @param {{ forceOrigins?: string[], lab?: boolean }} [opts]
 * @returns {string[]}
 */
export function modeFlags (mode, url, { forceOrigins = [], lab = false } = {}) {
  if (mode === 'h3') return ['--enable-quic', `--origin-to-force-quic-on=${forcedOrigins(mode, url, { forceOrigins }).join(',')}`]
  if (mode === 'h2') return ['--disable-quic']
  if (mode === 'auto') return ['--enable-quic', ...(lab ? [`--origin-to-force-quic-on=${LAB_HOSTNAMES.map((h) => `${h}:1`).join(',')}`] : [])]
  throw new TypeError(`unknown mode ${JSON.stringify(mode)}; expected one of ${MODES.join(', ')}`)
}

/**
 * WebRTC without UDP unless through a proxy: its STUN and TURN datagrams go
 * to IP literals past the resolver rules, so a guarded or a lab browser
 * sends none (its TCP goes through the rules).
 */
export const WEBRTC_POLICY = '--webrtc-ip-handling-policy=disable_non_proxied_udp'

/**
 * Flags that make Chromium write a net log of everything it does to `file`
 * (complete once the browser exits). Default capture mode: events and their
 * parameters, no cookies, credentials or payload bytes.
 * @param {string} file
 * @returns {string[]}
 */
export function netlogFlags (file) {
  return [`--log-net-log=${file}`, '--net-log-capture-mode=Default']
}

/**
 * Flags that let Chromium reach a lab origin: trust its certificate by
 * public-key hash, and resolve its host names without DNS
 * (the lab host name and, for it, the lab's second origin), on the lab's
 * `port` only when it is given: in local mode the lab's address is this
 * machine's loopback, where the API, the database and whatever else runs
 * there listen on other ports, and a lab page (or a journey's script) must
 * reach none of them. Chromium matches a rule's pattern against the host,
 * then against host:port, so `MAP lab.h3lens.test:8443 …` maps that port and
 * no other. Every other host and port fails to resolve (the first matching
 * rule wins; the wildcard also catches IP literals), so a lab browser sends
 * nothing beyond the lab, not even the DNS queries of Chromium's own
 * background requests. WebRTC sends its STUN and TURN datagrams to IP
 * literals without asking the resolver, so, as in a guarded run, it may
 * use no UDP except through a proxy (WEBRTC_POLICY): a lab page's script
 * reaches no UDP service on the lab's address (this machine's loopback, in
 * local mode).
 * `allow` names host:port pairs that resolve as they are (a WebPageTest
 * agent's own start page at 127.0.0.1:8888, lib/measurement/wpt/job.js);
 * `exclude` names hosts the rules leave alone on every port (a test's own
 * server).
 * @param {{ spki: string, hostname: string, address: string, port?: number | null, allow?: string[], exclude?: string[] }} lab
 * @returns {string[]}
 */
export function labBrowserFlags ({ spki, hostname, address, port = null, allow = [], exclude = [] }) {
  const names = hostname === LAB_HOSTNAME ? LAB_HOSTNAMES : [hostname]
  const rules = [
    ...names.map((h) => `MAP ${port === null ? h : `${h}:${port}`} ${address}`),
    ...allow.map((hp) => `MAP ${hp} ${hp.slice(0, hp.lastIndexOf(':'))}`),
    'MAP * ~NOTFOUND',
    ...exclude.map((h) => `EXCLUDE ${h}`)
  ]
  return [
    `--ignore-certificate-errors-spki-list=${spki}`,
    `--host-resolver-rules=${rules.join(', ')}`,
    WEBRTC_POLICY
  ]
}
