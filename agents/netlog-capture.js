// Capturing a net log for a run, and deciding which runs deserve one.
//
// A net log needs Chromium started with --log-net-log, so it cannot be
// switched on for a run of an already running browser: a captured run gets a
// browser of its own (agents/browsers/chromium.js withDedicated), which is closed right
// after so the log is complete. Two triggers:
//   - options.netlog = 'always': every run of the monitor is captured, and the
//     net log belongs to that very run (kind 'run').
//   - options.netlog = 'outliers' (default): the claim carries, per probe and
//     mode, the p99 of the last 100 ok runs (lib/store/netlogs.js). A run above it
//     is run again at once, with capture, after the rest of the round (kind
//     'rerun'). The outlier itself was not captured, so the re-run's own
//     figures are kept next to its net log: they say whether it reproduced
//     the outlier (a lasting cause such as a handshake quirk) or not (a
//     transient: a loss burst, a busy CPU).
import { finishNetlog, compactSummary, netlogPath, removeNetlog, NETLOG_UPLOAD_MAX_GZIP_BYTES } from './netlog.js'
import { outlierValue, probeOf } from '../lib/measurement/probes/index.js'

/** At most this many outlier re-runs per job: both modes of one probe. */
export const MAX_RERUNS_PER_JOB = 2

/**
 * Run `fn` with a net log file and attach what the log says to its first
 * result (details.netlog) and, for a repeat view, its 0-RTT and resumption.
 * @param {{ dir: string, jobId: number, probe: string, mode: string, kind: 'run' | 'rerun', rttMs: number | null,
 *   uploadNetlog: ((jobId: number, n: any) => Promise<unknown>) | null, log: import('pino').Logger }} spec
 * @param {(netlogFile: string) => Promise<Record<string, any>[]>} fn
 */
export async function captureNetlog (spec, fn) {
  const { dir, jobId, probe, mode, kind, rttMs, uploadNetlog, log } = spec
  const file = await netlogPath(dir, { jobId, probe, mode, kind })
  try {
    const results = await fn(file)
    /** @type {{ kind: string, uploaded: boolean, error: string | null, raw_bytes: number | null, gzip_bytes: number | null, summary: ReturnType<typeof compactSummary> | null }} */
    const info = { kind, uploaded: false, error: null, raw_bytes: null, gzip_bytes: null, summary: null }
    try {
      const { summary, gzip, rawBytes } = await finishNetlog(file, { rttMs })
      Object.assign(info, { summary: compactSummary(summary), raw_bytes: rawBytes, gzip_bytes: gzip.length })
      if (!uploadNetlog) info.error = 'this agent has no API to upload net logs to'
      else if (gzip.length > NETLOG_UPLOAD_MAX_GZIP_BYTES) info.error = `net log too large to upload (${gzip.length} bytes of gzip)`
      else {
        await uploadNetlog(jobId, { mode, view: 'first', probe, kind, rawBytes, gzip })
        info.uploaded = true
      }
    } catch (/** @type {any} */ err) {
      info.error = err.message
      log.warn({ job: jobId, probe, mode, err: err.message }, 'net log not kept')
    }
    const [first, ...rest] = results
    first.netlog = info
    const repeat = rest.find((r) => r.view === 'repeat')
    if (repeat?.repeat && info.summary) {
      // Sessions beyond the first view's one were opened by the repeat view.
      repeat.repeat.zero_rtt = info.summary.quic_sessions.slice(1).map((s) => s.zero_rtt)
      repeat.repeat.tls_resumed = info.summary.tls_sessions.slice(1).map((s) => s.is_resumed)
    }
    return results
  } finally {
    await removeNetlog(file)
  }
}

/**
 * Why a first-view ok result is an outlier (its value above the p99 the API
 * sent for its probe and mode), or null.
 * @param {Record<string, any>} r
 * @param {Record<string, number> | undefined} thresholds
 * @returns {string | null}
 */
export function outlierOf (r, thresholds) {
  if (r.view !== 'first' || r.status !== 'ok' || !thresholds) return null
  const limit = thresholds[`${r.probe}/${r.mode}`]
  if (!(limit > 0)) return null
  const value = outlierValue(r)
  return value !== null && value > limit ? `${probeOf(r.probe).outlier.label} ${value} above the p99 of recent runs (${limit})` : null
}
