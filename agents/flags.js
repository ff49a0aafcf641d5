// Chromium command-line flags, each set defined once. The mode flags are what
// makes a run an HTTP/3 or an HTTP/2 run; the lab flags are only ever added
// for lab origins, never for real sites.

/**
 * Flags every measurement browser gets. Debian's Chromium otherwise reaches
 * out to the network on start (component updates, sync, first-run pages),
 * which both pollutes timings and fails on hosts without outside access.
 * Even with these, a net log (--log-net-log) of Chromium 156 still shows a
 * network-time query to clients2.google.com, hence the disabled feature; it
 * also shows requests these flags cannot stop (accounts.google.com
 * ListAccounts, an on-demand component check at update.googleapis.com),
 * which is why lab runs also fail every other hostname at the resolver.
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
    '--disable-features=NetworkTimeServiceQuerying'
  ]
}

/** @typedef {'h3' | 'h2'} Mode */
export const MODES = Object.freeze(/** @type {Mode[]} */ (['h3', 'h2']))

/**
 * Flags that force the protocol for a page: HTTP/3 straight away (no Alt-Svc
 * discovery round) for the page's origin, or QUIC off altogether.
 * @param {Mode} mode
 * @param {string | URL} url
 * @returns {string[]}
 */
export function modeFlags (mode, url) {
  if (mode === 'h3') {
    const { hostname, port, protocol } = new URL(url)
    const effectivePort = port || (protocol === 'http:' ? '80' : '443')
    return ['--enable-quic', `--origin-to-force-quic-on=${hostname}:${effectivePort}`]
  }
  if (mode === 'h2') return ['--disable-quic']
  throw new TypeError(`unknown mode ${JSON.stringify(mode)}; expected one of ${MODES.join(', ')}`)
}

/**
 * Flags that let Chromium reach a lab origin: trust its self-signed
 * certificate by public-key hash, and resolve its hostname without DNS.
 * Every other host fails to resolve (the first matching rule wins; the
 * wildcard also catches IP literals), so a lab browser sends nothing beyond
 * the lab, not even the DNS queries of Chromium's own background requests.
 * @param {{ spki: string, hostname: string, address: string }} lab
 * @returns {string[]}
 */
export function labBrowserFlags ({ spki, hostname, address }) {
  return [
    `--ignore-certificate-errors-spki-list=${spki}`,
    `--host-resolver-rules=MAP ${hostname} ${address}, MAP * ~NOTFOUND`
  ]
}
