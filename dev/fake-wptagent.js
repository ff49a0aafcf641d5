// A fake wptagent for tests and scripts/wpt-screenshot.js: it replays a
// recorded request sequence of a real one (test/fixtures/wpt/
// server-requests-run*.jsonl, copied from the shared recordings of wptagent
// traffic) against a running h3lens over HTTP. Each recorded request is sent
// with its own query fields, User-Agent and multipart shape; only the
// location, key and pc are the caller's, and the test id is the one h3lens
// handed out. Like the agent, it polls until a job comes, pings, runs,
// uploads, and polls on; it reads bodies and never looks at statuses, as the
// agent does not.
import { readFileSync } from 'node:fs'
import path from 'node:path'

export const RECORDED = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'test', 'fixtures', 'wpt')

/** @param {string} file e.g. server-requests-run3.jsonl */
export function recordedRequests (file) {
  return readFileSync(path.join(RECORDED, file), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
}

/** @param {string} name a file in recorded/ */
export function recordedFile (name) {
  return readFileSync(path.join(RECORDED, name))
}

/**
 * @typedef {{ method: string, path: string, query: Record<string, string>, ua?: string, content_type?: string, files?: any[] }} RecordedRequest
 * @typedef {{ url: string, status: number, body: string }} Sent
 */

/**
 * @param {{ server: string, records: RecordedRequest[], location: string, key: string, pc: string,
 *   result: (job: Record<string, any>) => Promise<{ zip: Buffer | null, error?: string | null }>, maxJobs?: number }} opts
 *   result: what the "browser" produced for a job: the zip to upload and workdone's error=
 * @returns {Promise<{ jobs: Record<string, any>[], sent: Sent[], bodies: string[] }>} jobs received, every request sent, every getwork body
 */
export async function replayAgent ({ server, records, location, key, pc, result, maxJobs = 10 }) {
  const poll = records.find((r) => r.path.endsWith('/getwork.php'))
  const ping = records.find((r) => r.path.endsWith('/ping.php'))
  const done = records.find((r) => r.path.endsWith('/workdone.php'))
  if (!poll || !done) throw new Error('the recording has no getwork.php or no workdone.php')
  // The polls the recording made after its upload, with nothing to do.
  const idlePolls = Math.max(1, records.length - records.indexOf(done) - 1)
  /** @type {(q: Record<string, string>) => Record<string, string>} */
  const own = (q) => ({ ...q, ...(q.location ? { location } : {}), ...(q.pc ? { pc } : {}), ...(q.key ? { key } : {}) })
  /** @type {Sent[]} */
  const sent = []
  const bodies = []
  const jobs = []
  /**
   * @param {RecordedRequest} rec
   * @param {Record<string, string>} query
   * @param {{ headers?: Record<string, string>, body?: BodyInit }} [init]
   */
  const send = async (rec, query, init = {}) => {
    const url = `${server}${rec.path}?${new URLSearchParams(query)}`
    const res = await fetch(url, { method: rec.method, headers: { 'user-agent': rec.ua ?? 'wptagent', ...init.headers }, body: init.body })
    const body = await res.text()
    sent.push({ url, status: res.status, body })
    return body
  }

  let idle = 0
  while (idle < idlePolls && jobs.length < maxJobs) {
    const body = await send(poll, own(poll.query))
    bodies.push(body)
    if (body === '') { idle++; continue }
    // Anything but an empty body or `Reboot`/`Servers:`/`Scheduler:` is a job.
    const job = JSON.parse(body)
    jobs.push(job)
    idle = 0
    if (ping) await send(ping, { ...own(ping.query), test: job['Test ID'] })
    const { zip, error = null } = await result(job)
    /** @type {Record<string, string>} */
    const query = { ...own(done.query), id: job['Test ID'] }
    delete query.error
    if (error) query.error = error
    const boundary = `${Math.random().toString(16).slice(2)}${Math.random().toString(16).slice(2)}`
    const parts = zip
      ? [Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="result.zip"\r\nContent-Type: application/zip\r\n\r\n`), zip, Buffer.from(`\r\n--${boundary}--\r\n`)]
      : [Buffer.from(`--${boundary}--\r\n`)]
    await send(done, query, { headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body: Buffer.concat(parts) })
  }
  return { jobs, sent, bodies }
}
