// Where a monitor URL's document really comes from. Chromium forces QUIC only
// on the origins it is told (--origin-to-force-quic-on), so a URL that
// redirects to another origin (example.com → www.example.com) would load its
// document over HTTP/2 in the H3 arm. Before a job's runs, the redirect chain
// is followed once in the H2 arm's browser, reading response headers only:
// every origin on it is forced in the H3 arm, and each one's Alt-Svc tells
// an origin without HTTP/3 from a failing one.
import { baseFlags, modeFlags } from '../lib/measurement/browsers/chromium.js'
import { withTimeout } from './page-metrics.js'

/** Redirects followed at most; Chromium itself gives up after 20. */
const MAX_HOPS = 20
/** How long a chain is reused for the same URL and flags. */
export const CHAIN_TTL_MS = 5 * 60_000

/**
 * @typedef {{ url: string, status: number | null, alt_svc: string | null, error: string | null }} Hop
 * @typedef {{ hops: Hop[], origins: string[], altSvc: Map<string, string | null>, error: string | null }} Chain
 */

/**
 * The pooled H2 browser the redirect discovery runs in (and the private-
 * target guard's check, agents/job-runner.js guardInForce): QUIC off, with
 * the run's confinement.
 * @param {{ url: string, extraFlags?: string[], netns?: string | null, guard?: import('./target-guard.js').TargetGuard | null }} o
 * @returns {import('./browsers/chromium.js').BrowserSpec}
 */
export function discoveryBrowser ({ url, extraFlags = [], netns = null, guard = null }) {
  return { flags: [...baseFlags(), ...modeFlags('h2', url), ...extraFlags, ...(guard?.browser.flags ?? [])], netns, localState: guard?.browser.localState ?? null }
}

/**
 * Follow `url`'s redirects in a fresh context of the pooled H2 browser: each
 * hop's response is intercepted (DevTools Fetch domain, response stage), a
 * redirect is let through, and the final response is aborted before its body.
 * Failure is never thrown: the chain then has what was seen, and an error.
 * With `guard`, the hops reach public addresses only, as the runs' do.
 * @param {{ pool: { acquire: (spec: import('./browsers/chromium.js').BrowserSpec) => Promise<import('puppeteer-core').Browser> },
 *   url: string, extraFlags?: string[], netns?: string | null, timeoutMs?: number, guard?: import('./target-guard.js').TargetGuard | null }} opts
 * @returns {Promise<Chain>}
 */
export async function discoverChain ({ pool, url, extraFlags = [], netns = null, timeoutMs = 10_000, guard = null }) {
  /** @type {Hop[]} */
  const hops = []
  let error = null
  let context = null
  try {
    const browser = await pool.acquire(discoveryBrowser({ url, extraFlags, netns, guard }))
    context = await browser.createBrowserContext()
    const page = await context.newPage()
    const cdp = await page.createCDPSession()
    let finished = false
    /** @type {Promise<string | null>} the error that ended the chain, or null */
    const done = new Promise((resolve) => {
      const finish = (/** @type {string | null} */ why) => { finished = true; resolve(why) }
      cdp.on('Fetch.requestPaused', (e) => {
        if (finished) return
        const altSvc = (e.responseHeaders ?? []).find((h) => h.name.toLowerCase() === 'alt-svc')?.value ?? null
        hops.push({ url: e.request.url, status: e.responseStatusCode ?? null, alt_svc: altSvc, error: e.responseErrorReason ?? null })
        const redirect = e.responseStatusCode !== undefined && e.responseStatusCode >= 300 && e.responseStatusCode < 400 &&
          (e.responseHeaders ?? []).some((h) => h.name.toLowerCase() === 'location')
        if (redirect && hops.length < MAX_HOPS) {
          cdp.send('Fetch.continueRequest', { requestId: e.requestId }).catch((err) => finish(err.message))
          return
        }
        finish(e.responseErrorReason ?? null)
        cdp.send('Fetch.failRequest', { requestId: e.requestId, errorReason: 'Aborted' }).catch(() => {})
      })
      // A request that fails before any response (refused, DNS) never pauses.
      cdp.on('Network.loadingFailed', (e) => { if (e.type === 'Document' && !finished) finish(e.errorText || 'failed') })
    })
    await cdp.send('Network.enable')
    await cdp.send('Fetch.enable', { patterns: [{ urlPattern: '*', resourceType: 'Document', requestStage: 'Response' }] })
    page.goto(url).catch(() => {}) // aborted on purpose; the hops are what counts
    error = await withTimeout(done, timeoutMs, `following the redirects of ${url}`)
  } catch (/** @type {any} */ err) {
    error = err.message
  } finally {
    await context?.close().catch(() => {})
  }
  /** @type {string[]} */
  const origins = []
  const altSvc = new Map()
  for (const hop of hops) {
    const origin = new URL(hop.url).origin
    if (!origins.includes(origin)) origins.push(origin)
    // A hop that answered says whether its origin offers h3; the first answer counts.
    if (hop.status !== null && !altSvc.has(origin)) altSvc.set(origin, hop.alt_svc)
  }
  return { hops, origins, altSvc, error }
}

/**
 * discoverChain, remembered per URL, flags and namespace for CHAIN_TTL_MS:
 * a monitor's redirects change rarely, and every job would otherwise pay one
 * more navigation. A chain that failed is not remembered.
 * @param {{ now?: () => number }} [opts]
 */
export function createChainCache ({ now = Date.now } = {}) {
  /** @type {Map<string, { at: number, chain: Promise<Chain> }>} */
  const cache = new Map()
  /** @param {Parameters<typeof discoverChain>[0]} opts */
  return async function chainOf (opts) {
    const key = JSON.stringify([opts.url, opts.extraFlags ?? [], opts.netns ?? null, Boolean(opts.guard)])
    const hit = cache.get(key)
    if (hit && now() - hit.at < CHAIN_TTL_MS) return hit.chain
    for (const [k, v] of cache) if (now() - v.at >= CHAIN_TTL_MS) cache.delete(k)
    const chain = discoverChain(opts)
    cache.set(key, { at: now(), chain })
    const found = await chain
    if (found.error) cache.delete(key)
    return found
  }
}
