// One function per journey action (lib/measurement/journey/steps.js says
// what each takes). Each acts in the page within its step's time and
// resolves when the step is done: for an action that starts a navigation
// (a navigate, a click that submits a form), when that navigation's load
// event has fired. Each failure is a StepError that says what was not
// there, in words; a secret is never in one. `eval` runs its script in the
// page through DevTools, never in this process.
import { setTimeout as sleep } from 'node:timers/promises'
import { answerOrNothing, CANCELLED_LOGIN, evaluateIsolated, isolatedRealm, isTopFrameNavigation, load, loginAsked, PageLoadError } from '../page-metrics.js'
import { hasText } from '../page/has-text.js'
import { selectorProblem } from '../page/selector-problem.js'
import { SECRET_CHECK_HINT } from '../../lib/measurement/journey/steps.js'

/** How long after an action a navigation it started may begin (a form submit begins at once; a handler may wait a tick). */
const NAVIGATION_GRACE_MS = 300
/** wait_for network_idle: this long without a request in flight. */
const NETWORK_IDLE_MS = 500
/** Puppeteer's answer to a selector no browser can read. */
const INVALID_SELECTOR = /is not a valid selector|SyntaxError/
/** Chromium's answer to a question asked of a document that a navigation has just replaced. */
const DOCUMENT_REPLACED = /Execution context was destroyed|Cannot find context with specified id/

export class StepError extends Error {
  /**
   * @param {string} message
   * @param {{ status?: 'error' | 'timeout', cause?: unknown }} [opts]
   */
  constructor (message, { status = 'error', cause } = {}) {
    super(message, { cause })
    this.name = 'StepError'
    this.status = status
  }
}

/**
 * @typedef {{ page: import('puppeteer-core').Page, timeoutMs: number, hasSecret?: boolean }} ActionContext hasSecret: the journey types a secret
 * @typedef {{ navigated: boolean, status: number | null, endedAt?: number }} ActionOutcome
 *   whether the step loaded a new document, and its HTTP status; endedAt (performance.now()) when the
 *   step ended before it returned: an action that started no navigation ended when it was done, not
 *   when the wait for one gave up
 * @typedef {import('../../lib/measurement/journey/steps.js').Step & { secret?: string }} RunnableStep a step with its secret opened
 */

/** @type {Record<string, (step: RunnableStep, ctx: ActionContext) => Promise<ActionOutcome>>} */
export const ACTION_RUNNERS = {
  async navigate (step, { page, timeoutMs }) {
    try {
      const { httpStatus } = await load(page, /** @type {string} */ (step.url), timeoutMs)
      return { navigated: true, status: httpStatus }
    } catch (err) {
      if (err instanceof PageLoadError) throw new StepError(err.message, { status: err.status, cause: err })
      throw err
    }
  },

  async click (step, ctx) {
    const el = await element(step, ctx)
    return withNavigation(ctx, () => el.click())
  },

  async type (step, ctx) {
    const el = await element(step, ctx)
    // The field's value is replaced: cleared, then typed key by key, as a person would.
    await el.evaluate((e) => { if ('value' in e) /** @type {HTMLInputElement} */ (e).value = '' })
    return withNavigation(ctx, () => el.type(/** @type {string} */ (step.secret ?? step.text ?? '')))
  },

  async select (step, ctx) {
    await element(step, ctx)
    return withNavigation(ctx, async () => {
      const chosen = await ctx.page.select(/** @type {string} */ (step.selector), /** @type {string} */ (step.value))
      if (!chosen.includes(/** @type {string} */ (step.value))) throw new StepError(`${step.selector} has no option with value ${JSON.stringify(step.value)}`)
    })
  },

  async wait_for (step, ctx) {
    if (step.selector !== undefined) await element(step, ctx)
    else if (step.network_idle) {
      await ctx.page.waitForNetworkIdle({ idleTime: NETWORK_IDLE_MS, timeout: ctx.timeoutMs }).catch((err) => {
        throw timeoutOr(err, `the network was not idle for ${NETWORK_IDLE_MS} ms within ${ctx.timeoutMs} ms`)
      })
    } else await sleep(/** @type {number} */ (step.ms))
    return { navigated: false, status: null }
  },

  async assert (step, { page, timeoutMs }) {
    const wanted = step.text ?? null
    await checkSelector(page, /** @type {string} */ (step.selector), timeoutMs)
    try {
      // In the agent's own world: a page's script cannot make the wait end sooner or later.
      await isolatedRealm(page).waitForFunction(hasText, { timeout: timeoutMs, polling: 100 }, /** @type {string} */ (step.selector), wanted)
    } catch (err) {
      const found = await page.$eval(/** @type {string} */ (step.selector), (e) => (e.textContent ?? '').replace(/\s+/g, ' ').trim().slice(0, 120)).catch(() => null)
      if (found === null) throw timeoutOr(err, `no element matches ${step.selector} within ${timeoutMs} ms`)
      throw timeoutOr(err, `${step.selector} does not contain ${JSON.stringify(wanted)} within ${timeoutMs} ms (its text: ${JSON.stringify(found)})`)
    }
    return { navigated: false, status: null }
  },

  async eval (step, ctx) {
    // Refused when stored (checkJourney); a journey stored before that rule still runs no script.
    if (ctx.hasSecret) throw new StepError(`a journey that types a secret runs no script (eval), which could read the secret. ${SECRET_CHECK_HINT}`)
    return withNavigation(ctx, async () => {
      // The script is the body of an async function, evaluated by the page's
      // own JavaScript engine (DevTools Runtime.evaluate of this text).
      const expression = `(async () => {\n${step.script}\n})().then((v) => v === false ? 'false' : 'ok', (e) => 'threw: ' + (e && e.message ? e.message : String(e)))`
      const answer = await ctx.page.evaluate(expression)
      if (answer === 'false') throw new StepError('the script returned false')
      if (typeof answer === 'string' && answer.startsWith('threw: ')) throw new StepError(`the script threw: ${answer.slice(7, 300)}`)
    })
  },

  async measure_start () { return { navigated: false, status: null } },
  async measure_end () { return { navigated: false, status: null } }
}

/**
 * The step's element, once it is in the page and visible.
 * @param {RunnableStep} step
 * @param {ActionContext} ctx
 */
async function element (step, { page, timeoutMs }) {
  await checkSelector(page, /** @type {string} */ (step.selector), timeoutMs)
  try {
    const el = await onTheDocumentThere(page, timeoutMs, (ms) => page.waitForSelector(/** @type {string} */ (step.selector), { visible: true, timeout: ms }))
    if (!el) throw new Error('not found')
    return el
  } catch (/** @type {any} */ err) {
    if (INVALID_SELECTOR.test(err.message)) throw new StepError(`${step.selector} is not a valid CSS selector`)
    throw timeoutOr(err, `no element matches ${step.selector} within ${timeoutMs} ms`)
  }
}

/**
 * A selector the page's own CSS parser refuses fails its step at once, as
 * an error: Puppeteer waits for it as for any, and the step read as a
 * timeout ("no element matches [[[ within 15000 ms"). Puppeteer's own
 * selectors (::-p-text(…), ::-p-aria(…), >>>) are left to it.
 * @param {import('puppeteer-core').Page} page
 * @param {string} selector
 * @param {number} timeoutMs the step's time
 */
async function checkSelector (page, selector, timeoutMs) {
  if (/::-p-|>>>/.test(selector)) return
  const problem = await onTheDocumentThere(page, timeoutMs, () => evaluateIsolated(page, selectorProblem, selector))
  if (problem) throw new StepError(`${selector} is not a valid CSS selector`)
}

/**
 * Run `attempt` (given the step's time left) and, when a navigation of the
 * top frame replaced the document while it ran (a page that sends itself on
 * by script, a navigation that began after NAVIGATION_GRACE_MS on a busy
 * machine), run it again on the document that follows, within the step's
 * time. A wait that timed out is not run again.
 * @template T
 * @param {import('puppeteer-core').Page} page
 * @param {number} timeoutMs
 * @param {(msLeft: number) => Promise<T>} attempt
 * @returns {Promise<T>}
 */
async function onTheDocumentThere (page, timeoutMs, attempt) {
  const until = performance.now() + timeoutMs
  for (;;) {
    let navigated = false
    const onNavigated = (/** @type {import('puppeteer-core').Frame} */ frame) => { if (frame === page.mainFrame()) navigated = true }
    page.on('framenavigated', onNavigated)
    try {
      return await attempt(Math.max(1, until - performance.now()))
    } catch (/** @type {any} */ err) {
      const replaced = navigated || DOCUMENT_REPLACED.test(`${err?.message} ${err?.cause?.message}`)
      if (!replaced || err?.name === 'TimeoutError' || err instanceof StepError || INVALID_SELECTOR.test(String(err?.message))) throw err
      if (performance.now() >= until) throw new StepError(`the page kept navigating for ${timeoutMs} ms`, { status: 'timeout', cause: err })
    } finally {
      page.off('framenavigated', onNavigated)
    }
    await sleep(20)
  }
}

/**
 * Run an action; when it starts a navigation of the page (its request goes
 * out within NAVIGATION_GRACE_MS), wait for that document's load event.
 * @param {ActionContext} ctx
 * @param {() => Promise<unknown>} act
 * @returns {Promise<ActionOutcome>}
 */
async function withNavigation ({ page, timeoutMs }, act) {
  let started = false
  /** @type {import('puppeteer-core').HTTPResponse | null} the navigation's latest answer */
  let answer = null
  let answered = () => {}
  const onRequest = (/** @type {import('puppeteer-core').HTTPRequest} */ r) => {
    if (isTopFrameNavigation(page, r)) started = true
  }
  const onResponse = (/** @type {import('puppeteer-core').HTTPResponse} */ r) => {
    if (!isTopFrameNavigation(page, r.request())) return
    answer = r
    answered()
  }
  page.on('request', onRequest)
  page.on('response', onResponse)
  const since = performance.now()
  const navigation = page.waitForNavigation({ waitUntil: 'load', timeout: timeoutMs })
  navigation.catch(() => {}) // no navigation: never awaited
  try {
    await act()
    const endedAt = performance.now()
    const grace = Math.min(NAVIGATION_GRACE_MS, Math.max(0, timeoutMs - (endedAt - since)))
    while (!started && performance.now() < endedAt + grace) await sleep(20)
    if (!started) return { navigated: false, status: null, endedAt }
    let response
    try {
      response = await navigation
    } catch (err) {
      // A login, which Chromium cancels by itself and then fails the
      // navigation with ERR_INVALID_AUTH_CREDENTIALS (though none were
      // sent): said as the 401 it is. Its answer can come after the failure.
      if (CANCELLED_LOGIN.test(String(/** @type {any} */ (err)?.message)) && !answer) await answerOrNothing((resolve) => { answered = resolve })
      const got = /** @type {import('puppeteer-core').HTTPResponse | null} */ (answer)
      if (got && loginAsked(got)) throw httpStepError(got)
      throw timeoutOr(err, `the navigation it started did not load within ${timeoutMs} ms`)
    }
    const last = response ?? answer
    const status = last?.status() ?? null
    if (last && status !== null && status >= 400) throw httpStepError(last)
    return { navigated: true, status }
  } finally {
    page.off('request', onRequest)
    page.off('response', onResponse)
  }
}

/**
 * The HTTP error a step's navigation answered, and, for a 401 that asks for
 * a login, that it does: runs send no credentials.
 * @param {import('puppeteer-core').HTTPResponse} response
 */
function httpStepError (response) {
  const login = loginAsked(response)
  return new StepError(`the navigation it started answered HTTP ${response.status()}: ${response.url()}${login ? `: ${login}` : ''}`)
}

/**
 * A StepError for an error of the page's: a timeout as such, anything else
 * as what it says.
 * @param {any} err
 * @param {string} message what did not happen
 */
function timeoutOr (err, message) {
  if (err instanceof StepError) return err
  return err?.name === 'TimeoutError' ? new StepError(message, { status: 'timeout', cause: err }) : new StepError(`${message}: ${err?.message ?? err}`, { cause: err })
}
