// What a journey is: its steps, each one action with its fields, and the
// rules a stored journey meets. One checker for the API, the CLI, the
// "try it" route and the import, each of whose errors names the step and
// field ("journey.steps[3].selector: required for click").
import { parse as parseYaml } from 'yaml'
import { ValidationError } from '../../runtime/errors.js'
import { badPortReason } from '../ports.js'
import { JOURNEY_LIMITS, STEP_NAME } from '../probes/journey.js'
import { originOf } from '../origin.js'
import { protocolMatchesMode } from '../protocol.js'

/**
 * Each action's fields: `required` all, `oneOf` exactly one, `optional` any.
 * `name` on a step that acts measures that step on its own.
 * @type {Readonly<Record<string, { required?: string[], oneOf?: string[], optional?: string[], hint: string }>>}
 */
export const ACTIONS = Object.freeze({
  navigate: { required: ['url'], optional: ['name'], hint: 'load a URL (absolute, or relative to the monitor URL) and wait for its load event' },
  click: { required: ['selector'], optional: ['name'], hint: 'click the element; when that starts a navigation, wait for its load event' },
  type: { required: ['selector'], oneOf: ['text', 'secret'], optional: ['name'], hint: 'replace the field\'s value by typing text, or a secret stored encrypted' },
  select: { required: ['selector', 'value'], optional: ['name'], hint: 'choose the option with this value in a <select>' },
  wait_for: { oneOf: ['selector', 'network_idle', 'ms'], optional: ['name'], hint: 'wait until an element is visible, the network is idle (500 ms without requests), or a number of ms' },
  measure_start: { required: ['name'], hint: 'start measuring a named step made of the steps up to its measure_end' },
  measure_end: { required: ['name'], hint: 'end the named step measure_start began' },
  assert: { required: ['selector'], optional: ['text', 'name'], hint: 'the element exists (and its text contains `text`), or the run fails at this step' },
  eval: { required: ['script'], optional: ['name'], hint: 'run JavaScript in the page (never in the agent): a thrown error, or a returned false, fails the step' }
})
export const ACTION_NAMES = Object.freeze(Object.keys(ACTIONS))
/** Actions that do something in the page (the rest only mark a named step's bounds). */
export const MARKERS = Object.freeze(new Set(['measure_start', 'measure_end']))
/** The longest journey text accepted (YAML or JSON). */
export const MAX_JOURNEY_TEXT = 100_000
/**
 * The deepest nesting a journey's text may have. The YAML parser recurses
 * once a level, and text some hundreds of levels deep ("[[[[…" in a few KB)
 * exhausts its stack: a second such request made V8 abort the whole API
 * process. A journey is four or five levels deep.
 */
export const MAX_JOURNEY_DEPTH = 64
/** A stored secret's reference: what the API answers instead of the secret. */
export const SECRET_REF = /^s[0-9a-f]{12}$/

/**
 * A journey given as text, in YAML or JSON (JSON is YAML), as an object.
 * @param {string} text
 * @param {string} [field]
 */
export function parseJourneyText (text, field = 'journey') {
  if (text.length > MAX_JOURNEY_TEXT) throw new ValidationError(`${field}: longer than ${MAX_JOURNEY_TEXT} characters`, field)
  const deep = nestingBeyond(text, MAX_JOURNEY_DEPTH)
  if (deep) throw new ValidationError(`${field}: nested more than ${MAX_JOURNEY_DEPTH} levels deep at line ${deep}; a journey is a list of steps, a few levels deep`, field)
  let value
  try {
    value = parseYaml(text, { schema: 'core', uniqueKeys: true, maxAliasCount: 0 })
  } catch (/** @type {any} */ err) {
    const at = err.linePos?.[0]
    const why = String(err.message).split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')
    throw new ValidationError(`${field}: not valid YAML or JSON${at ? ` at line ${at.line}, column ${at.col}` : ''}: ${why}`, field)
  }
  if (value === null || value === undefined) throw new ValidationError(`${field}: empty; write steps: [...]`, field)
  // A bare list of steps is a journey of those steps.
  return Array.isArray(value) ? { steps: value } : value
}

/**
 * The first line at which YAML text may be nested more than `max` levels
 * deep, or 0: an estimate from above, read before the parser sees the text.
 * A line's depth is the indentations open above it (a stack), its leading
 * "- ", "? " and ": " markers (each opens a level on the same line), and the
 * flow brackets ([ and {) open outside quotes and comments. The lines of a
 * block scalar (after | or >, more indented than its key) are text, not
 * structure, and are skipped.
 * @param {string} text
 * @param {number} max
 */
function nestingBeyond (text, max) {
  /** @type {number[]} */
  const indents = []
  let flow = 0
  let scalarIndent = -1
  const lines = text.split(/\r\n|\r|\n/)
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]
    const indent = /^[ \t]*/.exec(line)?.[0].length ?? 0
    if (indent === line.length || line[indent] === '#') continue
    if (scalarIndent >= 0 && indent > scalarIndent) continue
    scalarIndent = -1
    while (indents.length && indents[indents.length - 1] >= indent) indents.pop()
    indents.push(indent)
    const markers = /^(?:[-?:](?:[ \t]+|$))*/.exec(line.slice(indent))?.[0].replace(/[ \t]/g, '').length ?? 0
    let deepest = flow
    /** @type {string | null} */
    let quote = null
    for (let i = indent; i < line.length; i++) {
      const c = line[i]
      if (quote) {
        if (c === '\\' && quote === '"') i++
        else if (c === quote) quote = null
      } else if (c === '"' || c === "'") {
        quote = c
      } else if (c === '#' && /\s/.test(line[i - 1] ?? ' ')) {
        break
      } else if (c === '[' || c === '{') {
        deepest = Math.max(deepest, ++flow)
      } else if ((c === ']' || c === '}') && flow > 0) {
        flow--
      }
    }
    if (indents.length + markers + deepest > max) return n + 1
    if (!flow && /[|>][-+0-9]*[ \t]*(?:#.*)?$/.test(line)) scalarIndent = indent
  }
  return 0
}

/**
 * Check a journey and return it as stored: navigate URLs absolute (resolved
 * against the monitor URL), timeouts filled in, each step with its fields
 * only. A `secret` stays as given: a string is a new secret, { stored: ref }
 * one kept from before (lib/store/monitors.js seals and resolves them).
 * Throws a ValidationError whose message and field name the step and field.
 * @param {unknown} input
 * @param {{ url: string, field?: string }} ctx url: the monitor URL
 * @returns {Journey}
 */
export function checkJourney (input, { url, field = 'journey' }) {
  const fail = (/** @type {string} */ at, /** @type {string} */ why) => { throw new ValidationError(`${at}: ${why}`, at) }
  if (typeof input === 'string') input = parseJourneyText(input, field)
  if (input === null || typeof input !== 'object' || Array.isArray(input)) fail(field, 'must be an object with steps: [...] (or YAML text of one)')
  const j = /** @type {Record<string, unknown>} */ (input)
  for (const key of Object.keys(j)) {
    if (!['steps', 'step_timeout_ms', 'timeout_ms'].includes(key)) fail(`${field}.${key}`, 'not a field of a journey (steps, step_timeout_ms, timeout_ms)')
  }
  const timeoutMs = boundedInt(j.timeout_ms, JOURNEY_LIMITS.timeoutMs, `${field}.timeout_ms`, fail)
  // A step has at most the whole journey's time: one given more is refused,
  // the default is held to it.
  const givenStep = j.step_timeout_ms !== undefined && j.step_timeout_ms !== null
  const stepTimeoutMs = Math.min(boundedInt(j.step_timeout_ms, JOURNEY_LIMITS.stepTimeoutMs, `${field}.step_timeout_ms`, fail), givenStep ? Infinity : timeoutMs)
  if (stepTimeoutMs > timeoutMs) fail(`${field}.step_timeout_ms`, `at most the journey's timeout_ms (${timeoutMs}): a step cannot take longer than the whole journey`)
  if (!Array.isArray(j.steps)) fail(`${field}.steps`, 'required: a list of steps, such as [{ action: navigate, url: / }]')
  const steps = /** @type {unknown[]} */ (j.steps)
  if (!steps.length) fail(`${field}.steps`, 'at least one step')
  if (steps.length > JOURNEY_LIMITS.steps) fail(`${field}.steps`, `at most ${JOURNEY_LIMITS.steps} steps (${steps.length} given)`)

  /** @type {Map<string, string>} name → the field that named it */
  const names = new Map()
  /** @type {Map<string, string>} open measures → their measure_start's field */
  const open = new Map()
  let navigated = false
  const out = steps.map((raw, i) => {
    const at = `${field}.steps[${i}]`
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) fail(at, 'must be an object, such as { action: click, selector: "#buy" }')
    const s = /** @type {Record<string, unknown>} */ (raw)
    if (s.action === undefined) fail(`${at}.action`, `required; one of ${ACTION_NAMES.join(', ')}`)
    if (typeof s.action !== 'string' || !Object.hasOwn(ACTIONS, s.action)) fail(`${at}.action`, `${JSON.stringify(s.action)} is not an action; one of ${ACTION_NAMES.join(', ')}`)
    const action = /** @type {string} */ (s.action)
    const spec = ACTIONS[action]
    const allowed = ['action', ...(spec.required ?? []), ...(spec.oneOf ?? []), ...(spec.optional ?? [])]
    for (const key of Object.keys(s)) {
      if (!allowed.includes(key)) fail(`${at}.${key}`, `not a field of ${action} (${action} takes ${allowed.slice(1).join(', ')})`)
    }
    for (const key of spec.required ?? []) if (s[key] === undefined || s[key] === null) fail(`${at}.${key}`, `required for ${action}`)
    if (spec.oneOf) {
      const given = spec.oneOf.filter((k) => s[k] !== undefined && s[k] !== null)
      if (given.length !== 1) fail(`${at}.${given[1] ?? spec.oneOf[0]}`, `${action} takes exactly one of ${spec.oneOf.join(', ')}${given.length ? ` (${given.join(' and ')} given)` : ''}`)
    }
    if (!navigated && !MARKERS.has(action) && action !== 'navigate') {
      fail(`${at}.action`, `a journey starts on a blank page: its first action must be navigate (only measure_start may come before it), not ${action}`)
    }
    if (action === 'navigate') navigated = true

    /** @type {Step} */
    const step = { action }
    if (s.url !== undefined) step.url = stepUrl(s.url, url, `${at}.url`, fail)
    if (s.selector !== undefined) step.selector = text(s.selector, `${at}.selector`, JOURNEY_LIMITS.selectorChars, fail, { min: 1 })
    if (s.text !== undefined) step.text = text(s.text, `${at}.text`, JOURNEY_LIMITS.textChars, fail, { min: action === 'assert' ? 1 : 0 })
    if (s.value !== undefined) step.value = text(s.value, `${at}.value`, JOURNEY_LIMITS.textChars, fail, { min: 0 })
    if (s.script !== undefined) step.script = text(s.script, `${at}.script`, JOURNEY_LIMITS.scriptChars, fail, { min: 1 })
    if (s.secret !== undefined) step.secret = secretField(s.secret, `${at}.secret`, fail)
    if (s.network_idle !== undefined) {
      if (s.network_idle !== true) fail(`${at}.network_idle`, 'must be true (wait until no request is in flight for 500 ms)')
      step.network_idle = true
    }
    if (s.ms !== undefined) {
      const max = Math.min(JOURNEY_LIMITS.waitMs, stepTimeoutMs - 1)
      if (!Number.isInteger(s.ms) || /** @type {number} */ (s.ms) < 1 || /** @type {number} */ (s.ms) > max) {
        fail(`${at}.ms`, `a whole number of milliseconds from 1 to ${max} (under the step's budget, ${field}.step_timeout_ms ${stepTimeoutMs})`)
      }
      step.ms = /** @type {number} */ (s.ms)
    }
    if (s.name !== undefined) {
      if (typeof s.name !== 'string' || !STEP_NAME.test(s.name)) fail(`${at}.name`, 'a step name is 1 to 40 letters, digits, ".", "_" or "-", starting with a letter or digit')
      const name = /** @type {string} */ (s.name)
      step.name = name
      if (action === 'measure_end') {
        if (!open.has(name)) fail(`${at}.name`, `no measure_start "${name}" is open before this step`)
        const begun = Number(/\[(\d+)\]$/.exec(/** @type {string} */ (open.get(name)))?.[1])
        if (!steps.slice(begun + 1, i).some((e) => !MARKERS.has(/** @type {any} */ (e)?.action))) fail(`${at}.name`, `measure "${name}" measures no step: put the steps it measures between its measure_start and measure_end`)
        open.delete(name)
      } else {
        if (names.has(name)) fail(`${at}.name`, `"${name}" already names ${names.get(name)}; each name measures one step`)
        names.set(name, at)
        if (action === 'measure_start') open.set(name, at)
      }
    }
    return step
  })
  for (const [name, at] of open) fail(`${at}.name`, `measure "${name}" is never ended: add { action: measure_end, name: ${name} }`)
  if (!navigated) fail(`${field}.steps`, 'a journey needs at least one navigate step')
  const script = scriptBesideSecret(out)
  if (script !== -1) {
    fail(`${field}.steps[${script}].action`, `a journey that types a secret runs no script (eval): a script reads the secret from its field as easily as the page does, and could put it in an error or a URL of the results, where whoever holds a read key sees it. ${SECRET_CHECK_HINT}`)
  }
  return { steps: out, step_timeout_ms: stepTimeoutMs, timeout_ms: timeoutMs }
}

/** What a journey with a secret checks its page with instead of a script. */
export const SECRET_CHECK_HINT = 'Check the page with assert steps (a selector, and the text it contains) instead.'

/**
 * The index of the first eval step of a journey that also types a secret, or
 * -1. Such a journey is refused when stored, and an agent runs no script in
 * one stored before that rule.
 * @param {{ action: string, secret?: unknown }[]} steps
 * @returns {number}
 */
export function scriptBesideSecret (steps) {
  return steps.some((s) => s.secret !== undefined) ? steps.findIndex((s) => s.action === 'eval') : -1
}

/**
 * @typedef {{ action: string, url?: string, selector?: string, text?: string, value?: string, script?: string,
 *   secret?: string | { stored: string }, network_idle?: true, ms?: number, name?: string }} Step
 * @typedef {{ steps: Step[], step_timeout_ms: number, timeout_ms: number }} Journey
 * @typedef {{ name: string, from: number, to: number }} NamedStep the steps from..to (indexes, inclusive) it measures
 */

/**
 * The named steps of a journey, in the order they begin: a step with a name
 * is one step; a measure_start/measure_end pair spans the steps between.
 * @param {{ steps: Step[] }} journey
 * @returns {NamedStep[]}
 */
export function namedSteps (journey) {
  /** @type {NamedStep[]} */
  const out = []
  journey.steps.forEach((s, i) => {
    if (!s.name) return
    if (s.action === 'measure_start') out.push({ name: s.name, from: i + 1, to: journey.steps.findIndex((e, k) => k > i && e.action === 'measure_end' && e.name === s.name) - 1 })
    else if (s.action !== 'measure_end') out.push({ name: s.name, from: i, to: i })
  })
  return out
}

/**
 * The names of a journey's named steps, in order; none without a journey
 * (a monitor that runs none).
 * @param {{ steps: Step[] } | null | undefined} journey
 */
export function stepNames (journey) {
  return journey ? namedSteps(journey).map((s) => s.name) : []
}

/**
 * Every URL a journey navigates to, with the field it came from.
 * @param {{ steps: Step[] }} journey
 * @param {string} [field]
 * @returns {[string, string][]}
 */
export function journeyTargets (journey, field = 'journey') {
  return journey.steps.flatMap((s, i) => (s.action === 'navigate' && s.url ? [[s.url, `${field}.steps[${i}].url`]] : []))
}

/**
 * A step in words, for errors and tables: 'step 4 (click #buy, "login")',
 * numbered from 1 as the dashboard's step tables are (a field's path in a
 * 400, journey.steps[3], counts from 0 as JSON does). A secret is never in
 * it.
 * @param {Step} s
 * @param {number} i
 */
export function describeStep (s, i) {
  const what = s.url ?? s.selector ?? (s.network_idle ? 'network idle' : s.ms !== undefined ? `${s.ms} ms` : s.action === 'eval' ? 'script' : '')
  return `step ${i + 1} (${s.action}${what ? ` ${what}` : ''}${s.name && !MARKERS.has(s.action) ? `, "${s.name}"` : ''})`
}

/**
 * @param {unknown} v
 * @param {{ default: number, min: number, max: number }} range
 * @param {string} at
 * @param {(at: string, why: string) => never} fail
 */
function boundedInt (v, range, at, fail) {
  if (v === undefined || v === null) return range.default
  if (!Number.isInteger(v) || /** @type {number} */ (v) < range.min || /** @type {number} */ (v) > range.max) {
    fail(at, `a whole number of milliseconds from ${range.min} to ${range.max} (default ${range.default})`)
  }
  return /** @type {number} */ (v)
}

/**
 * @param {unknown} v
 * @param {string} at
 * @param {number} max
 * @param {(at: string, why: string) => never} fail
 * @param {{ min: number }} opts
 */
function text (v, at, max, fail, { min }) {
  // YAML reads `value: 42` as a number; a field's value is text either way.
  if (typeof v === 'number' && Number.isFinite(v)) v = String(v)
  if (typeof v !== 'string') fail(at, 'must be text')
  const s = /** @type {string} */ (v)
  if (s.length < min) fail(at, 'must not be empty')
  if (s.length > max) fail(at, `at most ${max} characters`)
  return s
}

/**
 * A navigate URL, absolute: http or https, without credentials.
 * @param {unknown} v
 * @param {string} base the monitor URL
 * @param {string} at
 * @param {(at: string, why: string) => never} fail
 */
function stepUrl (v, base, at, fail) {
  if (typeof v !== 'string' || !v.trim()) fail(at, 'must be a URL, absolute or relative to the monitor URL')
  let u
  try {
    u = new URL(/** @type {string} */ (v).trim(), base)
  } catch {
    fail(at, `${JSON.stringify(String(v).slice(0, 100))} is not a valid URL`)
  }
  const url = /** @type {URL} */ (u)
  if (url.protocol !== 'https:' && url.protocol !== 'http:') fail(at, `must use http or https, not ${url.protocol.replace(':', '')}`)
  if (url.username || url.password) fail(at, 'must not contain a user name or password (use a type step with a secret)')
  const badPort = badPortReason(url)
  if (badPort) fail(at, badPort)
  if (url.toString().length > 2048) fail(at, 'longer than 2048 characters')
  return url.toString()
}

/**
 * @param {unknown} v
 * @param {string} at
 * @param {(at: string, why: string) => never} fail
 * @returns {string | { stored: string }}
 */
function secretField (v, at, fail) {
  if (typeof v === 'string') {
    if (!v.length) fail(at, 'must not be empty')
    if (v.length > 1000) fail(at, 'at most 1000 characters')
    return v
  }
  if (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 1 && typeof (/** @type {any} */ (v)).stored === 'string') {
    const ref = /** @type {any} */ (v).stored
    if (!SECRET_REF.test(ref)) fail(at, `{ stored: ${JSON.stringify(ref)} } is not a stored secret's reference; give the secret as text`)
    return { stored: ref }
  }
  fail(at, 'the secret as text (stored encrypted, never shown again), or { stored: <reference> } to keep the one stored')
  throw new Error('unreachable')
}

/**
 * The origins whose requests a journey's protocol is judged by: the
 * monitor's, each navigate step's, and those the arm forces beyond them.
 * @param {{ steps: readonly { action: string, url?: string }[] }} journey
 * @param {string} url the monitor URL
 * @param {readonly string[]} forced
 * @returns {Set<string>}
 */
export function judgedOrigins (journey, url, forced) {
  return new Set([url, ...journey.steps.flatMap((s) => (s.action === 'navigate' && s.url ? [s.url] : [])), ...forced].map(originOf))
}

/**
 * A journey's result (or a named step's) counts for its arm when every
 * request it made to a judged origin (judgedOrigins) came over the arm's
 * protocol; the first that did not is the observed protocol. Requests to
 * other origins (third parties) are not judged: the arm does not force
 * them; nor are those served from the cache. A step that fetched nothing
 * from those origins is judged by the page it acted on. Sets the result's
 * observed_protocol, protocol_ok and status.
 * @param {Record<string, any>} r
 * @param {{ url: string, protocol?: string | null, from_cache?: boolean | null }[]} requests
 * @param {string} protocol the arm's (an A/A arm's, not its label)
 * @param {Set<string>} judged
 * @param {string | null} fallback the protocol of the page the step acted on
 */
export function judgeJourneyProtocol (r, requests, protocol, judged, fallback) {
  const own = requests.filter((q) => q.protocol && !q.from_cache && judged.has(originOf(q.url)))
  const wrong = own.find((q) => !protocolMatchesMode(q.protocol, protocol))
  r.observed_protocol = (wrong ?? own[0])?.protocol ?? fallback ?? null
  r.protocol_ok = !wrong && protocolMatchesMode(r.observed_protocol, protocol)
  r.status = r.protocol_ok ? 'ok' : 'protocol_mismatch'
}
