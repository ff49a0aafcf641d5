// Reading a wptagent's result.zip. The zip comes from the network, so it is
// treated as hostile: member names are checked before anything is read, only
// the members h3lens uses are decompressed, and every decompression is capped
// (a few KB of gzip can expand to gigabytes).
import { gunzipSync } from 'node:zlib'
import yauzl from 'yauzl'
import { ValidationError } from '../../runtime/errors.js'
import { traceTimes } from './trace.js'

/**
 * The devtools requests of a step of a run are 5–50 KB gzipped on ordinary
 * pages and rarely above 1 MB, a few MB of JSON holding tens of thousands of
 * values; a trace is larger, and only its few times are kept. The limits
 * leave room for pages with thousands of requests and a journey's steps,
 * and bound what one upload can make the API hold, whatever it is made of:
 * - memberBytes, totalBytes: a member as the zip holds it, and all kept
 *   members together (a few KB of zip can hold gigabytes of zeros);
 * - jsonBytes, jsonTotalBytes: a member's JSON once gunzipped, and all of
 *   an upload's JSON (the memory and CPU one upload may take; the API reads
 *   an upload on a thread of its own: ./zip-thread.js);
 * - jsonValues: the values (objects, arrays, and the commas between
 *   elements) in one member's JSON, counted before it is parsed. A parsed
 *   value takes tens of bytes of memory, so 64 MB of "[{},{},…]" would take
 *   gigabytes; a recorded devtools file holds about 200 a request, so a
 *   page of 5,000 requests about a million;
 * - keptValues: the values of all the JSON an upload keeps (devtools
 *   requests and page data, of every view and step; a trace is reduced to
 *   its times at once).
 */
export const ZIP_LIMITS = Object.freeze({
  entries: 500,
  memberBytes: 32 * 1024 * 1024,
  totalBytes: 96 * 1024 * 1024,
  jsonBytes: 64 * 1024 * 1024,
  jsonTotalBytes: 256 * 1024 * 1024,
  jsonValues: 4_000_000,
  keptValues: 8_000_000
})

/**
 * `1_devtools_requests.json.gz`, `1_Cached_devtools_requests.json.gz`, the
 * step's own page data (`1_page_data.json.gz`), its Chromium trace (for the
 * navigation's start: ./trace.js), the net log and the
 * screenshot at the end of the load (`1_screen.jpg`); a script's later
 * steps add their number (`1_2_devtools_requests.json.gz`, `1_Cached_2_…`),
 * the first step has none. (`1_progress.csv.gz` is bandwidth and CPU every
 * 100 ms, not visual progress: docs/WPT.md.)
 */
const MEMBER = /^(\d{1,3})(_Cached)?(?:_([2-9]|[1-9]\d))?_(devtools_requests\.json\.gz|page_data\.json\.gz|trace\.json\.gz|netlog\.txt\.gz|screen\.jpg)$/

/**
 * @typedef {{ run: number, cached: boolean, step: number, devtools: Record<string, any> | null, trace: import('./trace.js').TraceTimes | null,
 *   netlog: Buffer | null, screen: Buffer | null }} ZipView
 * step: the script's recorded step, 1 for a page; trace: what its trace says of navigations and first bytes, when it sent one;
 * screen: the JPEG the agent took at the end of the load, when it sent one
 */

/**
 * The views (run, cached) a result zip holds, step by step: each one's
 * parsed devtools requests and its gzipped net log, when present.
 * @param {Buffer} buffer
 * @param {Partial<typeof ZIP_LIMITS>} [limits]
 * @returns {Promise<ZipView[]>}
 * @throws {ValidationError} (400, field `file`) for anything but a well-formed zip of safe member names within the limits
 */
export async function readResultZip (buffer, limits = {}) {
  const lim = { ...ZIP_LIMITS, ...limits }
  const members = await readMembers(buffer, lim)
  /** @type {Map<string, ZipView>} */
  const views = new Map()
  /** Each view's own page data (`…_page_data.json.gz`), by view key. */
  const pageData = new Map()
  let kept = 0
  let inflated = 0
  /** A member's JSON, counted against jsonTotalBytes. @param {string} name @param {Buffer} data */
  const gunzipped = (name, data) => {
    try {
      const json = gunzipJson(name, data, lim, lim.jsonTotalBytes - inflated)
      inflated += json.length
      return json
    } catch (/** @type {any} */ err) {
      // What is left is spent: any further member fails at once.
      if (err.wholeUpload) inflated = lim.jsonTotalBytes
      throw err
    }
  }
  /** A member's JSON that the upload keeps, counted against keptValues. @param {string} name @param {Buffer} data */
  const keep = (name, data) => {
    const { value, values } = parseJson(name, gunzipped(name, data), lim, lim.keptValues - kept)
    kept += values
    return value
  }
  // Traces last: they are optional, and the JSON budget goes first to the
  // members a result needs.
  const ordered = [...members].sort(([a], [b]) => Number(a.endsWith('_trace.json.gz')) - Number(b.endsWith('_trace.json.gz')))
  for (const [name, data] of ordered) {
    // readMembers keeps only the names MEMBER matches.
    const [, run, cached, stepText, kind] = /** @type {RegExpExecArray} */ (MEMBER.exec(name))
    const step = stepText === undefined ? 1 : Number(stepText)
    const key = `${run}/${cached ? 1 : 0}/${step}`
    const view = views.get(key) ?? { run: Number(run), cached: Boolean(cached), step, devtools: null, trace: null, netlog: null, screen: null }
    views.set(key, view)
    if (kind === 'screen.jpg') {
      // Evidence only: one that is not a JPEG is left out, not the upload.
      if (data.length > 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) view.screen = data
    } else if (kind === 'netlog.txt.gz') {
      if (data.length < 2 || data[0] !== 0x1f || data[1] !== 0x8b) throw bad(`${name} is not gzip`)
      view.netlog = data
    } else if (kind === 'page_data.json.gz') {
      pageData.set(key, keep(name, data))
    } else if (kind === 'trace.json.gz') {
      // Only its few times are kept: a trace is megabytes of events. One
      // that cannot be read costs the run its navigation's start, not the
      // upload (the TTFB then falls back to the agent's own: ./navigation.js).
      try {
        view.trace = traceTimes(parseJson(name, gunzipped(name, data), lim).value)
      } catch {
        // Past its own limits or the upload's: the run does without.
        view.trace = null
      }
    } else {
      view.devtools = keep(name, data)
    }
  }
  const sorted = [...views.values()].sort((a, b) => a.run - b.run || Number(a.cached) - Number(b.cached) || a.step - b.step)
  restoreStepPageData(sorted, pageData)
  return sorted
}

/**
 * Give each step of a script its own page data back. A wptagent (as at
 * 560e4d5, seen in its uploads for a script) writes each step's page data
 * (`1_2_page_data.json.gz`: its event name, DOMContentLoaded, paints…)
 * correctly, but when it merges that file into the step's devtools
 * requests it copies the values of the script's last step instead: every
 * step's `pageData.eventName` is the last step's name, its
 * `domContentLoadedEventStart` the last page's. So for every step but the
 * last of its view, the fields of its own page data replace those in its
 * devtools requests (the last step's are its own already). A single page is
 * one step: left as it is.
 * @param {ZipView[]} views sorted by run, cached, step
 * @param {Map<string, unknown>} pageData by `run/cached/step`
 */
function restoreStepPageData (views, pageData) {
  for (const view of views) {
    const last = views.filter((v) => v.run === view.run && v.cached === view.cached).at(-1)
    if (view === last || !isObject(view.devtools) || !isObject(view.devtools.pageData)) continue
    const own = pageData.get(`${view.run}/${view.cached ? 1 : 0}/${view.step}`)
    if (!isObject(own)) continue
    for (const [k, v] of Object.entries(own)) if (k !== '__proto__') view.devtools.pageData[k] = v
  }
}

/** @param {unknown} v @returns {v is Record<string, any>} */
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v)

/**
 * @param {Buffer} buffer
 * @param {typeof ZIP_LIMITS} lim
 * @returns {Promise<Map<string, Buffer>>} the wanted members, by name
 */
function readMembers (buffer, lim) {
  return new Promise((resolve, reject) => {
    const fail = (/** @type {any} */ err) => reject(err instanceof ValidationError ? err : bad(`not a readable zip (${err.message})`))
    // lazyEntries: one member at a time, so nothing is read that is not asked for.
    yauzl.fromBuffer(buffer, { lazyEntries: true, validateEntrySizes: true, strictFileNames: true }, (err, zip) => {
      if (err) return fail(err)
      /** @type {Map<string, Buffer>} */
      const out = new Map()
      let count = 0
      let total = 0
      zip.on('error', fail)
      zip.on('end', () => resolve(out))
      zip.on('entry', (entry) => {
        const name = entry.fileName
        if (++count > lim.entries) return fail(bad(`more than ${lim.entries} members`))
        const unsafe = unsafeName(name)
        if (unsafe) return fail(bad(`member "${name.slice(0, 200)}" ${unsafe}`))
        if (!MEMBER.test(name)) return zip.readEntry()
        if (out.has(name)) return fail(bad(`member ${name} appears twice`))
        if (entry.uncompressedSize > lim.memberBytes) return fail(bad(`${name} is larger than ${lim.memberBytes} bytes`))
        zip.openReadStream(entry, (err, stream) => {
          if (err) return fail(err)
          /** @type {Buffer[]} */
          const chunks = []
          let size = 0
          stream.on('data', (c) => {
            size += c.length
            total += c.length
            // validateEntrySizes stops a member longer than it declared; this
            // is the same cap for one that declares nothing useful.
            if (size > lim.memberBytes) { stream.destroy(); fail(bad(`${name} is larger than ${lim.memberBytes} bytes`)) } else if (total > lim.totalBytes) { stream.destroy(); fail(bad(`its members come to more than ${lim.totalBytes} bytes`)) } else chunks.push(c)
          })
          stream.on('error', fail)
          stream.on('end', () => { out.set(name, Buffer.concat(chunks)); zip.readEntry() })
        })
      })
      zip.readEntry()
    })
  })
}

/**
 * Why a member name may not be used, or null. wptagent writes flat names
 * (`1_screen.jpg`); a path, a parent reference or a drive letter is an
 * attempt to write outside wherever the zip might be unpacked.
 * @param {string} name
 */
export function unsafeName (name) {
  if (name.includes('\\')) return 'contains a backslash'
  if (name.startsWith('/') || /^[a-zA-Z]:/.test(name)) return 'is an absolute path'
  if (name.split('/').some((part) => part === '..')) return 'leaves the archive (..)'
  if (name.includes('\0')) return 'contains a NUL character'
  return null
}

/**
 * @param {string} name
 * @param {Buffer} data
 * @param {typeof ZIP_LIMITS} lim
 * @param {number} room what is left of the upload's jsonTotalBytes
 * @returns {Buffer} the member's JSON text
 */
function gunzipJson (name, data, lim, room) {
  try {
    return gunzipSync(data, { maxOutputLength: Math.max(1, Math.min(lim.jsonBytes, room)) })
  } catch (/** @type {any} */ err) {
    if (err.code !== 'ERR_BUFFER_TOO_LARGE') throw bad(`${name} is not valid gzip (${err.message})`)
    if (room < lim.jsonBytes) throw Object.assign(bad(`its JSON files decompress to more than ${lim.jsonTotalBytes} bytes in all`), { wholeUpload: true })
    throw bad(`${name} decompresses to more than ${lim.jsonBytes} bytes`)
  }
}

/**
 * @param {string} name
 * @param {Buffer} json
 * @param {typeof ZIP_LIMITS} lim
 * @param {number} [left] what is left of the upload's keptValues, for JSON it keeps
 * @returns {{ value: any, values: number }} the parsed JSON, and its values as jsonValues counts them
 */
function parseJson (name, json, lim, left = Infinity) {
  const values = jsonValues(json)
  if (values > lim.jsonValues) throw bad(`${name} holds more than ${lim.jsonValues} JSON values`)
  if (values > left) throw bad(`its devtools requests and page data hold more than ${lim.keptValues} JSON values in all`)
  try {
    return { value: JSON.parse(json.toString('utf8')), values }
  } catch (/** @type {any} */ err) {
    throw bad(`${name} is not valid JSON (${err.message})`)
  }
}

/**
 * The objects, arrays and element separators in a JSON text: at least the
 * values parsing it makes, less its scalars at the top or alone in an
 * array. Braces and commas inside strings count too: the count is an upper
 * bound, which is all a limit needs.
 * @param {Buffer} json
 */
function jsonValues (json) {
  let n = 0
  for (let i = 0; i < json.length; i++) {
    const c = json[i]
    if (c === 0x7b || c === 0x5b || c === 0x2c) n++
  }
  return n
}

/** @param {string} message */
function bad (message) {
  return new ValidationError(`result.zip: ${message}`, 'file')
}
