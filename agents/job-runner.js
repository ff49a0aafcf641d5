// Turns a claimed job into the results the API stores: which measurements to
// run (probes, modes, repeat view), with which extra flags (lab origins
// only), the location's RTT and what the timings mean in it, net logs when
// the monitor or an outlier asks for one, and the mapping from the
// measurement engine's output to the submitted shape.
import os from 'node:os'
import path from 'node:path'
import { runRound, emptyResult, measurePageViews } from './measure.js'
import { PROBE_RUNNERS } from './probes/index.js'
import { readFileSync } from 'node:fs'
import { expectedProtocolFor, FORCED_MODES } from '../lib/measurement/modes.js'
import { keepImplausibleAsData } from '../lib/measurement/checks.js'
import { labBrowserFlags } from '../lib/measurement/browsers/chromium.js'
import { labPrefs } from '../lib/measurement/browsers/firefox.js'
import { tcpPing } from './rtt.js'
import { toSubmission, withinRoundLimit } from '../lib/measurement/result.js'
import { COLUMN_METRICS } from '../lib/measurement/metrics.js'
import { captureNetlog, outlierOf, MAX_RERUNS_PER_JOB } from './netlog-capture.js'
import { keepFilmstrips } from './filmstrip.js'
import { VISUAL_COLUMNS } from '../lib/measurement/visual.js'
import { effectiveOptions, probeOf, probeTargets } from '../lib/measurement/probes/index.js'
import { LAB_HOSTNAME, LAB_HOSTNAMES } from '../lib/runtime/lab-host.js'
import { createChainCache, discoveryBrowser } from './redirects.js'
import { runPlan } from './browsers/index.js'
import { navigationError } from './page-metrics.js'
import { journeyTargets } from '../lib/measurement/journey/steps.js'
import { scrubSecrets, secretValues } from '../lib/measurement/journey/secrets.js'
import { MAX_ERROR_LENGTH, storableText } from '../lib/runtime/text.js'
import { JOURNEY_PROBE } from '../lib/measurement/probes/journey.js'
import { CHAIN_TIMEOUT_MS, MIN_LOAD_MS, roundBudget } from './round-budget.js'

// The journey's navigate URLs whose redirects are followed for the H3 arm's
// force list, at most (each is one more navigation per CHAIN_TTL_MS).
const MAX_JOURNEY_CHAINS = 5
// How long the guard's check (guardInForce) waits for its load to fail: a
// lookup of a name that exists nowhere, answered at once by the guard's resolver.
const GUARD_CHECK_TIMEOUT_MS = 10_000
// How long it waits on a load the guard's proxy script refuses (Firefox):
// a browser that ignores the script connects at once.
const GUARD_REFUSAL_WAIT_MS = 3_000
/** The results columns of the catalogue's summary metrics. */
const SUMMARY_COLUMNS = COLUMN_METRICS.filter((m) => m.summary).map((m) => /** @type {string} */ (m.column))

/**
 * @typedef {{ spki: string, hostname?: string, address: string, port?: number | null, netns?: string | null, caPath?: string | null }} LabTarget
 * How this agent reaches the lab origin: its certificate's SPKI (what
 * Chromium pins), the lab authority's certificate file (what a Firefox
 * run's profile trusts, lab/cert.js), the address the lab host name maps
 * to, the origin's port when known (a lab URL on any other port is
 * refused: in local mode the lab host name is this machine's loopback),
 * and the namespace the browser runs in.
 */

/**
 * `guard` (agents/target-guard.js) keeps the runs of monitors off non-public
 * addresses unless the API allows private targets; a runner without one
 * refuses such runs. Lab runs need none: their browser reaches the lab only.
 * `pool` is Chromium's (agents/browsers/chromium.js), `firefoxPool` Firefox's
 * (agents/browsers/firefox.js) when the agent has Firefox; a job names its
 * browser (job.browser, chromium when it does not). Chromium's pool also
 * follows a page's redirects for either browser's rounds (agents/redirects.js).
 * @param {{ pool: any, firefoxPool?: any, lab?: LabTarget | null, timeoutMs: number, log: import('pino').Logger, random?: () => number,
 *   uploadNetlog?: ((jobId: number, n: any) => Promise<unknown>) | null, netlogDir?: string,
 *   uploadFilmstrip?: ((jobId: number, f: any) => Promise<unknown>) | null,
 *   ping?: typeof tcpPing, guard?: import('./target-guard.js').TargetGuard | null }} deps
 */
export function createJobRunner ({ pool, firefoxPool = null, lab = null, timeoutMs, log, random, uploadNetlog = null, uploadFilmstrip = null, netlogDir = path.join(os.tmpdir(), 'h3lens-netlogs'), ping = tcpPing, guard = null }) {
  const chainOf = createChainCache()
  /**
   * @param {{ id: number, url: string, modes: string[], probes?: string[], repeat_view?: boolean, options?: Record<string, any>,
   *   journey?: { steps: any[], step_timeout_ms: number, timeout_ms: number } | null,
   *   force_quic_origins?: string[], netlog_thresholds?: Record<string, number>, aa_protocol?: 'h2' | 'h3' | null,
   *   backed_off_timeouts?: number | null, browser?: string }} job
   * @param {{ location?: { kind?: string, profile?: { rtt_ms?: number } }, allowPrivateTargets?: boolean }} ctx
   *   allowPrivateTargets: the API's H3LENS_ALLOW_PRIVATE_TARGETS (from the claim)
   */
  return async function runJob (job, { location, allowPrivateTargets = false } = {}) {
    const journey = (job.probes ?? []).includes(JOURNEY_PROBE) ? job.journey ?? null : null
    // What the round may spend, in a pool per arm (agents/round-budget.js).
    const budget = roundBudget({
      timeoutMs, modes: job.modes ?? FORCED_MODES, probes: job.probes?.length ? job.probes : ['page'], journeyMs: journey?.timeout_ms ?? 0, backedOffTimeouts: job.backed_off_timeouts ?? null
    })
    const options = effectiveOptions(job.url, job.options ?? {})
    const journeyUrls = journey ? journeyTargets(journey).map(([u]) => u) : []
    const { isLab, guard: runGuard, extraFlags } = runConfinement({ url: job.url, targets: [...probeTargets(options).map((t) => t.url), ...journeyUrls], lab, guard, allowPrivateTargets })
    const browser = job.browser ?? 'chromium'
    const runPool = browser === 'firefox' ? firefoxPool : browser === 'chromium' ? pool : null
    if (!runPool) throw new Error(`this agent has no ${browser} to measure with`)
    await guardInForce({ guard: runGuard, pool, firefoxPool: browser === 'firefox' ? firefoxPool : null, netns: lab?.netns ?? null })
    // What a journey types as a secret never leaves this agent in a result
    // (a page that echoes it, an error that quotes it) nor in a net log.
    const secrets = secretValues(journey)
    const firefoxLab = browser === 'firefox' && isLab && lab ? { extraPrefs: labPrefs({ address: lab.address, port: lab.port ?? null, inNamespace: Boolean(lab.netns) }), trust: [labAuthority(lab)] } : {}
    const netns = lab?.netns ?? null
    const { rttMs, source: rttSource } = await locationRtt({ url: job.url, isLab, location, ping, guard: runGuard })
    // The H3 arm forces QUIC on every origin the URL redirects through, and
    // learns which of them advertise h3 (agents/redirects.js).
    const chain = (job.modes ?? ['h3']).includes('h3') && pool
      ? await budget.discovery.spend(() => chainOf({ pool, url: job.url, extraFlags, netns, guard: runGuard, timeoutMs: Math.max(MIN_LOAD_MS, Math.min(CHAIN_TIMEOUT_MS, timeoutMs, budget.discovery.left())) }))
      : null
    if (chain?.error) log.debug({ job: job.id, url: job.url, error: chain.error, hops: chain.hops.length }, 'redirect discovery incomplete')
    // A journey's pages are forced too, with the origins they redirect through.
    const journeyOrigins = []
    if (chain && journeyUrls.length) {
      for (const url of [...new Set(journeyUrls)].slice(0, MAX_JOURNEY_CHAINS)) {
        const left = budget.discovery.left()
        const hops = left > MIN_LOAD_MS ? await budget.discovery.spend(() => chainOf({ pool, url, extraFlags, netns, guard: runGuard, timeoutMs: Math.min(CHAIN_TIMEOUT_MS, timeoutMs, left) })) : null
        journeyOrigins.push(...(hops?.origins ?? []))
      }
      journeyOrigins.push(...journeyUrls.map((u) => new URL(u).origin))
    }
    const common = {
      pool: runPool, url: job.url, extraFlags, ...firefoxLab, netns, timeoutMs, log, guard: runGuard, lab: isLab,
      forceOrigins: [...new Set([...(chain?.origins ?? []), ...journeyOrigins])].filter((o) => o.startsWith('https:'))
        .concat(options.force_quic === 'all' ? (job.force_quic_origins ?? []) : []),
      altSvc: chain?.altSvc ?? null,
      // The auto arm's visits run in browsers just started (agents/visits.js);
      // the forced arms of its rounds do too, so the arms differ in their
      // protocol and not in how warm their browser was.
      freshBrowser: (job.modes ?? []).includes('auto')
    }
    const capture = (/** @type {'run' | 'rerun'} */ kind, /** @type {string} */ probe, /** @type {string} */ mode) => ({ dir: netlogDir, jobId: job.id, probe, mode, kind, rttMs, uploadNetlog, log })

    const measureProbe = probeRunner(job, options)
    /**
     * A load of the round, its time drawn from its arm's pool; with no room
     * left there, a result that says it was not run.
     * @param {string} probe @param {any} o
     */
    const runProbe = (probe, o) => {
      const arm = budget.arm(o.mode)
      const left = arm.left()
      if (left < MIN_LOAD_MS) {
        const r = emptyResult(o.mode, [], { probe })
        r.status = 'timeout'
        r.error = arm.notRun
        log.debug({ job: job.id, probe, mode: o.mode }, 'the arm\'s time budget is spent; load not run')
        return Promise.resolve([r])
      }
      return arm.spend((deadline) => measureProbe(probe, { ...o, deadline, timeoutMs: Math.min(o.timeoutMs ?? timeoutMs, left) }))
    }
    /** @type {Record<string, any>[]} */
    const measured = []
    for (const probe of job.probes?.length ? job.probes : ['page']) {
      // The auto arm's visits run browsers of their own, one after the
      // other on one profile; a net log would cover only the last, so they
      // are never captured.
      // Net logs are Chromium's. A journey that types a secret is never captured: a net log keeps URLs and form posts' metadata.
      const run = (/** @type {import('./measure.js').MeasureOptions} */ o) => options.netlog === 'always' && o.mode !== 'auto' && browser === 'chromium' && !(probe === JOURNEY_PROBE && secrets.length)
        ? captureNetlog(capture('run', probe, o.mode), (netlogFile) => runProbe(probe, { ...o, netlogFile }))
        : runProbe(probe, o)
      // An A/A monitor's arms both load with aa_protocol; they keep their
      // modes as arm labels (h2 = arm A, h3 = arm B).
      const modes = (job.modes ?? FORCED_MODES).filter((m) => probeOf(probe).modes.includes(/** @type {any} */ (m)))
      if (!modes.length) continue
      measured.push(...await runRound({ ...common, modes: /** @type {any} */ (modes), protocol: job.aa_protocol ?? undefined, random, probe, run }))
    }

    // Frames are never captured in the loads the timings come from: capture
    // slows the load by more than the A/A noise (bench/filmstrip-capture.js,
    // docs/BENCHMARKS.md). With options.filmstrip = always each forced arm
    // of the page probe loads once more, with capture, after the round's
    // timing loads; its visual metrics and frames go with that arm's result.
    // Frames come from Chromium's DevTools screencast: Chromium's rounds only.
    if (options.filmstrip === 'always' && browser === 'chromium') {
      for (const r of measured) {
        if (r.probe !== 'page' || r.view !== 'first' || r.mode === 'auto' || r.status === 'timeout') continue
        // The capture load draws on its arm's pool, after the arm's timed loads.
        const arm = budget.arm(r.mode)
        const left = arm.left()
        if (left < MIN_LOAD_MS) {
          r.filmstrip = { kind: 'capture', frames: [], progress: [], error: `not captured: the ${r.mode} arm's time budget was spent` }
          continue
        }
        // A fault of the browser in the capture load (agents/faults.js) costs
        // the frames, not the round: its timed loads are done.
        /** @type {Record<string, any>[]} */
        const [shot] = await arm.spend((deadline) => measurePageViews({ ...common, deadline, mode: r.mode, protocol: r.arm_protocol, filmstrip: true, allowEmpty: Boolean(options.allow_empty), timeoutMs: Math.min(timeoutMs, left) }))
          .catch((err) => [{ status: 'error', error: err.message }])
        for (const c of VISUAL_COLUMNS) r[c] = shot[c] ?? null
        r.filmstrip = {
          ...(shot.filmstrip ?? { frames: [], progress: [], error: `the capture load failed: ${shot.error ?? shot.status}` }),
          kind: 'capture',
          capture: { status: shot.status, ttfb_ms: shot.ttfb_ms ?? null, load_ms: shot.load_ms ?? null }
        }
      }
    }

    // Outliers run again at once with a net log, after the round so the
    // round's own runs stay back to back. Bounded per job: a bad minute must
    // not turn every round into four.
    // With options.filmstrip = outliers the re-run also captures frames
    // (one re-run for both); they are the outlier's filmstrip (kind rerun).
    let reruns = 0
    for (const r of measured) {
      // A journey is not run again for an outlier: its steps are results of their own, and a re-run is a whole journey.
      // Net logs and filmstrips are Chromium's.
      const netlog = options.netlog === 'outliers' && browser === 'chromium'
      const film = options.filmstrip === 'outliers' && r.probe === 'page' && browser === 'chromium'
      const outlier = (netlog || film) && r.mode !== 'auto' && !String(r.probe).startsWith(JOURNEY_PROBE) && outlierOf(r, job.netlog_thresholds)
      // A re-run draws on its arm's pool, as the arm's loads do (runProbe).
      if (!outlier || reruns >= MAX_RERUNS_PER_JOB || budget.arm(r.mode).left() < MIN_LOAD_MS) continue
      reruns++
      const o = { ...common, mode: r.mode, protocol: r.arm_protocol, filmstrip: film }
      /** @type {Record<string, any>[]} */
      const again = await (netlog
        ? captureNetlog(capture('rerun', r.probe, r.mode), (netlogFile) => runProbe(r.probe, { ...o, netlogFile }))
        : runProbe(r.probe, o))
        .catch((err) => [{ status: 'error', error: err.message }])
      const [first] = again
      const rerun = { status: first.status, error: first.error ?? null, ...outlierValues(first) }
      if (netlog) r.netlog = { ...first.netlog, reason: outlier, rerun }
      if (film && first.filmstrip) r.filmstrip = { ...first.filmstrip, kind: 'rerun', reason: outlier, rerun }
      log.info({ job: job.id, probe: r.probe, mode: r.mode, reason: outlier }, `outlier run measured again with ${[netlog && 'a net log', film && 'a filmstrip'].filter(Boolean).join(' and ')}`)
    }
    await keepFilmstrips(measured, { jobId: job.id, upload: uploadFilmstrip, log })

    // The round's loads are done: close its contexts and prepare the next
    // round's while the agent spools and submits these results (not awaited;
    // the next run waits for it, agents/browsers/chromium.js).
    runPool.settle?.().catch((/** @type {any} */ err) => log.warn({ err: err.message }, 'preparing the next round\'s contexts failed'))
    // Secrets masked first, then an error and the evidence cut to what the
    // API takes (a journey step's words around a page's error with its URL
    // can be longer; a heavy page's request lists can weigh hundreds of MB
    // in a round): a cut must not leave the start of a secret unmasked.
    const results = withinRoundLimit(scrubSecrets(measured.map((m) => toSubmission(m, { rtt: rttMs, rttSource, options })), secrets)
      .map((r) => (typeof r.error === 'string' ? { ...r, error: storableText(r.error, MAX_ERROR_LENGTH) } : r)))
    // Checked as the API checks them: a run whose values cannot be true
    // (a browser's odd timing, a detail out of shape) would have the API
    // refuse the whole round at every attempt. It is sent as an error
    // result saying why, and the round's other runs count.
    const expectedProtocol = (/** @type {string} */ mode) => expectedProtocolFor(mode, { aa_protocol: job.aa_protocol ?? null })
    for (const r of results) {
      try {
        const reason = keepImplausibleAsData(r, { expectedProtocol })
        if (reason) log.warn({ job: job.id, probe: r.probe, mode: r.mode, view: r.view, reason }, 'a run whose values cannot be true is sent as an error')
      } catch (/** @type {any} */ err) {
        // Not mended by failing the run (a measurement time a day off: this machine's clock); the API says so when it refuses the round.
        log.warn({ job: job.id, probe: r.probe, mode: r.mode, err: err.message }, 'a run the API will refuse')
      }
    }
    return results
  }
}

/** The lab authority's certificate, read once per file. @type {Map<string, string>} */
const authorities = new Map()

/**
 * What a Firefox run's profile trusts to reach the lab origin (lab/cert.js).
 * @param {LabTarget} lab
 */
function labAuthority (lab) {
  if (!lab.caPath) throw new Error('this agent was not told the lab\'s certificate authority (its caPath), which Firefox needs to reach the lab origin')
  let pem = authorities.get(lab.caPath)
  if (!pem) authorities.set(lab.caPath, (pem = readFileSync(lab.caPath, 'utf8')))
  return { name: 'h3lens lab', pem }
}

/**
 * The measurement function of each probe, with the job's options applied.
 * @param {{ repeat_view?: boolean }} job
 * @param {ReturnType<typeof effectiveOptions>} options
 */
function probeRunner (job, options) {
  /** @param {string} probe @param {any} o */
  return function runProbe (probe, o) {
    const measureProbe = PROBE_RUNNERS[probeOf(probe).id]
    if (!measureProbe) throw new Error(`this agent cannot measure the ${probe} probe`)
    return measureProbe(o, { job, options })
  }
}

/**
 * The figures of a re-run that say whether it reproduced the outlier: its
 * summary metrics (the catalogue's, the runs table's) and its samples.
 * @param {Record<string, any>} r
 */
function outlierValues (r) {
  return { ...Object.fromEntries(SUMMARY_COLUMNS.map((c) => [c, r[c] ?? null])), samples: r.samples ?? null }
}

/**
 * How a run of `url` is confined, for a round and for a journey's trial
 * alike: a page on the lab host names runs in the lab's browser, which
 * reaches the lab origin and nothing else (its resolver rules,
 * labBrowserFlags), and only on an agent that has a lab; any other page
 * runs behind the private-target guard, unless the API allows private
 * targets. An agent with neither runs nothing: a lab page on an agent
 * without a lab would otherwise get neither the lab's rules nor the guard.
 * @param {{ url: string, targets: (string | undefined)[], lab: LabTarget | null, guard: import('./target-guard.js').TargetGuard | null,
 *   allowPrivateTargets: boolean }} o targets: the other URLs the run loads (probe targets, a journey's pages)
 * @returns {{ isLab: boolean, guard: import('./target-guard.js').TargetGuard | null, extraFlags: string[] }}
 */
export function runConfinement ({ url, targets, lab, guard, allowPrivateTargets }) {
  if (LAB_HOSTNAMES.includes(new URL(url).hostname)) {
    const confined = checkLabTargets(lab, [url, ...targets])
    return { isLab: true, guard: null, extraFlags: labBrowserFlags({ spki: confined.spki, hostname: LAB_HOSTNAME, address: confined.address, port: confined.port ?? null }) }
  }
  if (!allowPrivateTargets && !guard) throw new Error(`this agent has no private-target guard, so it cannot measure ${url}`)
  return { isLab: false, guard: allowPrivateTargets ? null : guard, extraFlags: [] }
}

/**
 * Before the first guarded run in each kind of browser, check that the
 * guard is in force in this machine's browsers (target-guard.js inForce):
 * a guarded Chromium, the pooled one the redirect discovery uses, and for
 * a Firefox run a guarded Firefox of its own, load what the check gives.
 * Throws, failing the run, where the guard is not in force.
 * @param {{ guard: import('./target-guard.js').TargetGuard | null, pool: any, firefoxPool?: any, netns: string | null }} o
 *   firefoxPool: the Firefox pool, for a Firefox run
 */
export async function guardInForce ({ guard, pool, firefoxPool = null, netns }) {
  if (!guard) return
  if (pool) {
    await guard.inForce(async (urls) => {
      const browser = await pool.acquire(discoveryBrowser({ url: urls[0], netns, guard }))
      const context = await browser.createBrowserContext()
      try {
        return await loadEach(await context.newPage(), urls)
      } finally {
        await context.close().catch(() => {})
      }
    })
  }
  if (firefoxPool) {
    await guard.inForce((urls) => firefoxPool.withDedicated(runPlan({ pool: firefoxPool, protocol: 'h2', url: urls[0], netns, guard }).spec,
      async (/** @type {import('puppeteer-core').Browser} */ browser) => loadEach(await browser.newPage(), urls)), { browser: 'firefox' })
  }
}

/**
 * Load each URL in turn (the guard's check); each load's error, or null
 * where it loaded. The first waits for its failure; the others, which
 * Firefox's proxy script refuses, only long enough for a connection that
 * ignores it (Firefox holds a refused load until its timeout).
 * @param {import('puppeteer-core').Page} page
 * @param {string[]} urls
 */
async function loadEach (page, urls) {
  const errors = []
  for (const [i, url] of urls.entries()) {
    const timeout = i === 0 ? GUARD_CHECK_TIMEOUT_MS : GUARD_REFUSAL_WAIT_MS
    errors.push(await page.goto(url, { timeout }).then(() => null, (/** @type {unknown} */ err) => navigationError(err, url)))
  }
  return errors
}

/**
 * A lab run reaches the lab origin only: its browser maps the lab host names
 * to the lab's address and nothing else (lib/measurement/browsers/chromium.js labBrowserFlags), and
 * when the lab's port is known, a lab URL on another port is refused (in
 * local mode the lab's address is this machine's loopback).
 * @param {LabTarget | null} lab
 * @param {(string | undefined)[]} urls the monitor URL and its probe URLs
 * @returns {LabTarget} the lab
 */
function checkLabTargets (lab, urls) {
  if (!lab) throw new Error(`this agent has no lab origin configured, so it cannot measure ${urls[0]}`)
  for (const url of urls) {
    if (!url || lab.port === undefined || lab.port === null) continue
    const u = new URL(url)
    if (!LAB_HOSTNAMES.includes(u.hostname)) continue // resolves nowhere in a lab browser
    if (u.protocol !== 'https:' || Number(u.port || 443) !== lab.port) {
      throw new Error(`${url} is not the lab origin (https://${u.hostname}:${lab.port}); lab runs reach the lab origin only`)
    }
  }
  return lab
}

/**
 * The RTT a round is judged against: the lab profile's, or for a real
 * location a TCP connect ping to the page's origin. Lab origins are never
 * pinged: their RTT is known, and a ping would only add traffic. With
 * `guard`, a host that is or resolves to a non-public address is not pinged.
 * @param {{ url: string, isLab: boolean, location?: { kind?: string, profile?: { rtt_ms?: number } }, ping: typeof tcpPing,
 *   guard?: import('./target-guard.js').TargetGuard | null }} q
 * @returns {Promise<{ rttMs: number | null, source: 'profile' | 'tcp_ping' | null }>}
 */
export async function locationRtt ({ url, isLab, location, ping, guard = null }) {
  const profileRtt = location?.profile?.rtt_ms
  if (profileRtt !== undefined && profileRtt > 0) return { rttMs: profileRtt, source: 'profile' }
  if (isLab || location?.kind !== 'real') return { rttMs: null, source: null }
  if (guard?.explain(url)) return { rttMs: null, source: null }
  const u = new URL(url)
  const rtt = await ping({ host: u.hostname, port: Number(u.port || (u.protocol === 'http:' ? 80 : 443)), lookup: guard?.lookup })
  return rtt !== null && rtt > 0 ? { rttMs: rtt, source: 'tcp_ping' } : { rttMs: null, source: null }
}
