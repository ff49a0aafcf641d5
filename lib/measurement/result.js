// What a submitted result is before anything was measured: a failed load
// with every figure empty. Agents of every kind (Puppeteer, WebPageTest)
// start from it, so a result has one shape whoever measured it.

/**
 * @param {string} mode the arm: h2 or h3
 * @param {{ probe?: string, view?: string }} [key]
 * @returns {Record<string, any>}
 */
export function emptyResult (mode, { probe = 'page', view = 'first' } = {}) {
  return {
    mode,
    view,
    probe,
    status: 'error',
    error: null,
    observed_protocol: null,
    protocol_ok: false,
    ttfb_ms: null,
    load_ms: null,
    dns_ms: null,
    connect_ms: null,
    tls_ms: null,
    fcp_ms: null,
    lcp_ms: null,
    dcl_ms: null,
    bytes: 0,
    requests: 0,
    h3_request_share: null,
    h3_byte_share: null,
    browser_version: null
  }
}
