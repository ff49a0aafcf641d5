// What a run needs from its browser, whichever it is: how the browser is
// started for the run's arm (Chromium's switches, Firefox's preferences,
// lib/measurement/browsers/), what the result records of that, whether the
// run needs a browser of its own, and how its requests are recorded. The
// measurement itself (agents/measure.js) is the same for both.
import { baseFlags, modeFlags, netlogFlags } from '../../lib/measurement/browsers/chromium.js'
import { basePrefs, modePrefs, prefsAsFlags } from '../../lib/measurement/browsers/firefox.js'
import { recordNetwork } from '../network.js'
import { recordFirefoxNetwork } from './firefox-network.js'

/**
 * The browsers an agent can drive, by the name monitors and rounds use.
 * @typedef {'chromium' | 'firefox'} BrowserName
 */

/** What a Firefox result records in place of its ~80 base preferences (lib/measurement/browsers/firefox.js basePrefs). */
export const FIREFOX_BASE_RECORDED = 'firefox: h3lens base preferences (no telemetry, updates or background traffic)'

/**
 * @typedef {{ browser: BrowserName, spec: Record<string, any>, flags: string[], dedicated: boolean,
 *   recordNetwork: (page: import('puppeteer-core').Page) => Promise<import('../network.js').NetworkRecording> }} RunPlan
 * spec: what the pool launches (Chromium: flags, netns, localState; Firefox: prefs, trust, netns);
 * flags: what the result records; dedicated: the run needs a browser of its own
 */

/**
 * @param {{ pool: { browserName?: string }, protocol: import('../../lib/measurement/modes.js').Mode, url: string, forceOrigins?: string[],
 *   lab?: boolean, netns?: string | null, extraFlags?: string[], extraPrefs?: import('../../lib/measurement/browsers/firefox.js').Prefs,
 *   trust?: import('./firefox.js').TrustedCa[], guard?: import('../target-guard.js').TargetGuard | null, netlogFile?: string | null }} o
 * @returns {RunPlan}
 */
export function runPlan ({ pool, protocol, url, forceOrigins = [], lab = false, netns = null, extraFlags = [], extraPrefs = {}, trust = [], guard = null, netlogFile = null }) {
  if (pool.browserName === 'firefox') {
    if (netlogFile) throw new Error('a net log is Chromium\'s; Firefox runs capture none')
    const armPrefs = { ...modePrefs(protocol, url, { forceOrigins }), ...extraPrefs }
    return {
      browser: 'firefox',
      spec: { prefs: { ...basePrefs(), ...armPrefs, ...(guard?.firefox.prefs ?? {}) }, trust: [...trust, ...(guard?.firefox.trust ?? [])], netns },
      flags: [FIREFOX_BASE_RECORDED, ...prefsAsFlags(armPrefs), ...(guard ? guard.firefox.recorded : [])],
      dedicated: true,
      recordNetwork: recordFirefoxNetwork
    }
  }
  const flags = [...baseFlags(), ...modeFlags(protocol, url, { forceOrigins, lab }), ...extraFlags, ...(guard?.browser.flags ?? []), ...(netlogFile ? netlogFlags(netlogFile) : [])]
  return {
    browser: 'chromium',
    spec: { flags, netns, localState: guard?.browser.localState ?? null },
    flags: recordedFlags(flags, guard),
    dedicated: Boolean(netlogFile),
    recordNetwork
  }
}

/**
 * The flags a result records: the run's, with the private-target guard's
 * two (thousands of characters of resolver rules, and its resolver's key)
 * as one short line each; they are the same for every guarded run of an
 * agent, and say nothing about the measurement.
 * @param {string[]} flags
 * @param {import('../target-guard.js').TargetGuard | null | undefined} guard
 */
function recordedFlags (flags, guard) {
  if (!guard) return flags
  return flags.map((f) => {
    const i = guard.browser.flags.indexOf(f)
    return i < 0 ? f : guard.browser.recorded[i]
  })
}
