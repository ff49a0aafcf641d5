// Real users for the dashboard under test (test/rum-ui.test.js,
// scripts/screenshots.js): a site on the lab origin of seedDemo's monitors,
// countries for the lab locations, a day of beacons whose H3 page views are
// mostly returning visitors (faster whatever their protocol), with a true
// H3 gain on the lossy Asian path only, and the auto arm's returning visits
// of one monitor so the lab's share stands beside real users.
import { randomBytes } from 'node:crypto'
import { createSite } from '../lib/store/rum-sites.js'
import { setLocationCountries } from '../lib/store/locations.js'
import { insertBeacons } from '../lib/store/rum-beacons.js'
import { insertResults } from '../lib/store/results.js'
import { storedBeacon } from '../lib/measurement/rum/beacon.js'
import { createRandom, randomNormal } from '../lib/analysis/stats/index.js'

// Country → its lab location's RTT (ms), its H3 gain, and its share of visitors.
const COUNTRIES = [
  { code: 'US', location: 'lab-na', rtt: 30, gain: 0, share: 0.3 },
  { code: 'CA', location: 'lab-na', rtt: 35, gain: 0, share: 0.08 },
  { code: 'GB', location: 'lab-eu', rtt: 60, gain: 0, share: 0.2 },
  { code: 'DE', location: 'lab-eu', rtt: 65, gain: 0, share: 0.14 },
  { code: 'JP', location: 'lab-asia', rtt: 90, gain: 0.25, share: 0.16 },
  { code: 'SG', location: 'lab-asia', rtt: 95, gain: 0.25, share: 0.08 },
  { code: 'BR', location: null, rtt: 120, gain: 0, share: 0.03 },
  { code: null, location: null, rtt: 80, gain: 0, share: 0.01 }
]
const BROWSERS = [{ family: 'chrome', major: 156, share: 0.62, h3: 1 }, { family: 'safari', major: 18, share: 0.24, h3: 0.45 }, { family: 'firefox', major: 140, share: 0.14, h3: 0.8 }]

/**
 * @param {import('pg').Pool} db
 * @param {{ origin: string, hours?: number, views?: number, seed?: string, monitor?: { id: number } | null, end?: number }} o
 */
export async function seedRealUsers (db, { origin, hours = 24, views = 6000, seed = 'rum-ui', monitor = null, end = Date.now() - 60_000 }) {
  const site = await createSite(db, { name: 'Lab shop', origins: [origin], sample_rate: 0.5 })
  for (const location of ['lab-na', 'lab-eu', 'lab-asia']) {
    await setLocationCountries(db, location, COUNTRIES.filter((c) => c.location === location).map((c) => /** @type {string} */ (c.code)))
  }
  const random = createRandom(seed)
  const pick = (/** @type {{ share: number }[]} */ list) => {
    let u = random()
    return list.find((x) => (u -= x.share) < 0) ?? list[0]
  }
  const rows = []
  for (let i = 0; i < views; i++) {
    const c = /** @type {typeof COUNTRIES[number]} */ (pick(COUNTRIES))
    const browser = /** @type {typeof BROWSERS[number]} */ (pick(BROWSERS))
    const visit = random() < 0.45 ? 'cached' : 'first'
    const reused = random() < (visit === 'cached' ? 0.6 : 0.15)
    // The share over H3 grows through the day, as Alt-Svc spreads in caches.
    const t0 = end - random() * hours * 3600e3
    const rise = 1 - (end - t0) / (hours * 3600e3) * 0.3
    const h3 = random() < (visit === 'cached' ? 0.85 : 0.3) * browser.h3 * rise
    const gain = h3 ? 1 - c.gain : 1
    const jitter = () => Math.exp(0.3 * randomNormal(random))
    const dns = reused ? 0 : 2 + 8 * random()
    const connect = reused ? 0 : (h3 ? 1 : 2) * c.rtt * jitter()
    const waiting = c.rtt * 1.2 * jitter() * gain
    const ttfb = dns + connect + waiting + 5
    const fcp = ttfb + (visit === 'cached' ? 80 : 220) * jitter()
    const lcp = fcp + (visit === 'cached' ? 120 : 520) * jitter() * gain
    const r1 = (/** @type {number} */ v) => Math.round(v * 10) / 10
    const nav = random() < 0.03 ? 'back-forward-cache' : random() < 0.02 ? 'prerender' : 'navigate'
    rows.push(storedBeacon({
      key: site.key, v: 1, id: randomBytes(16).toString('hex'), t0, sample: 0.5, nav, protocol: h3 ? 'h3' : 'h2',
      dns_ms: r1(dns), connect_ms: r1(connect), tls_ms: r1(connect / 2), waiting_ms: r1(waiting), ttfb_ms: r1(ttfb), fcp_ms: r1(fcp), lcp_ms: r1(lcp),
      inp_ms: r1(40 + 80 * random()), cls: Math.round(random() * 0.1 * 1e4) / 1e4, transfer_bytes: 15000, doc_cached: false,
      resources: 6, cached_resources: visit === 'cached' ? 4 : 0, lcp_element: 'img'
    }, { siteId: site.id, origin, country: c.code, browser }))
  }
  await insertBeacons(db, rows)
  if (monitor) await seedAutoReturning(db, monitor, { end, hours })
  return site
}

/**
 * The auto arm's first and returning visits of one monitor at the lab
 * locations, a round an hour: H3 once the origin is known, except where
 * QUIC is blocked.
 * @param {import('pg').Pool} db
 * @param {{ id: number }} monitor
 * @param {{ end: number, hours: number }} w
 */
async function seedAutoReturning (db, monitor, { end, hours }) {
  // The monitor runs the auto arm whose visits these are.
  await db.query("UPDATE monitors SET modes = '{h2,h3,auto}' WHERE id = $1", [monitor.id])
  for (const location of ['lab-na', 'lab-eu', 'lab-asia']) {
    for (let k = 1; k <= hours; k++) {
      const due = new Date(end - k * 3600e3 + 1234)
      const { rows: [job] } = await db.query(
        "INSERT INTO jobs (monitor_id, location_id, due_at, state) VALUES ($1, $2, $3, 'done') RETURNING id, monitor_id, location_id, due_at", [monitor.id, location, due])
      const visit = (/** @type {string} */ view, /** @type {string} */ protocol) => ({ mode: 'auto', view, status: 'ok', protocol_ok: true, observed_protocol: protocol, ttfb_ms: 80, load_ms: 300 })
      await insertResults(db, { job, agentId: null, results: [visit('first', 'h2'), visit('returning', location === 'lab-asia' && k % 5 === 0 ? 'h2' : 'h3')] })
    }
  }
}
