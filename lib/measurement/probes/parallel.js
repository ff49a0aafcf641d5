// The parallel probe: after a warm-up navigation, N requests sent at once on
// the page's connection; each request's duration is a sample of request_ms.
import { FORCED_MODES } from '../modes.js'
import { wholeNumber } from './option-checks.js'

export const PARALLEL_REQUESTS = Object.freeze({ default: 5, min: 1, max: 50 })
/** The lab origin's no-op endpoint (an empty 204), a cheap target for the requests. */
export const LAB_NOOP_PATH = '/noop'

/** @type {import('./index.js').Probe} */
export const parallel = Object.freeze({
  id: 'parallel',
  label: 'Parallel requests',
  hint: 'N requests on one connection',
  // Arms: the forced ones. Its requests reuse the warm-up's connection, so an
  // unforced arm would only repeat the warm-up's protocol choice, which the
  // page probe's auto arm shows.
  modes: FORCED_MODES,
  samplesMetric: 'request_ms',
  // An outlier is judged by the slowest of the parallel requests.
  outlier: Object.freeze({ label: 'slowest request ms', rule: 'max_sample', column: null }),
  options: Object.freeze({
    parallel_requests: { type: 'integer', minimum: PARALLEL_REQUESTS.min, maximum: PARALLEL_REQUESTS.max, description: `parallel probe: requests sent at once after the warm-up navigation (default ${PARALLEL_REQUESTS.default})` },
    parallel_url: { type: 'string', minLength: 1, maxLength: 2048, description: `parallel probe: URL the requests go to (default: the monitor URL; the lab has ${LAB_NOOP_PATH}, an empty 204)` }
  }),
  defaults: Object.freeze({ parallel_requests: PARALLEL_REQUESTS.default }),
  targets: Object.freeze(['parallel_url']),
  check (options) {
    wholeNumber(options, 'parallel_requests', PARALLEL_REQUESTS)
  },
  effective (options, pageUrl) {
    return {
      parallel_requests: options.parallel_requests ?? PARALLEL_REQUESTS.default,
      // Stored options are absolute already; relative ones (a path) are
      // resolved against the page, as the API does when it stores them.
      parallel_url: new URL(options.parallel_url ?? pageUrl, pageUrl).toString()
    }
  }
})
