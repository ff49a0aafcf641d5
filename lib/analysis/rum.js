// Real users of a site, per region and browser (docs/RUM.md): how many page
// views, how many of them over H3 (with a Wilson interval), TTFB and LCP
// percentiles by protocol (with bootstrap intervals), and H3 against H2
// compared within strata and combined with equal weight (./rum-strata.js).
// Observational throughout: every comparison is labelled an association,
// and it is coloured only under the synthetic table's rules — the same
// false-discovery correction (a Simes screen per column, then
// Benjamini–Hochberg) and the same practical minimum (./comparison.js
// cellVerdict). A region is a location whose countries the visitor's
// country is among (so real users and the lab meet in one column); other
// countries go to "Other countries", addresses without one to "Unknown".
import { beaconCounts, comparableBeacons, protocolTrend } from '../store/rum-beacons.js'
import { listLocations } from '../store/locations.js'
import { listMonitors } from '../store/monitors.js'
import { screenedBenjaminiHochberg, wilsonInterval } from './stats/index.js'
import { BOOTSTRAP_ITERATIONS, DEFAULT_MIN_EFFECT, FDR_Q, cellVerdict } from './comparison.js'
import { minRoundsFor } from '../measurement/metrics.js'
import { originOf } from '../measurement/origin.js'
import { autoShares } from './auto.js'
import { combinedContrast, percentileIntervals, stratifiedContrast } from './rum-strata.js'

export const RUM_PERCENTILES = Object.freeze([50, 75, 95])
/** The metrics compared by protocol, and their column in lib/store/rum-beacons.js comparableBeacons. */
export const RUM_METRICS = Object.freeze([{ id: 'ttfb_ms', column: 'ttfb', label: 'TTFB' }, { id: 'lcp_ms', column: 'lcp', label: 'LCP' }])
export const OTHER_REGION = Object.freeze({ id: 'other', name: 'Other countries' })
export const UNKNOWN_REGION = Object.freeze({ id: 'unknown', name: 'Unknown' })
export const ALL_REGIONS = Object.freeze({ id: null, name: 'All regions' })
// Beacons per country, browser, protocol, connection and visit the
// comparison reads from the window (evenly spaced by time above it).
const CELL_CAP = 5000
const PROTOCOLS = ['h3', 'h2', 'h1', 'unknown']

export const ASSOCIATION = 'An association, not a controlled comparison: real users choose neither their protocol nor their network. ' +
  'H3 is compared with H2 only between page views alike in connection (new or reused), visit (first or cached) and browser, ' +
  'and the strata are averaged with equal weight; what differs beyond those may still differ. ' +
  'Each page view counts as one draw: several views of one visitor, alike in their network, make the intervals narrower than they are.'

/**
 * Country → region, from the locations' countries.
 * @param {{ id: string, name: string, kind?: string, countries?: string[] | null }[]} locations
 */
export function regionMap (locations) {
  /** @type {Map<string, { id: string, name: string, kind?: string }>} */
  const byCountry = new Map()
  const mapped = locations.filter((l) => l.countries?.length)
  for (const l of mapped) for (const c of /** @type {string[]} */ (l.countries)) if (!byCountry.has(c)) byCountry.set(c, l)
  return {
    regions: [...mapped.map((l) => ({ id: l.id, name: l.name, kind: l.kind ?? null, countries: l.countries })), { ...OTHER_REGION, kind: null, countries: null }, { ...UNKNOWN_REGION, kind: null, countries: null }],
    /** @param {string | null} country */
    regionOf: (country) => (country === null ? UNKNOWN_REGION.id : byCountry.get(country)?.id ?? OTHER_REGION.id)
  }
}

/**
 * @param {import('pg').Pool} db
 * @param {{ site: { id: number, origins: string[] }, from: Date, to: Date, percentiles?: readonly number[], iterations?: number,
 *   monitor?: { id: number, url: string, label?: string | null, modes?: string[] } }} q
 *   monitor: the monitor the real users are shown beside: the lab share is its own auto arm's (none
 *   when it runs no auto arm); without one, the first monitor on the site's origins that runs it
 */
export async function realUserSummary (db, { site, from, to, percentiles = RUM_PERCENTILES, iterations = BOOTSTRAP_ITERATIONS, monitor }) {
  const ps = [...percentiles]
  const [locations, counts, cells, lab] = await Promise.all([
    listLocations(db), beaconCounts(db, { siteId: site.id, from, to }), comparableBeacons(db, { siteId: site.id, from, to, cap: CELL_CAP }), labShares(db, site, { from, to, monitor })
  ])
  const { regions, regionOf } = regionMap(locations)
  const seedBase = `rum|${site.id}`
  /** @type {Map<string, ReturnType<typeof emptyRegion>>} */
  const byRegion = new Map(regions.map((r) => [(r.id), emptyRegion(r)]))
  for (const c of counts) {
    const region = /** @type {ReturnType<typeof emptyRegion>} */ (byRegion.get(regionOf(c.country)))
    region.page_views += c.n
    region.kinds[c.kind] = (region.kinds[c.kind] ?? 0) + c.n
    if (c.country) region.countries[c.country] = (region.countries[c.country] ?? 0) + c.n
    if (!region.browserMap.has(c.browser)) region.browserMap.set(c.browser, emptyBrowser(c.browser))
    const browser = /** @type {ReturnType<typeof emptyBrowser>} */ (region.browserMap.get(c.browser))
    browser.page_views += c.n
    if (c.kind === 'network') {
      region.protocols[c.protocol] += c.n
      browser.protocols[c.protocol] += c.n
    }
  }
  for (const cell of /** @type {Record<string, any>[]} */ (cells)) {
    const region = /** @type {ReturnType<typeof emptyRegion>} */ (byRegion.get(regionOf(cell.country)))
    // Countries of one region differ in speed and in how often they get H3
    // (their networks, their middleboxes): the country is a stratum too.
    const stratum = `${cell.country ?? 'unknown'}|${cell.connection}|${cell.visit}|${cell.browser}`
    for (const m of RUM_METRICS) {
      const values = (cell[m.column] ?? []).map(Number)
      const strata = region.values[m.id]
      if (!strata.has(stratum)) strata.set(stratum, { id: stratum, h2: [], h3: [] })
      const s = /** @type {{ id: string, h2: number[], h3: number[] }} */ (strata.get(stratum))
      s[/** @type {'h2' | 'h3'} */ (cell.protocol)].push(...values)
    }
  }

  const entries = [...byRegion.values()].filter((r) => r.page_views > 0 || r.countries_listed)
  const out = entries.map((r) => {
    const seed = `${seedBase}|${r.region_id}`
    const comparison = Object.fromEntries(RUM_METRICS.map((m) => [m.id, stratifiedContrast({ strata: [...r.values[m.id].values()], percentiles: ps, iterations, seed: `${seed}|${m.id}` })]))
    const browsers = [...r.browserMap.values()].sort((a, b) => b.page_views - a.page_views).map((b) => ({
      ...b,
      h3_share: share(b.protocols),
      metrics: Object.fromEntries(RUM_METRICS.map((m) => {
        const arm = (/** @type {'h2' | 'h3'} */ p) => [...r.values[m.id].values()].filter((s) => s.id.endsWith(`|${b.family}`)).flatMap((s) => s[p])
        return [m.id, Object.fromEntries((/** @type {const} */ (['h2', 'h3'])).map((p) => [p, percentileIntervals(arm(p), { percentiles: ps, iterations, seed: `${seed}|${b.family}|${m.id}|${p}` })]))]
      }))
    }))
    /** @type {Record<string, any>} */
    const rest = { ...r }
    for (const internal of ['browserMap', 'values', 'countries_listed']) delete rest[internal]
    return { ...rest, h3_share: share(r.protocols), browsers, comparison, lab: lab?.shares.get(/** @type {string} */ (r.region_id)) ?? null }
  })
  /** @type {Record<string, any>} */
  const all = allRegions(out, ps)
  /** @type {any[][]} */
  const columns = [...out, all].flatMap((e) => RUM_METRICS.map((m) => e.comparison[m.id].rows.filter((/** @type {any} */ row) => row.p_value !== null)))
  screenedBenjaminiHochberg(columns.map((c) => c.map((row) => /** @type {number} */ (row.p_value))))
    .forEach((adjusted, j) => columns[j].forEach((row, i) => { row.p_adjusted = adjusted[i] }))
  for (const e of [...out, all]) {
    for (const m of RUM_METRICS) {
      e.comparison[m.id] = e.comparison[m.id].rows.map((/** @type {any} */ row) => {
        if (row.p_value !== null) row.verdict = cellVerdict(row, DEFAULT_MIN_EFFECT)
        return row
      })
    }
  }
  return {
    site_id: site.id,
    from: from.toISOString(),
    to: to.toISOString(),
    percentiles: ps,
    metrics: RUM_METRICS.map((m) => m.id),
    association: ASSOCIATION,
    lab_monitor: lab ? { id: lab.monitor.id, url: lab.monitor.url, label: lab.monitor.label ?? null } : null,
    method: method(ps),
    regions: [all, ...out]
  }
}

/**
 * @param {{ id: string | null, name: string, kind?: string | null, countries?: string[] | null }} r
 */
function emptyRegion (r) {
  return {
    region_id: r.id,
    name: r.name,
    kind: r.kind ?? null,
    countries_listed: Boolean(r.countries?.length),
    location_countries: r.countries ?? null,
    page_views: 0,
    /** @type {Record<string, number>} network, cached, prerender, back-forward-cache, restore */
    kinds: {},
    /** @type {Record<string, number>} */
    protocols: Object.fromEntries(PROTOCOLS.map((p) => [p, 0])),
    /** @type {Record<string, number>} */
    countries: {},
    /** @type {Map<string, ReturnType<typeof emptyBrowser>>} */
    browserMap: new Map(),
    /** @type {Record<string, Map<string, { id: string, h2: number[], h3: number[] }>>} */
    values: Object.fromEntries(RUM_METRICS.map((m) => [m.id, new Map()]))
  }
}

/** @param {string} family */
function emptyBrowser (family) {
  return { family, page_views: 0, protocols: /** @type {Record<string, number>} */ (Object.fromEntries(PROTOCOLS.map((p) => [p, 0]))) }
}

/** H3 page views of those whose protocol is known. @param {Record<string, number>} p */
function share (p) {
  return { ...wilsonInterval(p.h3, p.h3 + p.h2 + p.h1), h3: p.h3, known: p.h3 + p.h2 + p.h1 }
}

/**
 * @param {Record<string, any>[]} regions
 * @param {number[]} percentiles
 */
function allRegions (regions, percentiles) {
  const protocols = Object.fromEntries(PROTOCOLS.map((p) => [p, regions.reduce((n, r) => n + r.protocols[p], 0)]))
  /** @type {Record<string, number>} */
  const kinds = {}
  for (const r of regions) for (const [k, n] of Object.entries(r.kinds)) kinds[k] = (kinds[k] ?? 0) + /** @type {number} */ (n)
  return {
    region_id: ALL_REGIONS.id,
    name: ALL_REGIONS.name,
    kind: null,
    stratified: true,
    location_countries: null,
    page_views: regions.reduce((n, r) => n + r.page_views, 0),
    kinds,
    protocols,
    countries: {},
    h3_share: share(protocols),
    browsers: [],
    comparison: Object.fromEntries(RUM_METRICS.map((m) => [m.id, combinedContrast(regions.map((r) => r.comparison[m.id]), percentiles)])),
    lab: null
  }
}

/**
 * The lab beside real users: the auto arm's shares of the monitor they are
 * shown beside, or (for the site alone) of the first monitor on one of the
 * site's origins that runs it.
 * @param {import('pg').Pool} db
 * @param {{ origins: string[] }} site
 * @param {{ from: Date, to: Date, monitor?: { id: number, url: string, label?: string | null, modes?: string[] } }} w
 */
async function labShares (db, site, { from, to, monitor: beside }) {
  const monitor = beside
    ? (beside.modes?.includes('auto') ? beside : null)
    : (await listMonitors(db)).find((m) => m.modes?.includes('auto') && site.origins.includes(originOf(m.url)))
  if (!monitor) return null
  const shares = await autoShares(db, { monitorId: monitor.id, from, to })
  return {
    monitor,
    shares: new Map([...shares].map(([id, s]) => [id, { monitor_id: monitor.id, first: s.first.navigation_share, returning: s.returning.navigation_share, returning_visits: s.returning.loaded }]))
  }
}

/** @param {number[]} percentiles */
function method (percentiles) {
  return {
    unit: 'the page view: one beacon, never paired',
    association: ASSOCIATION,
    page_views: 'H3 share: page views whose document came over the network with a known protocol; prerendered pages, back/forward-cache restores and documents from the cache are counted under kinds and left out of the share and the comparison',
    strata: 'connection (new or reused: no DNS and no connect) × visit (first, or something came from the browser cache) × browser family',
    comparison: `per percentile, H3 − H2 within each stratum that has the page views it needs over both protocols (${percentiles.map((p) => `p${p}: ${minRoundsFor(p)}`).join(', ')}), averaged with equal weight; All regions: the regions' differences averaged with equal weight`,
    interval: `95% percentile interval of a bootstrap (${BOOTSTRAP_ITERATIONS} resamples of page views within each stratum and protocol, seeded by site and window)`,
    verdict: `coloured only when the adjusted p-value is ≤ ${FDR_Q} (a Simes screen per region and metric, Bonferroni over them, then Benjamini–Hochberg within), the interval excludes 0 and |Δ| ≥ max(${DEFAULT_MIN_EFFECT.pct}% of H2, ${DEFAULT_MIN_EFFECT.ms} ms): the synthetic table's rules`,
    lab: 'lab: the auto arm\'s share of navigations over H3 at the same location (first and returning visits) of the monitor the real users are shown beside, none when it runs no auto arm; for the site alone, of the first monitor on one of its origins that runs the auto arm (lab_monitor names it)'
  }
}

/**
 * H3 share of network navigations per bucket and region.
 * @param {import('pg').Pool} db
 * @param {{ site: { id: number }, from: Date, to: Date, bucketS: number }} q
 */
export async function realUserTrend (db, { site, from, to, bucketS }) {
  const [locations, rows] = await Promise.all([listLocations(db), protocolTrend(db, { siteId: site.id, from, to, bucketS })])
  const { regions, regionOf } = regionMap(locations)
  /** @type {Map<string | null, Map<number, Record<string, number>>>} */
  const series = new Map()
  const add = (/** @type {string | null} */ id, /** @type {number} */ t, /** @type {string} */ protocol, /** @type {number} */ n) => {
    if (!series.has(id)) series.set(id, new Map())
    const points = /** @type {Map<number, Record<string, number>>} */ (series.get(id))
    if (!points.has(t)) points.set(t, Object.fromEntries(PROTOCOLS.map((x) => [x, 0])))
    const counts = /** @type {Record<string, number>} */ (points.get(t))
    counts[protocol] += n
  }
  for (const r of rows) {
    add(regionOf(r.country), +r.t, r.protocol, r.n)
    add(null, +r.t, r.protocol, r.n)
  }
  /** @type {Map<string | null, string>} */
  const names = new Map([[null, ALL_REGIONS.name]])
  for (const r of regions) names.set(r.id, r.name)
  return {
    site_id: site.id,
    from: from.toISOString(),
    to: to.toISOString(),
    bucket_s: bucketS,
    series: [...series].sort(([a], [b]) => (a === null ? -1 : b === null ? 1 : 0)).map(([id, points]) => ({
      region_id: id,
      name: names.get(id) ?? id,
      points: [...points].sort(([a], [b]) => a - b).map(([t, p]) => ({ t: new Date(t).toISOString(), page_views: p.h3 + p.h2 + p.h1 + p.unknown, h3_share: share(p) }))
    }))
  }
}
