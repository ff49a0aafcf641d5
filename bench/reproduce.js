#!/usr/bin/env node
// Re-runs the field studies of docs/DESIGN.md §1 on the lab's emulated regions
// (lab-na, lab-eu, lab-asia with their default, lossy profiles), through the
// agent's own job runner, and prints the tables docs/REPRODUCTION.md shows.
//
//   node bench/reproduce.js [--parallel-rounds 30] [--page-rounds 10] [--upload-rounds 8] [--upload-bytes 1048576]
//                           [--auto-rounds 10] [--only dropbox,cloudflare,firefox,apnic] [--browser chromium]
//
// --browser firefox runs every study in Firefox (H3LENS_FIREFOX, Debian's
// firefox-esr by default; docs/BROWSERS.md) instead of Chromium.
//
//   Dropbox     parallel probe: a warm-up navigation, then 5 parallel
//               requests to /noop on the open connection; H3 vs H2 at
//               p25/p50/p75/p90/p95 over requests, per region.
//   Cloudflare  TTFB and load time of the 15 KB and 1 MB pages, H2 vs H3,
//               medians per region (fresh connection each run).
//   Firefox     upload probe: one POST of 1 MB after a warm-up navigation;
//               throughput H2 vs H3, medians per region.
//   APNIC       the auto arm (nothing forced): the share of first and of
//               returning visits whose page came over H3, per region, for
//               the lab origin and for its port without H3, with the
//               reasons the browser gave.
// Every round runs both modes in random order, each in a fresh incognito
// context. Bounded: the default 30/10/8 rounds per region take 6–10 minutes
// on 2 busy cores (each run is a fresh context and a warm-up navigation),
// and the APNIC study's 10 auto rounds about 8 more.
import os from 'node:os'
import path from 'node:path'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { createFirefoxPool } from '../agents/browsers/firefox.js'
import { createJobRunner } from '../agents/job-runner.js'
import { startOrigin } from '../lab/origin.js'
import { DEFAULT_PROFILES } from '../lab/profiles.js'
import { roundBootstrap, bootstrapSummary, exactQuantile, wilsonInterval } from '../lib/analysis/stats/index.js'
import { benchArgs } from './lib/args.js'
import { benchLab, benchScratch } from './lib/scratch.js'
import { median } from './lib/median.js'

const { values } = benchArgs(import.meta.url, {
  options: {
    'parallel-rounds': { type: 'string', default: '30' },
    'page-rounds': { type: 'string', default: '10' },
    'upload-rounds': { type: 'string', default: '8' },
    'upload-bytes': { type: 'string', default: String(1024 * 1024) },
    'auto-rounds': { type: 'string', default: '10' },
    only: { type: 'string', default: 'dropbox,cloudflare,firefox,apnic' },
    browser: { type: 'string', default: 'chromium' }
  }
})
const browser = values.browser
if (!['chromium', 'firefox'].includes(browser)) throw new Error(`--browser: chromium or firefox, not ${JSON.stringify(browser)}`)
const STUDIES = ['dropbox', 'cloudflare', 'firefox', 'apnic']
const only = new Set(values.only.split(',').map((x) => x.trim()))
for (const x of only) if (!STUDIES.includes(x)) throw new Error(`--only: unknown study ${JSON.stringify(x)}; studies are ${STUDIES.join(', ')}`)
const bounded = (v, max) => Math.min(max, Math.max(1, Number(v)))
const rounds = {
  parallel: only.has('dropbox') ? bounded(values['parallel-rounds'], 200) : 0,
  page: only.has('cloudflare') ? bounded(values['page-rounds'], 100) : 0,
  upload: only.has('firefox') ? bounded(values['upload-rounds'], 100) : 0,
  auto: only.has('apnic') ? bounded(values['auto-rounds'], 100) : 0
}
// The field studies compare H3 with H2 where both can load; lab-udp-blocked
// carries no QUIC by design, so only the APNIC study (what users get) goes there.
const PROFILES = rounds.auto ? DEFAULT_PROFILES : DEFAULT_PROFILES.filter((p) => !p.block_udp)
/** @param {string} region */
const forcedStudies = (region) => !DEFAULT_PROFILES.find((p) => p.name === region)?.block_udp
const uploadBytes = bounded(values['upload-bytes'], 100 * 1024 * 1024)
const PERCENTILES = [25, 50, 75, 90, 95]

// Ctrl-C or SIGTERM stops what was started, the lab's namespaces included.
const { dataDir, log, lifecycle } = benchScratch('reproduce')
const started = Date.now()
const load = os.loadavg()[0]
const topology = await benchLab(lifecycle, { profiles: PROFILES, prefix: 'h3t6b', runDir: path.join(dataDir, 'run'), log })
const pool = createBrowserPool({ dataDir, log })
lifecycle.add('browsers', () => pool.close())
// Firefox's rounds still follow redirects with Chromium (agents/redirects.js).
const firefoxPool = browser === 'firefox' ? createFirefoxPool({ dataDir, log, executablePath: process.env.H3LENS_FIREFOX ?? '/usr/bin/firefox-esr' }) : null
/** @type {Record<string, Record<string, any[]>>} results per region and study */
/** @type {Record<string, Record<'parallel' | 'page15k' | 'page1m' | 'upload' | 'auto' | 'autoNoH3', Record<string, any>[]>>} */
const byRegion = {}
try {
  const origin = await startOrigin({ dataDir, port: 8443, noH3Port: 8444, netns: topology.originNs, log })
  try {
    for (const loc of topology.locations) {
      const runJob = createJobRunner({ pool, firefoxPool, lab: { spki: origin.spki, caPath: origin.caPath, address: loc.originAddress, netns: loc.ns }, timeoutMs: 60_000, log })
      const ctx = { location: { kind: 'lab', profile: loc.profile } }
      const job = (id, page, probes, options = {}) => runJob({ id, url: `${origin.baseUrl}/${page}`, modes: ['h3', 'h2'], probes, browser, options: { netlog: 'off', ...options } }, ctx)
      const cell = (byRegion[loc.name] = /** @type {typeof byRegion[string]} */ ({ parallel: [], page15k: [], page1m: [], upload: [], auto: [], autoNoH3: [] }))
      const forced = forcedStudies(loc.name)
      // Each result keeps its round, so the comparison resamples whole rounds.
      for (let i = 0; forced && i < rounds.parallel; i++) cell.parallel.push(...(await job(i, 'page-15k.html', ['parallel'], { parallel_url: '/noop', parallel_requests: 5 })).map((r) => ({ ...r, round: i })))
      for (let i = 0; forced && i < rounds.page; i++) {
        cell.page15k.push(...await job(i, 'page-15k.html', ['page']))
        cell.page1m.push(...await job(i, 'page-1m.html', ['page']))
      }
      for (let i = 0; forced && i < rounds.upload; i++) cell.upload.push(...await job(i, 'page-15k.html', ['upload'], { upload_bytes: uploadBytes }))
      // The auto arm beside the forced ones, as a monitor with all three runs them.
      for (let i = 0; i < rounds.auto; i++) {
        const arms = { modes: ['h2', 'h3', 'auto'], probes: ['page'], options: { netlog: 'off' } }
        cell.auto.push(...await runJob({ id: i, url: `${origin.baseUrl}/page-15k.html`, browser, ...arms }, ctx))
        cell.autoNoH3.push(...await runJob({ id: i, url: `${origin.noH3BaseUrl}/page-15k.html`, browser, ...arms }, ctx))
      }
      console.error(`${loc.name}: done after ${Math.round((Date.now() - started) / 1000)} s`)
    }
  } finally {
    await origin.stop()
  }
} finally {
  await firefoxPool?.close()
  await lifecycle.stopAll('done')
}

const ok = (list, mode) => list.filter((r) => r.mode === mode && r.status === 'ok' && r.protocol_ok)
const failed = (list) => list.filter((r) => r.status !== 'ok')
const f1 = (x) => (x === null || x === undefined || Number.isNaN(x) ? '–' : x.toFixed(1))
const pct = (d, base) => (base > 0 ? `${d >= 0 ? '+' : ''}${((d / base) * 100).toFixed(1)}%` : '–')
const signed = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(1)}`

console.log(`# h3lens field-study reproduction in ${browser} — ${new Date().toISOString()}`)
console.log(`${os.cpus().length} cores, load average ${load.toFixed(1)} at start, ${Math.round((Date.now() - started) / 1000)} s; ` +
  `rounds per region: parallel ${rounds.parallel}, pages ${rounds.page}, upload ${rounds.upload} (${uploadBytes} bytes), auto ${rounds.auto} per origin`)
console.log('\nProfiles: ' + PROFILES.map((p) => `${p.name} ${p.rtt_ms} ms RTT, ${p.loss_pct}% ${p.loss_model} loss, ${p.down_kbps / 1000}/${p.up_kbps / 1000} Mbit/s`).join('; '))

if (rounds.parallel) {
  console.log('\n## Dropbox style: 5 parallel requests to /noop on a warm connection (H3 − H2 per request)\n')
  console.log(`| region | matched rounds, requests h2 / h3 | ${PERCENTILES.map((p) => `p${p}`).join(' | ')} |`)
  console.log(`|---|---|${PERCENTILES.map(() => '---').join('|')}|`)
  for (const [region, cell] of Object.entries(byRegion).filter(([r]) => forcedStudies(r))) {
  // Matched rounds, as the product compares them: both arms loaded with
  // their protocol; a round's requests are resampled together.
    const matched = []
    for (let i = 0; i < rounds.parallel; i++) {
      const arm = (mode) => ok(cell.parallel, mode).find((r) => r.round === i)?.details.samples
      if (arm('h2')?.length && arm('h3')?.length) matched.push({ h2: arm('h2'), h3: arm('h3') })
    }
    if (!matched.length) {
      console.log(`| ${region} | 0 rounds | ${PERCENTILES.map(() => '–').join(' | ')} |`)
      continue
    }
    const boot = roundBootstrap({ rounds: matched, qs: PERCENTILES.map((p) => p / 100), seed: region })
    const cells = PERCENTILES.map((_, k) => {
      const delta = boot.h3[k] - boot.h2[k]
      const s = bootstrapSummary(boot.deltas[k], delta)
      return `${signed(delta)} ms (${pct(delta, boot.h2[k])})${s.lo > 0 ? ' ✗' : s.hi < 0 ? ' ✓' : ''}`
    })
    const n = (mode) => matched.reduce((sum, r) => sum + r[mode].length, 0)
    console.log(`| ${region} | ${matched.length} rounds, ${n('h2')} / ${n('h3')} requests | ${cells.join(' | ')} |`)
  }
  console.log('\n✓ H3 faster, ✗ H3 slower (the 95% interval of a round-level bootstrap over the matched rounds excludes 0; uncorrected for the table\'s cells); unmarked: no clear difference.')
  console.log('\nAbsolute values (ms), h2 → h3:\n')
  console.log(`| region | ${PERCENTILES.map((p) => `p${p}`).join(' | ')} |`)
  console.log(`|---|${PERCENTILES.map(() => '---').join('|')}|`)
  for (const [region, cell] of Object.entries(byRegion).filter(([r]) => forcedStudies(r))) {
    const sorted = (mode) => Float64Array.from(ok(cell.parallel, mode).flatMap((r) => r.details.samples)).sort()
    const [h2, h3] = [sorted('h2'), sorted('h3')]
    console.log(`| ${region} | ${PERCENTILES.map((p) => `${f1(exactQuantile(h2, p / 100))} → ${f1(exactQuantile(h3, p / 100))}`).join(' | ')} |`)
  }
}

if (rounds.page) {
  console.log('\n## Cloudflare style: fresh connection, medians (ms)\n')
  console.log('| region | page | TTFB h2 | TTFB h3 | Δ TTFB | load h2 | load h3 | Δ load | connect RTT h2 / h3 |')
  console.log('|---|---|---|---|---|---|---|---|---|')
  for (const [region, cell] of Object.entries(byRegion).filter(([r]) => forcedStudies(r))) {
    for (const [name, list] of [['15 KB', cell.page15k], ['1 MB', cell.page1m]]) {
      const m = (mode, k) => median(ok(list, mode).map((r) => r[k]))
      const [t2, t3, l2, l3] = [m('h2', 'ttfb_ms'), m('h3', 'ttfb_ms'), m('h2', 'load_ms'), m('h3', 'load_ms')]
      console.log(`| ${region} | ${name} | ${f1(t2)} | ${f1(t3)} | ${signed(t3 - t2)} (${pct(t3 - t2, t2)}) | ${f1(l2)} | ${f1(l3)} | ${signed(l3 - l2)} (${pct(l3 - l2, l2)}) | ${f1(m('h2', 'connect_rtt'))} / ${f1(m('h3', 'connect_rtt'))} |`)
    }
  }
}

if (rounds.upload) {
  console.log('\n## Firefox style: upload throughput, medians (Mbit/s)\n')
  console.log('| region | up link | h2 | h3 | h3 / h2 | upload ms h2 | upload ms h3 |')
  console.log('|---|---|---|---|---|---|---|')
  for (const [region, cell] of Object.entries(byRegion).filter(([r]) => forcedStudies(r))) {
  // byRegion's keys are the names of DEFAULT_PROFILES' locations.
    const p = /** @type {typeof DEFAULT_PROFILES[number]} */ (DEFAULT_PROFILES.find((x) => x.name === region))
    const m = (mode, f) => median(ok(cell.upload, mode).map(f))
    const [h2, h3] = [m('h2', (r) => r.upload_mbps), m('h3', (r) => r.upload_mbps)]
    console.log(`| ${region} | ${p.up_kbps / 1000} Mbit/s | ${f1(h2)} | ${f1(h3)} | ${(h3 / h2).toFixed(2)}× | ${f1(m('h2', (r) => r.details.samples[0]))} | ${f1(m('h3', (r) => r.details.samples[0]))} |`)
  }
}

if (rounds.auto) {
  console.log('\n## APNIC style: the share of visits over H3, as users get it (the auto arm)\n')
  console.log('| region | origin | first visit: page over H3 | returning visit: page over H3 | returning: bytes over H3 | why (returning visits) | forced H3 arm |')
  console.log('|---|---|---|---|---|---|---|')
  const share = (list, view) => {
    const loaded = list.filter((r) => r.mode === 'auto' && r.view === view && r.status === 'ok')
    const w = wilsonInterval(loaded.filter((r) => r.observed_protocol === 'h3').length, loaded.length)
    return w.rate === null ? '–' : `${(w.rate * 100).toFixed(0)}% (${(Number(w.lo) * 100).toFixed(0)}–${(Number(w.hi) * 100).toFixed(0)}%) of ${loaded.length}`
  }
  for (const [region, cell] of Object.entries(byRegion)) {
    for (const [name, list] of /** @type {[string, Record<string, any>[]][]} */ ([['H3 (Alt-Svc)', cell.auto], ['no H3', cell.autoNoH3]])) {
      const returning = list.filter((r) => r.mode === 'auto' && r.view === 'returning' && r.status === 'ok')
      const bytes = returning.reduce((n, r) => n + r.bytes, 0)
      const h3Bytes = returning.reduce((n, r) => n + r.bytes * (r.h3_byte_share ?? 0), 0)
      const reasons = {}
      for (const r of returning) reasons[r.details.protocol_reason.text] = (reasons[r.details.protocol_reason.text] ?? 0) + 1
      const forced = list.filter((r) => r.mode === 'h3')
      const forcedOk = forced.filter((r) => r.status === 'ok' && r.protocol_ok).length
      console.log(`| ${region} | ${name} | ${share(list, 'first')} | ${share(list, 'returning')} | ${bytes ? `${(h3Bytes / bytes * 100).toFixed(0)}%` : '–'} | ` +
        `${Object.entries(reasons).map(([text, n]) => `${text} (${n})`).join('; ') || '–'} | ${forcedOk} of ${forced.length} loaded over H3 |`)
    }
  }
  console.log('\nShares with their Wilson 95% interval. First visit: a new profile; returning visit: the browser started again on it, HTTP cache removed (agents/visits.js).')
}

console.log('\n## Failed runs, and page runs with a slow handshake\n')
for (const [region, cell] of Object.entries(byRegion)) {
  const all = Object.values(cell).flat()
  const bad = failed(all)
  const notes = all.flatMap((r) => r.notes.filter((n) => n.code === 'slow_handshake' && r.probe === 'page').map(() => r.mode))
  console.log(`- ${region}: ${bad.length} of ${all.length} runs not ok${bad.length ? ` (${[...new Set(bad.map((r) => `${r.probe}/${r.mode}: ${r.status}${r.error ? ` ${r.error.slice(0, 80)}` : ''}`))].slice(0, 3).join('; ')})` : ''}; ` +
    `page runs with a slow-handshake note: h3 ${notes.filter((m) => m === 'h3').length}, h2 ${notes.filter((m) => m === 'h2').length}`)
}
