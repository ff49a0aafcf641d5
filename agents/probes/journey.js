// The journey probe: the monitor's steps, run one after the other in one
// fresh context per arm (agents/journey/actions.js does each action). One
// result for the whole journey (probe 'journey') and one per named step
// (probe 'journey:<name>'), each with what its own steps did: duration, the
// navigation's timings when it loaded a page, requests and bytes, the
// protocols its requests used and how its connections were reused.
//
// Durations are the steps' own: a step runs from its action's start to its
// end (a navigation's load event; for an action that started none, the
// action's return). The agent's reading of a page's metrics after a
// navigation is in no step, so a named step, and the whole journey, last
// the sum of their steps.
//
// A failed step ends the arm's run there: the whole journey and the named
// step it was in fail with the step named ("step 4 (click #buy): no element
// matches #buy within 15000 ms"), steps before it stand, named steps after
// it are results that say they were not run. Failures are data, as a page's.
import { measure, emptyResult, reuseOf } from '../measure.js'
import { ACTION_RUNNERS, StepError } from '../journey/actions.js'
import { collectPageMetrics, COLLECT_TIMEOUT_MS, evaluateIsolated, withTimeout } from '../page-metrics.js'
import { maskFields } from '../page/mask-fields.js'
import { describeStep, judgedOrigins, judgeJourneyProtocol, MARKERS, namedSteps } from '../../lib/measurement/journey/steps.js'
import { journeyProbe, STEP_NAVIGATION_METRICS } from '../../lib/measurement/probes/journey.js'
import { round } from '../../lib/measurement/units.js'
import { isPageDocument } from '../../lib/measurement/protocol-reason.js'
import { MIN_LOAD_MS } from '../round-budget.js'
import { monotonicNow } from '../clock.js'

/** An action that ignores its own timeout is given up this long after it. */
const ACTION_SLACK_MS = 2000

/**
 * @typedef {import('../journey/actions.js').RunnableStep} RunnableStep
 * @typedef {{ steps: RunnableStep[], step_timeout_ms: number, timeout_ms: number }} RunnableJourney
 * @typedef {{ index: number, action: string, name: string | null, ok: boolean, status: 'ok' | 'error' | 'timeout', ms: number,
 *   error: string | null, navigated: boolean, url: string | null, metrics: Record<string, any> | null, from: number, to: number }} StepOutcome
 *   from, to: the network recording's marks around the step
 */

/**
 * The journey probe's measurement, as the agent finds it (agents/probes/index.js):
 * the monitor's journey with its secrets opened (the claim carries them); the
 * auto arm runs it as a first and a returning visit.
 * @type {import('./index.js').ProbeRunner}
 */
export function run (o, { job }) {
  if (!job.journey?.steps?.length) throw new Error('the journey probe has no journey to run (the monitor\'s journey)')
  return (o.mode === 'auto' ? measureJourneyVisits : measureJourney)({ ...o, journey: job.journey })
}

/**
 * The journey in one arm: results for the whole journey, then its named
 * steps in the order they begin.
 * @param {import('../measure.js').MeasureOptions & { journey: RunnableJourney, view?: string, screenshot?: boolean }} opts
 *   screenshot: also keep a JPEG of the last frame (a trial's), as result.screenshot
 * @returns {Promise<Record<string, any>[]>}
 */
export async function measureJourney ({ journey, view = 'first', screenshot = false, ...opts }) {
  const protocol = opts.protocol ?? opts.mode
  const judged = judgedOrigins(journey, opts.url, opts.forceOrigins ?? [])
  return measure({ ...opts, probe: 'journey', view }, async ({ page, network, result, extra, summarize, infrastructure }) => {
    /** @type {StepOutcome[]} */
    const outcomes = []
    const budgetEnd = performance.now() + Math.min(journey.timeout_ms, (opts.deadline ?? Infinity) - monotonicNow())
    const { mark, range } = network
    const hasSecret = journey.steps.some((s) => s.secret !== undefined)
    // A step's requests are a range of the recording: Chromium's recording has marks, Firefox's not yet.
    if (!mark || !range) throw new Error('journeys run in Chromium only: this browser\'s recording of requests has no step marks')
    for (const [index, step] of journey.steps.entries()) {
      const from = mark()
      const left = budgetEnd - performance.now()
      const base = { index, action: step.action, name: step.action.startsWith('measure_') ? null : step.name ?? null, from, navigated: false, url: null, metrics: null }
      if (left < MIN_LOAD_MS) {
        outcomes.push({ ...base, ok: false, status: 'timeout', ms: 0, error: `${describeStep(step, index)}: not run: the journey's time budget (${journey.timeout_ms} ms) was spent`, to: from })
        break
      }
      const timeoutMs = Math.floor(Math.min(journey.step_timeout_ms, left))
      const t0 = performance.now()
      try {
        // The outcome names the step; its error says which budget ran out (not the slack the agent allows past it).
        const budget = timeoutMs < journey.step_timeout_ms
          ? `the ${timeoutMs} ms left of the journey's ${journey.timeout_ms} ms (timeout_ms)`
          : `its ${timeoutMs} ms (step_timeout_ms)`
        const outcome = await withTimeout(ACTION_RUNNERS[step.action](step, { page, timeoutMs, hasSecret }), timeoutMs + ACTION_SLACK_MS,
          describeStep(step, index), () => new StepError(`took longer than ${budget}`, { status: 'timeout' }))
        // A marker only bounds a named step: what the agent spends on it is
        // its own time, in no step (under a full test suite's load, 17 ms of
        // a journey's 3,977 ms), so the whole journey lasts its steps' sum.
        const ms = MARKERS.has(step.action) ? 0 : round((outcome.endedAt ?? performance.now()) - t0)
        const metrics = outcome.navigated ? await withTimeout(collectPageMetrics(page), COLLECT_TIMEOUT_MS, 'reading page metrics').catch(() => null) : null
        outcomes.push({ ...base, ok: true, status: 'ok', ms, error: null, navigated: outcome.navigated, url: outcome.navigated ? page.url() : null, metrics, to: mark() })
      } catch (err) {
        const fault = await infrastructure(err)
        if (fault) throw fault
        const e = err instanceof StepError ? err : new StepError(err instanceof Error ? err.message : String(err), { cause: err })
        outcomes.push({ ...base, ok: false, status: e.status, ms: round(performance.now() - t0), error: `${describeStep(step, index)}: ${e.message}`, to: mark() })
        break
      }
    }
    if (screenshot) result.screenshot = await lastFrame(page, journey).catch(() => null)
    const documentProtocol = lastDocumentProtocol(range(0).requests_detail)
    for (const named of namedSteps(journey)) {
      extra.push(stepResult({ named, outcomes, network: { range }, protocol, judged, documentProtocol, base: result, view }))
    }
    await summarize(result)
    fillJourney(result, outcomes, journey, { protocol, judged, documentProtocol })
  })
}

/**
 * The journey as the auto arm runs it: as a first visit on a profile of its
 * own, then, with the browser started again on that profile and its HTTP
 * cache removed, as a returning visit (agents/visits.js says why). A user
 * who logs in or checks out is often one who came before, and what the
 * browser learnt on the first visit (the origin's Alt-Svc) decides the
 * returning one's protocol: both are what users get. No repeat view.
 * @param {import('../measure.js').MeasureOptions & { journey: RunnableJourney }} opts
 */
export async function measureJourneyVisits (opts) {
  const { pool } = opts
  if (!pool.newProfile || !pool.removeProfile || !pool.forgetCache) throw new Error('this browser pool cannot keep a profile between launches, which the auto arm needs')
  const profile = await pool.newProfile()
  try {
    const first = await measureJourney({ ...opts, profile })
    await pool.forgetCache(profile)
    if (!((opts.deadline ?? Infinity) - monotonicNow() >= MIN_LOAD_MS)) {
      return [...first, ...first.map((r) => ({
        ...emptyResult(r.mode, r.flags, { probe: r.probe, view: 'returning' }),
        status: 'timeout',
        browser_version: r.browser_version,
        error: 'not run: the auto arm\'s time budget was spent'
      }))]
    }
    return [...first, ...await measureJourney({ ...opts, profile, view: 'returning' })]
  } finally {
    await pool.removeProfile(profile)
  }
}

/**
 * The whole journey's result: every request, its steps' outcomes, and its
 * state: the first failed step's, else ok when its protocol holds.
 * @param {Record<string, any>} r
 * @param {StepOutcome[]} outcomes
 * @param {RunnableJourney} journey
 * @param {{ protocol: string, judged: Set<string>, documentProtocol: string | null }} ctx
 */
function fillJourney (r, outcomes, journey, { protocol, judged, documentProtocol }) {
  const failed = outcomes.find((o) => !o.ok) ?? null
  r.journey = {
    steps: outcomes.map(({ from, to, metrics, ...o }) => ({ ...o, ttfb_ms: metrics?.ttfb_ms ?? null, load_ms: metrics?.load_ms ?? null })),
    failed_step: failed?.index ?? null,
    not_run: journey.steps.length - outcomes.length
  }
  r.repeat = reuseOf(r.requests_detail)
  judgeJourneyProtocol(r, r.requests_detail, protocol, judged, documentProtocol)
  if (failed) {
    r.status = failed.status
    r.error = failed.error
    return
  }
  r.samples = [round(outcomes.reduce((sum, o) => sum + o.ms, 0))]
}

/**
 * One named step's result.
 * @param {{ named: import('../../lib/measurement/journey/steps.js').NamedStep, outcomes: StepOutcome[],
 *   network: { range: (from: number, to?: number) => Record<string, any> }, protocol: string, judged: Set<string>,
 *   documentProtocol: string | null, base: Record<string, any>, view: string }} ctx
 */
function stepResult ({ named, outcomes, network, protocol, judged, documentProtocol, base, view }) {
  /** @type {Record<string, any>} */
  const r = {
    ...emptyResult(base.mode, base.flags, { probe: journeyProbe(named.name), view }),
    browser_version: base.browser_version,
    forced_origins: base.forced_origins
  }
  // Steps run until one fails, so the step's outcomes end at its own failure, if any.
  const own = outcomes.filter((o) => o.index >= named.from && o.index <= named.to)
  const failed = own.find((o) => !o.ok)
  r.step = { name: named.name, steps: [named.from, named.to], navigations: own.filter((o) => o.navigated).map((o) => o.url) }
  if (!own.length) {
    const stop = outcomes.find((o) => !o.ok)
    r.error = `not run: ${stop?.error ?? 'an earlier step failed'}`
    r.status = stop?.status === 'timeout' ? 'timeout' : 'error'
    return r
  }
  Object.assign(r, network.range(own[0].from, own[own.length - 1].to))
  r.repeat = reuseOf(r.requests_detail)
  // The step's page timings are those of the last page it loaded.
  const nav = [...own].reverse().find((o) => o.navigated && o.metrics)
  for (const k of STEP_NAVIGATION_METRICS) r[k] = nav?.metrics?.[k] ?? null
  judgeJourneyProtocol(r, r.requests_detail, protocol, judged, nav?.metrics?.observed_protocol ?? documentProtocol)
  if (failed) {
    r.status = failed.status
    r.error = failed.error
    return r
  }
  r.samples = [round(own.reduce((sum, o) => sum + o.ms, 0))]
  return r
}

/**
 * The protocol of the last document the top frame loaded.
 * @param {import('../network.js').RequestDetail[]} requests
 */
function lastDocumentProtocol (requests) {
  return [...requests].reverse().find((q) => isPageDocument(q) && q.protocol)?.protocol ?? null
}

/**
 * A JPEG of the page as the journey left it, base64. Fields holding a
 * secret are drawn masked first, whatever their type.
 * @param {import('puppeteer-core').Page} page
 * @param {RunnableJourney} journey
 */
async function lastFrame (page, journey) {
  const secrets = journey.steps.flatMap((s) => (typeof s.secret === 'string' ? [s.secret] : []))
  // In the agent's own world: the secrets never reach the page's scripts.
  if (secrets.length) await evaluateIsolated(page, maskFields, secrets)
  return withTimeout(page.screenshot({ type: 'jpeg', quality: 70, encoding: 'base64' }), COLLECT_TIMEOUT_MS, 'the screenshot')
}
