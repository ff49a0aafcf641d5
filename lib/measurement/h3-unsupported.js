// An H3 arm whose page's origin refused QUIC and advertises no HTTP/3 (no
// Alt-Svc h3) did not fail at H3: the origin has none. Such a run is an
// error of failure kind h3_unsupported, which the comparison counts as
// "H3 not supported", not as an H3 failure. Puppeteer agents judge it from
// the Alt-Svc the redirect discovery saw (agents/measure.js judgeFailure);
// WebPageTest uploads from what the monitor's runs at the location saw of
// the origin (lib/store/wpt-tests.js).

/** Chromium's errors for a QUIC connection that never came up (refused, no answer, handshake failed). */
export const QUIC_REFUSED = /^net::ERR_(QUIC_[A-Z_]+|CONNECTION_REFUSED|CONNECTION_RESET|CONNECTION_TIMED_OUT|TIMED_OUT|ADDRESS_UNREACHABLE)$/

/**
 * The error and failure kind of an H3 run whose origin refused QUIC with
 * `failed` and advertises no h3.
 * @param {string} origin
 * @param {string} failed Chromium's error
 */
export function h3Unsupported (origin, failed) {
  return { error: `H3 not supported: ${origin} refused QUIC and advertises no Alt-Svc h3 (${failed})`, failure_kind: 'h3_unsupported' }
}
