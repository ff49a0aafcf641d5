// The browsers h3lens measures with, by the names monitors, rounds and
// results use (docs/BROWSERS.md). Each browser's switches or preferences
// are its own file here; its driver is the agent's (agents/browsers/).

/** @typedef {'chromium' | 'firefox'} BrowserName */

/** Every browser an agent can drive. */
export const BROWSERS = Object.freeze(/** @type {BrowserName[]} */ (['chromium', 'firefox']))

/**
 * What each browser gives beyond the metrics (every metric says which
 * browsers give it: lib/measurement/metrics.js `browsers`): how it is
 * driven, and what of a result it cannot give, which a result of it leaves
 * null (docs/BROWSERS.md).
 */
export const BROWSER_CATALOGUE = Object.freeze([
  Object.freeze({
    id: 'chromium',
    label: 'Chromium',
    driver: 'Debian\'s chromium over the DevTools protocol (puppeteer-core)',
    lacks: Object.freeze([])
  }),
  Object.freeze({
    id: 'firefox',
    label: 'Firefox',
    driver: 'Debian\'s firefox-esr over WebDriver BiDi (puppeteer-core), a fresh profile per run',
    lacks: Object.freeze([
      'details.requests[].connection_id: BiDi names no connection, so connection reuse is not shown',
      'details.requests[].alternate_protocol_usage and details.protocol_reason.alternate_protocol_usage: Chromium\'s own field',
      'net logs (options.netlog): Chromium\'s --log-net-log; Firefox runs capture none',
      'filmstrips and the visual metrics (options.filmstrip): frames come from Chromium\'s DevTools screencast'
    ])
  })
])

/** What a monitor runs in when it does not say: Chromium, the browser h3lens started with. */
export const DEFAULT_BROWSERS = Object.freeze(/** @type {BrowserName[]} */ (['chromium']))
