// Whose failure is it: the page's, or the agent's own? A page's failure is
// a result (error, timeout), stored and counted against the site. The
// agent's (an infrastructure fault) is never stored as a result: the round
// is handed back and run again as a new attempt (agents/agent.js), and only
// when its attempts run out is it failed, with the cause on the job. The
// rule, and why, is in docs/OPERATIONS.md; in short:
//
//   - the browser did not start, or is gone (its process exited, its
//     DevTools pipe closed) when a load fails: infrastructure;
//   - the run could not be prepared (browser context, page, DevTools
//     session) before the navigation began: infrastructure;
//   - the page's DevTools session or frame went away while the browser
//     lived on and the page's renderer did not crash: infrastructure;
//   - the browser no longer answers DevTools (frozen, its process stopped)
//     when a load fails: infrastructure; it is killed, so the next run gets
//     a new one;
//   - the page's renderer crashed while the browser lived on: the page's
//     (failure kind renderer_crashed). Site isolation gives every context a
//     renderer of its own, which runs this page's code and nothing else;
//     out of memory is the usual cause;
//   - anything else (network errors, HTTP statuses, timeouts, a page that
//     is truncated or empty): the page's.

/** How long a failed load waits for the browser's disconnect to be seen, when the error says DevTools lost the page. */
const DISCONNECT_GRACE_MS = 1000
/**
 * How long a browser has to answer DevTools (Browser.getVersion, which its
 * own process answers, whatever its pages do) once a load failed; longer
 * than a loaded machine's slowest answer.
 */
const ANSWER_MS = 5000

/** The agent's own failure: the round is run again, never stored against the page. */
export class InfrastructureError extends Error {
  /**
   * @param {string} message
   * @param {{ cause?: unknown }} [context]
   */
  constructor (message, { cause } = {}) {
    super(message, { cause })
    this.name = 'InfrastructureError'
  }
}

/**
 * Errors by which DevTools says the page, its session or the browser went
 * away (not a protocol timeout: a page whose renderer is busy causes those).
 * @param {unknown} err
 */
export function isDevtoolsLoss (err) {
  for (let e = err; e instanceof Error; e = /** @type {any} */ (e).cause) {
    // puppeteer's TargetCloseError and ConnectionClosedError (the first is not in its type declarations).
    if (e.name === 'TargetCloseError' || e.name === 'ConnectionClosedError') return true
    if (/Navigating frame was detached|Session closed|Target closed|Connection closed|browser has disconnected/.test(e.message)) return true
  }
  return false
}

/** Browsers killed because they stopped answering, and how they stopped. */
const UNANSWERING = new WeakMap()

/**
 * Mark a browser about to be killed because it stopped answering, so a run
 * it was in says so rather than that it crashed.
 * @param {import('puppeteer-core').Browser} browser
 * @param {string} why
 */
export function markUnanswering (browser, why) {
  if (!UNANSWERING.has(browser)) UNANSWERING.set(browser, why)
}

/**
 * The infrastructure fault behind a failed run, or null when the failure
 * is the page's (the rule above).
 * @param {unknown} err what the run threw
 * @param {{ browser: import('puppeteer-core').Browser, navigating: boolean, rendererCrashed: boolean }} state
 *   navigating: the navigation had begun; rendererCrashed: the page's renderer crashed
 * @returns {Promise<InfrastructureError | null>}
 */
export async function infrastructureFault (err, { browser, navigating, rendererCrashed }) {
  if (err instanceof InfrastructureError) return err
  const message = err instanceof Error ? err.message : String(err)
  const stopped = (/** @type {string} */ why) => {
    const proc = browser.process()
    return new InfrastructureError(`the browser stopped answering (${proc ? `pid ${proc.pid}` : 'not a process of ours'}: ${why}; ` +
      `killed, the next run starts another) during the run: ${message}`, { cause: err })
  }
  if (await browserGone(browser, isDevtoolsLoss(err) ? DISCONNECT_GRACE_MS : 0)) {
    await exited(browser, DISCONNECT_GRACE_MS)
    // Killed by its pool for not answering (agents/browsers/chromium.js): frozen, not crashed.
    const unanswering = UNANSWERING.get(browser)
    if (unanswering) return stopped(unanswering)
    return new InfrastructureError(`browser disconnected (${browserExit(browser)}) during the run: ${message}`, { cause: err })
  }
  if (!(await answers(browser, ANSWER_MS))) {
    markUnanswering(browser, `no answer to DevTools in ${ANSWER_MS / 1000} s`)
    browser.process()?.kill('SIGKILL')
    await exited(browser, DISCONNECT_GRACE_MS)
    return stopped(`no answer to DevTools in ${ANSWER_MS / 1000} s`)
  }
  if (rendererCrashed) return null
  if (!navigating) return new InfrastructureError(`the run could not be prepared in the browser: ${message}`, { cause: err })
  if (isDevtoolsLoss(err)) return new InfrastructureError(`the DevTools session lost the page while the browser ran on: ${message}`, { cause: err })
  return null
}

/**
 * Whether the browser is gone, waiting up to `graceMs` for its disconnect
 * (a dead pipe is noticed a moment after the errors it causes, or before).
 * @param {import('puppeteer-core').Browser} browser
 * @param {number} graceMs
 */
async function browserGone (browser, graceMs) {
  if (!browser.connected) return true
  if (graceMs <= 0) return false
  /** @type {() => void} */
  let onDisconnect = () => {}
  const gone = await within(new Promise((resolve) => { onDisconnect = () => resolve(undefined); browser.once('disconnected', onDisconnect) }), graceMs)
  browser.off('disconnected', onDisconnect)
  return gone || !browser.connected
}

/**
 * Whether the browser answers DevTools within `ms` (an error is an answer
 * too; a lost browser is browserGone's).
 * @param {import('puppeteer-core').Browser} browser
 * @param {number} ms
 */
function answers (browser, ms) {
  return within(browser.version(), ms)
}

/**
 * Wait up to `ms` for the browser's process to exit, so the fault can say how.
 * @param {import('puppeteer-core').Browser} browser
 * @param {number} ms
 */
async function exited (browser, ms) {
  const proc = browser.process()
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return
  await within(new Promise((resolve) => proc.once('exit', resolve)), ms)
}

/**
 * Whether `promise` settles (resolves or rejects) within `ms`.
 * @param {Promise<unknown>} promise
 * @param {number} ms
 * @returns {Promise<boolean>}
 */
async function within (promise, ms) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer
  const settled = await Promise.race([
    promise.then(() => true, () => true),
    new Promise((resolve) => { timer = setTimeout(() => resolve(false), ms) })
  ])
  clearTimeout(timer)
  return Boolean(settled)
}

/**
 * How the browser's process ended, as far as is known yet.
 * @param {import('puppeteer-core').Browser} browser
 */
function browserExit (browser) {
  const proc = browser.process()
  if (!proc) return 'no process of ours'
  const pid = `pid ${proc.pid}`
  if (proc.signalCode) return `${pid} killed by ${proc.signalCode}`
  if (proc.exitCode !== null) return `${pid} exited with code ${proc.exitCode}`
  return `${pid}, its DevTools pipe closed`
}
