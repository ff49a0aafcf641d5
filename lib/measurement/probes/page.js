// The page probe: one full navigation per arm (and a repeat view on request).
// Its results carry the page timings as columns; none as samples.
import { MODES } from '../modes.js'
import { trueOrFalse } from './option-checks.js'

/** @type {import('./index.js').Probe} */
export const page = Object.freeze({
  id: 'page',
  label: 'Page load',
  hint: 'full navigation',
  // Arms: every arm, the auto arm as a visit sequence (agents/visits.js).
  modes: MODES,
  samplesMetric: null,
  // An outlier is judged by the page's load time.
  outlier: Object.freeze({ label: 'load_ms', rule: 'column', column: 'load_ms' }),
  options: Object.freeze({
    allow_empty: { type: 'boolean', description: 'page probe: a 2xx document with an empty body counts as a load (default false: it is an error, details.failure_kind empty); either way the result carries a note' }
  }),
  defaults: Object.freeze({ allow_empty: false }),
  targets: Object.freeze([]),
  check (options) {
    trueOrFalse(options, 'allow_empty')
  },
  effective (options) {
    return { allow_empty: options.allow_empty ?? page.defaults.allow_empty }
  }
})
