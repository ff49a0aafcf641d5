// The measurement catalogue (lib/measurement/) is the one definition of what
// a measurement is: every metric in it must reach the results table, the
// API's request and response schemas, the rollups, the export, the
// comparison and the dashboard, and every probe the schemas and the agent.
// Nothing here lists a metric by hand: a metric added to the catalogue is
// checked by these tests without a change to them.
/* global document, location */
// run-tests: side — it drives a browser only to look at the dashboard, on a free port, and times nothing
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { createTestApp } from './helpers/app.js'
import { startDashboard } from '../dev/dashboard.js'
import { launchBrowser, whenRedrawn } from '../dev/browser.js'
import { openRoute } from './helpers/ui.js'
import { METRICS, COLUMN_METRICS, COMPARABLE_METRICS, ROLLUP_METRICS, TIMING_COLUMNS, metricOf, canonicalMetric } from '../lib/measurement/metrics.js'
import { PROBES, PROBE_IDS } from '../lib/measurement/probes/index.js'
import { MODES } from '../lib/measurement/modes.js'
import { ALTERNATE_PROTOCOL_USAGE, PROTOCOL_REASONS } from '../lib/measurement/protocol-reason.js'
import { RESULT_FIELDS, emptyResult } from '../lib/measurement/result.js'
import { resultSchema, submittedResult } from '../api/schemas.js'
import { PAGE_ORDER } from '../lib/measurement/checks.js'
import { navigationOnAgentClock, resultFromDevtools } from '../lib/measurement/wpt/devtools.js'
import { readResultZip } from '../lib/measurement/wpt/zip.js'
import { INSERT_COLUMNS } from '../lib/store/results.js'
import { EXPORT_COLUMNS } from '../lib/store/results-export.js'
import { PROBE_RUNNERS } from '../agents/probes/index.js'
import { createMonitor } from '../lib/store/monitors.js'

const ROOT = path.resolve(import.meta.dirname, '..')
// Recent enough for the default 24 h window.
const BASE = Math.floor((Date.now() - 3 * 3600e3) / 60e3) * 60e3
const ROUNDS = 30

let t
before(async () => { t = await createTestApp() })
after(async () => { await t.close() })

test('every column metric is a results field, in both result schemas, the insert, the export and an empty result', () => {
  for (const m of METRICS.filter((x) => x.column)) {
    const c = /** @type {string} */ (m.column)
    assert.ok(RESULT_FIELDS.includes(c), `${m.id}: results field`)
    assert.ok(resultSchema.properties[c], `${m.id}: response schema`)
    assert.match(resultSchema.properties[c].description, /\S/, `${m.id}: described`)
    assert.ok(submittedResult.properties[c], `${m.id}: submission schema`)
    assert.ok(INSERT_COLUMNS.includes(c), `${m.id}: insert`)
    assert.ok(EXPORT_COLUMNS.includes(c), `${m.id}: export`)
    assert.equal(emptyResult('h3')[c], null, `${m.id}: empty result`)
  }
  assert.deepEqual(TIMING_COLUMNS, METRICS.filter((x) => x.column).map((x) => x.column))
})

test('metric ids carry their unit; a deprecated alias names exactly one metric, and a metric without one has no other name', () => {
  const names = new Set(METRICS.map((m) => m.id))
  for (const m of METRICS) {
    assert.match(m.id, new RegExp(`_${m.unit}$`), `${m.id} names its unit`)
    if (m.alias === null) continue
    assert.ok(!names.has(m.alias), `alias ${m.alias} is no other metric's name`)
    names.add(m.alias)
    assert.equal(canonicalMetric(m.alias), m.id)
    assert.equal(metricOf(m.alias), metricOf(m.id))
  }
  const rollups = ROLLUP_METRICS.map((m) => m.rollup)
  assert.equal(new Set(rollups).size, rollups.length, 'each rollup column is one metric\'s')
  assert.throws(() => metricOf('speed'), /unknown metric "speed"/)
})

test('the catalogue\'s own references hold: page orderings, timelines, RTT floors and the WPT sources', () => {
  for (const m of METRICS) {
    for (const earlier of m.atLeast) assert.ok(m.column && TIMING_COLUMNS.includes(earlier), `${m.id}: at least ${earlier}, a column metric`)
    assert.ok(m.column ? ['span', 'mark', null].includes(m.timeline) : m.timeline === null, `${m.id}: timeline ${m.timeline}`)
    if (!m.column) assert.deepEqual([m.summary, m.rttFloor, m.wpt, m.pageScript], [false, null, null, false], `${m.id}: samples are no page column`)
    if (m.rttFloor) assert.ok(m.rttFloor.h3 > 0 && m.rttFloor.tcp > m.rttFloor.h3, `${m.id}: QUIC saves round trips`)
    if (m.pageScript) assert.ok(fs.existsSync(path.join(ROOT, 'agents', 'page', 'metrics', `${m.id}.js`)), `${m.id}: its in-page script`)
  }
  assert.deepEqual(PAGE_ORDER, COLUMN_METRICS.flatMap((m) => m.atLeast.map((e) => [e, m.id])))
})

test('a WebPageTest result reads each column metric from where the catalogue says, and leaves the others null', async () => {
  const [view] = await readResultZip(fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'wpt', '164917_h3l_11_h3_47938c6a2d1a.zip')))
  const devtools = /** @type {Record<string, any>} */ (view.devtools)
  /** @type {[string, string, boolean][]} metric id, pageData field, on the agent's clock */
  const fromPage = COLUMN_METRICS.flatMap((m) => (m.wpt && 'pageData' in m.wpt ? [[m.id, m.wpt.pageData, m.wpt.agentClock === true]] : []))
  // Distinct values each metric can only have got from its own field.
  fromPage.forEach(([, field], i) => { devtools.pageData[field] = 1000 + i })
  // The navigation began 9 ms into the agent's clock in this upload: the load event at 427 there, 418 from the navigation's start.
  assert.equal(navigationOnAgentClock(devtools.pageData), 9)
  const row = resultFromDevtools(devtools, { mode: 'h3', view: 'first', expected: 'h3' })
  assert.equal(row.status, 'ok', row.error)
  fromPage.forEach(([id, field, agentClock], i) => assert.equal(row[id], 1000 + i - (agentClock ? 9 : 0), `${id} from pageData.${field}`))
  for (const m of COLUMN_METRICS.filter((x) => x.wpt && 'navigation' in x.wpt)) assert.ok(m.id === 'dns_ms' || row[m.id] > 0, `${m.id} from the navigation: ${row[m.id]}`)
  for (const m of COLUMN_METRICS.filter((x) => !x.wpt)) assert.equal(row[m.id], null, `${m.id}: WPT does not measure it`)
  // The agent writes 0 for what it did not see: not a measurement.
  for (const [, field] of fromPage) devtools.pageData[field] = 0
  const unseen = resultFromDevtools(devtools, { mode: 'h3', view: 'first', expected: 'h3' })
  for (const [id] of fromPage) assert.equal(unseen[id], null, `${id}: 0 is not seen`)
})

test('every probe is in the schemas, has an agent runner, and its samples feed a catalogue metric of its own', () => {
  // A result's probe is a catalogue probe, or a journey's named step (journey:<name>).
  for (const schema of [submittedResult, resultSchema]) {
    const accepts = (/** @type {string} */ v) => new RegExp(schema.properties.probe.pattern).test(v)
    for (const id of PROBE_IDS) assert.ok(accepts(id), id)
    assert.ok(accepts('journey:login') && accepts('journey:step-2.b'))
    for (const bad of ['pages', 'page:x', 'journey:', 'journey:a b', 'journey:a:b', `journey:${'a'.repeat(41)}`]) assert.ok(!accepts(bad), bad)
  }
  assert.deepEqual(submittedResult.properties.mode.enum, MODES)
  for (const p of PROBES) {
    assert.equal(typeof PROBE_RUNNERS[p.id], 'function', `${p.id}: the agent can measure it`)
    if (p.samplesMetric) assert.equal(metricOf(p.samplesMetric).samplesOf, p.id, `${p.id}: ${p.samplesMetric}`)
    if (p.outlier.rule === 'column') assert.ok(RESULT_FIELDS.includes(/** @type {string} */ (p.outlier.column)), `${p.id}: outlier column`)
  }
  for (const m of METRICS.filter((x) => x.samplesOf)) assert.ok(PROBE_IDS.includes(/** @type {string} */ (m.samplesOf)), `${m.id}: its probe exists`)
})

test('the migrated database has a results column and a per-arm round-summary column for every column metric, and a rollups column for every rollup', async () => {
  const columns = async (table) => new Set((await t.db.query(
    'SELECT column_name FROM information_schema.columns WHERE table_name = $1', [table])).rows.map((r) => r.column_name))
  const results = await columns('results')
  const rollups = await columns('rollups')
  const summaries = await columns('round_summaries')
  for (const m of METRICS) {
    if (m.column) assert.ok(results.has(m.column), `results.${m.column}`)
    if (m.rollup) assert.ok(rollups.has(m.rollup), `rollups.${m.rollup}`)
    for (const arm of MODES) if (m.column) assert.ok(summaries.has(`${arm}_${m.column}`), `round_summaries.${arm}_${m.column}`)
  }
})

test('GET /api/v1/catalogue serves the catalogue the server uses', async () => {
  const res = await t.app.inject({ url: '/api/v1/catalogue' })
  assert.equal(res.statusCode, 200)
  const c = res.json()
  assert.deepEqual(c.metrics.map((m) => m.id), METRICS.map((m) => m.id))
  assert.deepEqual(c.metrics.find((m) => m.id === 'ttfb_ms'), { ...metricOf('ttfb_ms') })
  assert.deepEqual(c.probes.map((p) => p.id), PROBE_IDS)
  assert.deepEqual(c.probes.find((p) => p.id === 'parallel').options, ['parallel_requests', 'parallel_url'])
  assert.deepEqual(c.modes.map((m) => m.id), MODES)
  assert.deepEqual(c.modes.find((m) => m.id === 'auto'), { id: 'auto', protocol: null, views: ['first', 'returning', 'repeat'] })
  assert.equal(c.default_metric, 'ttfb_ms')
  // Frames are Chromium's screencast, a journey runs in Chromium: those metrics say so, and Firefox lists what it lacks.
  for (const id of ['first_visual_change_ms', 'speed_index_ms', 'visually_complete_85_ms', 'visually_complete_ms', 'last_visual_change_ms', 'step_ms']) {
    assert.deepEqual(c.metrics.find((m) => m.id === id).browsers, ['chromium'], id)
  }
  assert.deepEqual(c.metrics.find((m) => m.id === 'ttfb_ms').browsers, ['chromium', 'firefox'])
  assert.ok(c.browsers.find((b) => b.id === 'firefox').lacks.some((l) => /^filmstrips and the visual metrics/.test(l)))
  // The words the dashboard shows for why a run came over its protocol.
  assert.deepEqual(Object.fromEntries(c.protocol_reasons.map((r) => [r.code, r.text])), PROTOCOL_REASONS)
  assert.deepEqual(c.alternate_protocol_usage.map((u) => u.value), Object.keys(ALTERNATE_PROTOCOL_USAGE))
  assert.deepEqual(c.alternate_protocol_usage.find((u) => u.value === 'mainJobWonRace'), { value: 'mainJobWonRace', label: 'TCP won', text: 'TCP won the race against QUIC' })
})

/**
 * A plausible, distinct value for each column metric: 100 ms per step of
 * its place in the page's order (dns before ttfb before load, as the
 * result checks want), plus its place in the catalogue.
 */
const COLUMN_VALUE = (() => {
  const rank = new Map(TIMING_COLUMNS.map((c) => [c, 0]))
  for (let pass = 0; pass < TIMING_COLUMNS.length; pass++) {
    for (const [earlier, later] of PAGE_ORDER) rank.set(later, Math.max(rank.get(later) ?? 0, (rank.get(earlier) ?? 0) + 1))
  }
  return new Map(TIMING_COLUMNS.map((c, j) => [c, 100 * (/** @type {number} */ (rank.get(c)) + 1) + j]))
})()

/**
 * One round of every probe at `local`: page loads with a distinct value per
 * column metric, and samples for the probes that have them.
 * @param {number} i
 */
function round (i) {
  const time = new Date(BASE + i * 60e3).toISOString()
  return MODES.flatMap((mode, k) => PROBES.map((p) => {
    /** @type {Record<string, any>} */
    const line = { time, location_id: 'local', mode, probe: p.id, status: 'ok', observed_protocol: mode, protocol_ok: true }
    for (const c of TIMING_COLUMNS) line[c] = /** @type {number} */ (COLUMN_VALUE.get(c)) + (i % 7) + k
    if (p.samplesMetric) line.details = { samples: [50 + (i % 5) + k, 60 + (i % 3) + k] }
    return line
  }))
}

test('every metric imported reaches the export, the rollups (trends, distribution) and the comparison, by id and by its deprecated alias', async () => {
  const m = await createMonitor(t.db, {
    url: 'https://example.com/', interval_s: 60, locations: ['local'], probes: PROBE_IDS, options: { upload_url: 'https://example.com/upload' },
    journey: { steps: [{ action: 'navigate', url: '/' }] }
  }, { allowPrivateTargets: true })
  const body = Array.from({ length: ROUNDS }, (_, i) => round(i)).flat().map((l) => JSON.stringify(l)).join('\n') + '\n'
  const imported = await t.app.inject({ method: 'POST', url: `/api/v1/monitors/${m.id}/results/import`, headers: { 'content-type': 'application/x-ndjson' }, payload: body })
  assert.equal(imported.statusCode, 200, imported.body)

  const exported = (await t.app.inject({ url: `/api/v1/results?monitor=${m.id}&format=ndjson` })).body.trim().split('\n').map((l) => JSON.parse(l))
  assert.equal(exported.length, ROUNDS * MODES.length * PROBES.length)
  const first = exported.find((r) => r.probe === 'page' && r.mode === MODES[0] && r.time === new Date(BASE).toISOString())
  for (const c of TIMING_COLUMNS) assert.equal(first[c], COLUMN_VALUE.get(c), `export ${c}`)

  const window = `from=${encodeURIComponent(new Date(BASE - 3600e3).toISOString())}&to=${encodeURIComponent(new Date(BASE + 2 * 3600e3).toISOString())}`
  for (const x of ROLLUP_METRICS.filter((r) => r.comparable)) {
    const probe = x.samplesOf ? `&probe=${x.samplesOf}` : ''
    const trends = await t.app.inject({ url: `/api/v1/monitors/${m.id}/trends?${window}&metric=${x.id}&bucket=1h${probe}` })
    assert.equal(trends.statusCode, 200, `${x.id}: ${trends.body}`)
    const counts = trends.json().series.flatMap((s) => s.points.map((p) => p.count))
    assert.equal(counts.reduce((a, b) => a + b, 0), ROUNDS * MODES.length * (x.samplesOf ? 2 : 1), `${x.id}: every value of its probe in the rollups`)
    const dist = (await t.app.inject({ url: `/api/v1/monitors/${m.id}/distribution?${window}&metric=${x.id}${probe}` })).json()
    assert.equal(dist.metric, x.id)
    assert.equal(dist.series.length, MODES.length, `${x.id}: a CDF per mode`)
  }

  for (const id of COMPARABLE_METRICS) {
    const byId = await t.app.inject({ url: `/api/v1/monitors/${m.id}/comparison?${window}&metric=${id}&percentiles=50` })
    assert.equal(byId.statusCode, 200, `${id}: ${byId.body}`)
    assert.equal(byId.json().metric, id)
    assert.equal(byId.headers.deprecation, undefined)
    const loc = byId.json().locations.find((l) => l.location_id === 'local')
    assert.equal(loc.rounds.used, ROUNDS, `${id}: every round matched`)

    const alias = metricOf(id).alias
    if (alias === null) continue
    const byAlias = await t.app.inject({ url: `/api/v1/monitors/${m.id}/comparison?${window}&metric=${alias}&percentiles=50` })
    assert.equal(byAlias.statusCode, 200)
    assert.match(String(byAlias.headers.deprecation), /^@\d+$/, `${alias} is deprecated (RFC 9745 date)`)
    assert.match(String(byAlias.headers['x-h3lens-deprecated']), new RegExp(`use metric=${id}`))
    assert.deepEqual({ ...byAlias.json(), computed_at: null }, { ...byId.json(), computed_at: null }, `${alias} answers as ${id}`)
  }
  const unknown = await t.app.inject({ url: `/api/v1/monitors/${m.id}/comparison?metric=speed` })
  assert.equal(unknown.statusCode, 400)
  assert.equal(unknown.json().field, 'metric')
})

test('the dashboard offers the catalogue\'s page metrics and keeps old metric links working', async () => {
  const server = await startDashboard(t.db)
  const chromium = await launchBrowser()
  try {
    const shown = METRICS.filter((x) => x.comparable && x.column)
    const { page, done } = await openRoute(chromium, server, t.readKey, '#/?metric=load')
    const picker = await page.$$eval('#metric-group input[name=metric]', (els) => els.map((e) => ({
      id: e.value, checked: e.checked, label: document.querySelector(`label[for="${e.id}"]`)?.textContent.trim()
    })))
    assert.deepEqual(picker.map((x) => [x.id, x.label]), shown.map((x) => [x.id, x.label]), 'one choice per page metric, labelled as the catalogue says')
    assert.deepEqual(picker.filter((x) => x.checked).map((x) => x.id), ['load_ms'], 'the old name metric=load selects load_ms')
    // The picker names the metric before and after: the page's header, drawn for the new address, is what says it.
    await whenRedrawn(page, () => page.click('label[for="metric-lcp_ms"]'))
    assert.match(await page.evaluate(() => location.hash), /metric=lcp_ms/)
    assert.match(await page.$eval('.page-head .sub', (e) => e.textContent), new RegExp(`^Is HTTP/3 faster than HTTP/2\\? ${metricOf('lcp_ms').label} at p50 and p95`))
    await done()

    // The runs table's metric columns and the run detail's timings are the catalogue's.
    const [monitor] = (await t.app.inject({ url: '/api/v1/monitors' })).json().items
    const runs = await openRoute(chromium, server, t.readKey, `#/monitors/${monitor.id}`)
    await runs.page.waitForSelector('#runs tbody tr')
    const headers = await runs.page.$$eval('#runs thead th', (ths) => ths.map((th) => th.textContent.trim()))
    const summary = COLUMN_METRICS.filter((m) => m.summary)
    assert.deepEqual(headers.filter((x) => summary.some((m) => m.label === x)), summary.map((m) => m.label), 'a column per summary metric, in catalogue order')
    const cells = await runs.page.$$eval('#runs tbody tr:first-child td[data-metric]', (tds) => tds.map((td) => td.dataset.metric))
    assert.deepEqual(cells, summary.map((m) => m.id))
    const firstRun = await runs.page.$eval('#runs tbody tr[data-mode] a', (a) => a.getAttribute('href'))
    await runs.done()
    const detail = await openRoute(chromium, server, t.readKey, firstRun)
    await detail.page.waitForSelector('.timing-table')
    const rows = await detail.page.$$eval('.timing-table tr[data-metric]', (trs) => trs.map((tr) => ({ id: tr.dataset.metric, label: tr.querySelector('th').textContent, value: tr.querySelector('td.num').textContent })))
    const drawn = COLUMN_METRICS.filter((m) => m.timeline)
    assert.deepEqual(rows.map((r) => r.id).sort(), drawn.map((m) => m.id).sort(), 'a timing row per metric the catalogue draws')
    for (const r of rows) assert.match(r.value, /\d+ ms/, `${r.id}: its value`)
    const spans = drawn.filter((m) => m.timeline === 'span').length
    assert.ok(rows.slice(0, spans).every((r) => metricOf(r.id).timeline === 'span'), 'durations first')
    const tiles = await detail.page.$$eval('.tile .tile-l', (ls) => ls.map((l) => l.textContent))
    assert.deepEqual(tiles.slice(0, summary.length), summary.map((m) => m.label), 'a tile per summary metric')
    await detail.done()
  } finally {
    await chromium.close()
    await server.close()
  }
})

// lib/ is four rooms on four floors (docs/ARCHITECTURE.md): each imports
// only the rooms below it, and table SQL lives in lib/store/ alone.
const ROOMS = ['runtime', 'measurement', 'store', 'analysis']

/**
 * The repository files `file` imports by a relative path: static imports and
 * re-exports, and awaited dynamic imports (type-only imports in comments are
 * not code).
 * @param {string} file repository-relative
 * @returns {string[]} repository-relative
 */
function importsOf (file) {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8')
  const specs = [...text.matchAll(/^(?:import|export)[^'"]*from '(\.[^']+)'|\bawait import\('(\.[^']+)'\)/gm)].map((m) => m[1] ?? m[2])
  // Only files that exist: a test may write modules into a copy of the
  // repository, and their text reads like imports.
  return specs.map((spec) => path.relative(ROOT, path.resolve(path.dirname(path.join(ROOT, file)), spec)))
    .filter((target) => fs.existsSync(path.join(ROOT, target)))
}

/** @param {string} dir @returns {string[]} repository-relative .js files under dir */
function sources (dir) {
  return fs.readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.js') && !f.split(path.sep).includes('vendor') && !f.split(path.sep).includes('node_modules'))
    .map((f) => path.join(dir, f))
}

test('lib/ has exactly the four rooms, and each imports only the rooms below it', () => {
  const entries = fs.readdirSync(path.join(ROOT, 'lib'))
  assert.deepEqual(entries.sort(), [...ROOMS].sort(), 'nothing lives loose in lib/')
  for (const file of sources('lib')) {
    const room = file.split(path.sep)[1]
    const floor = ROOMS.indexOf(room)
    for (const target of importsOf(file)) {
      const parts = target.split(path.sep)
      assert.equal(parts[0], 'lib', `${file} imports ${target}, outside lib/`)
      assert.ok(ROOMS.indexOf(parts[1]) <= floor, `${file} (${room}) imports ${target} (${parts[1]}), a room above it`)
    }
  }
})

test('no module outside lib/store/ runs SQL against a table', () => {
  const tables = new Set()
  for (const f of fs.readdirSync(path.join(ROOT, 'migrations')).filter((x) => x.endsWith('.sql'))) {
    for (const [, name] of fs.readFileSync(path.join(ROOT, 'migrations', f), 'utf8').matchAll(/CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+)/g)) tables.add(name)
  }
  assert.ok(tables.has('results') && tables.has('jobs'))
  const sql = new RegExp(`\\b(?:FROM|INTO|UPDATE|JOIN|TABLE)\\s+(${[...tables].join('|')})\\b`)
  // The runtime administers the database itself: migrations and its creation.
  const schemaAdmin = new Set(['lib/runtime/migrate.js', 'lib/runtime/db.js'])
  const offenders = []
  for (const file of ['lib', 'api', 'scheduler', 'agents', 'bin'].flatMap(sources)) {
    if (file.startsWith(`lib${path.sep}store${path.sep}`) || schemaAdmin.has(file)) continue
    fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n').forEach((line, i) => {
      if (!line.trim().startsWith('//') && !line.trim().startsWith('*') && sql.test(line)) offenders.push(`${file}:${i + 1}: ${line.trim()}`)
    })
  }
  assert.deepEqual(offenders, [])
})

// The repository's top-level rooms (docs/ARCHITECTURE.md) and what each may
// import besides itself:
// - api/, agents/, scheduler/ and lab/ are the processes: they run apart and
//   talk over HTTP, so none imports another; each builds on lib/ alone.
// - bin/ builds and starts them all; web/ runs in the browser, from its own
//   files.
// - dev/ holds what tests, benches and scripts share (demo data, scratch
//   databases, Chromium, free ports); it builds on the product, and no
//   product room imports it.
// - Nothing imports test/ or bench/, and only tests import scripts/ (to
//   test them). So lab/, say, is imported by bin/ (which starts it),
//   scripts/setup.js (its pinned Caddy), benches and tests.
const PRODUCT = ['lib', 'api', 'agents', 'scheduler', 'lab', 'bin', 'web']
/** @type {Record<string, string[]>} */
const MAY_IMPORT = {
  lib: [],
  api: ['lib'],
  agents: ['lib'],
  scheduler: ['lib'],
  lab: ['lib'],
  web: [],
  bin: ['lib', 'api', 'agents', 'scheduler', 'lab'],
  dev: PRODUCT,
  scripts: [...PRODUCT, 'dev'],
  bench: [...PRODUCT, 'dev'],
  test: [...PRODUCT, 'dev', 'scripts']
}

test('each top-level room imports only the rooms it may: the processes none of one another, the product no tools', () => {
  const withCode = fs.readdirSync(ROOT, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith('.') && e.name !== 'node_modules' && sources(e.name).length > 0)
    .map((e) => e.name)
  assert.deepEqual(withCode.sort(), Object.keys(MAY_IMPORT).sort(), 'every folder with code is a room named here')
  const offenders = []
  for (const [room, allowed] of Object.entries(MAY_IMPORT)) {
    for (const file of sources(room)) {
      for (const target of importsOf(file)) {
        const to = target.split(path.sep)[0]
        if (to !== room && !allowed.includes(to)) offenders.push(`${file} imports ${target}`)
      }
    }
  }
  assert.deepEqual(offenders, [])
})

test('the Docker image leaves out every tool room and keeps every product room', () => {
  const ignored = fs.readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n')
    .map((line) => line.trim().replace(/^\/|\/$/g, '')).filter((line) => line && !line.startsWith('#'))
  const tools = Object.keys(MAY_IMPORT).filter((room) => !PRODUCT.includes(room))
  assert.deepEqual(tools.filter((room) => !ignored.includes(room)), [], 'tool rooms the image copies')
  assert.deepEqual(PRODUCT.filter((room) => ignored.includes(room)), [], 'product rooms the image leaves out')
})
