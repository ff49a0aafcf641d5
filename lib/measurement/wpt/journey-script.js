// A journey (lib/measurement/journey/steps.js) as a WebPageTest script: one
// command a line, tab-separated (navigate, setValue, click, execAndWait,
// exec, sleep, logData). A named step is recorded (logData 1) and the
// steps between named ones are not (logData 0), so the agent's recorded
// steps are the journey's named ones.
//
// Some steps have no faithful WPT form; then the journey has none, and it
// runs on Puppeteer agents only (docs/JOURNEYS.md):
//   - a `secret`: a script travels to the agent in the clear and stays in
//     its test record and result;
//   - `assert`, and `eval` that may return false: a WPT script cannot fail
//     a run on a condition;
//   - `wait_for network_idle`: WPT waits for the network after each
//     recorded step, not on command;
//   - a `wait_for ms` that is not whole seconds (WPT sleeps in seconds, at
//     most 30), and a multi-line script (one command is one line).
import { describeStep } from '../journey/steps.js'

const MAX_SLEEP_S = 30

/**
 * @param {{ steps: import('../journey/steps.js').Step[] }} journey
 * @returns {{ script: string, untranslatable: null } | { script: null, untranslatable: { index: number, step: string, reason: string } }}
 */
export function wptScript (journey) {
  /** @type {string[]} */
  const lines = ['logData\t0']
  let recording = null
  for (const [index, s] of journey.steps.entries()) {
    const refuse = (/** @type {string} */ reason) => ({ script: null, untranslatable: { index, step: describeStep(s, index), reason } })
    const named = s.name && s.action !== 'measure_end' ? s.name : null
    if (s.action === 'measure_start') {
      lines.push('logData\t1')
      recording = s.name
      continue
    }
    if (s.action === 'measure_end') {
      lines.push('logData\t0')
      recording = null
      continue
    }
    if (named && recording === null) lines.push('logData\t1')
    const command = commandOf(s)
    if ('reason' in command) return refuse(command.reason)
    lines.push(command.line)
    if (named && recording === null) lines.push('logData\t0')
  }
  return { script: lines.join('\n') + '\n', untranslatable: null }
}

/**
 * @param {import('../journey/steps.js').Step} s
 * @returns {{ line: string } | { reason: string }}
 */
function commandOf (s) {
  const el = `document.querySelector(${JSON.stringify(s.selector ?? '')})`
  switch (s.action) {
    case 'navigate':
      return { line: `navigate\t${s.url}` }
    case 'click':
      // A CSS selector, which WPT's own click (attribute=value) cannot take.
      return { line: `execAndWait\t${el}.click()` }
    case 'type':
      if (s.secret !== undefined) return { reason: 'it types a secret, and a WebPageTest script travels to the agent in the clear and stays in its test record' }
      return { line: `exec\t(function(e){e.value=${JSON.stringify(s.text ?? '')};e.dispatchEvent(new Event('input',{bubbles:true}))})(${el})` }
    case 'select':
      return { line: `exec\t(function(e){e.value=${JSON.stringify(s.value ?? '')};e.dispatchEvent(new Event('change',{bubbles:true}))})(${el})` }
    case 'wait_for':
      if (s.selector !== undefined) return { line: `waitFor\t${el}!==null` }
      if (s.network_idle) return { reason: 'WebPageTest waits for the network after each recorded step, not on command' }
      if (s.ms === undefined || s.ms % 1000 !== 0 || s.ms / 1000 > MAX_SLEEP_S) return { reason: `WebPageTest sleeps whole seconds, at most ${MAX_SLEEP_S}` }
      return { line: `sleep\t${s.ms / 1000}` }
    case 'eval':
      if (/[\r\n]/.test(s.script ?? '')) return { reason: 'a WebPageTest command is one line, and this script has several' }
      if (/\breturn\b/.test(s.script ?? '')) return { reason: 'a script that may return false fails its step, which a WebPageTest script cannot do' }
      return { line: `execAndWait\t${s.script}` }
    case 'assert':
      return { reason: 'a WebPageTest script cannot fail a run on a condition' }
    default:
      return { reason: `${s.action} has no WebPageTest command` }
  }
}
