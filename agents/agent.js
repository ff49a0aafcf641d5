// The agent loop: claim → measure → spool → submit. A failed page load is a
// result, not an exception; an unreachable API means results wait in the
// spool; SIGTERM stops claiming, lets the running jobs finish for up to
// stopTimeoutMs (or gives them back, so another agent runs them at once
// instead of after their leases expire; a round already measured, its
// results in the spool, is kept for the next start) and flushes the spool before the
// browsers close. A new agent process flushes what an earlier one left in the
// spool before it claims anything. Up to `concurrency` rounds run at once
// (H3LENS_AGENT_CONCURRENCY, default 1: page loads that share cores distort
// each other's timings).
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { ApiError } from './api-client.js'
import { InfrastructureError } from './faults.js'
import { MAX_ERROR_LENGTH, storableText } from '../lib/runtime/text.js'
import { monotonicNow } from './clock.js'

const IDLE_POLL_MS = 2000
// Result statuses of a load that did not complete.
const FAILED = new Set(['error', 'timeout'])
const MAX_BACKOFF_MS = 30000
// Spooled rounds per request when the spool is flushed (POST /agent/results),
// and the results' bytes per request.
const SPOOL_BATCH_ROUNDS = 50
const SPOOL_BATCH_BYTES = 4 * 1024 * 1024
// The most rounds a claim names as held (the API's limit for `holding`).
const MAX_HOLDING = 1000
// The API's lease until its first claim answer says (H3LENS_LEASE_S's default).
const DEFAULT_LEASE_S = 120

/**
 * @param {{
 *   client: ReturnType<typeof import('./api-client.js').createApiClient>,
 *   spool: ReturnType<typeof import('./spool.js').createSpool>,
 *   runJob: (job: any, ctx: { location: any, allowPrivateTargets: boolean }) => Promise<Record<string, any>[]>,
 *   runTrial?: ((trial: any, ctx: { allowPrivateTargets: boolean }) => Promise<{ outcome: Record<string, any>, screenshot: string | null }>) | null,
 *   log: import('pino').Logger,
 *   version: string,
 *   browserVersion?: () => Promise<string|undefined>, browsers?: string[] | null,
 *   stopTimeoutMs?: number,
 *   idlePollMs?: number,
 *   maxBackoffMs?: number,
 *   concurrency?: number,
 *   location?: string | null,
 *   onFatal?: ((err: Error) => void) | null
 * }} deps
 *   maxBackoffMs: the longest wait after failed API calls (the wait starts
 *   at 1 s and doubles up to it); location: the location it was started
 *   for; onFatal: told when the agent cannot go on as started (its token
 *   refused, or another location's), after it stopped claiming; without
 *   it a refused token is logged and tried again
 */
export function createAgent ({ client, spool, runJob, runTrial = null, log, version, browserVersion, browsers = null, stopTimeoutMs = 20000, idlePollMs = IDLE_POLL_MS, maxBackoffMs = MAX_BACKOFF_MS, concurrency = 1, location: startedFor = null, onFatal = null }) {
  const abort = new AbortController()
  // This process, as its claims name it: rounds leased to it in an answer
  // it never got are handed back by the next claim (lib/store/jobs.js claimJobs).
  const instance = randomUUID()
  /** Journey trials being run ("try it", agents/journey/trial.js). @type {Set<Promise<void>>} */
  const trialsRunning = new Set()
  /** @type {Promise<void> | null} */
  let loopDone = null
  /** Rounds being measured or submitted, by job id. @type {Map<number, { job: any, done: Promise<void> }>} */
  const running = new Map()
  let flushing = null
  let browser
  // Jobs given back on shutdown: whatever their measurement still produces
  // belongs to whoever runs them next.
  const released = new Set()
  // Rounds whose results are in the spool: never given back.
  /** @type {Set<number>} */
  const spooled = new Set()
  // The lease the API gives (from its last claim answer), for the spool's heartbeats.
  let leaseS = DEFAULT_LEASE_S

  /**
   * Keep the leases of the rounds waiting in the spool (the API failed on
   * their results) that no measurement of this process heartbeats: claims
   * extend them too, but the agent claims nothing while all its slots
   * measure, and a slow round outlasts a lease.
   */
  async function holdSpooled () {
    let last = monotonicNow()
    let lastWall = Date.now()
    while (!abort.signal.aborted) {
      // Every second, a heartbeat when a third of the lease (as the API
      // last said it) has passed, by either clock: the monotonic one holds
      // through a step of the wall clock, the wall clock counts the time
      // the machine was suspended, which the lease counts too.
      await sleep(1000, undefined, { signal: abort.signal }).catch(() => {})
      if (abort.signal.aborted) return
      const third = leaseS * 1000 / 3
      if (monotonicNow() - last < third && Date.now() - lastWall < third) continue
      last = monotonicNow()
      lastWall = Date.now()
      for (const id of await spool.jobIds().catch(() => [])) {
        if (running.has(id)) continue
        await client.heartbeat(id).catch((/** @type {any} */ err) => log.debug({ job: id, err: err.message }, 'spooled round\'s heartbeat failed'))
      }
    }
  }

  /** @param {number} limit */
  async function claim (limit) {
    browser ??= await browserVersion?.()
    // One journey trial at a time, besides the rounds: a trial is someone waiting at the editor.
    const wantTrials = runTrial && !trialsRunning.size ? 1 : 0
    // The rounds this process holds, measuring them or with their results
    // in its spool waiting for the API to take them: a round leased to it
    // that is not among them was claimed in an answer it never got, and
    // comes back now. A spooled round left out would come back too, and be
    // measured again at every claim for as long as the API failed on its
    // results.
    const spooledIds = new Set(await spool.jobIds())
    const holding = [...new Set([...running.keys(), ...spooledIds])].slice(0, MAX_HOLDING)
    const { jobs, trials = [], lease_seconds: leaseSeconds, location, allow_private_targets: allowPrivateTargets } =
      await client.claim({ limit, version, browser_version: browser, instance, holding, ...(wantTrials ? { trials: wantTrials } : {}), ...(browsers ? { browsers } : {}) })
    if (leaseSeconds > 0) leaseS = leaseSeconds
    // An API that does not say (an older one) gets the guard.
    return { jobs, trials, leaseSeconds, location, allowPrivateTargets: allowPrivateTargets === true, spooledIds }
  }

  /**
   * Run a journey trial and answer it; a trial that cannot run is answered
   * with why, so the editor does not wait for nothing.
   * @param {any} trial
   * @param {boolean} allowPrivateTargets
   */
  function startTrial (trial, allowPrivateTargets) {
    const run = /** @type {NonNullable<typeof runTrial>} */ (runTrial)
    const done = run(trial, { allowPrivateTargets })
      .catch((/** @type {any} */ err) => ({ outcome: { status: 'error', error: `the agent could not run the journey: ${err.message}`, steps: [] }, screenshot: null }))
      .then((answer) => answerTrial(trial.id, answer))
      .catch((/** @type {any} */ err) => log.warn({ trial: trial.id, err: err.message }, 'journey trial not answered'))
      .finally(() => trialsRunning.delete(done))
    trialsRunning.add(done)
  }

  /**
   * Answer a trial. An answer the API refuses for good (its shape or its
   * size: a step it cannot take, a last frame over its limit) is followed
   * by one it always takes, an error that gives the API's words, without
   * the steps or the frame: the editor says why, rather than that the agent
   * did not answer when the API times the trial out.
   * @param {number} id
   * @param {{ outcome: Record<string, any>, screenshot: string | null }} answer
   */
  async function answerTrial (id, answer) {
    try {
      await client.trialDone(id, answer)
    } catch (err) {
      if (!(err instanceof ApiError && [400, 413, 422].includes(err.status))) throw err
      log.warn({ trial: id, err: err.message }, 'journey trial outcome refused; answering with why')
      const error = storableText(`the API refused this trial's outcome, so its steps are not shown: ${err.message}`, MAX_ERROR_LENGTH)
      await client.trialDone(id, { outcome: { status: 'error', error, steps: [] }, screenshot: null })
    }
  }

  /**
   * @param {any} job a claimed job (JSON from the API)
   * @param {number} leaseSeconds
   * @param {any} location the agent's location (JSON from the API)
   * @param {boolean} allowPrivateTargets the API's H3LENS_ALLOW_PRIVATE_TARGETS
   */
  async function runOne (job, leaseSeconds, location, allowPrivateTargets) {
    const jobLog = log.child({ job: job.id, monitor: job.monitor_id, url: job.url })
    // Heartbeat at a third of the lease so one lost heartbeat is not fatal.
    const beat = setInterval(() => {
      if (released.has(job.id)) return
      client.heartbeat(job.id).catch((err) => jobLog.warn({ err: err.message }, 'heartbeat failed'))
    }, Math.max(1000, leaseSeconds * 1000 / 3))
    jobLog.info('measuring round')
    try {
      const results = await runJob(job, { location, allowPrivateTargets })
      if (released.has(job.id)) return
      if (abort.signal.aborted && results.some((r) => FAILED.has(r.status))) {
        // A load that failed while this process was stopping may have failed
        // because of the stopping (a lab link or browser going down beside
        // it): storing it would be a false error. Whoever runs the round
        // next measures it afresh.
        released.add(job.id)
        await releaseJob(job.id, `a page load failed while the agent was stopping (${results.filter((r) => FAILED.has(r.status)).map((r) => r.error ?? r.status).join('; ')})`)
        return
      }
      try {
        await spool.put(job.id, { agent_version: version, results })
        spooled.add(job.id)
      } catch (/** @type {any} */ err) {
        throw new Error(`measured, but its results could not be written to the spool: ${err.message}`, { cause: err })
      }
      jobLog.info({ results: results.map((r) => `${r.probe ?? 'page'}/${r.mode}/${r.view ?? 'first'}:${r.status}:${r.observed_protocol}`) }, 'round measured')
    } catch (/** @type {any} */ err) {
      if (released.has(job.id)) return
      if (abort.signal.aborted) {
        released.add(job.id)
        await releaseJob(job.id, `the round could not run while the agent was stopping (${err.message})`)
        return
      }
      // The round could not run, or an infrastructure fault ended it (its
      // browser did not start or went away: agents/faults.js). Nothing of
      // it is stored: the API queues it again as a new attempt, or gives it
      // up when its attempts are spent, keeping the cause on the job.
      const fault = err instanceof InfrastructureError ? 'infrastructure fault' : 'round failed to run'
      jobLog.warn({ err: err.message, attempt: job.attempts }, `${fault}; nothing stored, the round is handed back to run again`)
      const answer = await client.fail(job.id, `${fault}: ${err.message}`).catch((e) => { jobLog.warn({ err: e.message }, 'could not report the failure; the round runs again when its lease expires') })
      if (answer?.state === 'failed') jobLog.error({ err: err.message, attempts: job.attempts }, 'round given up: its attempts are spent')
      return
    } finally {
      clearInterval(beat)
    }
    try {
      await submitSpooled(job.id)
    } finally {
      spooled.delete(job.id)
    }
  }

  /**
   * Submit one spooled round. An entry the API is up but fails on (500: a
   * fault of the API's with these results) stays in the spool and is sent
   * again at every flush, but does not hold the agent up: the API takes
   * other rounds, and one such entry would otherwise stop its location.
   * When the API cannot take anything (unreachable, 503 while its database
   * is down, 429, 408, a proxy's 502 or 504), the agent waits instead.
   * @param {number} jobId
   * @param {object} [payload] the spooled entry; read from the spool when left out
   * @returns {Promise<boolean>} false when the API cannot take submissions now
   */
  async function submitSpooled (jobId, payload) {
    payload ??= (await spool.list()).find((e) => e.jobId === jobId)?.payload
    if (!payload) return true
    try {
      const ack = await client.submit(jobId, payload)
      await spool.remove(jobId)
      log.debug({ job: jobId, ...ack }, 'results acknowledged')
      return true
    } catch (/** @type {any} */ err) {
      // An unknown or revoked token: the loop deals with it as with a refused claim (onFatal); the entry stays.
      if (err instanceof ApiError && err.status === 401) throw err
      if (err instanceof ApiError && err.permanent) {
        await refused(jobId, err)
        return true
      }
      if (err instanceof ApiError && err.status === 500) {
        log.error({ job: jobId, err: err.message }, 'the API failed on these results; they stay in the spool and are sent again, and the agent goes on')
        return true
      }
      log.warn({ job: jobId, err: err.message }, 'results kept in spool; will resubmit')
      return false
    }
  }

  /**
   * Resubmit everything in the spool, SPOOL_BATCH_ROUNDS rounds a request
   * (POST /agent/results, one transaction each); stop as soon as the API
   * cannot take submissions. A lone entry goes through the single-round
   * route.
   * @returns {Promise<boolean>} false when the API cannot take submissions now: the agent claims nothing until it can
   */
  async function flushSpool () {
    flushing ??= (async () => {
      try {
        // Rounds still running submit their own entry.
        const entries = (await spool.list()).filter((e) => !running.has(e.jobId))
        if (entries.length === 1) return await submitSpooled(entries[0].jobId, entries[0].payload)
        for (const batch of batches(entries)) {
          if (!(await submitBatch(batch))) return false
        }
        return true
      } finally {
        flushing = null
      }
    })()
    return flushing
  }

  /**
   * The spool's entries in batches of at most SPOOL_BATCH_ROUNDS rounds and
   * SPOOL_BATCH_BYTES (a round larger than that goes alone): a batch lost on
   * a slow link midway costs that much to send again, not the whole spool.
   * @param {{ jobId: number, payload: any, bytes: number }[]} entries as the spool lists them, with their size
   */
  function batches (entries) {
    /** @type {{ jobId: number, payload: any }[][]} */
    const out = []
    let bytes = 0
    for (const e of entries) {
      const last = out[out.length - 1]
      if (!last || last.length >= SPOOL_BATCH_ROUNDS || bytes + e.bytes > SPOOL_BATCH_BYTES) {
        out.push([e])
        bytes = e.bytes
      } else {
        last.push(e)
        bytes += e.bytes
      }
    }
    return out
  }

  /**
   * One batch of spooled rounds. Each round's answer settles its entry as a
   * single submission's would: stored or refused for good leaves the spool.
   * @param {{ jobId: number, payload: any }[]} entries
   * @returns {Promise<boolean>} false when the API cannot take submissions now (all kept)
   */
  async function submitBatch (entries) {
    let answer
    try {
      answer = await client.submitRounds({
        agent_version: entries[0].payload.agent_version ?? version,
        rounds: entries.map((e) => ({ job_id: e.jobId, results: e.payload.results }))
      })
    } catch (/** @type {any} */ err) {
      if (err instanceof ApiError && err.status === 401) throw err
      if (err instanceof ApiError && (err.permanent || err.status === 500)) {
        // The batch as a whole was refused (an API without the route, a
        // body too large, a value out of range) or failed on (500): each
        // round alone gets the answer that says which one, if any, is at
        // fault.
        for (const e of entries) if (!(await submitSpooled(e.jobId, e.payload))) return false
        return true
      }
      log.warn({ jobs: entries.length, err: err.message }, 'results kept in spool; will resubmit')
      return false
    }
    for (const ack of answer.rounds ?? []) {
      if (ack.error) {
        const refusal = new ApiError(ack.error.message, ack.error.statusCode, ack.error.code)
        if (!refusal.permanent) {
          log.warn({ job: ack.job_id, err: refusal.message }, 'results kept in spool; will resubmit')
          continue
        }
        await refused(ack.job_id, refusal)
      } else {
        log.debug({ job: ack.job_id, stored: ack.stored, duplicates: ack.duplicates }, 'results acknowledged')
        await spool.remove(ack.job_id)
      }
    }
    return true
  }

  /**
   * Results the API will never take leave the spool; the log line is the
   * record of what was dropped and why. A round that is no longer this
   * agent's (409: its lease lost to another agent, its monitor deleted; 404:
   * gone) is someone else's business. Any other refusal (422: a value that
   * cannot be true, such as a clock a day off; 413: too large; 400: a field
   * this API does not know) is the agent's: the round is reported failed
   * with the API's words, so it runs again as a new attempt and, once its
   * attempts are spent, ends failed with that cause on the job and in the
   * agent's health. Without the report the lease stays this agent's, the
   * next claim hands the round back, and the agent measures it again and
   * again, refused every time.
   * @param {number} jobId
   * @param {ApiError} err
   */
  async function refused (jobId, err) {
    log.warn({ job: jobId, status: err.status, code: err.code, err: err.message }, 'results refused; removed from spool')
    await spool.remove(jobId)
    if (err.status === 404 || err.status === 409) return
    const answer = await client.fail(jobId, storableText(`the API refused the round's results (HTTP ${err.status}): ${err.message}`, MAX_ERROR_LENGTH))
      .catch((/** @type {any} */ e) => { log.warn({ job: jobId, err: e.message }, 'could not report the refusal; the round runs again when its lease expires') })
    if (answer?.state === 'failed') log.error({ job: jobId, err: err.message }, 'round given up: its attempts are spent')
  }

  /**
   * Give a leased job back unrun; if that fails, its lease runs out instead.
   * @param {number} jobId
   * @param {string} [why]
   */
  async function releaseJob (jobId, why = 'the agent is stopping') {
    try {
      await client.release(jobId)
      log.info({ job: jobId, why }, 'job released; another agent may run it now')
    } catch (/** @type {any} */ err) {
      log.warn({ job: jobId, err: err.message }, 'could not release the job; it runs again when its lease expires')
    }
  }

  async function loop () {
    let backoff = Math.min(maxBackoffMs, 1000)
    while (!abort.signal.aborted) {
      try {
        if (running.size >= concurrency) {
          await Promise.race([...running.values()].map((r) => r.done))
          continue
        }
        if (!(await flushSpool())) throw new ApiError('spool not flushed', 0)
        const { jobs, trials, leaseSeconds, location, allowPrivateTargets, spooledIds } = await claim(concurrency - running.size)
        backoff = Math.min(maxBackoffMs, 1000)
        const claimedFor = typeof location === 'string' ? location : location?.id
        if (startedFor && claimedFor && claimedFor !== startedFor) {
          // Measured as another location's rounds, filed under this one's name.
          for (const job of jobs) await releaseJob(job.id, 'the agent\'s token is another location\'s')
          return fatal(new Error(`the agent token belongs to location ${claimedFor}, but the agent was started for location ${startedFor} (--location): use a token of ${startedFor}, or start it with --location ${claimedFor}`))
        }
        for (const trial of trials) startTrial(trial, allowPrivateTargets)
        if (jobs.length && abort.signal.aborted) {
          // Claimed while stop() was called: give them straight back.
          for (const job of jobs) await releaseJob(job.id)
          break
        }
        if (!jobs.length && !trials.length) {
          await sleep(idlePollMs * (0.75 + Math.random() / 2), undefined, { signal: abort.signal }).catch(() => {})
          continue
        }
        for (const job of jobs) {
          if (spooledIds.has(job.id)) {
            // Measured already, its results waiting for the API: never measured twice.
            log.warn({ job: job.id }, 'claimed a round whose results are in the spool; not measured again')
            continue
          }
          if (running.has(job.id)) {
            // Its lease ran out while this agent was still at it (heartbeats
            // that did not get through), and the claim leased it to this
            // agent again: the measurement under way submits it.
            log.info({ job: job.id }, 'claimed a round this agent is still measuring; not measured twice')
            continue
          }
          const done = runOne(job, leaseSeconds, location, allowPrivateTargets)
            .catch((err) => log.error({ job: job.id, err: err.message }, 'round failed'))
            .finally(() => running.delete(job.id))
          running.set(job.id, { job, done })
        }
      } catch (/** @type {any} */ err) {
        // An unknown or revoked token is refused for good: waiting changes nothing.
        if (err instanceof ApiError && err.status === 401 && onFatal) {
          return fatal(new Error(`the API refuses this agent's token (HTTP 401: unknown or revoked): ${err.message}; create one with "h3lens agents token --location <id>"`))
        }
        if (err instanceof ApiError && err.status === 401) log.error({ err: err.message }, 'agent token refused; check H3LENS_AGENT_TOKEN')
        else log.warn({ err: err.message, retryInMs: backoff }, 'API call failed; backing off')
        await sleep(backoff, undefined, { signal: abort.signal }).catch(() => {})
        backoff = Math.min(maxBackoffMs, backoff * 2)
      }
    }
  }

  /**
   * The agent cannot go on as it was started: it stops claiming and says
   * why to whoever started it (onFatal), which stops it.
   * @param {Error} err
   */
  function fatal (err) {
    log.error({ err: err.message }, 'the agent cannot run as started')
    abort.abort()
    onFatal?.(err)
  }

  return {
    start () {
      loopDone = loop()
      holdSpooled()
    },
    /** Stop claiming, finish or release the running jobs, flush the spool. */
    async stop () {
      abort.abort()
      const waited = new AbortController()
      const timeout = sleep(stopTimeoutMs, false, { signal: waited.signal }).catch(() => false)
      const finished = await Promise.all([...running.values()].map(async ({ job, done }) => {
        if (await Promise.race([done.then(() => true), timeout])) return true
        // Measured, its results in the spool and on their way: given back,
        // the round would be measured again by another agent and these
        // results refused. It stays this agent's, to be submitted at the
        // next start if not now.
        if (spooled.has(job.id)) return false
        // Its measurement ends when the browsers close after stop()
        // returns; whatever it still produces is dropped (released).
        released.add(job.id)
        await releaseJob(job.id, `did not finish within ${stopTimeoutMs} ms of the stop signal`)
        return false
      }))
      await Promise.race([Promise.all(trialsRunning), timeout])
      waited.abort()
      // The loop waits for a released job's measurement: not waited for.
      if (finished.every(Boolean)) await loopDone
      const flushed = await flushSpool().catch(() => false)
      const left = await spool.list().then((l) => l.length, () => 0)
      if (!flushed || left) log.warn({ spool: spool.dir, rounds: left }, 'some results are still in the spool; they will be submitted on next start')
    },
    flushSpool
  }
}
