// JavaScript dialogs (alert, confirm, prompt, and the "leave this page?"
// of beforeunload). A dialog stops the page's scripts, and with them its
// parsing and its load event, until someone answers it: in headless
// Chromium, and in Firefox over WebDriver BiDi (Puppeteer asks for prompts
// to be left to it, unhandledPromptBehavior "ignore"), nobody does, so the
// load ran into its page timeout and the page looked as if it hung. Every
// run's page answers its dialogs at once, as a user who clicks them away
// would, and the result says the page opened one.

import { clipped } from '../lib/runtime/text.js'

/** A dialog's text kept in the note, at most (a page may put anything in it). */
const MAX_MESSAGE_CHARS = 100

/**
 * Answer every dialog `page` opens, as soon as it opens: a beforeunload
 * dialog is accepted (the navigation that asked goes on, as the run meant
 * it to), any other is dismissed (an alert closed, a confirm cancelled, a
 * prompt left without an answer). Each result a dialog opened in gets one
 * note (code page_dialog) saying how many, and the first one's kind and
 * text. `into` gives the result being loaded when the dialog opens.
 * @param {import('puppeteer-core').Page} page
 * @param {() => Record<string, any>} into
 * @returns {() => void} stops answering
 */
export function answerDialogs (page, into) {
  /** What each result's dialogs were: how many, the first one's kind and text, and its note. @type {WeakMap<Record<string, any>, { count: number, type: string, text: string, note: { code: string, message: string } }>} */
  const seen = new WeakMap()
  const onDialog = (/** @type {import('puppeteer-core').Dialog} */ dialog) => {
    const type = dialog.type()
    const answer = type === 'beforeunload' ? dialog.accept() : dialog.dismiss()
    answer.catch(() => {}) // the page may have gone on already
    const result = into()
    let entry = seen.get(result)
    if (!entry) {
      const text = dialog.message().replace(/\s+/g, ' ').trim()
      entry = { count: 0, type, text: clipped(text, MAX_MESSAGE_CHARS), note: { code: 'page_dialog', message: '' } }
      seen.set(result, entry)
      result.notes = [...(result.notes ?? []), entry.note]
    }
    entry.count++
    entry.note.message = describe(entry)
  }
  page.on('dialog', onDialog)
  return () => { page.off('dialog', onDialog) }
}

/**
 * The note's words.
 * @param {{ count: number, type: string, text: string }} dialogs
 */
function describe ({ count, type, text }) {
  const which = `${type === 'beforeunload' ? 'a beforeunload ("leave this page?")' : type === 'alert' ? 'an alert' : `a ${type}`} dialog${text ? ` ("${text}")` : ''}`
  const answered = type === 'beforeunload' ? 'accepted' : 'dismissed'
  return count === 1
    ? `the page opened ${which}; the agent ${answered} it at once, as a user who clicks it away would, and measured the page as it went on`
    : `the page opened ${count} JavaScript dialogs, the first ${which}; the agent answered each at once, as a user who clicks them away would, and measured the page as it went on`
}

/**
 * A login the page asks for (HTTP 401 with WWW-Authenticate) is cancelled at
 * once, as by a user without credentials, so that the load fails as any
 * HTTP error does (page-metrics.js says the page asks for a login).
 * Chromium cancels by itself: its navigation fails at once with
 * ERR_INVALID_AUTH_CREDENTIALS. Firefox over WebDriver BiDi holds the
 * request for a client to answer, and the load ran into its page timeout:
 * the intercept hands such requests to Puppeteer, which cancels each one
 * when the page has no credentials, and Firefox shows the 401 answer.
 * Requests that ask no login are never held.
 * @param {import('puppeteer-core').Page} page
 * @param {string} browser the run's (chromium, firefox)
 */
export async function cancelLogins (page, browser) {
  if (browser !== 'firefox') return
  // Puppeteer's WebDriver BiDi frame holds its browsing context (pinned in
  // package.json); without it Firefox's logins would time out again unseen.
  const context = /** @type {{ browsingContext?: { addIntercept?: (o: { phases: string[] }) => Promise<unknown> } }} */ (/** @type {unknown} */ (page.mainFrame())).browsingContext
  if (!context?.addIntercept) throw new Error('this Puppeteer gives no WebDriver BiDi browsing context to cancel a page\'s logins through')
  await context.addIntercept({ phases: ['authRequired'] })
}
