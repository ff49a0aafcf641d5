// The browsers h3lens measures with, by the names monitors, rounds and
// results use (docs/BROWSERS.md). Each browser's switches or preferences
// are its own file here; its driver is the agent's (agents/browsers/).

/** @typedef {'chromium' | 'firefox'} BrowserName */

/** Every browser an agent can drive. */
export const BROWSERS = Object.freeze(/** @type {BrowserName[]} */ (['chromium', 'firefox']))

/** What a monitor runs in when it does not say: Chromium, the browser h3lens started with. */
export const DEFAULT_BROWSERS = Object.freeze(/** @type {BrowserName[]} */ (['chromium']))
