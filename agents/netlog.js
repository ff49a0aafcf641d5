// Net log files of the agent: where a run's net log goes, reading it back
// (also when Chromium was killed before it could close the JSON), the summary
// kept with the result, and the upload to the API.
import { mkdir, readFile, rm } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { gzip as gzipCallback } from 'node:zlib'
import { summarizeNetlog, parseNetlog } from '../lib/measurement/netlog.js'

export { compactSummary } from '../lib/measurement/netlog.js'
import { putEvidence } from './http.js'

const gzip = promisify(gzipCallback)

/** Larger net logs are summarised but not uploaded (the API's limit is 32 MiB of gzip). */
export const NETLOG_UPLOAD_MAX_GZIP_BYTES = 32 * 1024 * 1024

/**
 * @param {string} dir
 * @param {{ jobId: number | string, probe: string, mode: string, kind: string }} key
 */
export async function netlogPath (dir, { jobId, probe, mode, kind }) {
  await mkdir(dir, { recursive: true })
  return path.join(dir, `job-${jobId}-${probe}-${mode}-${kind}-${process.pid}.netlog.json`)
}

/**
 * Read a finished capture: the summary for the result, and the gzip to upload.
 * @param {string} file
 * @param {{ rttMs?: number | null }} [opts]
 */
export async function finishNetlog (file, { rttMs = null } = {}) {
  const raw = await readFile(file)
  const summary = summarizeNetlog(parseNetlog(raw.toString('utf8')), { rttMs })
  return { summary, gzip: await gzip(raw), rawBytes: raw.length }
}

/** @param {string} file */
export async function removeNetlog (file) {
  await rm(file, { force: true })
}

/**
 * Uploads net logs through the agent API (PUT /agent/jobs/:id/netlog).
 * @param {{ apiUrl: string, token: string, timeoutMs?: number, ca?: string[] }} opts
 */
export function createNetlogUploader ({ apiUrl, token, timeoutMs = 60_000, ca }) {
  /**
   * @param {number} jobId
   * @param {{ mode: string, view: string, probe: string, kind: 'run' | 'rerun', rawBytes: number, gzip: Buffer }} n
   */
  return async function uploadNetlog (jobId, { mode, view, probe, kind, rawBytes, gzip: body }) {
    const q = new URLSearchParams({ mode, view, probe, kind, raw_bytes: String(rawBytes) })
    return putEvidence(`${apiUrl}/api/v1/agent/jobs/${jobId}/netlog?${q}`, {
      what: 'net log upload', apiUrl, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/gzip' }, body, timeoutMs, ca
    })
  }
}
