// One arm of an h3lens round → the job JSON a wptagent runs. One WPT test is
// one browser set-up, so each arm is its own test, with the arm's protocol
// switches in addCmdLine: the same ones the Puppeteer agent starts Chromium
// with (lib/measurement/browsers/chromium.js), and for a lab page the lab's.
import { expectedProtocolFor } from '../modes.js'
import { labBrowserFlags, modeFlags } from '../browsers/chromium.js'
import { effectiveOptions } from '../probes/index.js'
import { LAB_HOSTNAME, LAB_HOSTNAMES } from '../../runtime/lab-host.js'

/**
 * Switches wptagent sets itself. Chromium keeps only the last value of a
 * repeated switch, so an addCmdLine that repeated one would replace the
 * agent's own list (its host resolver rules, its disabled features). Only a
 * lab page's job does, on purpose (labSwitches).
 */
export const AGENT_OWNED_SWITCHES = Object.freeze(['--host-resolver-rules', '--disable-features'])

/**
 * Where wptagent serves its own start page (http://127.0.0.1:8888/orange.html),
 * which it loads before every test.
 */
export const AGENT_LOOPBACK = '127.0.0.1'

/**
 * The origin of the agent's own server (its start page, and the
 * `/wpt-start-recording` marker it fetches as a step starts, which its
 * devtools requests list among a step's when the page itself fetched
 * nothing).
 */
export const AGENT_ORIGIN = `http://${AGENT_LOOPBACK}:8888`

/** Seconds a WPT test may take, as the Puppeteer agent's page timeout. */
export const WPT_TEST_TIMEOUT_S = 60

/**
 * The browsers a WebPageTest location may run: those wptagent drives as
 * Chromium (its chrome_desktop), the only ones that read the command line
 * each test sends (addCmdLine), which forces or turns off QUIC for the arm.
 * In any other (Firefox, Safari) neither arm would be what it says.
 */
const CHROMIUM_WPT_BROWSER = /^(?:Chrome|Chromium|Edge|Microsoft Edge|Brave|Opera|Vivaldi)(?: [A-Za-z0-9._-]+){0,3}$/

/**
 * Why `name` cannot be a WebPageTest location's browser, or null.
 * @param {string} name
 */
export function wptBrowserProblem (name) {
  if (CHROMIUM_WPT_BROWSER.test(name)) return null
  return `"${name}" is not a Chromium-based browser as wptagent names it (Chrome, Chrome Beta, Chromium, Edge, Brave, Opera, Vivaldi): ` +
    'each test forces or turns off QUIC with Chromium\'s command line, which other browsers do not read'
}

/**
 * @param {{ testId: string, mode: 'h2' | 'h3' | 'auto', job: { url: string, repeat_view?: boolean, options?: Record<string, any>,
 *   aa_protocol?: string | null, monitor_id: number, due_at: Date | string }, forceOrigins?: string[],
 *   location: { profile?: Record<string, any> } | null, lab?: { spki: string, address: string, port?: number | null } | null,
 *   journey?: { script: string, step_timeout_ms: number } | null }} arm
 *   lab: how the agent reaches the lab origin, for a page on it (isLabPage); journey: the arm runs the
 *   journey's script (./journey-script.js) instead of loading the page
 * @returns {Record<string, any>}
 */
export function wptJob ({ testId, mode, job, forceOrigins = [], location, lab = null, journey = null }) {
  const options = effectiveOptions(job.url, job.options ?? {})
  // An A/A monitor's arms both load with its one protocol; the mode stays
  // the arm's label. The auto arm forces none.
  const protocol = /** @type {'h2' | 'h3' | null} */ (expectedProtocolFor(mode, job))
  const labPage = Boolean(lab && isLabPage(job.url))
  const switches = [
    ...modeFlags(protocol ?? 'auto', job.url, { forceOrigins: protocol === 'h3' ? forceOrigins : [], lab: labPage })
      .filter((s) => !AGENT_OWNED_SWITCHES.includes(s.split('=')[0])),
    ...(lab && labPage ? labSwitches(lab) : [])
  ]
  return {
    'Test ID': testId,
    url: job.url,
    // The agent runs the script when there is one; url stays for its own record.
    ...(journey ? { script: journey.script } : {}),
    runs: 1,
    // The auto arm's first visit only (lib/store/wpt-tests.js says why); a journey runs as a first visit, as on Puppeteer agents.
    fvonly: job.repeat_view && mode !== 'auto' && !journey ? 0 : 1,
    browser: location?.profile?.wpt_browser ?? 'Chrome',
    // The agent's timeout is each recorded step's (the whole test may take that times its steps).
    timeout: journey ? Math.min(WPT_TEST_TIMEOUT_S, Math.ceil(journey.step_timeout_ms / 1000)) : WPT_TEST_TIMEOUT_S,
    // Video needs ffmpeg on the agent and is not used here.
    'Capture Video': 0,
    video: 0,
    disable_video: 1,
    lighthouse: 0,
    wappalyzer: 0,
    axe: 0,
    ...shaping(location?.profile ?? {}),
    // A journey's steps are read without a net log (docs/WPT.md).
    ...(options.netlog === 'always' && !journey ? { netlog: 1 } : {}),
    addCmdLine: commandLine(switches),
    label: `h3lens monitor ${job.monitor_id}, round ${new Date(job.due_at).toISOString()}, ${journey ? 'journey, ' : ''}${mode} arm (${protocol?.toUpperCase() ?? 'nothing forced'})`
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

/** @param {string} url */
export function isLabPage (url) {
  return LAB_HOSTNAMES.includes(new URL(url).hostname)
}

/**
 * The lab's switches, as a Puppeteer agent of a lab location gets them: the
 * origin's certificate pinned by its public key, its names mapped to it on
 * its port and every other name and port failing at the resolver. This
 * --host-resolver-rules replaces the agent's own list (Chromium keeps the
 * last one), and covers what that list is for: it maps a few update and
 * background hosts to 127.0.0.1, this fails them. The agent's own server
 * (its start page, its step markers) is let through on its port, or the
 * wildcard would fail it too; every other port of the agent's loopback
 * stays out of reach of a lab page and a journey's script.
 * @param {{ spki: string, address: string, port?: number | null }} lab
 */
function labSwitches ({ spki, address, port = null }) {
  return labBrowserFlags({ spki, hostname: LAB_HOSTNAME, address, port, allow: [new URL(AGENT_ORIGIN).host] })
}

/**
 * Switches as one addCmdLine. wptagent splits it as a shell would
 * (shlex.split), so a value with spaces (the resolver rules) is quoted.
 * @param {string[]} switches
 */
export function commandLine (switches) {
  return switches.map((s) => (s.includes(' ') ? s.replace(/=(.*)$/, '="$1"') : s)).join(' ')
}

/**
 * The switches of an addCmdLine commandLine wrote, as the agent passes them
 * to Chromium: the results' flags.
 * @param {string} line
 */
export function switchesOf (line) {
  return (line.match(/(?:[^\s"]+|"[^"]*")+/g) ?? []).map((s) => s.replace(/"/g, ''))
}

/**
 * The host:port a test's switches force QUIC on (--origin-to-force-quic-on), none where they force none.
 * @param {string[]} switches as switchesOf gives them
 * @returns {string[]}
 */
export function forcedOriginsOf (switches) {
  const force = '--origin-to-force-quic-on='
  return switches.find((f) => f.startsWith(force))?.slice(force.length).split(',') ?? []
}
