// The arms of a round and what each must have used to count, for every
// browser: the switches and preferences that make a browser run an arm are
// its own (lib/measurement/browsers/).

/** @typedef {'h3' | 'h2' | 'auto'} Mode */
/**
 * The arms of a round, stored and listed in this order: QUIC off, QUIC
 * forced, and `auto`, the browser as a user runs it (nothing forced: it
 * learns H3 from Alt-Svc or an HTTPS record and races QUIC against TCP).
 */
export const MODES = Object.freeze(/** @type {Mode[]} */ (['h2', 'h3', 'auto']))
/** The arms that force a protocol: the H2-against-H3 comparison is theirs. */
export const FORCED_MODES = Object.freeze(/** @type {Mode[]} */ (['h2', 'h3']))
/** What a monitor measures unless it says otherwise. */
export const DEFAULT_MODES = MODES

/**
 * The protocol a run of each mode must have used to count for that mode;
 * null: whatever the browser chose counts (the auto arm's protocol is what it
 * measures, never a failure).
 */
export const PROTOCOL_OF_MODE = Object.freeze({ h2: 'h2', h3: 'h3', auto: null })

/**
 * The protocol a run must have used to count for its arm: the mode's, unless
 * the monitor is an A/A monitor, whose arms both use its aa_protocol.
 * @param {string} mode
 * @param {{ aa_protocol?: string | null } | null} [monitor]
 * @returns {string | null} null: any protocol counts (the auto arm)
 */
export function expectedProtocolFor (mode, monitor) {
  if (mode === 'auto') return null
  return monitor?.aa_protocol ?? PROTOCOL_OF_MODE[/** @type {'h2' | 'h3'} */ (mode)] ?? mode
}

/**
 * The host:port list the H3 arm forces QUIC on: the page's, then the others,
 * each once. None in h2 mode.
 * @param {Mode} mode
 * @param {string | URL} url
 * @param {{ forceOrigins?: string[] }} [opts]
 * @returns {string[]}
 */
export function forcedOrigins (mode, url, { forceOrigins = [] } = {}) {
  return mode === 'h3' ? [...new Set([hostPort(url), ...forceOrigins.map(hostPort)])] : []
}

/**
 * host:port of a URL or origin, with the scheme's default port spelled out.
 * @param {string | URL} url
 */
export function hostPort (url) {
  const { hostname, port, protocol } = new URL(url)
  return `${hostname}:${port || (protocol === 'http:' ? '80' : '443')}`
}
