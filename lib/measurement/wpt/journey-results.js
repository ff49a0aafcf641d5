// A journey's WPT test (./journey-script.js) → its results, in the shape a
// Puppeteer agent submits them (agents/probes/journey.js): one for the
// whole journey (probe 'journey') and one per named step
// ('journey:<name>'), so that analysis, trends and export read them alike.
//
// The agent's upload has one set of files per recorded step (`1_…`,
// `1_2_…`): WPT step n is the journey step recorded[n − 1]. Per step:
//   - its time: from the step's start to its load event (pageData.loadTime),
//     or, for a click or script that loaded no page, to the end of its last
//     request (fullyLoaded). Typing, choosing and sleeps run between
//     recorded steps and are timed by nobody: a named step, and the whole
//     journey, last the sum of their recorded steps;
//   - for a step that loaded a page, that page's timings, read as for a
//     page load (./devtools.js: the base-page request, its protocol);
//   - its requests, and whether each rode a connection an earlier request of
//     the journey opened (the agent's socket id);
//   - a wait for an element (./journey-script.js) that never saw it: the
//     agent waits until the step's time limit and says nothing; the step
//     lacks the User Timing mark the condition sets, and the wait fails;
//   - its outcome: pageData.result 0 or 99999 (some request failed, the page
//     loaded) is a step done; any other result fails it, as the agent's
//     12999 for a step that loaded nothing and got no response.
// A failed step ends the arm's run there, as on a Puppeteer agent: the whole
// journey and the named step it was in fail with the step named, named steps
// before it stand, and those after it say they were not counted (the agent
// may have run them; h3lens counts a journey up to its first failure).
import { MAX_ERROR_LENGTH, storableText } from '../../runtime/text.js'
import { describeStep, judgedOrigins, judgeJourneyProtocol, namedSteps } from '../journey/steps.js'
import { journeyProbe, STEP_NAVIGATION_METRICS } from '../probes/journey.js'
import { emptyResult, reuseOf } from '../result.js'
import { loadedResult, markConnectionReuse, resultFromDevtools } from './devtools.js'
import { IMPLAUSIBLE } from '../checks.js'
import { WPT_TEST_TIMEOUT_S } from './job.js'
import { waitMark } from './journey-script.js'
import { ValidationError } from '../../runtime/errors.js'

/** What the agent's result codes that fail a step say. */
const RESULT_MEANING = Object.freeze({
  12999: 'no page loaded and no request succeeded',
  99997: 'the step timed out'
})

/** Why a recorded step may have loaded nothing, by action. */
const NOTHING_LOADED_HINT = /** @type {Record<string, string>} */ (Object.freeze({
  click: ': the element may not be there, or clicking it loads nothing',
  eval: ': the script may have failed, or it loads nothing'
}))

/**
 * @typedef {import('../journey/steps.js').Step} Step
 * @typedef {{ index: number, action: string, name: string | null, ok: boolean, status: 'ok' | 'error' | 'timeout', ms: number | null,
 *   error: string | null, navigated: boolean, url: string | null, ttfb_ms: number | null, load_ms: number | null }} Outcome
 *   ms: null for a step the agent does not time (typing, choosing, a sleep, a bound of a named step)
 * @typedef {{ wptStep: number, index: number, requests: Record<string, any>[], origins: Record<string, any>[], bytes: number,
 *   metrics: Record<string, any> | null, observed: string | null, ms: number, page: Record<string, any>, ttfbCheck: Record<string, any> | null }} Recorded
 *   ttfbCheck: how the step's navigation TTFB was cross-checked against the agent's own (./navigation.js), null without a navigation
 */

/**
 * @param {{ steps: Step[], step_timeout_ms?: number }} journey the journey as sent (the test's own copy)
 * @param {number[]} recorded the journey step index of each recorded WPT step (wptScript)
 * @param {Map<number, Record<string, any> | null>} devtools each WPT step's devtools requests, by step number
 * @param {{ mode: string, expected: string | null, agentError?: string | null, url: string, forcedOrigins: string[], labels?: string[],
 *   traces?: Map<number, import('./trace.js').TraceTimes | null> }} ctx
 *   expected: the arm's protocol (null: any counts); url: the monitor URL; forcedOrigins: the origins the arm forces;
 *   labels: each recorded step's event name in the script, checked against the upload's; traces: each WPT step's trace times
 * @returns {Record<string, any>[]} the whole journey's result, then each named step's
 * @throws {ValidationError} (field `file`) when a step of the upload is another step of the script
 */
export function journeyResults (journey, recorded, devtools, { mode, expected, agentError = null, url, forcedOrigins, labels = [], traces = new Map() }) {
  const protocol = expected ?? 'auto'
  const judged = judgedOrigins(journey, url, forcedOrigins)
  /** @type {Set<number>} the sockets of the journey's steps so far */
  const seenSockets = new Set()
  /** @type {Map<number, Recorded>} by journey step index */
  const byIndex = new Map()
  /** @type {Outcome[]} */
  const outcomes = []
  let browserVersion = null
  const wptStepOf = new Map(recorded.map((index, i) => [index, i + 1]))

  for (const [index, step] of journey.steps.entries()) {
    const base = { index, action: step.action, name: step.action.startsWith('measure_') ? null : step.name ?? null, navigated: false, url: null, ttfb_ms: null, load_ms: null }
    const n = wptStepOf.get(index)
    if (n === undefined) {
      // A wait for an element ended the recorded step before it, and set its mark when the element was there.
      const waited = step.action === 'wait_for' && step.selector !== undefined ? byIndex.get(index - 1) : undefined
      if (waited && num(waited.page[`userTime.${waitMark(index)}`]) === null) {
        const limitS = Math.min(WPT_TEST_TIMEOUT_S, Math.ceil((journey.step_timeout_ms ?? WPT_TEST_TIMEOUT_S * 1000) / 1000))
        outcomes.push({
          ...base,
          ok: false,
          status: 'timeout',
          ms: null,
          error: `${describeStep(step, index)}: no element matches ${step.selector} within ${limitS * 1000} ms (the WebPageTest agent waited for it until the step's time limit)`
        })
        break
      }
      // Run between recorded steps; the agent reports nothing of it.
      outcomes.push({ ...base, ok: true, status: 'ok', ms: null, error: null })
      continue
    }
    const d = devtools.get(n) ?? null
    const what = describeStep(step, index)
    if (!d) {
      outcomes.push({ ...base, ok: false, status: 'error', ms: null, error: `${what}: the WebPageTest agent stopped before it recorded this step${agentError ? `: ${agentError}` : ''}` })
      break
    }
    const page = isObject(d.pageData) ? d.pageData : {}
    const label = labels[n - 1]
    if (label && typeof page.eventName === 'string' && page.eventName !== `Step_${n}` && page.eventName !== label) {
      throw new ValidationError(`result.zip: step ${n} is "${page.eventName.slice(0, 100)}", but the script's step ${n} is "${label}"`, 'file')
    }
    const row = resultFromDevtools(d, { mode, view: 'first', expected, trace: traces.get(n) ?? null })
    browserVersion ??= row.browser_version
    // The agent's own requests (its step markers) are left out already (./devtools.js).
    const requests = row.details.requests
    markConnectionReuse(requests, seenSockets)
    const navigated = Number.isInteger(page.final_base_page_request) && row.observed_protocol !== null
    const ms = positive(page.loadTime) ?? positive(page.fullyLoaded) ?? 0
    const metrics = navigated ? Object.fromEntries(STEP_NAVIGATION_METRICS.map((k) => [k, row[k] ?? null])) : null
    byIndex.set(index, { wptStep: n, index, requests, origins: row.details.origins, bytes: row.bytes, metrics, observed: navigated ? row.observed_protocol : null, ms, page, ttfbCheck: navigated ? row.details.wpt?.ttfb_check ?? null : null })
    const outcome = { ...base, navigated, url: navigated ? text(page.final_url) : null, ttfb_ms: metrics?.ttfb_ms ?? null, load_ms: metrics?.load_ms ?? null, ms }
    const result = num(page.result)
    if (!loadedResult(result)) {
      const meaning = /** @type {Record<number, string>} */ (RESULT_MEANING)[result ?? -1]
      const said = text(page.error) ?? agentError
      outcomes.push({
        ...outcome,
        ok: false,
        status: result === 99997 ? 'timeout' : 'error',
        error: `${what}: the WebPageTest agent reported result ${result ?? 'none'}${meaning ? ` (${meaning})` : ''}${said ? `: ${said}` : ''}`
      })
      break
    }
    if (!requests.length) {
      outcomes.push({
        ...outcome,
        ms: null,
        ok: false,
        status: 'error',
        error: `${what}: nothing loaded (the WebPageTest agent recorded no request of the page for this step${NOTHING_LOADED_HINT[step.action] ?? ''})`
      })
      break
    }
    if (navigated && row.error?.startsWith(`${IMPLAUSIBLE}: `)) {
      outcomes.push({ ...outcome, ok: false, status: 'error', error: `${what}: ${row.error}` })
      break
    }
    outcomes.push({ ...outcome, ok: true, status: 'ok', error: null })
  }

  const lastDocument = [...byIndex.values()].reverse().find((r) => r.observed)?.observed ?? null
  const common = { browser_version: browserVersion }
  const whole = wholeJourney(journey, outcomes, [...byIndex.values()], { mode, protocol, judged, lastDocument, agentError, common })
  const steps = namedSteps(journey).map((named) => namedStepResult(named, outcomes, byIndex, { mode, protocol, judged, lastDocument, common }))
  return [whole, ...steps]
}

/**
 * @param {{ steps: Step[] }} journey
 * @param {Outcome[]} outcomes
 * @param {Recorded[]} recorded
 * @param {{ mode: string, protocol: string, judged: Set<string>, lastDocument: string | null, agentError: string | null, common: Record<string, any> }} ctx
 */
function wholeJourney (journey, outcomes, recorded, { mode, protocol, judged, lastDocument, agentError, common }) {
  const r = { ...emptyResult(mode, { probe: journeyProbe(), view: 'first' }), ...common }
  const failed = outcomes.find((o) => !o.ok) ?? null
  fill(r, recorded)
  r.details.journey = { steps: outcomes, failed_step: failed?.index ?? null, not_run: journey.steps.length - outcomes.length }
  judgeJourneyProtocol(r, r.details.requests, protocol, judged, lastDocument)
  if (failed) return failWith(r, failed)
  if (agentError) return failWith(r, { status: 'error', error: `the WebPageTest agent reported an error after the journey's last step: ${agentError}` })
  r.details.samples = [sum(recorded.map((s) => s.ms))]
  return r
}

/**
 * @param {import('../journey/steps.js').NamedStep} named
 * @param {Outcome[]} outcomes
 * @param {Map<number, Recorded>} byIndex
 * @param {{ mode: string, protocol: string, judged: Set<string>, lastDocument: string | null, common: Record<string, any> }} ctx
 */
function namedStepResult (named, outcomes, byIndex, { mode, protocol, judged, lastDocument, common }) {
  const r = { ...emptyResult(mode, { probe: journeyProbe(named.name), view: 'first' }), ...common }
  const own = outcomes.filter((o) => o.index >= named.from && o.index <= named.to)
  const recorded = own.flatMap((o) => byIndex.get(o.index) ?? [])
  const failed = own.find((o) => !o.ok)
  fill(r, recorded)
  r.details.step = { name: named.name, steps: [named.from, named.to], navigations: own.filter((o) => o.navigated).map((o) => o.url) }
  if (!own.length) {
    const stop = outcomes.find((o) => !o.ok)
    return failWith(r, { status: stop?.status === 'timeout' ? 'timeout' : 'error', error: `not run: ${stop?.error ?? 'an earlier step failed'}` })
  }
  // The step's page timings are those of the last page it loaded.
  const nav = [...recorded].reverse().find((s) => s.metrics)
  for (const k of STEP_NAVIGATION_METRICS) r[k] = nav?.metrics?.[k] ?? null
  judgeJourneyProtocol(r, r.details.requests, protocol, judged, nav?.observed ?? lastDocument)
  if (failed) return failWith(r, failed)
  r.details.samples = [sum(recorded.map((s) => s.ms))]
  return r
}

/**
 * A result's requests, bytes and connection reuse: its recorded steps'.
 * @param {Record<string, any>} r
 * @param {Recorded[]} recorded
 */
function fill (r, recorded) {
  const requests = recorded.flatMap((s) => s.requests)
  r.requests = requests.length
  r.bytes = sum(recorded.map((s) => s.bytes))
  const withProtocol = requests.filter((q) => q.protocol)
  if (withProtocol.length) {
    const h3 = withProtocol.filter((q) => q.protocol === 'h3')
    r.h3_request_share = h3.length / withProtocol.length
    const bytes = sum(withProtocol.map((q) => q.bytes))
    r.h3_byte_share = bytes > 0 ? sum(h3.map((q) => q.bytes)) / bytes : null
  }
  r.details = {
    requests,
    origins: mergeOrigins(recorded.flatMap((s) => s.origins)),
    repeat: reuseOf(requests),
    wpt: { steps: recorded.map((s) => ({ step: s.wptStep, index: s.index, result: num(s.page.result), event_name: text(s.page.eventName), ttfb_check: s.ttfbCheck })) }
  }
}

/**
 * @param {Record<string, any>} r
 * @param {{ status: string, error: string | null }} failure
 */
function failWith (r, failure) {
  r.status = failure.status
  // A result's error is at most MAX_ERROR_LENGTH, as an agent's and an
  // import's are: these add a step's words to what the agent said.
  r.error = failure.error === null ? null : storableText(failure.error, MAX_ERROR_LENGTH)
  r.protocol_ok = false
  return r
}

/**
 * One entry per origin, its request counts added up.
 * @param {Record<string, any>[]} origins
 */
function mergeOrigins (origins) {
  const byOrigin = new Map()
  for (const o of origins) {
    const seen = byOrigin.get(o.origin)
    if (!seen) {
      byOrigin.set(o.origin, { ...o, requests: { ...o.requests } })
      continue
    }
    for (const k of Object.keys(o.requests)) seen.requests[k] = (seen.requests[k] ?? 0) + o.requests[k]
    if (o.alt_svc && !seen.alt_svc) Object.assign(seen, { alt_svc: o.alt_svc, h3_advertised: o.h3_advertised })
  }
  return [...byOrigin.values()].slice(0, 200)
}

// v: a value of the agent's JSON, not yet checked.
const isObject = (/** @type {any} */ v) => v !== null && typeof v === 'object' && !Array.isArray(v)
const num = (/** @type {any} */ v) => (typeof v === 'number' && Number.isFinite(v) ? v : null)
const positive = (/** @type {any} */ v) => (num(v) !== null && v > 0 && v < 3600000 ? v : null)
const text = (/** @type {any} */ v) => (typeof v === 'string' && v !== '' ? v.slice(0, 4000) : null)
const sum = (/** @type {number[]} */ xs) => Math.round(xs.reduce((a, b) => a + b, 0) * 1000) / 1000
