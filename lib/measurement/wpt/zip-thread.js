// Reading a result.zip on a thread of its own. Its members are gunzipped
// and parsed synchronously (./zip.js): an upload at its limits (hundreds of
// MB of JSON) takes seconds of CPU, and on the API's own thread nothing else
// would be answered meanwhile, health checks and the agents' polls included.
// The thread gets a copy of the zip and gives back the views, each net log
// summarised there too (tens of MB of JSON, seconds of CPU), or the error
// that refused it.
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads'
import { ValidationError } from '../../runtime/errors.js'
import { createGate } from '../../runtime/gate.js'
import { readResultZip } from './zip.js'
import { summarizeWptNetlog } from './netlog.js'

/** What marks a thread started here, so that importing this file in another thread starts nothing. */
const MARK = 'h3lens-result-zip'

/**
 * Zips read at once; the others wait their turn. Each read may hold its
 * members' JSON (up to ZIP_LIMITS, hundreds of MB): uploads arriving
 * together, many agents' or one key's, must not hold that many times over.
 */
export const ZIP_THREADS = 2
const gate = createGate(ZIP_THREADS)

/** The zips being read on their threads now (at most ZIP_THREADS). */
export function zipReadsRunning () {
  return gate.running
}

/** @typedef {import('./zip.js').ZipView & { netlogSummary?: ReturnType<typeof summarizeWptNetlog> }} ThreadView a view, its net log summarised */

/**
 * readResultZip, on a thread of its own, at most ZIP_THREADS at once; each
 * view's net log summarised on that thread (netlogSummary).
 * @param {Buffer} buffer
 * @param {Partial<typeof import('./zip.js').ZIP_LIMITS>} [limits]
 * @returns {Promise<ThreadView[]>}
 * @throws {ValidationError} as readResultZip does
 */
export function readResultZipOffThread (buffer, limits = {}) {
  return gate.run(() => readOnThread(buffer, limits))
}

/**
 * @param {Buffer} buffer
 * @param {Partial<typeof import('./zip.js').ZIP_LIMITS>} limits
 * @returns {Promise<ThreadView[]>}
 */
function readOnThread (buffer, limits) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: { [MARK]: true, buffer, limits } })
    let answered = false
    worker.once('message', (/** @type {{ views?: any[], error?: { message: string, field?: string, statusCode?: number } }} */ m) => {
      answered = true
      if (m.views) return resolve(m.views.map(asBuffers))
      const e = /** @type {{ message: string, field?: string, statusCode?: number }} */ (m.error)
      reject(e.statusCode === 400 ? new ValidationError(e.message, e.field) : Object.assign(new Error(e.message), e.statusCode ? { statusCode: e.statusCode } : {}))
    })
    worker.once('error', (err) => { answered = true; reject(err) })
    worker.once('exit', (code) => { if (!answered) reject(new Error(`the thread reading a result.zip ended with code ${code} before it answered`)) })
  })
}

/**
 * A view as readResultZip gives it: a thread's Buffers arrive as Uint8Arrays.
 * @param {any} view
 * @returns {ThreadView}
 */
function asBuffers (view) {
  const buffer = (/** @type {Uint8Array | null} */ u) => u === null ? null : Buffer.from(u.buffer, u.byteOffset, u.byteLength)
  return { ...view, netlog: buffer(view.netlog), screen: buffer(view.screen), ...(view.netlogSummary ? { netlogSummary: { ...view.netlogSummary, kept: buffer(view.netlogSummary.kept) } } : {}) }
}

if (!isMainThread && workerData?.[MARK]) {
  const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort)
  const data = Buffer.from(workerData.buffer.buffer, workerData.buffer.byteOffset, workerData.buffer.byteLength)
  readResultZip(data, workerData.limits).then(
    // The net log as uploaded stays here: what is kept of it is the summary's.
    (views) => port.postMessage({ views: views.map((v) => (v.netlog ? { ...v, netlog: null, netlogSummary: summarizeWptNetlog(v.netlog) } : v)) }),
    (/** @type {any} */ err) => port.postMessage({ error: { message: String(err?.message ?? err), field: err?.field, statusCode: err?.statusCode } }))
}
