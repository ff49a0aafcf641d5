// The parallel probe (the Dropbox method): a warm-up navigation to the
// monitor URL establishes the connection, then `count` requests go out at
// once on it. Each request's time is one sample; percentiles are over
// requests, not rounds.
import { measure, loadAndRead } from '../measure.js'
import { parallelFetch } from '../page/parallel-fetch.js'
import { ProbeError, evaluateIsolated, withTimeout } from '../page-metrics.js'
import { round } from '../../lib/measurement/units.js'
import { protocolMatchesMode } from '../../lib/measurement/protocol.js'

/**
 * @param {import('../measure.js').MeasureOptions & { targetUrl?: string, count?: number }} opts
 */
export async function measureParallel ({ targetUrl, count = 5, ...opts }) {
  const { url, mode, timeoutMs = 30_000 } = opts
  const protocol = opts.protocol ?? mode
  const target = targetUrl ?? url
  return measure({ ...opts, probe: 'parallel' }, async ({ page, result, network, summarize }) => {
    result.target_url = target
    await warmUp(page, url, protocol, timeoutMs, result, network)
    const timeout = (/** @type {string} */ message) => new ProbeError(message, { url: target, probe: 'parallel', status: 'timeout' })
    const answers = await withTimeout(evaluateIsolated(page, parallelFetch, target, count), timeoutMs, `${count} parallel requests`, timeout)
    await summarize(result)
    const requests = result.requests_detail.filter((/** @type {import('../network.js').RequestDetail} */ r) => r.url === target && r.method === 'GET')
    result.samples = answers.filter((a) => a.error === null && a.status < 400).map((a) => round(a.ms))
    judgeProtocol(result, requests, protocol)
    const failed = answers.filter((a) => a.error !== null || a.status >= 400)
    if (failed.length) {
      const why = failed[0].error ?? `HTTP ${failed[0].status}`
      throw new ProbeError(`${failed.length} of ${count} parallel requests to ${target} failed: ${why}`, { url: target, probe: 'parallel' })
    }
  })
}

/**
 * The navigation before a probe: its connection story goes into the result
 * (dns, connect, tls, ttfb: what the RTT accounting reads), the rest of its
 * timings and requests into details.warmup.
 * @param {import('puppeteer-core').Page} page
 * @param {string} url
 * @param {string} mode
 * @param {number} timeoutMs
 * @param {Record<string, any>} result
 * @param {{ take: () => Promise<Record<string, any>>, mainDocument: () => import('../network.js').DocumentOutcome | null, documentCount: () => number }} network
 */
export async function warmUp (page, url, mode, timeoutMs, result, network) {
  /** @type {Record<string, any>} the navigation's figures, as loadAndRead reads them */
  const nav = {}
  try {
    // The warm-up is there for its connection: an empty page, or one that
    // stops its own load, serves as well.
    await loadAndRead(page, url, mode, timeoutMs, nav, network, { allowEmpty: true, allowNoLoadEvent: true })
  } finally {
    const seen = await network.take()
    result.warmup = {
      url,
      status: nav.status ?? 'error',
      observed_protocol: nav.observed_protocol ?? null,
      load_ms: nav.load_ms ?? null,
      requests: seen.requests,
      // Kept, and cut, as a page's requests are when the round is sent (lib/measurement/result.js withinRoundLimit).
      requests_detail: seen.requests_detail
    }
    result.origins = seen.origins
    for (const k of ['dns_ms', 'connect_ms', 'tls_ms', 'ttfb_ms']) result[k] = nav[k] ?? null
  }
}

/**
 * A probe's result counts for its mode only if every one of its requests used
 * the mode's protocol; otherwise the first one that did not is reported.
 * @param {Record<string, any>} result
 * @param {{ protocol: string | null }[]} requests
 * @param {string} mode
 */
export function judgeProtocol (result, requests, mode) {
  const wrong = requests.find((r) => !protocolMatchesMode(r.protocol, mode))
  result.observed_protocol = (wrong ?? requests[0])?.protocol ?? null
  result.protocol_ok = requests.length > 0 && !wrong
  result.status = result.protocol_ok ? 'ok' : 'protocol_mismatch'
}

/** @type {import('./index.js').ProbeRunner} */
export function run (o, { options }) {
  return measureParallel({ ...o, targetUrl: options.parallel_url, count: options.parallel_requests })
}
