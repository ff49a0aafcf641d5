// A journey (lib/measurement/journey/steps.js) as a WebPageTest script: one
// command a line, tab-separated (logData, setEventName, navigate,
// execAndWait, exec, waitFor, sleep).
//
// How wptagent runs a script (docs/WPT.md, Journeys; read in its source at
// 560e4d5, the build whose uploads test/fixtures/wpt/ holds): a command
// that waits for the page (navigate, and any *AndWait) is a recorded step:
// the agent records from it until the page and the network are quiet, and writes that step's files under its own prefix (`1_` for
// the first, `1_2_`, `1_3_`... after it). The other commands (exec, sleep)
// run between recorded steps, untimed. So each navigate, click and script
// step is one WPT step, numbered in the order they run (`recorded` below),
// and a named step is the sum of the WPT steps of its own steps. logData is
// on throughout: the whole journey's requests are every step's. Each
// recorded step carries its named step's name (setEventName) for anyone
// reading the agent's own record.
//
// Some journeys have no faithful WPT form; then the journey runs on
// Puppeteer agents only (docs/JOURNEYS.md):
//   - a `secret`: a script travels to the agent in the clear and stays in
//     its test record and result;
//   - `assert`, and `eval` that may return false: a WPT script cannot fail
//     a run on a condition;
//   - `wait_for network_idle`: WPT waits for the network after each
//     recorded step, not on command;
//   - `wait_for` an element, except right after a navigation or click of
//     the same named step: WPT's waitFor is not a wait, it replaces how the
//     next recorded step ends (the page loaded and the network quiet) by a
//     condition; so it goes before that command (and is reset after it),
//     and its condition is the page loaded and the element there, as a
//     Puppeteer agent waits for the load and then the element. The agent
//     checks it every 5 s unless told otherwise: waitInterval makes it
//     0.1 s, so a step does not last up to 5 s longer than it took. A
//     condition that never holds does not fail the step: the agent waits
//     until the step's time limit and reports the page as loaded. So the
//     condition, once it holds, sets a User Timing mark (waitMark), which
//     the agent records with the step (`userTime.<mark>` in its page data):
//     a step without it never saw its element;
//   - a `wait_for ms` that is not whole seconds (WPT sleeps in seconds, at
//     most 30), and a multi-line script (one command is one line);
//   - a named step with no navigation, click or script: the agent times
//     only recorded steps, so typing or choosing alone would have no time.
import { describeStep, namedSteps } from '../journey/steps.js'

const MAX_SLEEP_S = 30
/** How often the agent checks a waitFor condition, in seconds (its default is 5). */
const WAIT_INTERVAL_S = 0.1
/** Actions that are a recorded WPT step (a command that waits for the page). */
const RECORDED = new Set(['navigate', 'click', 'eval'])

/**
 * The User Timing mark a `wait_for` element sets once its condition holds
 * (letters, digits and dots: the agent keeps such a name as it is).
 * @param {number} index the wait_for's journey step index
 */
export const waitMark = (index) => `h3lens.wait_for.${index + 1}`

/**
 * @typedef {{ index: number, step: string, reason: string }} Untranslatable
 * @typedef {{ script: string, recorded: number[], labels: string[], untranslatable: null } |
 *   { script: null, recorded: null, labels: null, untranslatable: Untranslatable }} WptScript
 *   recorded: the journey step index of each recorded WPT step, in order (WPT step n is recorded[n - 1]);
 *   labels: each recorded step's event name (its named step's name, or step_<number>)
 */

/**
 * @param {{ steps: import('../journey/steps.js').Step[] }} journey
 * @returns {WptScript}
 */
export function wptScript (journey) {
  const named = namedSteps(journey)
  const namedAt = (/** @type {number} */ i) => named.find((n) => i >= n.from && i <= n.to) ?? null
  /** @type {(index: number, step: string, reason: string) => WptScript} */
  const refuse = (index, step, reason) => ({ script: null, recorded: null, labels: null, untranslatable: { index, step, reason } })

  /** @type {string[]} */
  const lines = ['logData\t1', `waitInterval\t${WAIT_INTERVAL_S}`]
  /** @type {number[]} */
  const recorded = []
  /** @type {string[]} */
  const labels = []
  // Where the last recorded command's lines begin, for a waitFor that ends it.
  let lastRecordedLine = -1
  for (const [index, s] of journey.steps.entries()) {
    if (s.action === 'measure_start' || s.action === 'measure_end') continue
    const command = commandOf(s, index)
    if ('reason' in command) return refuse(index, describeStep(s, index), command.reason)
    if ('waitFor' in command) {
      const previous = journey.steps[index - 1]
      if (!previous || !RECORDED.has(previous.action) || namedAt(index - 1) !== namedAt(index) || lastRecordedLine < 0) {
        return refuse(index, describeStep(s, index), 'WebPageTest waits for an element only as the end of the navigation or click just before it, in the same named step')
      }
      // The step before ends when the element is there; the condition holds for that step only.
      lines.splice(lastRecordedLine, 0, `waitFor\t${command.waitFor}`)
      lines.push('waitFor')
      lastRecordedLine = -1
      continue
    }
    if (RECORDED.has(s.action)) {
      recorded.push(index)
      labels.push(namedAt(index)?.name ?? `step_${index + 1}`)
      lastRecordedLine = lines.length
      lines.push(`setEventName\t${labels.at(-1)}`)
    } else {
      lastRecordedLine = -1
    }
    lines.push(command.line)
  }
  const untimed = named.find((n) => !recorded.some((i) => i >= n.from && i <= n.to))
  if (untimed) {
    return refuse(untimed.from, `named step "${untimed.name}" (${describeStep(journey.steps[untimed.from], untimed.from)})`,
      'WebPageTest times only the steps that navigate, click or run a script, and this named step has none')
  }
  return { script: lines.join('\n') + '\n', recorded, labels, untranslatable: null }
}

/**
 * @param {import('../journey/steps.js').Step} s
 * @param {number} index
 * @returns {{ line: string } | { waitFor: string } | { reason: string }}
 */
function commandOf (s, index) {
  const el = `document.querySelector(${literal(s.selector ?? '')})`
  switch (s.action) {
    case 'navigate':
      return { line: `navigate\t${s.url}` }
    case 'click':
      // A CSS selector, which WPT's own click (attribute=value) cannot take.
      return { line: `execAndWait\t${el}.click()` }
    case 'type':
      if (s.secret !== undefined) return { reason: 'it types a secret, and a WebPageTest script travels to the agent in the clear and stays in its test record' }
      return { line: `exec\t(function(e){e.value=${literal(s.text ?? '')};e.dispatchEvent(new Event('input',{bubbles:true}))})(${el})` }
    case 'select':
      return { line: `exec\t(function(e){e.value=${literal(s.value ?? '')};e.dispatchEvent(new Event('change',{bubbles:true}))})(${el})` }
    case 'wait_for':
      if (s.selector !== undefined) return { waitFor: `document.readyState==="complete"&&${el}!==null&&(performance.mark(${literal(waitMark(index))}),true)` }
      if (s.network_idle) return { reason: 'WebPageTest waits for the network after each recorded step, not on command' }
      if (s.ms === undefined || s.ms % 1000 !== 0 || s.ms / 1000 > MAX_SLEEP_S) return { reason: `WebPageTest sleeps whole seconds, at most ${MAX_SLEEP_S}` }
      return { line: `sleep\t${s.ms / 1000}` }
    case 'eval':
      if (LINE_BREAK.test(s.script ?? '')) return { reason: 'a WebPageTest command is one line of tab-separated fields, and this script has several lines or a tab' }
      if (/\breturn\b/.test(s.script ?? '')) return { reason: 'a script that may return false fails its step, which a WebPageTest script cannot do' }
      return { line: `execAndWait\t${s.script}` }
    case 'assert':
      return { reason: 'a WebPageTest script cannot fail a run on a condition' }
    default:
      return { reason: `${s.action} has no WebPageTest command` }
  }
}

/**
 * What ends a WPT command or one of its fields: a tab, and every line
 * boundary of the agent's line splitting (Python's str.splitlines).
 */
// eslint-disable-next-line no-control-regex -- the control characters are what is looked for
const LINE_BREAK = /[\t\n\v\f\r\x1c-\x1e\x85\u2028\u2029]/

/**
 * A JavaScript string literal that stays on one line of the script: JSON
 * escapes the control characters, and these three it leaves as they are.
 * @param {string} value
 */
function literal (value) {
  return JSON.stringify(value).replace(/[\x85\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
