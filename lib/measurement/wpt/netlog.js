// The net log in a wptagent's result.zip (`N_netlog.txt.gz`): kept as
// uploaded, and summarised like a Puppeteer agent's capture (QUIC and TLS
// sessions, handshake findings) for the result's details and notes.
import { gunzipSync } from 'node:zlib'
import { compactSummary, parseNetlog, summarizeNetlog } from '../netlog.js'

/**
 * A page's net log in Default capture mode is a few MB; past this the log is
 * kept but not summarised (a small gzip may expand to gigabytes).
 */
export const NETLOG_SUMMARY_MAX_BYTES = 64 * 1024 * 1024

/**
 * @param {Buffer} gzip
 * @returns {{ info: Record<string, any>, rawBytes: number | null, notes: Record<string, any>[] }}
 *   info: details.netlog of the result; notes: its findings, as the result's notes
 */
export function summarizeWptNetlog (gzip) {
  /** @type {{ kind: string, uploaded: boolean, error: string | null, raw_bytes: number | null, gzip_bytes: number, summary: ReturnType<typeof compactSummary> | null }} */
  const info = { kind: 'run', uploaded: true, error: null, raw_bytes: null, gzip_bytes: gzip.length, summary: null }
  let raw
  try {
    raw = gunzipSync(gzip, { maxOutputLength: NETLOG_SUMMARY_MAX_BYTES })
  } catch (/** @type {any} */ err) {
    info.error = err.code === 'ERR_BUFFER_TOO_LARGE' ? `kept, not summarised: larger than ${NETLOG_SUMMARY_MAX_BYTES} bytes` : `kept, not summarised: ${err.message}`
    return { info, rawBytes: null, notes: [] }
  }
  info.raw_bytes = raw.length
  try {
    info.summary = compactSummary(summarizeNetlog(parseNetlog(raw.toString('utf8'))))
  } catch (/** @type {any} */ err) {
    info.error = `kept, not summarised: ${err.message}`
  }
  const notes = (info.summary?.findings ?? []).map((f) => ({ ...f, source: 'netlog (run)' }))
  return { info, rawBytes: raw.length, notes }
}
