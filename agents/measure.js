import pino from 'pino'
import { h3Unsupported, QUIC_REFUSED } from '../lib/measurement/h3-unsupported.js'
import { InfrastructureError, infrastructureFault } from './faults.js'
import { advertisesH3 } from '../lib/measurement/alt-svc.js'
import { emptyResult as emptyRow, reuseOf } from '../lib/measurement/result.js'
import { forcedOrigins, hostPort, MODES } from '../lib/measurement/modes.js'
import { runPlan } from './browsers/index.js'
import { metaRefresh } from './page/meta-refresh.js'
import { answers, BUSY_PAGE, isStuck, sameDocument, collectPageMetrics, evaluateIsolated, COLLECT_TIMEOUT_MS, leftError, load, NAVIGATED_AWAY, PageLoadError, ProbeError, rendererCrash, watchLeaving, withTimeout } from './page-metrics.js'
import { round } from '../lib/measurement/units.js'
import { protocolMatchesMode } from '../lib/measurement/protocol.js'
import { startFilmstrip } from './filmstrip.js'
import { answerDialogs, cancelLogins } from './dialogs.js'
import { monotonicNow } from './clock.js'
import { clipped } from '../lib/runtime/text.js'

/** The addresses a meta refresh leaves a page for (about:blank, about:srcdoc's error page); the browsers refuse the rest. */
const REFRESH_LEAVES = /^(https?|about):/i

export { PageLoadError, ProbeError } from './page-metrics.js'
export { reuseOf } from '../lib/measurement/result.js'

// One probe run in one mode, in a fresh incognito context of the browser that
// holds that mode's flags. A run that fails is a result with a status, never
// an exception: a round records every run it attempted.

/** Browser version per browser process: asking costs a round trip per run otherwise. */
const versions = new WeakMap()

/**
 * @typedef {import('./network.js').RequestDetail} RequestDetail
 * @typedef {{
 *   pool: { browserName?: string, acquire?: (spec: import('./browsers/chromium.js').BrowserSpec) => Promise<import('puppeteer-core').Browser>,
 *     withDedicated: <T>(spec: any, fn: (b: import('puppeteer-core').Browser) => Promise<T>) => Promise<T>,
 *     newProfile?: () => Promise<string>, removeProfile?: (dir: string) => Promise<void>, forgetCache?: (dir: string) => Promise<void>,
 *     freshPage?: (b: import('puppeteer-core').Browser) => Promise<import('./browsers/chromium.js').FreshPage & { prepared: boolean }>,
 *     retire?: (c: import('puppeteer-core').BrowserContext) => Promise<void> },
 *   url: string,
 *   mode: import('../lib/measurement/modes.js').Mode,
 *   protocol?: import('../lib/measurement/modes.js').Mode,
 *   extraFlags?: string[],
 *   extraPrefs?: import('../lib/measurement/browsers/firefox.js').Prefs,
 *   trust?: import('./browsers/firefox.js').TrustedCa[],
 *   netns?: string | null,
 *   timeoutMs?: number,
 *   forceOrigins?: string[],
 *   altSvc?: Map<string, string | null> | null,
 *   netlogFile?: string | null,
 *   filmstrip?: boolean,
 *   guard?: import('./target-guard.js').TargetGuard | null,
 *   lab?: boolean,
 *   profile?: string | null,
 *   freshBrowser?: boolean,
 *   deadline?: number | null,
 *   log?: import('pino').Logger
 * }} MeasureOptions
 * pool: Chromium's (agents/browsers/chromium.js) or Firefox's (agents/browsers/firefox.js, browserName 'firefox');
 * extraFlags: Chromium switches beyond the arm's (a lab's); extraPrefs and trust: Firefox's
 *   preferences beyond the arm's and the authorities its profile trusts (a lab's);
 * lab: the page is a lab origin (lib/measurement/browsers/chromium.js modeFlags says what that changes);
 * profile: run in a browser of its own on this profile (pool.newProfile),
 *   in its default context, so what the browser learns outlives it;
 * freshBrowser: run in a browser of its own, just started, as the auto arm's
 *   visits are, so that a round's arms are compared like with like (a pooled
 *   browser that has loaded pages for a while is faster at its next load than
 *   one just started: bench/fresh-browser.js);
 * deadline: when the run's arm's time budget ends (on the agent's monotonic clock, agents/clock.js; agents/round-budget.js), for
 *   measurements of several loads;
 * filmstrip: capture the first view's frames (agents/filmstrip.js): the
 *   result gets the visual metrics and `filmstrip`, which the job runner
 *   uploads and replaces by a summary
 * @typedef {{ page: import('puppeteer-core').Page, network: import('./network.js').NetworkRecording,
 *   result: Record<string, any>, extra: Record<string, any>[], summarize: (r: Record<string, any>) => Promise<void>,
 *   infrastructure: (err: unknown) => Promise<import('./faults.js').InfrastructureError | null> }} StepContext
 *   infrastructure: the agent's fault behind an error a step caught, or null when it is the page's
 */

/**
 * `mode` is the arm a result is stored under; `protocol` is the protocol the
 * run is forced to and judged against, the mode's own unless an A/A monitor
 * runs both arms with one protocol.
 *
 * The frame every probe runs in: browser (pooled, or one of its own when a
 * net log is captured), fresh context, network recording, and the rule that
 * whatever fails becomes the result's status. `steps` fills in `result` and
 * may add further results of the same context (a repeat view) to `extra`.
 * `wall_ms` runs from asking for a fresh context to the run's results read:
 * what the run costs the agent's loop. A pooled browser's launch is not in
 * it, nor are making the context and closing it when the pool does those
 * between rounds (agents/browsers/chromium.js settle); `context` says which it was
 * (prepared: the pool's spare; ready_ms: how long the run waited for it).
 * With `guard`, the run reaches public addresses only (agents/target-guard.js),
 * and what the guard refused is said in its words.
 * @param {MeasureOptions & { probe?: string, view?: string }} opts
 * @param {(ctx: StepContext) => Promise<void>} steps
 * @returns {Promise<Record<string, any>[]>} the result, then any in `extra`
 */
export async function measure (opts, steps) {
  const { pool, url, mode, netns = null, forceOrigins = [], altSvc = null, netlogFile = null, guard = null, probe = 'page', view = 'first', profile = null, freshBrowser = false, log = pino({ level: 'silent' }) } = opts
  const protocol = opts.protocol ?? mode
  const plan = runPlan({ ...opts, pool, protocol, url, netns, forceOrigins, guard, netlogFile })
  const { spec } = plan
  const dedicated = plan.dedicated || Boolean(profile) || freshBrowser
  const since = monotonicNow()
  const result = emptyResult(mode, plan.flags, { probe, view })
  const forced = forcedOrigins(protocol, url, { forceOrigins })
  result.forced_origins = forced
  /** @type {Record<string, any>[]} */
  const extra = []
  const summarized = new WeakSet()
  let started = performance.now()

  /** @type {import('./faults.js').InfrastructureError | null} */
  let fault = null
  const run = async (/** @type {import('puppeteer-core').Browser} */ browser) => {
    started = performance.now()
    // Whose failure a failed run is depends on how far it got and on what
    // happened to the browser and the page's renderer (agents/faults.js).
    let navigating = false
    let rendererCrashed = false
    let context = null
    /** @type {StepContext['network'] | null} */
    let network = null
    /** @type {import('puppeteer-core').Page | null} */
    let page = null
    const summarize = async (/** @type {Record<string, any>} */ r) => {
      // Only called once the recording runs.
      summarized.add(r)
      Object.assign(r, await /** @type {StepContext['network']} */ (network).take())
    }
    try {
      if (!versions.has(browser)) versions.set(browser, await browser.version())
      result.browser_version = versions.get(browser)
      // A browser of the run's own (a net log's, a kept profile's, every
      // Firefox run's) closes right after: nothing to prepare ahead.
      const freshPage = dedicated ? undefined : pool.freshPage
      const pooled = Boolean(freshPage && pool.retire)
      if (dedicated) {
        // The browser's own context: a kept profile's learns on disk, where
        // an incognito context would forget it. Its first tab, which the
        // browser opened at start, blank: a new one would cost another
        // renderer (~200 ms on the 2-core test machine).
        const [blank] = await browser.defaultBrowserContext().pages()
        page = blank ?? await browser.defaultBrowserContext().newPage()
      } else if (freshPage && pooled) {
        const fresh = await freshPage(browser)
        ;({ context, page } = fresh)
        result.context = { prepared: fresh.prepared, ready_ms: round(performance.now() - started) }
      } else {
        context = await browser.createBrowserContext()
        page = await context.newPage()
      }
      page.once('error', () => { rendererCrashed = true })
      // A dialog is answered at once and noted on the result being loaded
      // then: the latest of the run's (a repeat view is added before its load).
      answerDialogs(page, () => extra.at(-1) ?? result)
      await cancelLogins(page, plan.browser)
      network = await plan.recordNetwork(page)
      navigating = true
      const infrastructure = (/** @type {unknown} */ err) => infrastructureFault(err, { browser, navigating, rendererCrashed })
      await steps({ page, network, result, extra, summarize, infrastructure })
    } catch (err) {
      fault = await infrastructureFault(err, { browser, navigating, rendererCrashed })
      if (!fault) {
        const doc = network?.mainDocument() ?? null
        Object.assign(result, judgeFailure(err, doc, { mode: protocol, forced, altSvc, unfinished: network?.unfinished() ?? [], busy: await busyPage(err, page, doc) }))
        // Anything but a page or probe failure (a protocol timeout, a
        // script that would not run) is recorded against the run, and is
        // also worth a look.
        if (!(err instanceof PageLoadError) && !(err instanceof ProbeError)) log.warn({ err, url, mode, probe }, 'measurement failed outside the page load')
      }
    } finally {
      if (network && !summarized.has(result)) await summarize(result).catch((err) => log.warn({ err, url }, 'reading the run\'s requests failed'))
      if (!result.observed_protocol && network) {
        // No page to ask (the load failed): say what the document came over, if anything.
        result.observed_protocol = network.documentProtocol()
        result.protocol_ok = protocolMatchesMode(result.observed_protocol, protocol)
      }
      // Firefox does not say why a request took its protocol (no alternateProtocolUsage).
      if (plan.browser === 'firefox') for (const r of [result, ...extra]) r.protocol_usage_unreported = true
      if (plan.browser === 'firefox' && protocol === 'h3') {
        Object.assign(result, judgeFirefoxH3(result, { documentUrl: network?.mainDocument()?.url ?? url, forced, altSvc }))
      }
      if (guard) for (const r of [result, ...extra]) guard.judge(r, { documentUrl: network?.mainDocument()?.url ?? url, since })
      // A page whose renderer is still held by its script is closed now,
      // not kept until the next round: it would spin beside the round's
      // next loads and skew them.
      if (context && !dedicated && pool.retire && !(page && isStuck(page))) await pool.retire(context)
      else await context?.close().catch((/** @type {any} */ err) => log.warn({ err, url }, 'closing browser context failed'))
    }
  }
  // A browser that cannot start, or that went away, is the agent's failure,
  // not the page's: it throws (an InfrastructureError) rather than being
  // recorded against the URL, and the round is run again.
  if (dedicated) await pool.withDedicated({ ...spec, profile }, run)
  else await run(await /** @type {NonNullable<typeof pool.acquire>} */ (pool.acquire)(/** @type {any} */ (spec)))
  if (fault) throw fault
  result.wall_ms = round(performance.now() - started)
  log.debug({ url, mode, probe, status: result.status, ttfb_ms: result.ttfb_ms, load_ms: result.load_ms, wall_ms: result.wall_ms }, 'measured')
  return [result, ...extra]
}

/**
 * Load `url` once in `mode` and return the result row.
 * @param {MeasureOptions} opts
 */
export async function measurePage (opts) {
  return (await measurePageViews({ ...opts, repeatView: false }))[0]
}

/**
 * The page probe: a cold load, and with `repeatView` a second navigation in
 * the same context (warm cache; the connection is reused where the browser
 * keeps it). A failed repeat view is its own failed result; the first view
 * stands. `allowEmpty`: an empty document counts as a load (loadAndRead).
 * @param {MeasureOptions & { repeatView?: boolean, allowEmpty?: boolean, view?: string }} opts view: the first load's (the auto arm's returning visit)
 */
export async function measurePageViews ({ repeatView = false, allowEmpty = false, ...opts }) {
  const { url, mode, timeoutMs = 30_000, altSvc = null } = opts
  const protocol = opts.protocol ?? mode
  const results = await measure({ ...opts, probe: 'page' }, async ({ page, network, result, extra, summarize, infrastructure }) => {
    const film = opts.filmstrip ? await startFilmstrip(page) : null
    try {
      await loadAndRead(page, url, protocol, timeoutMs, result, network, { allowEmpty })
    } catch (err) {
      await film?.stop()
      throw err
    }
    if (film) {
      const { metrics, filmstrip } = await film.finish({ deadline: opts.deadline ?? null })
      Object.assign(result, metrics, { filmstrip })
    }
    await summarize(result)
    if (!repeatView) return
    /** @type {Record<string, any>} */
    const repeat = { ...emptyResult(mode, result.flags, { probe: 'page', view: 'repeat' }), browser_version: result.browser_version, forced_origins: result.forced_origins }
    const started = performance.now()
    extra.push(repeat)
    try {
      // A URL with a fragment, asked for again from its own page, is a
      // navigation within the document (HTML's "navigate to a fragment"):
      // no load, and the repeat view would read the first view's figures.
      // Through a blank page it is a load of the document again, in the
      // same context, as a user who comes back to the URL gets.
      if (new URL(url).hash && sameDocument(url, page.url())) await page.goto('about:blank')
      await loadAndRead(page, url, protocol, timeoutMs, repeat, network, { allowEmpty })
    } catch (err) {
      // The browser going away fails the round, not the repeat view.
      const fault = await infrastructure(err)
      if (fault) throw fault
      const doc = network.mainDocument()
      Object.assign(repeat, judgeFailure(err, doc, { mode: protocol, forced: result.forced_origins, altSvc, unfinished: network.unfinished(), busy: await busyPage(err, page, doc) }))
    }
    await summarize(repeat)
    repeat.repeat = reuseOf(repeat.requests_detail)
    repeat.wall_ms = round(performance.now() - started)
  })
  if (repeatView && results.length === 1) {
    // Counted as a failed repeat view rather than left out, so the repeat
    // series shows every round that asked for one.
    const [first] = results
    results.push({
      ...emptyResult(mode, first.flags, { probe: 'page', view: 'repeat' }),
      browser_version: first.browser_version,
      forced_origins: first.forced_origins,
      error: `not run: the ${first.view} view failed (${first.error ?? first.status})`,
      ...(first.failure_kind ? { failure_kind: first.failure_kind } : {})
    })
  }
  return results
}

/**
 * Navigate, read the page metrics into `into` and judge the protocol. A
 * document that did not arrive whole fails the load (failure kind
 * truncated), whatever the browser made of it: its timings stay in `into`.
 * A 2xx document with an empty body gets a note (`into.notes`), and fails
 * the load (failure kind empty) unless `allowEmpty` (the monitor's
 * options.allow_empty): a page that renders nothing is rarely what was
 * meant to be measured, and its fast loads would flatter either protocol.
 * @param {import('puppeteer-core').Page} page
 * @param {string} url
 * @param {string} mode the protocol the run was forced to (an A/A arm's, not its label)
 * @param {number} timeoutMs
 * @param {Record<string, any>} into
 * @param {{ mainDocument: () => import('./network.js').DocumentOutcome | null, documentCount: () => number } | null} [network] the page's recording
 * @param {{ allowEmpty?: boolean, allowNoLoadEvent?: boolean }} [opts] allowNoLoadEvent: a load stopped before its load event
 *   (window.stop()) counts too, with no load time (a probe's warm-up, there for its connection)
 */
export async function loadAndRead (page, url, mode, timeoutMs, into, network = null, { allowEmpty = false, allowNoLoadEvent = false } = {}) {
  const crash = rendererCrash(page, url)
  const leaving = watchLeaving(page, url)
  const loaded = (async () => {
    const { httpStatus: status, request } = await load(page, url, timeoutMs)
    leaving.loaded(request)
    const documentsAtLoad = network?.documentCount() ?? null
    /** The read's own timeout, when it comes. @type {Error | null} */
    let readTimeout = null
    // A page that goes on to another while its metrics are read: Chromium
    // fails the read (the document went away), Firefox's never ends, and a
    // read that still ended would leave the next page's requests among the
    // run's. Either way the run fails, at once, with where the page went.
    const [read, refresh] = await Promise.race([
      withTimeout(Promise.all([collectPageMetrics(page), evaluateIsolated(page, metaRefresh)]), COLLECT_TIMEOUT_MS, 'reading page metrics', (message) => (readTimeout = new Error(message))),
      leaving.left
    ]).catch(async (err) => {
      if (err === readTimeout && !(await answers(page))) throw new PageLoadError(`the page stopped answering the agent after its load event: ${BUSY_PAGE}: ${url}`, { url })
      if (!NAVIGATED_AWAY.test(err?.message ?? '')) throw err
      // The recording's top-frame document is by now the one the page went
      // on to. A page with no request of its own (about:blank, a data: URL,
      // history.back() in a fresh tab) is only in the tab's address, which
      // may not have changed yet when the read fails.
      if (network && network.documentCount() !== documentsAtLoad) throw leftError(url, network.mainDocument()?.url)
      throw leftError(url, network ? addressWithoutRequest(page) : page.url())
    })
    // A meta refresh due sooner than a read may take leaves the page whether
    // or not it has fired yet: which comes first, the refresh or the end of
    // the read, is down to the machine's load, and the run's outcome must
    // not be. Only to an address a browser goes to from a page: one to a
    // script, a data: URL, a local file or another scheme is refused by
    // Chromium and Firefox alike, and the page stays.
    if (refresh && refresh.delay_s * 1000 < COLLECT_TIMEOUT_MS && REFRESH_LEAVES.test(refresh.url)) throw leftError(url, refresh.url)
    return /** @type {const} */ ([status, read])
  })()
  loaded.catch(() => {}) // when the renderer's crash settles the race first
  let httpStatus, read
  try {
    [httpStatus, read] = await Promise.race([loaded, crash.crashed])
  } finally {
    crash.dispose()
    leaving.dispose()
  }
  const { document_body_bytes: bodyBytes, document_url: readFrom, ...metrics } = read
  // Firefox reads on in such a document, and names its entry "document".
  if (readFrom && !/^https?:/i.test(readFrom)) throw leftError(url, addressWithoutRequest(page))
  Object.assign(into, metrics)
  into.protocol_ok = protocolMatchesMode(into.observed_protocol, mode)
  const doc = network?.mainDocument()
  if (doc?.viewer) throw new PageLoadError(viewerError(doc), { url })
  if (doc?.incomplete) throw new PageLoadError(`incomplete document: ${doc.incomplete}: ${doc.url}`, { url, failureKind: 'truncated' })
  // A load stopped before its load event (a script's window.stop() while
  // the page parses): Chromium ends the navigation there, with no load
  // event and, as often as not, none of the body read; it is neither an
  // empty document nor a load. (Firefox waits on: judgeFailure.)
  if (metrics.load_ms === null && !allowNoLoadEvent) throw new PageLoadError(`no load event: ${doc?.url ?? page.url()} stopped loading before its load event (a script calling window.stop() does this), so the page has no load time`, { url })
  if (isEmptyDocument(httpStatus, bodyBytes)) {
    const where = doc?.url ?? page.url()
    into.notes = [...(into.notes ?? []), {
      code: 'empty_document',
      message: `the document answered HTTP ${httpStatus} with an empty body${allowEmpty ? ' (allowed by the monitor\'s options.allow_empty)' : ''}`
    }]
    if (!allowEmpty) throw new PageLoadError(`empty document: ${where} answered HTTP ${httpStatus} with no body (set options.allow_empty to count such loads)`, { url, failureKind: 'empty' })
  }
  into.status = into.protocol_ok ? 'ok' : 'protocol_mismatch'
}

/**
 * Where a page went that asked for no document of its own (about:blank, a
 * data: URL, history.back() in a fresh tab): the tab's address, or
 * about:blank while the address is still the page's (it may not have
 * changed yet when the read fails; history.back() in Firefox leaves it).
 * @param {import('puppeteer-core').Page} page
 */
function addressWithoutRequest (page) {
  const address = page.url()
  return /^https?:/i.test(address) ? 'about:blank' : address
}

/**
 * Why a document the browser shows in a viewer of its own is not measured:
 * neither its bytes nor its paint are a page's.
 * @param {import('./network.js').DocumentOutcome} doc
 */
function viewerError (doc) {
  return `no page at ${doc.url}: the URL answered with ${doc.media_type}, which the browser shows in its ${doc.viewer}, not as a page (what loads and paints is the viewer); monitor a URL that answers with a page`
}

/**
 * A success answered with no body at all. 204 and 205 mean "no content" by
 * definition (and a navigation to one does not even leave about:blank).
 * @param {number | null} httpStatus
 * @param {number | null} bodyBytes the document's decoded body size (Navigation Timing)
 */
export function isEmptyDocument (httpStatus, bodyBytes) {
  return httpStatus !== null && httpStatus >= 200 && httpStatus < 300 && httpStatus !== 204 && httpStatus !== 205 && bodyBytes === 0
}

/**
 * The status, error and failure kind of a run that threw (never an agent
 * fault: agents/faults.js sorts those out first). A PageLoadError that names
 * its failure kind keeps it (empty, renderer_crashed, truncated). Beyond the
 * error's own status and message, two failures are recognised here
 * (details.failure_kind):
 *   - truncated: the document's body ended short of its Content-Length, or
 *     the network failed after its headers;
 *   - h3_unsupported: in h3 mode, a forced origin's document failed with a
 *     QUIC connection error before any response, and the origin's Alt-Svc
 *     (read in the redirect discovery, agents/redirects.js) offers no h3:
 *     not a failing H3 load, an origin without HTTP/3. Chromium gives up on
 *     such an origin by itself: at once when the port refuses UDP, after
 *     about 4 s of handshake when nothing answers, never the page timeout.
 * An origin whose Alt-Svc is unknown is never called unsupported.
 * A load that timed out after its document came whole names the requests
 * that had not finished by then (`unfinished`), those a load event waits
 * for first: an image that never answers, or one that asks for a login,
 * for which Chromium waits for its login prompt and reports no answer; with
 * none, it says the page fired no load event though nothing was left to
 * load (Firefox's run of a page that calls window.stop() as it parses).
 * @param {unknown} err
 * @param {import('./network.js').DocumentOutcome | null} doc the top frame's document
 * A timeout whose page did not answer the agent (`busy`: its renderer held
 * by a script) says so first: what the network shows then is what the
 * page did not read, not what did not arrive.
 * @param {{ mode: string, forced: string[], altSvc?: Map<string, string | null> | null, unfinished?: import('./network.js').Unfinished[], busy?: boolean }} ctx
 * @returns {{ status: string, error: string, failure_kind?: string }}
 */
export function judgeFailure (err, doc, { mode, forced, altSvc = null, unfinished = [], busy = false }) {
  const status = err instanceof PageLoadError || err instanceof ProbeError ? err.status : 'error'
  const message = err instanceof Error ? err.message : String(err)
  if (err instanceof PageLoadError && err.failureKind) return { status, error: message, failure_kind: err.failureKind }
  if (status === 'timeout' && busy) return { status, error: `${message}: the page did not answer the agent: ${BUSY_PAGE}` }
  // A page whose document never ends (it streams without end, or stalls
  // after its headers) is told from one that never answered.
  if (status === 'timeout' && doc?.arriving) {
    const got = doc.arrived_bytes > 0 ? ` (${doc.arrived_bytes.toLocaleString('en-US')} bytes by then)` : ''
    return { status, error: `${message}: the document answered, but its body was still arriving${got}` }
  }
  if (status === 'timeout' && err instanceof PageLoadError && doc?.responded && !doc.failed) {
    return { status, error: `${message}: ${unfinished.length ? unfinishedText(unfinished) : 'every request had finished, but the page fired no load event by then: a script may still be running, or one stopped the load (window.stop())'}` }
  }
  if (status !== 'error' || !doc || (err instanceof PageLoadError && err.httpStatus !== null)) return { status, error: message }
  if (doc.incomplete) return { status, error: `incomplete document: ${doc.incomplete}: ${doc.url}`, failure_kind: 'truncated' }
  if (mode === 'h3' && !doc.responded && QUIC_REFUSED.test(doc.failed ?? '') && forced.includes(hostPort(doc.url))) {
    const origin = new URL(doc.url).origin
    if (altSvc?.has(origin) && !advertisesH3(altSvc.get(origin))) {
      return { status, ...h3Unsupported(origin, /** @type {string} */ (doc.failed)) }
    }
  }
  return { status, error: message }
}

/**
 * Whether a load timed out on a page that does not answer the agent
 * (answers). Asked only of a document that answered: one that never did
 * (a server that hangs) is no page's script, and its round's time is not
 * spent on asking.
 * @param {unknown} err
 * @param {import('puppeteer-core').Page | null} page
 * @param {import('./network.js').DocumentOutcome | null} doc the top frame's document
 */
async function busyPage (err, page, doc) {
  return err instanceof PageLoadError && err.status === 'timeout' && page !== null && Boolean(doc?.responded) && !(await answers(page))
}

/** How many unfinished requests a timeout's error names; it counts the rest. */
const UNFINISHED_NAMED = 3
/** A URL in an error, at most (characters). */
const URL_IN_ERROR = 300

/**
 * The requests a timed-out load still waited for, in words.
 * @param {import('./network.js').Unfinished[]} unfinished at least one
 */
function unfinishedText (unfinished) {
  const named = unfinished.slice(0, UNFINISHED_NAMED).map((u) => `${clipped(u.url, URL_IN_ERROR)} (${u.responded ? 'answered, its body still arriving' : 'no answer'})`)
  const more = unfinished.length - named.length
  const n = unfinished.length
  return `${n === 1 ? '1 request' : `${n.toLocaleString('en-US')} requests`} had not finished by then: ${named.join(', ')}${more ? ` and ${more.toLocaleString('en-US')} more` : ''}`
}

/**
 * Firefox's H3 arm maps the page's origin to HTTP/3 as an alternative
 * service (lib/measurement/browsers/firefox.js modePrefs): where nothing
 * answers over UDP, Firefox gives no QUIC error as Chromium does but waits
 * out its QUIC idle timeout (30 s, measured against the lab's h2-only
 * port) and then falls back to TCP, or the load times out first. Such a run
 * of a forced origin whose Alt-Svc (agents/redirects.js) offers no h3 is
 * not a failing H3 load but an origin without HTTP/3: failure kind
 * h3_unsupported, as judgeFailure says for Chromium. An origin whose
 * Alt-Svc is unknown, or that offers h3, keeps its run's own status (a
 * fallback, a timeout).
 * @param {Record<string, any>} result a Firefox run of the H3 arm
 * @param {{ documentUrl: string, forced: string[], altSvc?: Map<string, string | null> | null }} ctx
 * @returns {{ status: string, error: string, failure_kind: string, protocol_ok: false } | null}
 */
export function judgeFirefoxH3 (result, { documentUrl, forced, altSvc = null }) {
  if (result.status === 'ok' || result.failure_kind || !['protocol_mismatch', 'timeout', 'error'].includes(result.status)) return null
  let origin
  try {
    if (!forced.includes(hostPort(documentUrl))) return null
    origin = new URL(documentUrl).origin
  } catch {
    return null
  }
  if (!altSvc?.has(origin) || advertisesH3(altSvc.get(origin))) return null
  const how = result.status === 'protocol_mismatch' ? `Firefox fell back to ${result.observed_protocol}` : result.status === 'timeout' ? 'the load timed out' : result.error
  return {
    status: 'error',
    error: `H3 not supported: ${origin} answered no QUIC and advertises no Alt-Svc h3 (${how})`,
    failure_kind: 'h3_unsupported',
    protocol_ok: false
  }
}

/**
 * Run one probe in each mode, in random order so neither protocol always goes
 * first (and, say, always meets a colder origin), and return the results in
 * the order they ran. An infrastructure fault in any mode (its browser did
 * not start or went away: agents/faults.js) fails the round as a whole, so
 * that it runs again with both arms moments apart: it is never a result.
 * With `protocol` (an A/A monitor) every mode is an arm run with that one
 * protocol: mode h2 is arm A, mode h3 arm B, each in its fresh context, and
 * each result says so in `arm_protocol`.
 * @param {Omit<MeasureOptions, 'mode'> & { modes?: import('../lib/measurement/modes.js').Mode[], random?: () => number,
 *   probe?: string, run?: (opts: MeasureOptions) => Promise<Record<string, any>[]> }} opts
 */
export async function runRound ({ modes = [...MODES], random = Math.random, probe = 'page', run, protocol, ...opts }) {
  const order = [...modes]
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[order[i], order[j]] = [order[j], order[i]]
  }
  const measureMode = run ?? ((o) => measurePageViews(o))
  /** @type {Record<string, any>[]} */
  const results = []
  for (const mode of order) {
    try {
      results.push(...await measureMode({ ...opts, mode, protocol }))
    } catch (err) {
      if (err instanceof InfrastructureError) err.message = `${mode} arm: ${err.message}`
      throw err
    }
  }
  if (protocol) for (const r of results) r.arm_protocol = protocol
  return results
}

/**
 * @param {string} mode
 * @param {string[]} flags
 * @param {{ probe?: string, view?: string }} [key]
 * @returns {Record<string, any>}
 */
export function emptyResult (mode, flags, { probe = 'page', view = 'first' } = {}) {
  return {
    ...emptyRow(mode, { probe, view }),
    flags,
    wall_ms: null,
    /** @type {RequestDetail[]} */
    requests_detail: [],
    /** @type {import('./network.js').OriginSeen[]} */
    origins: []
  }
}
