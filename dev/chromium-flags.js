// The switches every Chromium that looks at the dashboard starts with: the
// measurement browsers' own (lib/measurement/browsers/chromium.js), which
// keep a headless Chromium off the network and its spare processes off the
// CPU. In a module of their own so that the demo data, which only records
// them, does not import puppeteer-core (scripts/test-plan.js would count
// that as driving a browser).
import { baseFlags } from '../lib/measurement/browsers/chromium.js'

export const CHROMIUM_FLAGS = baseFlags()
