// Driving one navigation and reading its metrics. Each metric is defined
// here once, in ms relative to the navigation's startTime; the scripts that
// run in the page are in agents/page/.
import { fcp } from './page/fcp.js'
import { lcp } from './page/lcp.js'
import { navigation } from './page/navigation.js'
import { normalizeProtocol } from '../lib/measurement/protocol.js'
import { round } from '../lib/measurement/units.js'

/** How long to wait after the load event for LCP to be reported. */
const LCP_WAIT_MS = 300
/** Upper bound for reading metrics out of a loaded page. */
export const COLLECT_TIMEOUT_MS = 5000

export class PageLoadError extends Error {
  /**
   * @param {string} message
   * @param {{ url: string, status?: 'error' | 'timeout', httpStatus?: number | null, failureKind?: string | null, cause?: unknown }} context
   */
  constructor (message, { url, status = 'error', httpStatus = null, failureKind = null, cause }) {
    super(message, { cause })
    this.name = 'PageLoadError'
    this.url = url
    this.status = status
    this.httpStatus = httpStatus
    /** details.failure_kind of the run: 'truncated', 'h3_unsupported', 'empty', 'renderer_crashed', or null */
    this.failureKind = failureKind
  }
}

/** A probe step after the page loaded (parallel requests, an upload) failed or ran out of time. */
export class ProbeError extends Error {
  /**
   * @param {string} message
   * @param {{ url: string, probe: string, status?: 'error' | 'timeout', cause?: unknown }} context
   */
  constructor (message, { url, probe, status = 'error', cause }) {
    super(message, { cause })
    this.name = 'ProbeError'
    this.url = url
    this.probe = probe
    this.status = status
  }
}

/**
 * Navigate and wait for the load event; any failure becomes a PageLoadError.
 * @param {import('puppeteer-core').Page} page
 * @param {string} url
 * @param {number} timeoutMs
 * @returns {Promise<number | null>} the document's HTTP status
 */
export async function load (page, url, timeoutMs) {
  let response
  try {
    response = await page.goto(url, { waitUntil: 'load', timeout: timeoutMs })
  } catch (/** @type {any} */ err) {
    if (err?.name === 'TimeoutError') {
      throw new PageLoadError(`load did not finish within ${timeoutMs} ms: ${url}`, { url, status: 'timeout', cause: err })
    }
    throw new PageLoadError(err.message, { url, cause: err })
  }
  const httpStatus = response?.status() ?? null
  if (httpStatus !== null && httpStatus >= 400) {
    throw new PageLoadError(`HTTP ${httpStatus} ${response?.statusText()}: ${url}`.replace('  ', ' '), { url, httpStatus })
  }
  return httpStatus
}

/**
 * Rejects when the page's renderer process crashes (a PageLoadError of
 * failure kind renderer_crashed): a navigation whose renderer died never
 * settles by itself, it would wait out its timeout. dispose() stops
 * listening.
 * @param {import('puppeteer-core').Page} page
 * @param {string} url
 * @returns {{ crashed: Promise<never>, dispose: () => void }}
 */
export function rendererCrash (page, url) {
  /** @type {(err: Error) => void} */
  let onError = () => {}
  /** @type {Promise<never>} */
  const crashed = new Promise((resolve, reject) => {
    onError = (err) => reject(new PageLoadError(`the page's renderer process crashed (${err.message}): ${url}`, { url, failureKind: 'renderer_crashed', cause: err }))
    page.once('error', onError)
  })
  crashed.catch(() => {})
  return { crashed, dispose: () => { page.off('error', onError) } }
}

/**
 * Timings of the loaded page, and the size of its document's body
 * (document_body_bytes, decoded; not a metric: it says whether the page was
 * empty).
 * @param {import('puppeteer-core').Page} page
 */
export async function collectPageMetrics (page) {
  // LCP first: it waits for the frames after the load event, and only then
  // are the first paint and the load event's end sure to be recorded.
  const lcpMs = await page.evaluate(lcp, LCP_WAIT_MS)
  const [nav, fcpMs] = await Promise.all([page.evaluate(navigation), page.evaluate(fcp)])
  if (!nav) throw new Error('the page has no navigation timing entry')
  const since = (/** @type {number} */ t) => (t > 0 ? round(t - nav.startTime) : null)
  const span = (/** @type {number} */ from, /** @type {number} */ to) => (from > 0 && to >= from ? round(to - from) : null)
  return {
    observed_protocol: normalizeProtocol(nav.nextHopProtocol),
    ttfb_ms: since(nav.responseStart),
    dns_ms: span(nav.domainLookupStart, nav.domainLookupEnd),
    // For QUIC this includes the crypto handshake: Chromium reports one connect phase.
    connect_ms: span(nav.connectStart, nav.connectEnd),
    tls_ms: nav.secureConnectionStart > 0 ? span(nav.secureConnectionStart, nav.connectEnd) : null,
    dcl_ms: since(nav.domContentLoadedEventEnd),
    load_ms: since(nav.loadEventEnd),
    fcp_ms: fcpMs === null ? null : round(fcpMs),
    lcp_ms: lcpMs === null ? null : round(lcpMs),
    document_body_bytes: typeof nav.decodedBodySize === 'number' ? nav.decodedBodySize : null
  }
}

/**
 * @template T
 * @param {Promise<T>} promise
 * @param {number} ms
 * @param {string} what
 * @param {(message: string) => Error} [makeError]
 * @returns {Promise<T>}
 */
export function withTimeout (promise, ms, what, makeError = (message) => new Error(message)) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer
  const expired = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(makeError(`${what} took longer than ${ms} ms`)), ms)
  })
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer))
}
