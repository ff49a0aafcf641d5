// What a real-user beacon is: the fields the snippet (./page.js) sends, each
// defined once with its unit and its bounds; how the server reads them
// (protocol, connection, visit); and what no real page view can send.
// POST /rum/v1/beacon is public, so everything here is checked before a
// byte is stored: an unknown field, a value out of range or timings that
// cannot be true are refused, and the fields the server derives (country,
// browser) cannot be sent at all.

/** How a page view began, as web-vitals names it (bfcache restores are views of their own). */
export const NAVIGATION_TYPES = Object.freeze(['navigate', 'reload', 'back-forward', 'back-forward-cache', 'prerender', 'restore'])
/** The views whose TTFB and LCP measured a network navigation, and so can compare protocols. */
export const NETWORK_NAVIGATIONS = Object.freeze(['navigate', 'reload', 'back-forward'])
/** Protocols as stored; `unknown` when the browser did not say (a cached document, an old browser). */
export const PROTOCOLS = Object.freeze(['h3', 'h2', 'h1', 'unknown'])
/** The strata of the observational comparison (lib/analysis/rum.js). */
export const CONNECTIONS = Object.freeze(['new', 'reused'])
export const VISITS = Object.freeze(['first', 'cached'])

// A page view's timings above 10 minutes are not a page load.
export const MAX_MS = 600_000
// A beacon is accepted until a day after its page view began (a tab hidden
// hours later still sends its one beacon), and at most 10 minutes ahead of
// the server's clock (clients' clocks drift).
export const MAX_AGE_MS = 24 * 3600_000
export const MAX_AHEAD_MS = 10 * 60_000
// Rounding of the phases (0.1 ms each) is the only slack in the checks.
const SLACK_MS = 1

const ms = (/** @type {string} */ description) => ({ type: 'number', minimum: 0, maximum: MAX_MS, description: `${description}, ms` })
const count = (/** @type {string} */ description) => ({ type: 'integer', minimum: 0, maximum: 100_000, description })
// An element's tag name, lower case: HTML's, or a custom element's (which
// may hold dots and underscores); a longer or stranger one is left out by
// the snippet.
export const TAG_PATTERN = '^[a-z][a-z0-9._-]{0,31}$'
const tag = (/** @type {string} */ description) => ({ type: 'string', pattern: TAG_PATTERN, description: `${description} (a tag name)` })
/** nextHopProtocol as stored, lower case: h3, h2, http/1.1, http/2+quic/46, or empty. */
export const PROTOCOL_PATTERN = '^[a-z0-9./+-]{0,16}$'
/** The bounds the snippet keeps to (./page.js), so no value of a real page view gets its beacon refused. */
export const SNIPPET_BOUNDS = Object.freeze({ maxMs: MAX_MS, tag: TAG_PATTERN, protocol: PROTOCOL_PATTERN })

/** Timing columns in the order they are stored (all milliseconds but cls). */
export const TIMING_FIELDS = Object.freeze(['dns_ms', 'connect_ms', 'tls_ms', 'waiting_ms', 'ttfb_ms', 'fcp_ms', 'lcp_ms', 'inp_ms', 'activation_ms',
  'lcp_resource_ms', 'lcp_render_delay_ms', 'inp_input_delay_ms', 'inp_processing_ms', 'inp_presentation_ms'])

/** The body of POST /rum/v1/beacon (JSON, sent as text/plain by navigator.sendBeacon). */
export const BEACON_SCHEMA = Object.freeze({
  type: 'object',
  additionalProperties: false,
  required: ['key', 'v', 'id', 't0', 'nav'],
  properties: {
    key: { type: 'string', pattern: '^h3s_[A-Za-z0-9_-]{20,40}$', description: 'The site key of the install tag' },
    v: { type: 'integer', enum: [1], description: 'Beacon format version' },
    id: { type: 'string', pattern: '^[0-9a-f]{32}$', description: 'Random id of the page view (128 bits); with t0, what makes a beacon unique' },
    t0: { type: 'number', minimum: 0, maximum: 1e14, description: 'When the page view began (performance.timeOrigin, or the restore), epoch ms' },
    sample: { type: 'number', minimum: 0, maximum: 1, description: 'The sample rate the page view was drawn with (above 0: a view drawn at 0 sends nothing)' },
    nav: { type: 'string', enum: NAVIGATION_TYPES, description: 'How the view began: a prerendered page, a back/forward-cache restore and a discarded tab\'s restore are recognised' },
    protocol: { type: 'string', maxLength: 16, pattern: PROTOCOL_PATTERN, description: 'nextHopProtocol of the navigation (h3, h2, http/1.1, http/2+quic/46, or empty)' },
    dns_ms: ms('DNS lookup of the navigation (0: none, a reused connection or a cached answer)'),
    connect_ms: ms('Connection set-up, TLS or QUIC handshake included (0: a reused connection)'),
    tls_ms: ms('TLS part of the connection set-up'),
    waiting_ms: ms('Request sent to first byte of the response'),
    ttfb_ms: ms('web-vitals TTFB: navigation (or prerender activation) to first byte'),
    fcp_ms: ms('web-vitals FCP'),
    lcp_ms: ms('web-vitals LCP'),
    inp_ms: ms('web-vitals INP'),
    cls: { type: 'number', minimum: 0, maximum: 100, description: 'web-vitals CLS (unitless)' },
    transfer_bytes: { type: 'integer', minimum: 0, maximum: 2_000_000_000, description: 'transferSize of the document (0: from the cache)' },
    doc_cached: { type: 'boolean', description: 'The document came from the browser\'s cache' },
    delivery: { type: 'string', maxLength: 32, pattern: '^[a-z-]*$', description: 'deliveryType of the navigation (cache, navigational-prefetch, or empty)' },
    activation_ms: ms('activationStart: when a prerendered page was shown'),
    resources: count('Same-origin resources loaded by the time the beacon was sent'),
    cached_resources: count('Of them, served from the browser\'s cache'),
    lcp_element: tag('The LCP element'),
    lcp_resource_ms: ms('Load time of the LCP element\'s resource'),
    lcp_render_delay_ms: ms('LCP after its resource (or the first byte) arrived'),
    inp_target: tag('The element of the INP interaction'),
    inp_input_delay_ms: ms('INP input delay'),
    inp_processing_ms: ms('INP processing time'),
    inp_presentation_ms: ms('INP presentation delay'),
    cls_target: tag('The element of the largest layout shift')
  }
})

/** Fields stored as sent (the rest are read by storedBeacon). */
export const SENT_FIELDS = Object.freeze([...TIMING_FIELDS, 'cls', 'transfer_bytes', 'doc_cached', 'delivery', 'resources', 'cached_resources',
  'lcp_element', 'inp_target', 'cls_target'])

/**
 * The stored protocol of a nextHopProtocol value.
 * @param {string | undefined} value
 * @returns {typeof PROTOCOLS[number]}
 */
export function protocolOf (value) {
  if (!value) return 'unknown'
  if (value === 'h3' || value.startsWith('h3-')) return 'h3'
  if (value === 'h2') return 'h2'
  if (value.startsWith('http/1') || value === 'http/0.9') return 'h1'
  return 'unknown'
}

/**
 * New or reused connection, as the navigation's own timing shows it: one
 * that looked up no name and set up no connection found one ready. That is
 * a reused connection, or one the browser set up ahead of the request
 * (Chromium preconnects to a page's origin as its navigation starts, and
 * when that wins the race the handshake is not in the page's TTFB). Either
 * way the set-up was not part of this page view's TTFB, which is what the
 * stratum is for. Null when the view made no request (a cached document, a
 * restore) or did not say.
 * @param {Record<string, any>} b
 * @returns {'new' | 'reused' | null}
 */
export function connectionOf (b) {
  if (b.doc_cached || !NETWORK_NAVIGATIONS.includes(b.nav) || b.connect_ms === undefined || b.dns_ms === undefined) return null
  return b.connect_ms === 0 && b.dns_ms === 0 ? 'reused' : 'new'
}

/**
 * First visit or one with something in the browser's cache (the document or
 * a same-origin resource): the only sign of a returning visitor a snippet
 * without cookies or storage has.
 * @param {Record<string, any>} b
 * @returns {'first' | 'cached' | null}
 */
export function visitOf (b) {
  if (b.doc_cached || b.cached_resources > 0) return 'cached'
  return b.resources === undefined ? null : 'first'
}

/**
 * What no real page view sends; each a 422 naming the field.
 * @param {Record<string, any>} b a beacon that passed BEACON_SCHEMA
 * @param {number} now server time, epoch ms
 * @returns {{ field: string, message: string } | null}
 */
export function implausibility (b, now) {
  if (b.t0 < now - MAX_AGE_MS) return { field: 't0', message: 't0: the page view began more than 24 h ago; a beacon is accepted for a day' }
  if (b.t0 > now + MAX_AHEAD_MS) return { field: 't0', message: 't0: the page view begins in the future' }
  if (b.tls_ms > (b.connect_ms ?? 0) + SLACK_MS) return { field: 'tls_ms', message: 'tls_ms: the TLS part is longer than the whole connection set-up (connect_ms)' }
  if (b.cached_resources > (b.resources ?? 0)) return { field: 'cached_resources', message: 'cached_resources: more than resources' }
  // From navigation start, the phases follow each other before the first byte.
  if (b.ttfb_ms !== undefined && NETWORK_NAVIGATIONS.includes(b.nav)) {
    const phases = (b.dns_ms ?? 0) + (b.connect_ms ?? 0) + (b.waiting_ms ?? 0)
    if (phases > b.ttfb_ms + SLACK_MS) return { field: 'ttfb_ms', message: `ttfb_ms: ${b.ttfb_ms} ms is shorter than its own phases (dns + connect + waiting = ${Math.round(phases * 10) / 10} ms)` }
    if (b.fcp_ms !== undefined && b.fcp_ms + SLACK_MS < b.ttfb_ms) return { field: 'fcp_ms', message: 'fcp_ms: the first paint comes before the first byte' }
    // The largest paint is of something the document brought; it may come
    // before the first paint (an image without Timing-Allow-Origin reports
    // its load time), never before the document's first byte.
    if (b.lcp_ms !== undefined && b.lcp_ms + SLACK_MS < b.ttfb_ms) return { field: 'lcp_ms', message: 'lcp_ms: the largest paint comes before the first byte' }
  }
  return null
}

/**
 * The row stored for a beacon: the sent fields, the protocol, connection
 * and visit read from them, and what the server knows of the request.
 * Nothing else of the request (its address, its full user agent) is kept.
 * @param {Record<string, any>} b a beacon that passed BEACON_SCHEMA and implausibility
 * @param {{ siteId: number, origin: string, country: string | null, browser: { family: string, major: number | null } }} request
 */
export function storedBeacon (b, { siteId, origin, country, browser }) {
  /** @type {Record<string, any>} */
  const row = {
    time: new Date(Math.round(b.t0)),
    site_id: siteId,
    view_id: b.id,
    origin,
    country,
    browser: browser.family,
    browser_major: browser.major,
    nav: b.nav,
    protocol: protocolOf(b.protocol),
    connection: connectionOf(b),
    visit: visitOf(b),
    sample_rate: b.sample ?? null
  }
  for (const f of SENT_FIELDS) row[f] = b[f] ?? null
  return row
}

/** Columns of rum_beacons an insert writes, in storedBeacon's order. */
export const BEACON_COLUMNS = Object.freeze(['time', 'site_id', 'view_id', 'origin', 'country', 'browser', 'browser_major', 'nav', 'protocol',
  'connection', 'visit', 'sample_rate', ...SENT_FIELDS])
