// Driving one navigation and reading its metrics, in ms relative to the
// navigation's startTime. The navigation's own timings are read here from
// its Navigation Timing entry and LCP; every catalogue metric with
// `pageScript` (lib/measurement/metrics.js) has its own script,
// agents/page/metrics/<id>.js, whose default export runs in the loaded page
// and returns the value. The scripts that run in the page are in
// agents/page/; they run in a world of the agent's own (evaluateIsolated).
import { lcp } from './page/lcp.js'
import { navigation } from './page/navigation.js'
import { COLUMN_METRICS } from '../lib/measurement/metrics.js'
import { normalizeProtocol } from '../lib/measurement/protocol.js'
import { round } from '../lib/measurement/units.js'
import { clipped } from '../lib/runtime/text.js'

/**
 * Each page-script metric's results column and its script, loaded once.
 * The catalogue names the metric, the file name is its id: a metric whose
 * script is missing stops the agent at start, naming the file.
 * @type {readonly [string, () => unknown][]}
 */
const PAGE_SCRIPTS = await Promise.all(COLUMN_METRICS.filter((m) => m.pageScript).map(async (m) => {
  const file = new URL(`./page/metrics/${m.id}.js`, import.meta.url)
  const script = (await import(file.href).catch((err) => {
    throw new Error(`the catalogue's metric ${m.id} is measured by agents/page/metrics/${m.id}.js, which does not load: ${err.message}`, { cause: err })
  })).default
  if (typeof script !== 'function') throw new Error(`agents/page/metrics/${m.id}.js must export default the function that runs in the page`)
  return /** @type {[string, () => unknown]} */ ([(m.column), script])
}))

/**
 * Run a script in the loaded page's document, in a world of the agent's own
 * (Puppeteer's isolated realm, in Chromium and Firefox alike): the page's
 * scripts share its DOM and its performance timeline, not its globals. A
 * page that replaces performance.getEntriesByType, PerformanceObserver or
 * requestAnimationFrame (a polyfill, a monitoring library, a page's own
 * mischief) changes nothing of what is read, and one that wraps fetch (a
 * tracing library's delay and headers) nothing of the probes' requests. In
 * the page's own world such a page set its TTFB to whatever it liked, or
 * had no navigation entry and no LCP.
 * @template {unknown[]} A
 * @template R
 * @param {import('puppeteer-core').Page} page
 * @param {(...args: A) => R} script
 * @param {A} args
 * @returns {Promise<Awaited<R>>}
 */
export function evaluateIsolated (page, script, ...args) {
  return /** @type {Promise<Awaited<R>>} */ (isolatedRealm(page).evaluate(/** @type {any} */ (script), ...args))
}

/**
 * The page's top frame's world of the agent's own (evaluateIsolated), for
 * what waits in it (a journey's assert step).
 * @param {import('puppeteer-core').Page} page
 * @returns {import('puppeteer-core').Realm}
 */
export function isolatedRealm (page) {
  // isolatedRealm() is Puppeteer's own (marked internal; puppeteer-core is
  // pinned, and test/odd-pages.test.js's page that fakes its timings fails
  // if it goes).
  return /** @type {{ isolatedRealm (): import('puppeteer-core').Realm }} */ (/** @type {unknown} */ (page.mainFrame())).isolatedRealm()
}

/**
 * Puppeteer's errors for reading a document that a navigation replaced: the
 * loaded page went on to another by itself (a script, a meta refresh)
 * before its metrics were read.
 */
export const NAVIGATED_AWAY = /Execution context was destroyed|Cannot find context with specified id|Inspected target navigated or closed/

/**
 * How long an aborted navigation's answer may come after its failure, and
 * how long a navigation that will not end by itself may run on (load).
 */
const ANSWER_WAIT_MS = 1000

/** How long to wait after the load event for LCP to be reported. */
const LCP_WAIT_MS = 300
/** Upper bound for reading metrics out of a loaded page. */
export const COLLECT_TIMEOUT_MS = 5000
/** How long a page has to answer a script of the agent's before it counts as busy (answers). */
const RESPONSIVE_WAIT_MS = 2000

/** Pages found not to answer (answers): their renderer is still held, and their context is closed, not kept for later (agents/measure.js). */
const stuck = new WeakSet()

/**
 * Whether the page's renderer answers a script of the agent's within
 * RESPONSIVE_WAIT_MS. A page whose script runs without end (a loop) holds its
 * renderer's main thread, and every script waits behind it, the agent's
 * too: a load or a read that did not end there is the page's doing, not
 * the network's. Only the wait running out counts: a script that failed
 * (its document went away meanwhile) was answered.
 * @param {import('puppeteer-core').Page} page
 */
export async function answers (page) {
  const waited = new Error('no answer')
  const answered = await withTimeout(Promise.resolve().then(() => evaluateIsolated(page, () => true)), RESPONSIVE_WAIT_MS, 'a script of the agent\'s', () => waited)
    .then(() => true, (err) => err !== waited)
  if (!answered) stuck.add(page)
  return answered
}

/**
 * Whether the page was found not to answer (answers).
 * @param {import('puppeteer-core').Page} page
 */
export function isStuck (page) {
  return stuck.has(page)
}

/** Why a page did not answer (answers), as a run says it. */
export const BUSY_PAGE = 'its renderer was busy (a script that runs without end does this)'

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
 * Whether a request is one of the top frame's navigations (a document, or a
 * redirect hop of one), not a subresource's or a frame's within the page.
 * @param {import('puppeteer-core').Page} page
 * @param {import('puppeteer-core').HTTPRequest} request
 */
export function isTopFrameNavigation (page, request) {
  return request.isNavigationRequest() && request.frame() === page.mainFrame()
}

/** A navigation's request that the browser itself gave up (a new navigation replaced it, a download, a 204). */
const ABORTED = /\b(ERR_ABORTED|NS_BINDING_ABORTED)\b/
/** Chromium's failure of a navigation whose login it cancelled (no credentials were sent). */
export const CANCELLED_LOGIN = /\bERR_INVALID_AUTH_CREDENTIALS\b/

/**
 * Navigate and wait for the load event; any failure becomes a PageLoadError.
 * Two navigations never end by themselves in Firefox, and are given up
 * ANSWER_WAIT_MS after the sign, when they have not ended by then:
 * - the navigation's answer is one no browser shows as a page (a download,
 *   a 204 or 205): the load fails with that reason (Chromium aborts such a
 *   navigation at once; Firefox never ends a download's). A download the
 *   page itself starts later is not this navigation's answer;
 * - in Firefox, the top frame's document failed after its answer began
 *   (cut short: Firefox fires no load event then; Chromium does, and the
 *   run judges the document once it is read): the load fails with the
 *   browser's error, and the run's recording says how much arrived.
 * @param {import('puppeteer-core').Page} page
 * @param {string} url
 * @param {number} timeoutMs
 * @returns {Promise<{ httpStatus: number | null, request: import('puppeteer-core').HTTPRequest | null }>}
 *   the document's HTTP status, and the request of the document the load ended on
 */
export async function load (page, url, timeoutMs) {
  let response
  // The top frame's first request (this navigation's) and its latest one,
  // and its last answer: what a navigation that does not end is given up
  // for, and why the browser showed no page.
  /** @type {import('puppeteer-core').HTTPRequest | null} */
  let first = null
  /** @type {import('puppeteer-core').HTTPRequest | null} */
  let latest = null
  /** @type {import('puppeteer-core').HTTPResponse | null} */
  let answer = null
  let answered = () => {}
  /** @type {Set<ReturnType<typeof setTimeout>>} */
  const giveUps = new Set()
  /** @type {(err: PageLoadError) => void} */
  let stop = () => {}
  /** @type {Promise<never>} */
  const givenUp = new Promise((resolve, reject) => { stop = reject })
  /** @param {() => PageLoadError | null} why the error to stop with when the time comes, or null to go on */
  const giveUpSoon = (why) => {
    const timer = setTimeout(() => {
      giveUps.delete(timer)
      const err = why()
      if (err) stop(err)
    }, ANSWER_WAIT_MS)
    giveUps.add(timer)
  }
  const topFrame = (/** @type {import('puppeteer-core').HTTPRequest} */ r) => isTopFrameNavigation(page, r)
  const onRequest = (/** @type {import('puppeteer-core').HTTPRequest} */ r) => {
    if (!topFrame(r)) return
    first ??= r
    latest = r
  }
  const onResponse = (/** @type {import('puppeteer-core').HTTPResponse} */ r) => {
    const request = r.request()
    if (!topFrame(request)) return
    answer = r
    answered()
    const why = notShown(r)
    // This navigation's answer (its request, or a redirect of it).
    const own = first !== null && (request === first || request.redirectChain().includes(first))
    if (why && own) giveUpSoon(() => new PageLoadError(`no page at ${url}: ${why}`, { url }))
  }
  const onFailed = (/** @type {import('puppeteer-core').HTTPRequest} */ r) => {
    const error = r.failure()?.errorText ?? ''
    // Firefox's failures are NS_ names; Chromium's (net::) end its load by themselves.
    if (!/^NS_/.test(error) || !topFrame(r) || !r.response() || ABORTED.test(error)) return
    // Not when a newer navigation has replaced it by then.
    giveUpSoon(() => {
      if (r !== latest) return null
      const failed = `${error} at ${url}`
      return refusedRedirectError(failed, r.response(), url) ?? new PageLoadError(failed, { url })
    })
  }
  page.on('request', onRequest)
  page.on('response', onResponse)
  page.on('requestfailed', onFailed)
  const navigation = page.goto(url, { waitUntil: 'load', timeout: timeoutMs })
  navigation.catch(() => {}) // when it is given up first
  try {
    response = await Promise.race([navigation, givenUp])
  } catch (/** @type {any} */ err) {
    if (err instanceof PageLoadError) throw err
    if (err?.name === 'TimeoutError') {
      throw new PageLoadError(`load did not finish within ${timeoutMs} ms: ${url}`, { url, status: 'timeout', cause: err })
    }
    const message = navigationError(err, url)
    const lastSoFar = /** @type {import('puppeteer-core').HTTPResponse | null} */ (answer)
    const refused = refusedRedirectError(message, lastSoFar?.request() === latest ? lastSoFar : null, url, err)
    if (refused) throw refused
    // Chromium's words for a login it cancelled: the 401 is the answer.
    const cancelledLogin = CANCELLED_LOGIN.test(message)
    const aborted = ABORTED.test(message)
    if ((aborted || cancelledLogin) && !answer) await answerOrNothing((resolve) => { answered = resolve })
    const last = /** @type {import('puppeteer-core').HTTPResponse | null} */ (answer)
    const login = last && cancelledLogin ? loginAsked(last) : null
    if (last && login) throw new PageLoadError(`${httpError(last, url)}: ${login}`, { url, httpStatus: last.status(), cause: err })
    // The browser's abort of an answer that is no page reads as the agent's
    // own give-up does (onResponse): one event, one wording, whichever ends first.
    const why = aborted ? notShown(answer) : null
    throw new PageLoadError(why ? `no page at ${url}: ${why}` : message, { url, cause: err })
  } finally {
    for (const timer of giveUps) clearTimeout(timer)
    page.off('request', onRequest)
    page.off('response', onResponse)
    page.off('requestfailed', onFailed)
  }
  const httpStatus = response?.status() ?? null
  if (response && httpStatus !== null && httpStatus >= 400) {
    const login = loginAsked(response)
    throw new PageLoadError(`${httpError(response, url)}${login ? `: ${login}` : ''}`, { url, httpStatus })
  }
  return { httpStatus, request: response?.request() ?? null }
}

/**
 * An HTTP error's words: "HTTP 404 Not Found: <url>" (HTTP/2 and HTTP/3
 * have no reason phrase: the status alone).
 * @param {import('puppeteer-core').HTTPResponse} response
 * @param {string} url
 */
function httpError (response, url) {
  const reason = response.statusText()
  // The URL that answered so: after redirects, not the one asked for.
  const answered = response.url() || url
  return `HTTP ${response.status()}${reason ? ` ${reason}` : ''}: ${answered}${answered === url ? '' : ` (redirected from ${url})`}`
}

/**
 * What a 401 that asks for a login says of it; null for any other answer.
 * Runs send no credentials: the browser cancels the login (agents/dialogs.js
 * cancelLogins), and the page is the 401.
 * @param {import('puppeteer-core').HTTPResponse} response
 */
export function loginAsked (response) {
  const challenge = response.headers()['www-authenticate']
  if (response.status() !== 401 || !challenge) return null
  const first = challenge.split('\n')[0].trim()
  return `the page asks for a login (WWW-Authenticate: ${clipped(first, 80)}); runs send no credentials`
}

/** How much of a refused redirect's address an error shows. */
const REDIRECT_SHOWN = 200
/** The browsers' errors for a redirect they refuse to follow: Chromium's, and Firefox's (which names no redirect). */
const REFUSED_REDIRECT = /^(net::ERR_UNSAFE_REDIRECT|NS_ERROR_CORRUPTED_CONTENT)\b/
/** Addresses a browser refuses to follow a redirect to, rather than hand them to the system. */
const REFUSED_SCHEMES = /^(data|file|javascript|blob|about|view-source|filesystem):/i
/** The statuses a browser follows a Location of. */
const REDIRECTS = new Set([301, 302, 303, 307, 308])

/**
 * The error of a navigation that failed on a redirect to an address no browser follows
 * one to (a data: or file: URL, another scheme than http and https): the
 * address and status where the browser reported the redirect (Firefox;
 * its error reads NS_ERROR_CORRUPTED_CONTENT), or only that it was one
 * (Chromium's net::ERR_UNSAFE_REDIRECT, with no answer of it). Null for
 * any other failure (a redirect to an app's own scheme is handed to the
 * system, not refused).
 * @param {string} message the navigation's error (navigationError)
 * @param {import('puppeteer-core').HTTPResponse | null} answer the answer of the navigation's latest request, if any
 * @param {string} url the URL loaded
 * @param {unknown} [cause]
 * @returns {PageLoadError | null}
 */
function refusedRedirectError (message, answer, url, cause = undefined) {
  const error = REFUSED_REDIRECT.exec(message)?.[1]
  if (!error) return null
  const status = answer?.status() ?? 0
  const elsewhere = answer ? awayFromWeb(answer) : null
  // Firefox's error is not a redirect's alone: only with such an answer.
  if (!elsewhere && !error.startsWith('net::')) return null
  const where = elsewhere ? `${elsewhere} (HTTP ${status})` : 'an address'
  return new PageLoadError(`no page at ${url}: it redirects to ${where} that no browser follows a redirect to (only to http and https: ${error}); monitor a URL that answers with a page`,
    // The answer's status, when there is one: the failure is the redirect's, not its body's (judgeFailure).
    { url, httpStatus: elsewhere ? status : null, cause })
}

/**
 * Where a redirect sends the browser off the web: its Location when that
 * is an address other than http or https (cut to REDIRECT_SHOWN
 * characters), or null for any other answer. A Location that does not
 * parse is not followed either; the browser's own words say so.
 * @param {import('puppeteer-core').HTTPResponse} answer
 */
function awayFromWeb (answer) {
  const location = REDIRECTS.has(answer.status()) ? answer.headers().location : undefined
  if (!location) return null
  let target
  try {
    target = new URL(location, answer.url())
  } catch {
    return null
  }
  if (/^https?:$/.test(target.protocol)) return null
  return clipped(target.href, REDIRECT_SHOWN)
}

/**
 * A failed navigation's words. Chromium's are short already
 * ("net::ERR_CONNECTION_REFUSED at <url>"); Firefox's, over WebDriver BiDi,
 * wrap its error ("NS_ERROR_CONNECTION_REFUSED", "Address rejected" when
 * the page's content process died) in the driver's own JavaScript stack,
 * which says nothing of the page: they become the error and the URL, as
 * Chromium's.
 * @param {unknown} err
 * @param {string} url
 */
export function navigationError (err, url) {
  const message = err instanceof Error ? err.message : String(err)
  const firefox = /^Protocol error \(browsingContext\.navigate\): (?:unknown error )?(?:Error: )?(.+?)\s+\S*@(?:chrome|resource):\/\//s.exec(message)
  return firefox ? `${firefox[1].trim()} at ${url}` : message
}

/**
 * Watch the top frame, from before a load, for a page answered to a
 * request made after the one the load ended on: the page went on to another
 * by itself (a script, a meta refresh) after its load event. `left`
 * rejects, with the URL it went to, as soon as the load has ended (loaded)
 * and such an answer is seen. No leaving: a same-document change
 * (history.replaceState, a fragment), which requests nothing; a download,
 * a 204 or 205 the page starts, which leave it in place; a redirect, until
 * its end answers. dispose() stops watching.
 * @param {import('puppeteer-core').Page} page
 * @param {string} url the URL loaded
 */
export function watchLeaving (page, url) {
  /** The top frame's navigation requests, in order. @type {import('puppeteer-core').HTTPRequest[]} */
  const requested = []
  /** Those answered with a page, and the answer. @type {Map<import('puppeteer-core').HTTPRequest, import('puppeteer-core').HTTPResponse>} */
  const pages = new Map()
  let loadedAt = -1
  /** @type {(err: PageLoadError) => void} */
  let fail = () => {}
  /** @type {Promise<never>} */
  const left = new Promise((resolve, reject) => { fail = reject })
  left.catch(() => {})
  const check = () => {
    if (loadedAt < 0) return
    const next = requested.slice(loadedAt + 1).find((r) => pages.has(r))
    if (next) fail(leftError(url, pages.get(next)?.url()))
  }
  const topFrame = (/** @type {import('puppeteer-core').HTTPRequest} */ r) => isTopFrameNavigation(page, r)
  const onRequest = (/** @type {import('puppeteer-core').HTTPRequest} */ r) => { if (topFrame(r)) requested.push(r) }
  const onResponse = (/** @type {import('puppeteer-core').HTTPResponse} */ r) => {
    const status = r.status()
    if (!topFrame(r.request()) || (status >= 300 && status < 400) || notShown(r)) return
    pages.set(r.request(), r)
    check()
  }
  page.on('request', onRequest)
  page.on('response', onResponse)
  return {
    left,
    /**
     * The load has ended: on the document at the page's address (a script
     * that replaced the page before its load event made that the one the
     * load waited for), or on the one behind the load's answer, whichever
     * came later (a redirect's end whose address a script then changed in
     * place to an earlier hop's).
     * @param {import('puppeteer-core').HTTPRequest | null} request the load's answer's
     */
    loaded (request) {
      const here = withoutFragment(page.url())
      const at = Math.max(requested.map((r) => withoutFragment(r.url())).lastIndexOf(here), request ? requested.indexOf(request) : -1)
      loadedAt = at >= 0 ? at : requested.length - 1
      check()
    },
    dispose () {
      page.off('request', onRequest)
      page.off('response', onResponse)
    }
  }
}

/** @param {string} url */
function withoutFragment (url) {
  const at = url.indexOf('#')
  return at < 0 ? url : url.slice(0, at)
}

/**
 * @param {string} url the URL loaded
 * @param {string | null | undefined} next where the page went, when known
 */
export function leftError (url, next) {
  // A page that reloads itself goes to its own URL: no other to monitor;
  // nor has one that goes to a page with no address of its own (about:blank).
  const itself = next !== null && next !== undefined && sameDocument(next, url)
  const nowhere = next !== null && next !== undefined && !/^https?:/i.test(next)
  const advice = itself
    ? 'it reloads itself, so no load of it ends in a page that stays'
    : nowhere ? 'it leaves the site for a page with no address of its own, so no load of it ends in a page that stays' : 'monitor the URL it goes to'
  return new PageLoadError(`the page navigated away by itself right after it loaded${next ? `, to ${itself ? 'itself' : next}` : ''}, before its metrics could be read: ${advice}`, { url })
}

/**
 * Whether two URLs name the same document (the fragment aside).
 * @param {string} a
 * @param {string} b
 */
export function sameDocument (a, b) {
  try {
    const [x, y] = [new URL(a), new URL(b)]
    x.hash = ''
    y.hash = ''
    return x.href === y.href
  } catch {
    return a === b
  }
}

/**
 * Wait for an aborted navigation's answer (or a cancelled login's 401), at
 * most ANSWER_WAIT_MS: the navigation's failure can come first, as
 * Puppeteer holds a response back until its raw headers have come too
 * (seen in one of six runs).
 * @param {(resolve: () => void) => void} onAnswer hands over what settles the wait when the answer comes
 */
export function answerOrNothing (onAnswer) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ANSWER_WAIT_MS)
    onAnswer(() => { clearTimeout(timer); resolve(undefined) })
  })
}

/**
 * Why the browser showed no page for a navigation, from the top frame's
 * last answer: a download or a "no content" answer; null when the answer
 * says nothing of it.
 * @param {import('puppeteer-core').HTTPResponse | null} answer
 */
function notShown (answer) {
  if (!answer) return null
  const status = answer.status()
  if (status === 204 || status === 205) return `the URL answered HTTP ${status} (no content), which a browser shows no page for; monitor a URL that answers with a page`
  // A mail link or an app's own scheme: the browser hands it to the system.
  // (A data: or file: URL it refuses to follow: refusedRedirectError.)
  const away = awayFromWeb(answer)
  if (away && !REFUSED_SCHEMES.test(away)) return `the URL redirects to ${away} (HTTP ${status}), which is no web page (a browser loads pages from http and https only); monitor a URL that answers with a page`
  const disposition = answer.headers()['content-disposition'] ?? ''
  if (/^\s*attachment\b/i.test(disposition)) return 'the URL answered with a download (Content-Disposition: attachment), not a page; monitor a URL that answers with a page'
  return null
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
 * Timings of the loaded page, the size of its document's body
 * (document_body_bytes, decoded; not a metric: it says whether the page was
 * empty) and the document they are of (document_url).
 * @param {import('puppeteer-core').Page} page
 */
export async function collectPageMetrics (page) {
  // LCP first: it waits for the frames after the load event, and only then
  // are the first paint and the load event's end sure to be recorded.
  const lcpMs = await evaluateIsolated(page, lcp, LCP_WAIT_MS)
  const [nav, ...scripted] = await Promise.all([evaluateIsolated(page, navigation), ...PAGE_SCRIPTS.map(([, script]) => evaluateIsolated(page, script))])
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
    lcp_ms: lcpMs === null ? null : round(lcpMs),
    // A script's answer that is no time (not a number, negative) is no value.
    ...Object.fromEntries(PAGE_SCRIPTS.map(([column], i) => {
      const v = scripted[i]
      return [column, typeof v === 'number' && Number.isFinite(v) && v >= 0 ? round(v) : null]
    })),
    document_body_bytes: typeof nav.decodedBodySize === 'number' ? nav.decodedBodySize : null,
    // Whose timings these are: Firefox reads on in a document the page went
    // on to without a request (about:blank), where Chromium's read fails.
    document_url: typeof nav.name === 'string' ? nav.name : null
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
