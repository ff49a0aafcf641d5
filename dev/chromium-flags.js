// The switches every Chromium that looks at the dashboard starts with, in a
// module of their own so that the demo data, which only records them, does
// not import puppeteer-core (scripts/test-plan.js would count that as
// driving a browser).
export const CHROMIUM_FLAGS = ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-features=NetworkTimeServiceQuerying,SpareRendererForSitePerProcess,WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup']
