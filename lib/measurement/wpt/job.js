// One arm of an h3lens round → the job JSON a wptagent runs. One WPT test is
// one browser set-up, so each arm is its own test, with the arm's protocol
// switches in addCmdLine: the same ones the Puppeteer agent starts Chromium
// with (lib/measurement/modes.js).
import { expectedProtocolFor, modeFlags } from '../modes.js'
import { effectiveOptions } from '../probes/index.js'

/**
 * Switches wptagent sets itself. Chromium keeps only the last value of a
 * repeated switch, so an addCmdLine that repeated one would replace the
 * agent's own list (its host resolver rules, its disabled features).
 */
export const AGENT_OWNED_SWITCHES = Object.freeze(['--host-resolver-rules', '--disable-features'])

/** Seconds a WPT test may take, as the Puppeteer agent's page timeout. */
export const WPT_TEST_TIMEOUT_S = 60

/**
 * @param {{ testId: string, mode: 'h2' | 'h3', job: { url: string, repeat_view?: boolean, options?: Record<string, any>,
 *   aa_protocol?: string | null, monitor_id: number, due_at: Date | string }, forceOrigins?: string[],
 *   location: { profile?: Record<string, any> } | null }} arm
 * @returns {Record<string, any>}
 */
export function wptJob ({ testId, mode, job, forceOrigins = [], location }) {
  const options = effectiveOptions(job.url, job.options ?? {})
  // An A/A monitor's arms both load with its one protocol; the mode stays the arm's label.
  const protocol = /** @type {'h2' | 'h3'} */ (expectedProtocolFor(mode, job))
  const switches = modeFlags(protocol, job.url, { forceOrigins: protocol === 'h3' ? forceOrigins : [] })
    .filter((s) => !AGENT_OWNED_SWITCHES.includes(s.split('=')[0]))
  return {
    'Test ID': testId,
    url: job.url,
    runs: 1,
    fvonly: job.repeat_view ? 0 : 1,
    browser: location?.profile?.wpt_browser ?? 'Chrome',
    timeout: WPT_TEST_TIMEOUT_S,
    // Video needs ffmpeg on the agent and is not used here.
    'Capture Video': 0,
    video: 0,
    disable_video: 1,
    lighthouse: 0,
    wappalyzer: 0,
    axe: 0,
    ...shaping(location?.profile ?? {}),
    ...(options.netlog === 'always' ? { netlog: 1 } : {}),
    addCmdLine: switches.join(' '),
    label: `h3lens monitor ${job.monitor_id}, round ${new Date(job.due_at).toISOString()}, ${mode} arm (${protocol.toUpperCase()})`
  }
}

/**
 * Traffic shaping fields. Zero unless the location says it shapes
 * (profile.wpt_shaping): an agent started with `--shaper none` fails every
 * job with a nonzero bandwidth or latency.
 * @param {Record<string, any>} profile
 */
function shaping (profile) {
  if (!profile.wpt_shaping) return { bwIn: 0, bwOut: 0, latency: 0, plr: 0 }
  return {
    bwIn: Math.round(profile.down_kbps ?? 0),
    bwOut: Math.round(profile.up_kbps ?? 0),
    latency: Math.round(profile.rtt_ms ?? 0),
    plr: profile.loss_pct ?? 0
  }
}
