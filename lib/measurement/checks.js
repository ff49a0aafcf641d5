// Plausibility of submitted results, beyond their JSON shape: a result that
// passes these may be surprising, but it could be true. Anything else is
// refused with 422 and the field at fault, never stored: one impossible
// value poisons every percentile it is merged into.
import { normalizeProtocol } from './protocol.js'
import { expectedProtocolFor } from './modes.js'
import { COLUMN_METRICS, TIMING_COLUMNS } from './metrics.js'
import { VIEWS_OF_MODE, withinNoteLimit } from './result.js'
import { splitProbe } from './probes/journey.js'
import { UnprocessableError } from '../runtime/errors.js'
import { MAX_ERROR_LENGTH, storableText } from '../runtime/text.js'

// measure.js rounds each timing to 0.1 ms, so an ordering that holds exactly
// in the browser may be off by a rounding step in the submission.
const TOLERANCE_MS = 1
// Agents' clocks drift; a day either way is a broken clock, not drift.
const CLOCK_SKEW_MS = 86400e3
const EPOCH = Date.parse('2020-01-01T00:00:00Z')

/**
 * Orderings Navigation Timing and Paint Timing guarantee for one navigation,
 * all times relative to its startTime, as the catalogue states them (each
 * metric's `atLeast`, ./metrics.js): each phase ends before the next begins
 * (domainLookup → connect → request → responseStart → DOMContentLoaded →
 * load), the TLS handshake lies inside the connect phase, and nothing is
 * painted before the first byte of the document arrived.
 * Not enforced, because they do not always hold:
 *   - fcp ≤ lcp: an image without Timing-Allow-Origin reports its load time
 *     as the LCP time, which can precede the first paint;
 *   - fcp, lcp ≤ load: paints may come after the load event;
 *   - dns + connect ≤ ttfb: true when the phases follow each other, which
 *     connection racing does not promise; each of them ≤ ttfb always holds.
 * They apply to the page probe only: other probes reuse these columns for
 * their own measurements.
 * @type {readonly (readonly [string, string])[]} [earlier, later]
 */
export const PAGE_ORDER = Object.freeze(COLUMN_METRICS.flatMap((m) => m.atLeast.map((earlier) => Object.freeze(/** @type {const} */ ([earlier, m.id])))))

/** Why a run failed, when the agent knows more than "error" (details.failure_kind). */
export const FAILURE_KINDS = Object.freeze({
  /** The document's body ended before its declared length, or the network failed after its headers. */
  truncated: 'truncated',
  /** The H3 arm's origin refused QUIC and advertises no Alt-Svc h3. */
  h3_unsupported: 'h3_unsupported',
  /** The document answered 2xx with an empty body, and the monitor does not allow empty pages (options.allow_empty). */
  empty: 'empty',
  /** The page's renderer process crashed (out of memory, or a bug the page triggers) while the browser ran on. */
  renderer_crashed: 'renderer_crashed'
})

/** A result's samples at most: the parallel probe's requests, the upload probe's POSTs, a journey step's one duration. */
export const MAX_SAMPLES = 1000

/**
 * What is wrong with a result's details.samples, or null: the values a
 * multi-sample probe's comparison rests on, each a time in ms.
 * @param {unknown} samples
 * @returns {string | null}
 */
export function badSamples (samples) {
  if (samples === undefined || samples === null) return null
  if (!Array.isArray(samples) || samples.length > MAX_SAMPLES) return `must be a list of at most ${MAX_SAMPLES} numbers (ms)`
  const i = samples.findIndex((x) => typeof x !== 'number' || !(x >= 0 && x <= 3600000))
  return i < 0 ? null : `[${i}] must be a number from 0 to 3600000 (ms), not ${JSON.stringify(samples[i])?.slice(0, 40)}`
}

/**
 * What is wrong with the parts of a result's details the API reads back
 * with a fixed shape, or null: its protocol reason (an object of text) and
 * its filmstrip's timing (a step in ms, progress as [t_ms, %] pairs). The
 * rest of details is the agent's own evidence, kept as sent. A shape the
 * readers cannot serialise would be stored, and then every list and view
 * holding the result would fail.
 * @param {unknown} details
 * @returns {{ key: string, problem: string } | null} key: the part at fault, under details
 */
export function badDetails (details) {
  if (details === null || typeof details !== 'object') return null
  const d = /** @type {Record<string, unknown>} */ (details)
  const isObject = (/** @type {unknown} */ v) => v !== null && typeof v === 'object' && !Array.isArray(v)
  const text = (/** @type {unknown} */ v, /** @type {number} */ max) => typeof v === 'string' && v.length <= max
  const reason = d.protocol_reason
  if (reason !== undefined && reason !== null) {
    if (!isObject(reason)) return { key: 'protocol_reason', problem: 'must be an object such as {"code": "forced", "text": "…"}, or null' }
    const r = /** @type {Record<string, unknown>} */ (reason)
    for (const [k, max, nullable] of /** @type {[string, number, boolean][]} */ ([['code', 64, false], ['text', 1000, false], ['alternate_protocol_usage', 200, true], ['h3_announced', 64, true]])) {
      if (r[k] !== undefined && !(text(r[k], max) || (nullable && r[k] === null))) return { key: `protocol_reason.${k}`, problem: `must be text of at most ${max} characters${nullable ? ', or null' : ''}` }
    }
  }
  const notKept = d.requests_not_kept
  if (notKept !== undefined && !(Number.isInteger(notKept) && /** @type {number} */ (notKept) > 0 && /** @type {number} */ (notKept) <= 10_000_000)) {
    return { key: 'requests_not_kept', problem: 'must be a whole number of requests from 1 to 10000000' }
  }
  const film = d.filmstrip
  if (film !== undefined && film !== null) {
    if (!isObject(film)) return { key: 'filmstrip', problem: 'must be an object, or null' }
    const f = /** @type {Record<string, unknown>} */ (film)
    if (f.kind !== undefined && !text(f.kind, 64)) return { key: 'filmstrip.kind', problem: 'must be text of at most 64 characters' }
    if (f.step_ms !== undefined && !(typeof f.step_ms === 'number' && f.step_ms > 0 && f.step_ms <= 60_000)) return { key: 'filmstrip.step_ms', problem: 'must be a number of ms from above 0 to 60000' }
    if (f.uploaded !== undefined && typeof f.uploaded !== 'boolean') return { key: 'filmstrip.uploaded', problem: 'must be true or false' }
    if (f.error !== undefined && f.error !== null && !text(f.error, MAX_ERROR_LENGTH)) return { key: 'filmstrip.error', problem: `must be text of at most ${MAX_ERROR_LENGTH} characters, or null` }
    if (f.progress !== undefined) {
      const pair = (/** @type {unknown} */ p) => Array.isArray(p) && p.length === 2 && p.every((x) => typeof x === 'number' && Number.isFinite(x))
      if (!(Array.isArray(f.progress) && f.progress.length <= 10_000 && f.progress.every(pair))) {
        return { key: 'filmstrip.progress', problem: 'must be a list of at most 10000 [t_ms, progress] pairs of numbers' }
      }
    }
  }
  return null
}

/**
 * Checks every result, and sets each one's protocol_ok from what it observed:
 * the agent's own verdict is never stored, only compared. A result that
 * contradicts its observed protocol (status ok over the wrong protocol or
 * with none observed, a protocol_mismatch that matched, protocol_ok true
 * over the wrong protocol) is refused. Failed runs (error, timeout) may have
 * observed nothing; their protocol_ok is recomputed all the same.
 * @param {Record<string, any>[]} results as submitted (shape already checked by the schema); protocol_ok is rewritten
 * @param {{ expectedProtocol?: (mode: string) => string | null }} [opts] default: the mode's own (lib/measurement/modes.js)
 * @throws {UnprocessableError} naming the first implausible field, as results.<i>.<field>
 */
export function checkResults (results, { expectedProtocol = (mode) => expectedProtocolFor(mode) } = {}) {
  const seen = new Map()
  results.forEach((r, i) => {
    const at = (/** @type {string} */ field) => `results.${i}.${field}`
    for (const [k, v] of Object.entries(r)) {
      if (typeof v === 'number' && !Number.isFinite(v)) throw new UnprocessableError(`${at(k)} must be a finite number`, at(k))
    }
    const key = `${r.mode}/${r.view ?? 'first'}/${r.probe ?? 'page'}`
    if (seen.has(key)) throw new UnprocessableError(`${at('mode')}: results.${seen.get(key)} is already the ${key} result of this job; a job has one result per mode, view and probe`, at('mode'))
    seen.set(key, i)

    checkProtocol(r, expectedProtocol(r.mode), at)
    const samplesProblem = badSamples(r.details?.samples)
    if (samplesProblem) throw new UnprocessableError(`${at('details.samples')} ${samplesProblem}`, at('details.samples'))
    const detailsProblem = badDetails(r.details)
    if (detailsProblem) throw new UnprocessableError(`${at(`details.${detailsProblem.key}`)} ${detailsProblem.problem}`, at(`details.${detailsProblem.key}`))
    const notKept = r.details?.requests_not_kept
    if (notKept !== undefined && typeof r.requests === 'number' && Array.isArray(r.details?.requests) && r.details.requests.length + notKept > r.requests) {
      throw new UnprocessableError(`${at('details.requests_not_kept')} (${notKept}) and the ${r.details.requests.length} requests kept are more than the run's ${r.requests} requests`, at('details.requests_not_kept'))
    }
    if (r.measured_at !== undefined) {
      const t = Date.parse(r.measured_at)
      if (!(t >= EPOCH && t <= Date.now() + CLOCK_SKEW_MS)) {
        throw new UnprocessableError(`${at('measured_at')} ${r.measured_at} is not a plausible measurement time (is the agent's clock right?)`, at('measured_at'))
      }
    }
    if ((r.probe ?? 'page') !== 'page') return
    // Of several contradictions, the one earliest in the page is named: a
    // TTFB after DOMContentLoaded, rather than after the load event too.
    const broken = PAGE_ORDER.filter(([earlier, later]) => typeof r[earlier] === 'number' && typeof r[later] === 'number' && r[earlier] > r[later] + TOLERANCE_MS)
    if (broken.length) {
      const [earlier, later] = broken.reduce((x, y) => (r[y[1]] < r[x[1]] ? y : x))
      throw new UnprocessableError(`${at(earlier)} (${r[earlier]} ms) is larger than ${later} (${r[later]} ms), which cannot happen in one page load`, at(earlier))
    }
  })
}

/** How the error of a run whose values cannot be a page load begins. */
export const IMPLAUSIBLE = 'implausible timings'

/**
 * Make a row an error result: its timings are not a page load's (the
 * agent's zeros and leftovers of a failed run, or values that cannot be
 * true), so none is kept where percentiles would read it.
 * @param {Record<string, any>} row
 * @param {string} error
 */
export function failRun (row, error) {
  row.status = 'error'
  row.error = storableText(error, MAX_ERROR_LENGTH)
  for (const c of TIMING_COLUMNS) row[c] = null
  // A failed run's samples are no measurement either (and may be what made it fail).
  if (row.details) delete row.details.samples
}

/**
 * A run is data: where checkResults would refuse one result (and with it
 * its whole round, at every attempt), the result is kept instead. A part of
 * its details the checks refuse (a filmstrip's, a protocol reason's) is
 * left out, with a note; any other value that cannot be true makes the run
 * an error result whose error starts with IMPLAUSIBLE and says which, its
 * timings dropped (a run that failed already keeps its status and error,
 * the reason after it). Its round's other results stand. What failing the run
 * cannot mend (a measurement time a day off: the agent's clock) still
 * throws, as the API would refuse it.
 * @param {Record<string, any>} result changed in place; protocol_ok is set as checkResults sets it
 * @param {{ expectedProtocol?: (mode: string) => string | null }} [opts] as for checkResults
 * @returns {string | null} why the run was failed, or null if it was not
 * @throws {UnprocessableError} as checkResults, when even the failed run is refused
 */
export function keepImplausibleAsData (result, opts) {
  // As JSON sends them, and the API would store them: no value.
  for (const [k, v] of Object.entries(result)) if (typeof v === 'number' && !Number.isFinite(v)) result[k] = null
  /** @type {string | null} */
  let failed = null
  // Each round mends one fault; a result has a few details parts at most.
  for (let i = 0; i < 10; i++) {
    try {
      checkResults([result], opts)
      return failed
    } catch (err) {
      if (!(err instanceof UnprocessableError)) throw err
      const field = String(err.field ?? '').replace(/^results\.0\./, '')
      const reason = err.message.replace(/^results\.0\./, '')
      const part = /^details\.([^.]+)/.exec(field)?.[1]
      if (part && part !== 'samples' && result.details && part in result.details) {
        delete result.details[part]
        result.notes = withinNoteLimit([...(result.notes ?? []), { code: 'detail_left_out', message: storableText(`details.${part} was left out: ${reason}`, 1000) }])
      } else if (failed === null) {
        failed = reason
        const why = `${IMPLAUSIBLE}: ${reason}`
        // A run that failed already keeps its status and its own error:
        // what cannot be true is its values, not its failure.
        const status = result.status
        const already = status === 'error' || status === 'timeout'
        failRun(result, already && result.error ? `${result.error} (${why})` : why)
        if (already) result.status = status
      } else {
        throw err
      }
    }
  }
  checkResults([result], opts)
  return failed
}

/**
 * @param {Record<string, any>} r one result; protocol_ok is set from observed_protocol
 * @param {string | null} expected 'h2' or 'h3'; null: any protocol counts (the auto arm)
 * @param {(field: string) => string} at
 */
function checkProtocol (r, expected, at) {
  const observed = normalizeProtocol(r.observed_protocol)
  const matches = observed !== null && (expected === null || observed === normalizeProtocol(expected))
  if (expected === null && r.status === 'protocol_mismatch') {
    throw new UnprocessableError(`${at('status')} is protocol_mismatch, but the ${r.mode} arm forces no protocol: whatever it loaded over counts`, at('status'))
  }
  expected ??= 'the protocol the browser chose'
  const seen = observed === null ? 'no observed_protocol' : `observed_protocol ${JSON.stringify(r.observed_protocol)}`
  // The protocol first: without it protocol_ok cannot be true either, and the import defaults protocol_ok from it.
  if (r.status === 'ok' && observed === null) {
    throw new UnprocessableError(`${at('observed_protocol')} is missing, but status ok says the run loaded over ${expected}`, at('observed_protocol'))
  }
  if (r.status === 'ok' && r.protocol_ok === false) {
    throw new UnprocessableError(`${at('status')} is ok but protocol_ok is false; a load over the wrong protocol has status protocol_mismatch`, at('status'))
  }
  if ((r.status === 'ok' || r.status === 'protocol_mismatch') && r.protocol_ok === true && !matches) {
    throw new UnprocessableError(`${at('protocol_ok')} is true but the run has ${seen}, not ${expected}`, at('protocol_ok'))
  }
  if (r.status === 'protocol_mismatch' && matches) {
    throw new UnprocessableError(`${at('status')} is protocol_mismatch but ${seen} is the expected ${expected}`, at('status'))
  }
  const kind = r.details?.failure_kind
  if (kind !== undefined && kind !== null) {
    const field = at('details.failure_kind')
    if (!Object.hasOwn(FAILURE_KINDS, kind)) throw new UnprocessableError(`${field} must be one of ${Object.keys(FAILURE_KINDS).join(', ')}`, field)
    if (r.status !== 'error') throw new UnprocessableError(`${field} ${kind} describes a failed run, but status is ${r.status}`, field)
    if (kind === FAILURE_KINDS.h3_unsupported && expected !== 'h3') {
      throw new UnprocessableError(`${field} h3_unsupported is only possible for a run that expects h3, not ${expected}`, field)
    }
  }
  r.protocol_ok = matches
}

/**
 * What a round's claim asked its agent to measure (jobs.asked, written at
 * each lease from the monitor as it was then): its arms, its probes, whether
 * a repeat view, and the names of its journey's steps.
 * @typedef {{ modes: string[], probes: string[], repeat_view: boolean, steps?: string[] | null }} Asked
 */

/**
 * The refusal of the first result its round did not ask for, or null: a
 * mode that is not one of the round's arms, a probe or journey step it does
 * not run, a view its mode does not have, a repeat view it did not ask for.
 * Any of them would be stored as the measurement of an arm the monitor
 * never ran, and read as such by every comparison; an agent token is all it
 * takes to send one. A value, not a throw, as a batch answers each round.
 * @param {Record<string, any>[]} results as submitted
 * @param {Asked | null} asked null for a round leased before claims were recorded: the schema alone checks it
 * @returns {UnprocessableError | null} with code not_asked, naming results.<i>.<field>
 */
export function checkAsked (results, asked) {
  if (!asked) return null
  const list = (/** @type {string[]} */ xs) => xs.join(', ')
  for (const [i, r] of results.entries()) {
    const at = (/** @type {string} */ field) => `results.${i}.${field}`
    const refusal = (/** @type {string} */ field, /** @type {string} */ why) =>
      new UnprocessableError(`${at(field)}: ${why}; a round's results are those its claim asked for`, at(field), 'not_asked')
    const view = r.view ?? 'first'
    const { probe, step } = splitProbe(r.probe ?? 'page')
    if (!asked.modes.includes(r.mode)) return refusal('mode', `this round's arms are ${list(asked.modes)}, not ${r.mode}`)
    if (!asked.probes.includes(probe)) return refusal('probe', `this round runs the probe${asked.probes.length === 1 ? '' : 's'} ${list(asked.probes)}, not ${probe}`)
    if (step !== null && !(asked.steps ?? []).includes(step)) return refusal('probe', `this round's journey has no step named ${JSON.stringify(step)}`)
    const views = /** @type {Record<string, readonly string[]>} */ (VIEWS_OF_MODE)[r.mode] ?? []
    if (!views.includes(view)) return refusal('view', `the ${r.mode} arm has no ${view} view (its views: ${list([...views])})`)
    if (view === 'repeat' && !asked.repeat_view) return refusal('view', 'this round asked for no repeat view')
  }
  return null
}
