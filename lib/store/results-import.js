// Results import: NDJSON lines in the export's field names become results of
// one monitor, with a done job per round, atomically. Uses: restoring an
// export, bringing history from another tool, calibration runs
// (bench/calibration.js) that need 100k rows per scenario.
//
// The whole input is validated before anything is written, so one bad line
// stores nothing; then every row is inserted in one transaction through the
// agents' batched insert (lib/store/results.js insertRoundResults), its new rows
// queued for the rollups like the agent path does (lib/store/jobs.js).
import { Transform } from 'node:stream'
import { ValidationError } from '../runtime/errors.js'
import { DATE_TIME_RULE, isValidDateTime } from '../runtime/date-time.js'
import { INSERT_COLUMNS, insertRoundResults, jobsOfStoredRounds } from './results.js'
import { doneJobsFor, JOB_STATES } from './jobs.js'
import { listLocations } from './locations.js'
import { withTransaction } from './transaction.js'
import { enqueueForRollup } from './rollups.js'
import { markResultsChanged, updateMonitor } from './monitors.js'
import { TIMING_COLUMNS } from '../measurement/metrics.js'
import { expectedProtocolFor, MODES } from '../measurement/modes.js'
import { PROBE_IDS as PROBES } from '../measurement/probes/index.js'
import { isJourneyProbe } from '../measurement/probes/journey.js'
import { MAX_REQUESTS, VIEWS } from '../measurement/result.js'
import { BROWSERS } from '../measurement/browsers/index.js'
import { checkResults, badSamples, badDetails } from '../measurement/checks.js'
import { normalizeProtocol } from '../measurement/protocol.js'

export const IMPORT_MAX_LINES = 100_000
// 100,000 exported lines of a page-probe monitor are ~45 MB of NDJSON.
export const IMPORT_MAX_BYTES = 64 * 1024 * 1024
export const IMPORT_MAX_LINE_BYTES = 1024 * 1024

// Rows per call of the batched insert, which splits them into INSERTs under
// PostgreSQL's 65,535 parameters. bench/import.js, 2 busy cores, with the
// import's own INSERTs: 100,000 lines in 6–11 s, of which ~1.4 s is parsing
// and checking, ~0.9 s the jobs and the rest the inserts.
const INSERT_BATCH_ROWS = 1000

// Fields of the source system: the importing monitor, its jobs and no agent
// take their place. Frames are never imported (filmstrip_url points at the
// source's): imported results have none.
const IGNORED_FIELDS = new Set(['id', 'job_id', 'monitor_id', 'agent_id', 'filmstrip_url'])

const STATUSES = ['ok', 'error', 'timeout', 'protocol_mismatch']
const EARLIEST = Date.parse('2000-01-01T00:00:00Z')
// An import brings results that were measured already: a time ahead of this
// server's clock by more than clock drift is a wrong row, which would sit at
// the right edge of every chart and window until its time came.
export const IMPORT_MAX_AHEAD_MS = 60e3

/** What is wrong with one field's value (or, with `part`, a part of it); the caller adds the line and field. */
class FieldProblem extends Error {
  /** @param {string} message @param {string} [part] */
  constructor (message, part) {
    super(message)
    this.part = part
  }
}

/**
 * Each importable field: how to check it and what to store. A checker
 * returns the stored value or throws a FieldProblem.
 * @type {Record<string, (v: any) => any>}
 */
const FIELDS = {
  time: (v) => roundTime(v),
  location_id: (v) => text(v, 63),
  browser: (v) => oneOf(v, BROWSERS),
  mode: (v) => oneOf(v, MODES),
  view: (v) => oneOf(v, VIEWS),
  // A journey's named step is part of its probe ('journey:login').
  probe: (v) => {
    if (typeof v === 'string' && (PROBES.includes(v) || isJourneyProbe(v))) return v
    throw new FieldProblem(`must be one of ${PROBES.join(', ')}, or journey:<step> for a journey's named step`)
  },
  status: (v) => oneOf(v, STATUSES),
  error: (v) => nullable(v, () => text(v, 4000)),
  observed_protocol: (v) => nullable(v, () => text(v, 64)),
  protocol_ok: (v) => nullable(v, () => { if (typeof v !== 'boolean') throw new FieldProblem('must be true or false'); return v }),
  measured_at: (v) => nullable(v, () => dateTime(v)),
  ...Object.fromEntries(TIMING_COLUMNS.map((c) => [c, (v) => nullable(v, () => number(v, 0, 3600000))])),
  // The export writes bigint columns as text (node-postgres reads int8 so).
  bytes: (v) => nullable(v, () => integer(typeof v === 'string' && /^\d{1,13}$/.test(v) ? Number(v) : v, 0, 1e12)),
  requests: (v) => nullable(v, () => integer(v, 0, MAX_REQUESTS)),
  h3_request_share: (v) => nullable(v, () => number(v, 0, 1)),
  h3_byte_share: (v) => nullable(v, () => number(v, 0, 1)),
  rtt_ms: (v) => nullable(v, () => number(v, 0, 3600000)),
  connect_rtt: (v) => nullable(v, () => number(v, 0, 1e6)),
  ttfb_rtt: (v) => nullable(v, () => number(v, 0, 1e6)),
  upload_mbps: (v) => nullable(v, () => number(v, 0, 1e6)),
  notes: (v) => nullable(v, () => storableJson(notes(v))),
  browser_version: (v) => nullable(v, () => text(v, 200)),
  agent_version: (v) => nullable(v, () => text(v, 100)),
  flags: (v) => nullable(v, () => {
    if (!Array.isArray(v) || v.length > 100 || !v.every((f) => typeof f === 'string' && f.length <= 2000)) throw new FieldProblem('must be a list of at most 100 strings')
    for (const f of v) text(f, 2000)
    return v
  }),
  details: (v) => nullable(v, () => {
    if (typeof v !== 'object' || Array.isArray(v)) throw new FieldProblem('must be an object, for example {"samples": [12.5, 13.1]}')
    const problem = badSamples(v.samples)
    if (problem) throw new FieldProblem(problem, 'samples')
    const shape = badDetails(v)
    if (shape) throw new FieldProblem(shape.problem, shape.key)
    for (const list of ['requests', 'origins']) {
      if (v[list] !== undefined && !(Array.isArray(v[list]) && v[list].every((x) => x && typeof x === 'object' && !Array.isArray(x)))) {
        throw new FieldProblem('must be a list of objects, one per request (origin), as the export writes it', list)
      }
    }
    return v
  }),
  // The export's samples column: what a multi-sample probe's comparison
  // rests on (its requests, uploads, a journey step's duration), kept in
  // details.samples as an agent sends it.
  samples: (v) => nullable(v, () => {
    const problem = badSamples(v)
    if (problem) throw new FieldProblem(problem)
    return v
  })
}

/**
 * @typedef {{ imported: number, skipped_existing: number, rounds: number }} ImportSummary
 */

/** @typedef {{ location: string, browser: string, time: Date, line: number, jobId?: number }} Round one round of an import, by location, browser and time; line: its first line */

/**
 * @typedef {object} ImportTarget
 * @property {{ id: number, locations: string[], aa_protocol?: string | null }} monitor
 * @property {AsyncIterable<{ n: number, line: string }[]>} lines the non-blank lines and their numbers, in batches (ndjsonLines)
 * @property {boolean} [addLocations] rows of a known location the monitor does not run at add it to the monitor, instead of a 400
 * @property {import('./monitors.js').MonitorPolicy} [policy] the target rules that apply when locations are added
 */

/**
 * Import NDJSON result lines into one monitor. Rows sharing (location_id,
 * browser, time) are one round (a row without a browser is Chromium's): one
 * job per (monitor, location, browser, time), created done
 * or reused, whose due time is the results' time. Re-importing stores
 * nothing new (the results' unique key absorbs it). Rows must belong to the
 * monitor: at one of its locations (or, with addLocations, at a known
 * location, which the import adds to it), and not ahead of now by more than
 * IMPORT_MAX_AHEAD_MS.
 * @param {import('pg').Pool} db
 * @param {ImportTarget} opts
 * @returns {Promise<ImportSummary & { added_locations: string[] }>}
 * @throws {ValidationError} naming the line and field (`line 17: ttfb_ms`), with `line` set; 413 over the limits
 */
export async function importResults (db, { monitor, lines, addLocations = false, policy }) {
  const known = new Set((await listLocations(db)).map((l) => l.id))
  const expected = (/** @type {string} */ mode) => expectedProtocolFor(mode, monitor)
  const own = new Set(monitor.locations)
  /** @type {Set<string>} */
  const added = new Set()
  const latest = Date.now() + IMPORT_MAX_AHEAD_MS
  const rows = []
  /** @type {Map<string, Round>} */
  const rounds = new Map()
  const seen = new Set()
  let n = 0
  let count = 0
  for await (const batch of lines) for (const { n: at, line } of batch) {
    n = at
    if (++count > IMPORT_MAX_LINES) {
      throw Object.assign(new ValidationError(`more than ${IMPORT_MAX_LINES} lines; import at most ${IMPORT_MAX_LINES} results per request (split the file)`, `line ${n}`),
        { statusCode: 413, line: n })
    }
    if (line.length > IMPORT_MAX_LINE_BYTES) throw lineError(n, null, `is longer than ${IMPORT_MAX_LINE_BYTES} characters`)
    const row = parseLine(line, n, { known, expected, latest })
    if (!own.has(row.location_id)) {
      if (!addLocations) {
        throw lineError(n, 'location_id', `"${row.location_id}" is not a location of monitor ${monitor.id} (it runs at ${monitor.locations.join(', ')}); ` +
          'add the location to the monitor first, or import with add_locations=true')
      }
      added.add(row.location_id)
    }
    const roundKey = `${row.location_id}|${row.browser}|${+row.time}`
    const key = `${roundKey}|${row.mode}|${row.view}|${row.probe}`
    if (seen.has(key)) {
      throw lineError(n, 'mode', `repeats the ${row.mode}/${row.view}/${row.probe} result of location ${row.location_id} in ${row.browser} at ${row.time.toISOString()}; a round has one result per mode, view and probe`)
    }
    seen.add(key)
    if (!rounds.has(roundKey)) rounds.set(roundKey, { location: row.location_id, browser: row.browser, time: row.time, line: n })
    // Kept as JSON text of the column values until the insert: 43 MB of
    // heap for 100,000 page results instead of 65 MB as arrays of values
    // (measured with --expose-gc); a full request stays well under 100 MB.
    rows.push(JSON.stringify(INSERT_COLUMNS.map((c) => (c === 'job_id' ? roundKey : row[c] ?? null))))
  }
  seen.clear()
  if (!rows.length) return { imported: 0, skipped_existing: 0, rounds: 0, added_locations: [] }
  const addedLocations = [...added]
  return storeImport(db, { monitor, rows, rounds, addedLocations, policy })
}

/**
 * One line → the row to insert, defaults filled in and checked like a
 * submitted result (lib/measurement/checks.js), with the expected protocol of the
 * monitor (an A/A monitor's arms both expect its aa_protocol).
 * @param {string} line
 * @param {number} n line number, from 1
 * @param {{ known: Set<string>, expected: (mode: string) => string | null, latest: number }} ctx
 *   latest: the last time (ms) a row's time and measured_at may have
 */
function parseLine (line, n, { known, expected, latest }) {
  let input
  try {
    input = JSON.parse(line)
  } catch (/** @type {any} */ err) {
    throw lineError(n, null, `is not valid JSON (${err.message})`)
  }
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw lineError(n, null, 'must be a JSON object, one result per line')
  for (const f of ['time', 'location_id', 'mode']) {
    if (input[f] === undefined || input[f] === null) throw lineError(n, f, 'is required')
  }
  /** @type {Record<string, any>} */
  const row = {}
  for (const [k, v] of Object.entries(input)) {
    if (IGNORED_FIELDS.has(k)) continue
    // Own fields only: a line's "valueOf" or "__proto__" is no field either.
    const check = Object.hasOwn(FIELDS, k) ? FIELDS[k] : undefined
    if (!check) throw lineError(n, k, `is not a result field; fields are those of the NDJSON export (${Object.keys(FIELDS).join(', ')})`)
    try {
      row[k] = check(v)
    } catch (err) {
      if (!(err instanceof FieldProblem)) throw err
      throw lineError(n, err.part ? `${k}.${err.part}` : k, err.message)
    }
  }
  if (!known.has(row.location_id)) throw lineError(n, 'location_id', `"${row.location_id}" is not a known location; add it first (GET /api/v1/locations lists them)`)
  for (const f of /** @type {const} */ (['time', 'measured_at'])) {
    if (row[f] != null && +row[f] > latest) {
      throw lineError(n, f, `${input[f]} is more than ${IMPORT_MAX_AHEAD_MS / 1000} s ahead of this server's clock (${new Date(latest - IMPORT_MAX_AHEAD_MS).toISOString()}); results are imported after they were measured`)
    }
  }
  row.view ??= 'first'
  row.probe ??= 'page'
  row.browser ??= 'chromium'
  row.status ??= 'ok'
  const protocol = expected(row.mode)
  // A load recorded ok without a protocol came over the one it was forced
  // to; an arm that forces none (auto) must say what it loaded over.
  if (row.observed_protocol == null && row.status === 'ok' && protocol !== null) row.observed_protocol = protocol
  row.protocol_ok ??= protocol === null ? normalizeProtocol(row.observed_protocol) !== null : normalizeProtocol(row.observed_protocol) === protocol
  const submitted = { ...row }
  delete submitted.time
  delete submitted.location_id
  delete submitted.browser
  // As an agent would send it: the text, not the parsed date.
  if (input.measured_at == null) delete submitted.measured_at
  else submitted.measured_at = input.measured_at
  for (const c of ['notes', 'details', 'samples']) delete submitted[c]
  try {
    checkResults([submitted], { expectedProtocol: expected })
  } catch (/** @type {any} */ err) {
    if (!err.field) throw err
    const field = String(err.field).replace(/^results\.0\./, '')
    const message = String(err.message).replace(/results\.0\./g, '')
    throw lineError(n, field, message.startsWith(`${field} `) ? message.slice(field.length + 1) : message)
  }
  // The check may settle status and protocol_ok from observed_protocol.
  Object.assign(row, submitted)
  row.measured_at ??= row.time
  row.agent_id = null
  const details = row.samples ? { ...row.details, samples: row.samples } : row.details ?? {}
  delete row.samples
  try {
    row.details = storableJson(details)
  } catch (err) {
    if (!(err instanceof FieldProblem)) throw err
    throw lineError(n, 'details', err.message)
  }
  return row
}

/**
 * Write the validated rows: the locations the import adds to the monitor
 * (checked as a PATCH of its locations would be), jobs of every round
 * (created done, or the existing one reused), then the results through the
 * batched insert, their new rows queued for the rollups. One transaction,
 * so a failure stores nothing.
 * @param {import('pg').Pool} db
 * @param {{ monitor: ImportTarget['monitor'], rows: string[], rounds: Map<string, { location: string, browser: string, time: Date, jobId?: number }>,
 *   addedLocations: string[], policy?: import('./monitors.js').MonitorPolicy }} opts
 * @returns {Promise<ImportSummary & { added_locations: string[] }>}
 */
async function storeImport (db, { monitor, rows, rounds, addedLocations, policy }) {
  const monitorId = monitor.id
  return withTransaction(db, async (client) => {
    if (addedLocations.length) {
      await updateMonitor(client, monitorId, { locations: [...monitor.locations, ...addedLocations] }, policy).catch((err) => {
        if (!(err instanceof ValidationError)) throw err
        throw new ValidationError(`add_locations: monitor ${monitorId} cannot run at ${addedLocations.join(', ')}: ${err.message}`, 'add_locations')
      })
    }
    const list = [...rounds.values()]
    for (let i = 0; i < list.length; i += 10000) {
      const part = list.slice(i, i + 10000)
      const locations = part.map((r) => r.location)
      const browsers = part.map((r) => r.browser)
      const times = part.map((r) => r.time)
      // A round whose job was pruned (jobs retention) keeps its results:
      // their job_id is the round's, so a re-import stores nothing twice
      // rather than filing the same round under a new job.
      for (const j of await jobsOfStoredRounds(client, { monitorId, locations, browsers, times })) /** @type {Round} */ (rounds.get(`${j.location_id}|${j.browser}|${+j.due_at}`)).jobId = j.id
      const fresh = part.filter((r) => r.jobId === undefined)
      for (const j of await doneJobsFor(client, { monitorId, locations: fresh.map((r) => r.location), browsers: fresh.map((r) => r.browser), times: fresh.map((r) => r.time) })) {
        const round = /** @type {Round} */ (rounds.get(`${j.location_id}|${j.browser}|${+j.due_at}`))
        // A round the scheduler made, still to be measured: its agent's
        // results would meet the imported ones in one round.
        if (j.state === JOB_STATES.queued || j.state === JOB_STATES.leased) throw liveRound(round, j)
        round.jobId ??= j.id
      }
    }
    // The agents' batched insert (lib/store/results.js insertRoundResults), so an
    // imported round is stored like a submitted one, its summary included.
    let imported = 0
    for (let i = 0; i < rows.length; i += INSERT_BATCH_ROWS) {
      const batch = rows.slice(i, i + INSERT_BATCH_ROWS).map((text) => {
        const values = JSON.parse(text)
        const row = Object.fromEntries(INSERT_COLUMNS.map((c, k) => [c, values[k]]))
        const job = { id: /** @type {number} */ (/** @type {Round} */ (rounds.get(row.job_id)).jobId), monitor_id: monitorId, location_id: row.location_id, browser: row.browser, due_at: row.time }
        // Kept as JSON text; the insert writes notes from the list.
        if (row.notes != null) row.notes = JSON.parse(row.notes)
        return { job, results: [row] }
      })
      const inserted = await insertRoundResults(client, { rounds: batch, agentId: null })
      await enqueueForRollup(client, inserted.map((r) => r.id))
      imported += inserted.length
    }
    if (imported) await markResultsChanged(client, monitorId)
    return { imported, skipped_existing: rows.length - imported, rounds: rounds.size, added_locations: addedLocations }
  })
}

/**
 * The non-blank lines of an NDJSON byte stream with their line numbers,
 * read as they arrive (never the whole body at once), handed out in
 * batches: the lines each chunk of the stream completes. More than
 * `maxBytes` is a 413. Lines end at \n (a \r before it is dropped). Blank
 * lines are counted but never handed out. A line at a time through an async
 * iterator costs more than parsing it: a chunk's lines go as one batch.
 * @param {import('node:stream').Readable} stream
 * @param {{ maxBytes?: number }} [opts]
 * @returns {AsyncIterable<{ n: number, line: string }[]>}
 */
export function ndjsonLines (stream, { maxBytes = IMPORT_MAX_BYTES } = {}) {
  let bytes = 0
  const counted = new Transform({
    transform (chunk, _enc, done) {
      bytes += chunk.length
      if (bytes > maxBytes) {
        return done(Object.assign(new ValidationError(`the body is larger than ${maxBytes / 1024 / 1024} MiB; import at most ${IMPORT_MAX_LINES} results per request`, 'body'), { statusCode: 413 }))
      }
      done(null, chunk)
    }
  })
  stream.on('error', (err) => counted.destroy(err))
  // The stream holds what arrives until it is read (back-pressure), so
  // nothing is lost while the caller awaits something else first.
  stream.pipe(counted)
  return (async function* () {
    // Bytes that are not UTF-8 are refused, never stored as replacement characters.
    const decoder = new TextDecoder('utf-8', { fatal: true })
    const decode = (/** @type {Buffer | undefined} */ chunk) => {
      try {
        return chunk ? decoder.decode(chunk, { stream: true }) : decoder.decode()
      } catch {
        // Which line: the first of the chunk's lines that does not decode
        // alone (the first continues the line under way).
        let at = n + 1
        if (chunk) {
          const lines = []
          for (let from = 0; from <= chunk.length;) {
            const end = chunk.indexOf(10, from)
            lines.push(chunk.subarray(from, end === -1 ? chunk.length : end))
            if (end === -1) break
            from = end + 1
          }
          const bad = lines.findIndex((bytes, i) => i > 0 && !utf8(bytes))
          if (bad > 0 && utf8(lines[0])) at = n + 1 + bad
        }
        throw lineError(at, null, 'is not UTF-8: send the results as UTF-8 text')
      }
    }
    // The line not yet ended, in the pieces it came in: only each new chunk
    // is searched for line ends, so a body of one endless line costs its
    // length once, not its length for every chunk.
    /** @type {string[]} */
    let pending = []
    let pendingLength = 0
    let n = 0
    /** @param {string} text */
    const numbered = (text) => ({ n, line: text.endsWith('\r') ? text.slice(0, -1) : text })
    for await (const chunk of counted) {
      const parts = decode(chunk).split('\n')
      const tail = /** @type {string} */ (parts.pop())
      const batch = []
      for (const [i, part] of parts.entries()) {
        const line = i === 0 ? pending.join('') + part : part
        if (i === 0) { pending = []; pendingLength = 0 }
        n++
        if (line.trim() !== '') batch.push(numbered(line))
      }
      pending.push(tail)
      pendingLength += tail.length
      if (batch.length) yield batch
      // Refused as soon as it is too long, not once all of it has come (one
      // more character may be the \r of a \r\n).
      if (pendingLength > IMPORT_MAX_LINE_BYTES + 1) throw lineError(n + 1, null, `is longer than ${IMPORT_MAX_LINE_BYTES} characters`)
    }
    const rest = pending.join('') + decode(undefined)
    n++
    if (rest.trim() !== '') yield [numbered(rest)]
  })()
}

/** @param {Uint8Array} bytes whether they are UTF-8 on their own */
function utf8 (bytes) {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes)
    return true
  } catch {
    return false
  }
}

/**
 * The 409 for an imported round whose due time is that of a round still
 * queued or leased.
 * @param {Round} round
 * @param {{ id: number, state: string }} job
 */
function liveRound (round, job) {
  const what = job.state === JOB_STATES.queued ? 'queued to run' : 'being measured'
  return Object.assign(lineError(round.line, 'time', `${round.time.toISOString()} is the due time of round ${job.id} at ${round.location} in ${round.browser}, which is ${what}; ` +
    'an import adds no results to a live round: import it once the round is done, or at another time'), { statusCode: 409, code: 'live_round' })
}

/**
 * @param {number} line
 * @param {string | null} field
 * @param {string} message what is wrong, after "line N: field"
 */
function lineError (line, field, message) {
  const where = field ? `line ${line}: ${field}` : `line ${line}`
  return Object.assign(new ValidationError(`${where} ${message}`, where), { line })
}

/**
 * @template T
 * @param {unknown} v
 * @param {() => T} check
 */
function nullable (v, check) { return v === null ? null : check() }

/**
 * @param {unknown} v
 * @param {number} max
 */
function text (v, max) {
  if (typeof v !== 'string') throw new FieldProblem('must be a string')
  if (v.length > max) throw new FieldProblem(`must be at most ${max} characters`)
  const wellFormed = /** @type {any} */ (v).isWellFormed()
  if (v.includes('\0') || !wellFormed) throw new FieldProblem('contains a NUL character or an unpaired surrogate, which cannot be stored')
  return v
}

/**
 * @param {any} v a field of the imported line
 * @param {readonly string[]} allowed
 */
function oneOf (v, allowed) {
  if (!allowed.includes(v)) throw new FieldProblem(`must be one of ${allowed.join(', ')}`)
  return v
}

/**
 * @param {unknown} v
 * @param {number} min
 * @param {number} max
 */
function number (v, min, max) {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new FieldProblem('must be a finite number')
  if (v < min || v > max) throw new FieldProblem(`must be from ${min} to ${max}`)
  return v
}

/**
 * @param {unknown} v
 * @param {number} min
 * @param {number} max
 */
function integer (v, min, max) {
  if (!Number.isInteger(v)) throw new FieldProblem('must be a whole number')
  return number(v, min, max)
}

/** @param {unknown} v */
function dateTime (v) {
  if (typeof v !== 'string' || !isValidDateTime(v)) throw new FieldProblem(DATE_TIME_RULE)
  return new Date(Date.parse(v))
}

/** @param {unknown} v */
function roundTime (v) {
  const t = dateTime(v)
  if (+t < EARLIEST) throw new FieldProblem(`${v} is not a plausible round time (before 2000)`)
  return t
}

// JSON text with a NUL or a lone surrogate escape, which jsonb refuses: an
// escape preceded by an even number of backslashes.
const UNSTORABLE_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i

/** @param {object} v */
function storableJson (v) {
  let json
  try {
    json = JSON.stringify(v)
  } catch {
    throw new FieldProblem('is nested too deeply to store')
  }
  if (UNSTORABLE_ESCAPE.test(json)) throw new FieldProblem('contains a NUL character or an unpaired surrogate, which cannot be stored')
  return json
}

/** @param {unknown} v */
function notes (v) {
  if (!Array.isArray(v) || v.length > 50) throw new FieldProblem('must be a list of at most 50 notes')
  for (const note of v) {
    if (note === null || typeof note !== 'object' || typeof note.code !== 'string' || typeof note.message !== 'string') {
      throw new FieldProblem('must be a list of {code, message, ...} objects')
    }
    if (note.code.length > 64 || note.message.length > 1000) throw new FieldProblem('has a note with a code over 64 or a message over 1000 characters')
  }
  return v
}
