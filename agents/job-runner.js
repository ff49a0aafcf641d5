// Turns a claimed job into the results the API stores: which measurements to
// run (probes, modes), with which extra flags (lab origins only), and the
// mapping from the measurement engine's output to the submitted shape.
import { runRound } from './measure.js'
import { labBrowserFlags } from './flags.js'
import { LAB_HOSTNAME } from '../lib/lab-host.js'

/** Fields of a measurement that are submitted as columns; the rest goes to details. */
const COLUMNS = [
  'mode', 'view', 'probe', 'status', 'error', 'observed_protocol', 'protocol_ok', 'ttfb_ms', 'load_ms', 'dns_ms',
  'connect_ms', 'tls_ms', 'fcp_ms', 'lcp_ms', 'dcl_ms', 'bytes', 'requests', 'h3_request_share', 'h3_byte_share',
  'browser_version', 'flags'
]

/**
 * @typedef {{ spki: string, hostname?: string, address: string, netns?: string | null }} LabTarget
 * How this agent reaches the lab origin: its certificate's SPKI, the address
 * the lab host name maps to, and the namespace Chromium runs in.
 */

/**
 * @param {{ pool: any, lab?: LabTarget | null, timeoutMs: number, log: import('pino').Logger, random?: () => number }} deps
 */
export function createJobRunner ({ pool, lab = null, timeoutMs, log, random }) {
  /**
   * @param {{ url: string, modes: string[] }} job
   * @param {{ location?: { profile?: { rtt_ms?: number } } }} ctx
   */
  return async function runJob (job, { location } = {}) {
    const isLab = new URL(job.url).hostname === LAB_HOSTNAME
    if (isLab && !lab) throw new Error(`this agent has no lab origin configured, so it cannot measure ${job.url}`)
    const extraFlags = isLab ? labBrowserFlags({ spki: lab.spki, hostname: LAB_HOSTNAME, address: lab.address }) : []
    const netns = lab?.netns ?? null
    const rtt = location?.profile?.rtt_ms > 0 ? location.profile.rtt_ms : null
    const measured = await runRound({ pool, url: job.url, modes: /** @type {any} */ (job.modes), extraFlags, netns, timeoutMs, log, random })
    return measured.map((m) => toSubmission(m, { rtt }))
  }
}

/**
 * @param {Record<string, any>} m one measurement
 * @param {{ rtt: number | null }} ctx
 */
export function toSubmission (m, { rtt }) {
  const out = {}
  for (const k of COLUMNS) if (m[k] !== undefined) out[k] = m[k]
  out.rtt_ms = rtt
  out.measured_at = new Date().toISOString()
  out.details = { requests: m.requests_detail ?? [], wall_ms: m.wall_ms ?? null }
  return out
}
