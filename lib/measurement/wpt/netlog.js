// The net log in a wptagent's result.zip (`N_netlog.txt.gz`): summarised
// like a Puppeteer agent's capture (QUIC and TLS sessions, handshake
// findings) for the result's details and notes, and kept without the page's
// contents (summarizeWptNetlog).
import { gunzipSync, gzipSync } from 'node:zlib'
import { compactSummary, parseNetlog, summarizeNetlog } from '../netlog.js'

/**
 * A page's net log in Default capture mode is a few MB; past this the log is
 * kept but not summarised (a small gzip may expand to gigabytes).
 */
export const NETLOG_SUMMARY_MAX_BYTES = 64 * 1024 * 1024

/** What a left-out value reads. */
const NOT_KEPT = '[value not kept]'
/** Header names whose values a kept net log never holds. */
const SECRET_HEADERS = new Set(['cookie', 'set-cookie', 'set-cookie2', 'authorization', 'proxy-authorization', 'www-authenticate', 'proxy-authenticate'])

/**
 * Summarise a WebPageTest agent's net log, and make the copy that is kept.
 * wptagent captures in Chromium's "Everything" mode: its log holds the
 * bytes of every request and response (the page's HTML, posted forms) and
 * cookies and credentials in the headers. h3lens agents capture in the
 * default mode, which holds neither; the copy kept of a WPT log is made
 * like it: the bytes left out of every event, the values of cookies and
 * of the headers that carry credentials replaced. A log that cannot be
 * read (over NETLOG_SUMMARY_MAX_BYTES, or not JSON) cannot be cleaned, and
 * is not kept.
 * @param {Buffer} gzip as uploaded
 * @returns {{ info: Record<string, any>, rawBytes: number | null, notes: Record<string, any>[], kept: Buffer | null }}
 *   info: details.netlog of the result; notes: its findings, as the result's notes; kept: the gzip to store, or null
 */
export function summarizeWptNetlog (gzip) {
  /** @type {{ kind: string, uploaded: boolean, error: string | null, raw_bytes: number | null, gzip_bytes: number, summary: ReturnType<typeof compactSummary> | null, redacted?: boolean }} */
  const info = { kind: 'run', uploaded: false, error: null, raw_bytes: null, gzip_bytes: gzip.length, summary: null }
  let raw
  try {
    raw = gunzipSync(gzip, { maxOutputLength: NETLOG_SUMMARY_MAX_BYTES })
  } catch (/** @type {any} */ err) {
    info.error = err.code === 'ERR_BUFFER_TOO_LARGE'
      ? `not kept: larger than ${NETLOG_SUMMARY_MAX_BYTES} bytes, too large to read and clear of the page's contents`
      : `not kept: ${err.message}`
    return { info, rawBytes: null, notes: [], kept: null }
  }
  info.raw_bytes = raw.length
  let log
  try {
    log = parseNetlog(raw.toString('utf8'))
  } catch (/** @type {any} */ err) {
    info.error = `not kept: ${err.message}`
    return { info, rawBytes: raw.length, notes: [], kept: null }
  }
  try {
    info.summary = compactSummary(summarizeNetlog(log))
  } catch (/** @type {any} */ err) {
    info.error = `kept, not summarised: ${err.message}`
  }
  const notes = (info.summary?.findings ?? []).map((f) => ({ ...f, source: 'netlog (run)' }))
  // Kept as read (a log cut short is kept to its last whole event, the
  // part that was checked), with what it must not hold left out.
  info.redacted = redactNetlog(log)
  info.uploaded = true
  const text = Buffer.from(JSON.stringify(log))
  const kept = gzipSync(text)
  info.raw_bytes = text.length
  info.gzip_bytes = kept.length
  return { info, rawBytes: text.length, notes, kept }
}

/**
 * Leave out the bytes and the secret headers' values of a parsed net log,
 * in place.
 * @param {any} log
 * @returns {boolean} whether anything was left out
 */
export function redactNetlog (log) {
  let changed = false
  // The cookie store's events (COOKIE_STORE_COOKIE_ADDED and the like) carry each cookie's value.
  const types = log?.constants?.logEventTypes && typeof log.constants.logEventTypes === 'object' ? log.constants.logEventTypes : {}
  const cookieEvents = new Set(Object.entries(types).filter(([name]) => name.startsWith('COOKIE_')).map(([, id]) => id))
  for (const e of Array.isArray(log?.events) ? log.events : []) {
    const p = e?.params
    if (!p || typeof p !== 'object') continue
    if (cookieEvents.has(e.type) && 'value' in p && p.value !== NOT_KEPT) {
      p.value = NOT_KEPT
      changed = true
    }
    for (const k of ['bytes', 'hex_encoded_bytes']) {
      if (k in p) {
        delete p[k]
        changed = true
      }
    }
    if (Array.isArray(p.headers)) {
      p.headers = p.headers.map((/** @type {unknown} */ h) => {
        if (typeof h !== 'string') return h
        const at = h.indexOf(':', 1)
        if (at < 0 || !SECRET_HEADERS.has(h.slice(0, at).trim().toLowerCase()) || h.slice(at + 1).trim() === NOT_KEPT) return h
        changed = true
        return `${h.slice(0, at)}: ${NOT_KEPT}`
      })
    } else if (p.headers && typeof p.headers === 'object') {
      for (const name of Object.keys(p.headers)) {
        if (!SECRET_HEADERS.has(name.toLowerCase()) || p.headers[name] === NOT_KEPT) continue
        p.headers[name] = NOT_KEPT
        changed = true
      }
    }
  }
  return changed
}
