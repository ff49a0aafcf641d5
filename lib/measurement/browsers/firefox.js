// Firefox preferences, each set defined once: what every measurement
// profile gets, what makes a run an HTTP/3 or an HTTP/2 run, and what only
// lab origins get (never real sites). Firefox takes preferences, not
// switches: they go into the run's fresh profile (user.js,
// agents/browsers/firefox.js), and a result records them as name=value.
import { forcedOrigins, MODES } from '../modes.js'
import { LAB_HOSTNAMES } from '../../runtime/lab-host.js'

/**
 * @typedef {Record<string, string | number | boolean>} Prefs
 */

/**
 * The port a lab run's stray connections go to: nothing listens on the
 * discard port, so a service these preferences failed to switch off is
 * refused at once, inside the lab.
 */
const NOWHERE = 'https://127.0.0.1:9/'

/**
 * Preferences every measurement profile gets: no telemetry, updates,
 * studies, safe-browsing lists, remote settings, push, captive-portal or
 * connectivity checks, OCSP fetches or start pages, and no speculative
 * connections, DNS prefetch or predictor, so a run's timings are the page's
 * own (the counterpart of Chromium's network prediction being off: the
 * navigation's connection is in its own timings).
 * @returns {Prefs}
 */
export function basePrefs () {
  return {
    // Start: a blank page, no first-run, import or default-browser prompts.
    'browser.startup.page': 0,
    'browser.startup.homepage': 'about:blank',
    'browser.startup.homepage_override.mstone': 'ignore',
    'startup.homepage_welcome_url': 'about:blank',
    'startup.homepage_welcome_url.additional': '',
    'browser.shell.checkDefaultBrowser': false,
    'browser.sessionstore.resume_from_crash': false,
    'toolkit.startup.max_resumed_crashes': -1,
    'browser.newtabpage.enabled': false,
    'browser.newtabpage.activity-stream.feeds.system.topstories': false,
    'browser.newtabpage.activity-stream.feeds.topsites': false,
    'browser.newtabpage.activity-stream.feeds.snippets': false,
    'browser.newtabpage.activity-stream.telemetry': false,
    'browser.pagethumbnails.capturing_disabled': true,
    'browser.uitour.enabled': false,
    'browser.translations.automaticallyPopup': false,
    // Telemetry, studies and reporting.
    'toolkit.telemetry.enabled': false,
    'toolkit.telemetry.unified': false,
    'toolkit.telemetry.archive.enabled': false,
    'toolkit.telemetry.server': NOWHERE,
    'datareporting.healthreport.uploadEnabled': false,
    'datareporting.policy.dataSubmissionEnabled': false,
    'datareporting.policy.dataSubmissionPolicyBypassNotification': true,
    'app.normandy.enabled': false,
    'app.normandy.api_url': '',
    'app.shield.optoutstudies.enabled': false,
    'browser.ping-centre.telemetry': false,
    'browser.crashReports.unsubmittedCheck.autoSubmit2': false,
    // Updates of the browser, its add-ons, plugins and search engines.
    'app.update.disabledForTesting': true,
    'app.update.auto': false,
    'extensions.update.enabled': false,
    'extensions.getAddons.cache.enabled': false,
    'extensions.systemAddon.update.enabled': false,
    'extensions.blocklist.enabled': false,
    'media.gmp-manager.updateEnabled': false,
    'browser.search.update': false,
    'browser.region.update.enabled': false,
    'browser.region.network.url': '',
    'general.useragent.updates.enabled': false,
    // Lists and settings fetched in the background.
    'services.settings.server': NOWHERE,
    'browser.safebrowsing.malware.enabled': false,
    'browser.safebrowsing.phishing.enabled': false,
    'browser.safebrowsing.downloads.enabled': false,
    'browser.safebrowsing.blockedURIs.enabled': false,
    'browser.safebrowsing.update.enabled': false,
    'privacy.trackingprotection.enabled': false,
    'security.remote_settings.crlite_filters.enabled': false,
    'security.remote_settings.intermediates.enabled': false,
    'security.OCSP.enabled': 0,
    'security.certerrors.mitm.priming.enabled': false,
    'dom.push.enabled': false,
    'dom.push.connection.enabled': false,
    'geo.provider.network.url': '',
    'network.captive-portal-service.enabled': false,
    'network.connectivity-service.enabled': false,
    'network.sntp.pools': '',
    'doh-rollout.disable-heuristics': true,
    // Nothing ahead of the page's own requests.
    'network.predictor.enabled': false,
    'network.predictor.enable-prefetch': false,
    'network.prefetch-next': false,
    'network.dns.disablePrefetch': true,
    'network.http.speculative-parallel-limit': 0,
    'browser.urlbar.speculativeConnect.enabled': false,
    'browser.places.speculativeConnect.enabled': false,
    // One content process for every page: the driver's events come from
    // the page's own, and two cores are shared with the other runs.
    'fission.webContentIsolationStrategy': 0,
    'dom.ipc.processCount': 1,
    'browser.tabs.remote.autostart': true,
    // No service worker: one answers a page's requests itself, from its own
    // cache or a fetch of its own, and the page no longer says what
    // protocol they came over (an empty nextHopProtocol). Chromium's runs
    // bypass theirs (agents/network.js). Firefox has no bypass, so none
    // registers: a page's navigator.serviceWorker is undefined.
    'dom.serviceWorkers.enabled': false,
    // Windows a page opens while it loads are blocked, as in a user's
    // Firefox (its default; Chromium's runs block them too).
    'dom.disable_open_during_load': true,
    // A JSON document shows as text, as in Chromium: Firefox's JSON viewer
    // is an app of its own, whose scripts, load and paints would be taken
    // for the document's (a PDF is refused for that reason in either
    // browser: agents/network.js).
    'devtools.jsonview.enabled': false,
    // A page that prints (window.print(), while it loads or once loaded)
    // held Firefox's page in its print preview until the run gave up
    // reading it; a user cancels the dialog, the page goes on. Chromium's
    // runs print nothing either.
    'print.enabled': false,
    // No dialog may stop a load.
    'dom.max_script_run_time': 0,
    'dom.max_chrome_script_run_time': 0,
    'dom.ipc.reportProcessHangs': false,
    'hangmonitor.timeout': 0
  }
}

/**
 * Preferences that make a run an arm: in h3, HTTP/3 on and every forced
 * origin (the page's, then the others: modes.js forcedOrigins) mapped to
 * HTTP/3 on its own port, so the first request already goes over QUIC,
 * as Chromium's --origin-to-force-quic-on does; in h2, HTTP/3 off; in
 * auto, Firefox's defaults (HTTP/3 on, learnt from Alt-Svc or an HTTPS
 * record). Unlike Chromium's switch, the mapping is an alternative
 * service, not a command: where QUIC fails Firefox may fall back to TCP,
 * so, as for every arm, the protocol a run used is read, never assumed.
 *
 * The h3 arm also stops Firefox's race against TCP: by default a request
 * whose QUIC connection is not up within network.http.http3.backup_timer_delay
 * (100 ms) opens a TCP connection beside it and takes whichever is ready
 * first. A forced arm on a slow path, a lossy one or a busy machine then
 * loads over h2 and fails as a protocol mismatch where Chromium, which does
 * not race a forced origin, measures H3 (a CI run on a loaded machine
 * did; test/firefox-h3-forced.test.js). 0 sets no timer. A QUIC
 * connection that fails still falls back, and reads as "H3 not supported"
 * where the origin advertises no h3 (agents/measure.js judgeFirefoxH3).
 * @param {import('../modes.js').Mode} mode
 * @param {string | URL} url
 * @param {{ forceOrigins?: string[] }} [opts]
 * @returns {Prefs}
 */
export function modePrefs (mode, url, { forceOrigins = [] } = {}) {
  if (mode === 'h3') {
    return {
      'network.http.http3.enable': true,
      'network.http.http3.backup_timer_delay': 0,
      'network.http.http3.alt-svc-mapping-for-testing': forcedOrigins(mode, url, { forceOrigins }).map(altSvcMapping).join(',')
    }
  }
  if (mode === 'h2') return { 'network.http.http3.enable': false }
  if (mode === 'auto') return {}
  throw new TypeError(`unknown mode ${JSON.stringify(mode)}; expected one of ${MODES.join(', ')}`)
}

/**
 * One entry of network.http.http3.alt-svc-mapping-for-testing:
 * `host;h3=":port"`, the origin's HTTP/3 on its own port.
 * @param {string} origin host:port (modes.js hostPort)
 */
function altSvcMapping (origin) {
  const i = origin.lastIndexOf(':')
  return `${origin.slice(0, i)};h3=":${origin.slice(i + 1)}"`
}

/**
 * Preferences that let Firefox reach a lab origin, never used for a real
 * site: every host name resolves to the lab origin's address
 * (network.dns.forceResolve), no DNS over HTTPS, and HTTP/3 kept on
 * although the lab's certificate authority is not a built-in root: without
 * network.http.http3.disable_when_third_party_roots_found false, Firefox
 * closes HTTP/3 connections whose chain ends in a root the user added. The
 * authority itself is trusted in the run's profile (agents/browsers/firefox.js,
 * with NSS's certutil).
 *
 * forceResolve sends every name to the lab's address. In a lab namespace
 * (`inNamespace`) that is all the browser can reach: the namespace's one
 * link leads to the origin's namespace and nowhere else. In local mode the
 * address is this machine's loopback, where the API, the database and
 * whatever else runs there listen. There a proxy auto-config script lets
 * only the lab's host names on the lab's `port` (any port when it is not
 * known) go direct, HTTP/3 included, and sends everything else, IP
 * literals and loopback included, to a proxy that is no proxy (NOWHERE's
 * port, where nothing listens), with no failover to a direct connection: a
 * lab page or a probe reaches the lab origin and nothing else, as in
 * Chromium (lib/measurement/browsers/chromium.js labBrowserFlags). The
 * script is not used in a namespace, where it is not needed: there, with
 * its refusals, Firefox's H3 arm loaded the document over h2 (3 runs of 3
 * at lab-na, 30 ms; with a script that refuses nothing, over h3), while on
 * loopback it loads over h3.
 * @param {{ address: string, port?: number | null, inNamespace?: boolean }} lab
 * @returns {Prefs}
 */
export function labPrefs ({ address, port = null, inNamespace = false }) {
  return {
    'network.dns.forceResolve': address,
    'network.trr.mode': 5,
    'network.http.http3.disable_when_third_party_roots_found': false,
    // WebRTC's STUN and TURN datagrams go to IP literals past the proxy
    // script, as in a guarded run (agents/target-guard.js).
    'media.peerconnection.enabled': false,
    ...(inNamespace ? {} : proxyScriptPrefs(labProxyAutoConfig({ port })))
  }
}

/**
 * Preferences that send every request through a proxy auto-config
 * `script`, loopback included (Firefox otherwise never asks it about
 * localhost and 127.0.0.1), and never straight past a proxy the script
 * names that does not answer: how a lab run (labPrefs) and a guarded run
 * (agents/target-guard.js) refuse what no lookup catches.
 * @param {string} script
 * @returns {Prefs}
 */
export function proxyScriptPrefs (script) {
  return {
    'network.proxy.type': 2,
    'network.proxy.autoconfig_url': `data:application/x-ns-proxy-autoconfig;base64,${Buffer.from(script).toString('base64')}`,
    'network.proxy.failover_direct': false,
    'network.proxy.allow_hijacking_localhost': true
  }
}

/**
 * Proxy auto-config source of `portOf(url)`: the port a URL names, or its
 * scheme's default, as text. Firefox gives a script an https URL as
 * scheme://host[:port]/ only. For the lab's script and the private-target
 * guard's (agents/target-guard.js).
 */
export const PAC_PORT_OF = `function portOf (url) {
  var authority = url.slice(url.indexOf('://') + 3).split('/')[0];
  authority = authority.slice(authority.lastIndexOf('@') + 1);
  var colon = authority.lastIndexOf(':');
  return colon > authority.lastIndexOf(']') ? authority.slice(colon + 1) : (/^(https|wss):/i.test(url) ? '443' : '80');
}`

/**
 * The proxy auto-config script of a lab run (labPrefs): the lab's host
 * names on `port` go direct, everything else to NOWHERE's port. Firefox
 * gives the script an https URL as scheme://host[:port]/ only.
 * @param {{ port: number | null }} lab
 */
export function labProxyAutoConfig ({ port }) {
  const nowhere = new URL(NOWHERE)
  return `var NAMES = ${JSON.stringify(LAB_HOSTNAMES)};
var PORT = ${JSON.stringify(port === null ? null : String(port))};
${PAC_PORT_OF}
function FindProxyForURL (url, host) {
  var h = host.toLowerCase().replace(/\\.$/, '');
  return NAMES.indexOf(h) >= 0 && (PORT === null || portOf(url) === PORT) ? 'DIRECT' : 'PROXY ${nowhere.hostname}:${nowhere.port}';
}
`
}

/**
 * How a result records a run's preferences: `name=value`, in the order
 * given, beside Chromium's switches in the result's `flags`.
 * @param {Prefs} prefs
 * @returns {string[]}
 */
export function prefsAsFlags (prefs) {
  return Object.entries(prefs).map(([k, v]) => `${k}=${typeof v === 'string' ? JSON.stringify(v) : v}`)
}
