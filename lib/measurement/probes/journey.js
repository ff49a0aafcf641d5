// The journey probe: a multi-step user flow (log in, search, check out) run
// once per arm in a fresh context, as the monitor's `journey` describes it
// (lib/measurement/journey/steps.js checks it; agents/probes/journey.js
// runs it). Each round stores one result for the whole journey and one per
// named step; the step is part of the probe's key:
//
//   probe 'journey'         the whole journey, first step to last
//   probe 'journey:<name>'  one named step (a step with `name`, or the steps
//                           between measure_start and measure_end)
//
// Why in the probe and not a column of its own: results, round summaries,
// rollups and net logs are keyed (job, mode, view, probe), and every query of
// the comparison, trends and export selects by probe. A step in the probe
// keeps one result per (job, mode, view, probe, step) and the matched-round
// machinery as it is, with no key to rebuild on tables that may be
// compressed TimescaleDB hypertables (which refuse new constraints). A step
// name cannot hold ':', so the split is unambiguous.
import { MODES } from '../modes.js'

export const JOURNEY_PROBE = 'journey'
/** A step's name: what follows 'journey:' in its results' probe. */
export const STEP_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$/

/** Bounds of a journey (docs/JOURNEYS.md). */
export const JOURNEY_LIMITS = Object.freeze({
  steps: 30,
  // Each step's budget, and the whole journey's, in ms.
  stepTimeoutMs: Object.freeze({ default: 15_000, min: 1000, max: 60_000 }),
  timeoutMs: Object.freeze({ default: 60_000, min: 1000, max: 180_000 }),
  selectorChars: 500,
  textChars: 2000,
  scriptChars: 10_000,
  waitMs: 60_000,
  // A step's outcome as a trial reports it: the address it reached, at most.
  stepUrlChars: 4096
})

/**
 * The page timings a step that loaded a page keeps: its last navigation's,
 * whoever measured it (agents/probes/journey.js, lib/measurement/wpt/journey-results.js).
 */
export const STEP_NAVIGATION_METRICS = Object.freeze(['ttfb_ms', 'dns_ms', 'connect_ms', 'tls_ms', 'dcl_ms', 'load_ms', 'fcp_ms', 'lcp_ms'])

/** @type {import('./index.js').Probe} */
export const journey = Object.freeze({
  id: JOURNEY_PROBE,
  label: 'Journey',
  hint: 'a multi-step user flow, step by step',
  // Arms: every arm. The auto arm runs the journey as a first visit and
  // again as a returning visit, as the page probe's visits (agents/visits.js).
  modes: MODES,
  // A step's requests are a range of the browser's recording of requests,
  // and only Chromium's has marks to cut it by (agents/probes/journey.js).
  browsers: Object.freeze(/** @type {const} */ (['chromium'])),
  samplesMetric: 'step_ms',
  // An outlier is judged by the step's (or the whole journey's) duration.
  outlier: Object.freeze({ label: 'step ms', rule: 'first_sample', column: null }),
  // The journey itself is a field of the monitor (`journey`), not an
  // option: it holds secrets, sealed when stored (lib/measurement/journey/secrets.js),
  // and its navigate URLs are checked by the private-target guard with the
  // monitor URL (lib/store/monitors.js).
  options: Object.freeze({}),
  defaults: Object.freeze({}),
  targets: Object.freeze([]),
  check () {},
  effective () {
    return {}
  }
})

/**
 * The probe of a step's results, or of the whole journey's (no name).
 * @param {string | null} [step]
 */
export function journeyProbe (step = null) {
  return step === null ? JOURNEY_PROBE : `${JOURNEY_PROBE}:${step}`
}

/**
 * A stored probe value split into its probe and step: 'journey:login' →
 * { probe: 'journey', step: 'login' }; 'page' → { probe: 'page', step: null }.
 * @param {string} probe
 * @returns {{ probe: string, step: string | null }}
 */
export function splitProbe (probe) {
  const i = probe.indexOf(':')
  return i < 0 ? { probe, step: null } : { probe: probe.slice(0, i), step: probe.slice(i + 1) }
}

/**
 * Whether a stored probe value is a journey's (the whole or a step).
 * @param {string} probe
 */
export function isJourneyProbe (probe) {
  return probe === JOURNEY_PROBE || (probe.startsWith(`${JOURNEY_PROBE}:`) && STEP_NAME.test(probe.slice(JOURNEY_PROBE.length + 1)))
}

/** JSON-schema pattern of a stored probe value: a catalogue probe, or a journey step. */
export const STEP_PROBE_PATTERN = `^${JOURNEY_PROBE}:[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$`
