import pino from 'pino'
import { baseFlags, MODES, modeFlags } from './flags.js'
import { fcp } from './page/fcp.js'
import { lcp } from './page/lcp.js'
import { navigation } from './page/navigation.js'
import { normalizeProtocol, protocolMatchesMode } from './protocol.js'

// One page load in one mode, in a fresh incognito context of the browser that
// holds that mode's flags. A page that fails to load is a result with a
// status, never an exception: a round records every run it attempted.

/** How long to wait after the load event for LCP to be reported. */
const LCP_WAIT_MS = 300
/** Upper bound for reading metrics out of a loaded page. */
const COLLECT_TIMEOUT_MS = 5000
/** Browser version per browser process: asking costs a round trip per run otherwise. */
const versions = new WeakMap()

export class PageLoadError extends Error {
  /**
   * @param {string} message
   * @param {{ url: string, status?: 'error' | 'timeout', httpStatus?: number | null, cause?: unknown }} context
   */
  constructor (message, { url, status = 'error', httpStatus = null, cause }) {
    super(message, { cause })
    this.name = 'PageLoadError'
    this.url = url
    this.status = status
    this.httpStatus = httpStatus
  }
}

/**
 * @typedef {{
 *   url: string, protocol: string | null, status: number | null, bytes: number,
 *   start_ms: number | null, end_ms: number | null, connection_id: number | null,
 *   connection_reused: boolean | null, from_cache: boolean, alternate_protocol_usage: string | null
 * }} RequestDetail
 */

/**
 * Load `url` once in `mode` and return the result row. `wall_ms` runs from
 * context creation to context closed: the per-run cost of the agent. The
 * browser launch, once per flag set and pool, is not in it.
 * @param {{
 *   pool: { acquire: (spec: { flags: string[], netns?: string | null }) => Promise<import('puppeteer-core').Browser> },
 *   url: string,
 *   mode: import('./flags.js').Mode,
 *   extraFlags?: string[],
 *   netns?: string | null,
 *   timeoutMs?: number,
 *   log?: import('pino').Logger
 * }} opts
 */
export async function measurePage ({ pool, url, mode, extraFlags = [], netns = null, timeoutMs = 30_000, log = pino({ level: 'silent' }) }) {
  const flags = [...baseFlags(), ...modeFlags(mode, url), ...extraFlags]
  // A browser that cannot start is the agent's failure, not the page's: it
  // throws (BrowserLaunchError) rather than being recorded against the URL.
  const browser = await pool.acquire({ flags, netns })
  const started = performance.now()
  const result = emptyResult(mode, flags)
  let context = null
  let network = null
  try {
    if (!versions.has(browser)) versions.set(browser, await browser.version())
    result.browser_version = versions.get(browser)
    context = await browser.createBrowserContext()
    const page = await context.newPage()
    network = await recordNetwork(page)
    await load(page, url, timeoutMs)
    Object.assign(result, await withTimeout(collectPageMetrics(page), COLLECT_TIMEOUT_MS, 'reading page metrics'))
    result.protocol_ok = protocolMatchesMode(result.observed_protocol, mode)
    result.status = result.protocol_ok ? 'ok' : 'protocol_mismatch'
  } catch (err) {
    result.status = err instanceof PageLoadError ? err.status : 'error'
    result.error = err.message
    // Anything but a page failure (a crashed browser, a protocol timeout)
    // is still recorded against the run, and also worth an operator's look.
    if (!(err instanceof PageLoadError)) log.warn({ err, url, mode }, 'measurement failed outside the page load')
  } finally {
    if (network) Object.assign(result, network.summary())
    if (!result.observed_protocol && network) {
      // No page to ask (the load failed): say what the document came over, if anything.
      result.observed_protocol = network.documentProtocol()
      result.protocol_ok = protocolMatchesMode(result.observed_protocol, mode)
    }
    await context?.close().catch((err) => log.warn({ err, url }, 'closing browser context failed'))
  }
  result.wall_ms = round(performance.now() - started)
  log.debug({ url, mode, status: result.status, ttfb_ms: result.ttfb_ms, load_ms: result.load_ms, wall_ms: result.wall_ms }, 'page measured')
  return result
}

/**
 * Run each mode once, in random order so neither protocol always goes first
 * (and, say, always meets a colder origin), and return the results in the
 * order they ran.
 * @param {Omit<Parameters<typeof measurePage>[0], 'mode'> & { modes?: import('./flags.js').Mode[], random?: () => number }} opts
 */
export async function runRound ({ modes = [...MODES], random = Math.random, ...opts }) {
  const order = [...modes]
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[order[i], order[j]] = [order[j], order[i]]
  }
  const results = []
  for (const mode of order) results.push(await measurePage({ ...opts, mode }))
  return results
}

/**
 * @param {string} mode
 * @param {string[]} flags
 */
function emptyResult (mode, flags) {
  return {
    mode,
    view: 'first',
    probe: 'page',
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
    browser_version: null,
    flags,
    wall_ms: null,
    /** @type {RequestDetail[]} */
    requests_detail: []
  }
}

/**
 * Navigate and wait for the load event; any failure becomes a PageLoadError.
 * @param {import('puppeteer-core').Page} page
 * @param {string} url
 * @param {number} timeoutMs
 */
async function load (page, url, timeoutMs) {
  let response
  try {
    response = await page.goto(url, { waitUntil: 'load', timeout: timeoutMs })
  } catch (err) {
    if (err?.name === 'TimeoutError') {
      throw new PageLoadError(`load did not finish within ${timeoutMs} ms: ${url}`, { url, status: 'timeout', cause: err })
    }
    throw new PageLoadError(err.message, { url, cause: err })
  }
  const httpStatus = response?.status() ?? null
  if (httpStatus !== null && httpStatus >= 400) {
    throw new PageLoadError(`HTTP ${httpStatus} ${response.statusText()}: ${url}`.replace('  ', ' '), { url, httpStatus })
  }
}

/**
 * Timings of the loaded page. Each metric is defined here once, in ms
 * relative to the navigation's startTime.
 * @param {import('puppeteer-core').Page} page
 */
async function collectPageMetrics (page) {
  const lcpMs = await page.evaluate(lcp, LCP_WAIT_MS)
  const nav = await page.evaluate(navigation)
  const fcpMs = await page.evaluate(fcp)
  if (!nav) throw new Error('the page has no navigation timing entry')
  const since = (t) => (t > 0 ? round(t - nav.startTime) : null)
  const span = (from, to) => (from > 0 && to >= from ? round(to - from) : null)
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
    lcp_ms: lcpMs === null ? null : round(lcpMs)
  }
}

/**
 * Record every request of the page from the DevTools network events: its
 * protocol, connection, bytes on the wire (headers included) and timing
 * relative to the first request.
 * @param {import('puppeteer-core').Page} page
 */
async function recordNetwork (page) {
  const cdp = await page.createCDPSession()
  const open = new Map()
  const all = []
  let firstTimestamp = null
  let documentRecord = null

  const respond = (rec, response) => {
    rec.protocol = normalizeProtocol(response.protocol)
    rec.status = response.status
    rec.connection_id = response.connectionId ?? null
    rec.connection_reused = response.connectionReused ?? null
    rec.from_cache ||= Boolean(response.fromDiskCache || response.fromPrefetchCache || response.fromServiceWorker)
    rec.alternate_protocol_usage = response.alternateProtocolUsage ?? null
  }
  cdp.on('Network.requestWillBeSent', (e) => {
    const previous = open.get(e.requestId)
    if (previous && e.redirectResponse) {
      // A redirect reuses the request id: close the hop that just ended.
      respond(previous, e.redirectResponse)
      previous.bytes = e.redirectResponse.encodedDataLength ?? 0
      previous.end = e.timestamp
    }
    // data: and blob: URLs never touch the network.
    if (!/^https?:/.test(e.request.url)) return
    firstTimestamp ??= e.timestamp
    const rec = {
      url: e.request.url, protocol: null, status: null, bytes: 0, start: e.timestamp, end: null,
      connection_id: null, connection_reused: null, from_cache: false, alternate_protocol_usage: null
    }
    if (e.type === 'Document' && !documentRecord) documentRecord = rec
    open.set(e.requestId, rec)
    all.push(rec)
  })
  cdp.on('Network.responseReceived', (e) => {
    const rec = open.get(e.requestId)
    if (rec) respond(rec, e.response)
  })
  cdp.on('Network.requestServedFromCache', (e) => {
    const rec = open.get(e.requestId)
    if (rec) rec.from_cache = true
  })
  cdp.on('Network.loadingFinished', (e) => {
    const rec = open.get(e.requestId)
    if (!rec) return
    rec.bytes = e.encodedDataLength
    rec.end = e.timestamp
    open.delete(e.requestId)
  })
  cdp.on('Network.loadingFailed', (e) => {
    const rec = open.get(e.requestId)
    if (!rec) return
    rec.end = e.timestamp
    open.delete(e.requestId)
  })
  await cdp.send('Network.enable')

  const sinceFirst = (t) => (t === null || firstTimestamp === null ? null : round((t - firstTimestamp) * 1000))
  return {
    documentProtocol: () => documentRecord?.protocol ?? null,
    summary () {
      /** @type {RequestDetail[]} */
      const requestsDetail = all.map(({ start, end, ...rec }) => ({ ...rec, start_ms: sinceFirst(start), end_ms: sinceFirst(end) }))
      const sum = (list) => list.reduce((total, r) => total + r.bytes, 0)
      // Shares count what came over the network, where a protocol was chosen.
      const fetched = requestsDetail.filter((r) => r.protocol && !r.from_cache)
      const overH3 = fetched.filter((r) => r.protocol === 'h3')
      const fetchedBytes = sum(fetched)
      return {
        bytes: sum(requestsDetail),
        requests: requestsDetail.length,
        h3_request_share: fetched.length ? round(overH3.length / fetched.length, 3) : null,
        h3_byte_share: fetchedBytes ? round(sum(overH3) / fetchedBytes, 3) : null,
        requests_detail: requestsDetail
      }
    }
  }
}

/**
 * @template T
 * @param {Promise<T>} promise
 * @param {number} ms
 * @param {string} what
 * @returns {Promise<T>}
 */
function withTimeout (promise, ms, what) {
  let timer
  const expired = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms)
  })
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer))
}

/**
 * @param {number} value
 * @param {number} [digits] decimals kept; 1 for milliseconds
 */
function round (value, digits = 1) {
  const f = 10 ** digits
  return Math.round(value * f) / f
}
