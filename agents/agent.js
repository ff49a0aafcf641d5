// The agent loop: claim → measure → spool → submit. A failed page load is a
// result, not an exception; an unreachable API means results wait in the
// spool; SIGTERM stops claiming, lets the running job finish (or releases
// it) and flushes the spool before the browsers close.
import { setTimeout as sleep } from 'node:timers/promises'
import { ApiError } from './api-client.js'

const IDLE_POLL_MS = 2000
const MAX_BACKOFF_MS = 30000

/**
 * @param {{
 *   client: ReturnType<typeof import('./api-client.js').createApiClient>,
 *   spool: ReturnType<typeof import('./spool.js').createSpool>,
 *   runJob: (job: any, ctx: { location: any }) => Promise<object[]>,
 *   log: import('pino').Logger,
 *   version: string,
 *   browserVersion?: () => Promise<string|undefined>,
 *   stopTimeoutMs?: number,
 *   idlePollMs?: number
 * }} deps
 */
export function createAgent ({ client, spool, runJob, log, version, browserVersion, stopTimeoutMs = 60000, idlePollMs = IDLE_POLL_MS }) {
  const abort = new AbortController()
  let loopDone = null
  let current = null
  let flushing = null
  let browser

  async function claimOne () {
    browser ??= await browserVersion?.()
    const { jobs, lease_seconds: leaseSeconds, location } = await client.claim({ limit: 1, version, browser_version: browser })
    return { job: jobs[0], leaseSeconds, location }
  }

  async function runOne (job, leaseSeconds, location) {
    const jobLog = log.child({ job: job.id, monitor: job.monitor_id, url: job.url })
    // Heartbeat at a third of the lease so one lost heartbeat is not fatal.
    const beat = setInterval(() => {
      client.heartbeat(job.id).catch((err) => jobLog.warn({ err: err.message }, 'heartbeat failed'))
    }, Math.max(1000, leaseSeconds * 1000 / 3))
    try {
      const results = await runJob(job, { location })
      await spool.put(job.id, { agent_version: version, results })
      jobLog.info({ results: results.map((r) => `${r.probe ?? 'page'}/${r.mode}/${r.view ?? 'first'}:${r.status}:${r.observed_protocol}`) }, 'round measured')
    } catch (err) {
      // The round could not run at all (browser failed to launch, ...).
      jobLog.error({ err: err.message }, 'round failed to run')
      await client.fail(job.id, err.message).catch((e) => jobLog.warn({ err: e.message }, 'could not report failure'))
      return
    } finally {
      clearInterval(beat)
    }
    await submitSpooled(job.id)
  }

  /** @returns {Promise<boolean>} true when the entry left the spool */
  async function submitSpooled (jobId, payload) {
    payload ??= (await spool.list()).find((e) => e.jobId === jobId)?.payload
    if (!payload) return true
    try {
      const ack = await client.submit(jobId, payload)
      await spool.remove(jobId)
      log.debug({ job: jobId, ...ack }, 'results acknowledged')
      return true
    } catch (err) {
      if (err instanceof ApiError && err.permanent) {
        // The API will never take these (lease lost to another agent, job
        // cancelled): another set of results exists or nobody wants them.
        log.warn({ job: jobId, err: err.message }, 'results refused; removed from spool')
        await spool.remove(jobId)
        return true
      }
      log.warn({ job: jobId, err: err.message }, 'results kept in spool; will resubmit')
      return false
    }
  }

  /** Resubmit everything in the spool; stop at the first transient failure. */
  async function flushSpool () {
    flushing ??= (async () => {
      try {
        for (const { jobId, payload } of await spool.list()) {
          if (!(await submitSpooled(jobId, payload))) return false
        }
        return true
      } finally {
        flushing = null
      }
    })()
    return flushing
  }

  async function loop () {
    let backoff = 1000
    while (!abort.signal.aborted) {
      try {
        if (!(await flushSpool())) throw new ApiError('spool not flushed', 0)
        const { job, leaseSeconds, location } = await claimOne()
        backoff = 1000
        if (!job) {
          await sleep(idlePollMs * (0.75 + Math.random() / 2), undefined, { signal: abort.signal }).catch(() => {})
          continue
        }
        current = runOne(job, leaseSeconds, location)
        await current
        current = null
      } catch (err) {
        current = null
        if (err instanceof ApiError && err.status === 401) log.error({ err: err.message }, 'agent token refused; check H3LENS_AGENT_TOKEN')
        else log.warn({ err: err.message, retryInMs: backoff }, 'API call failed; backing off')
        await sleep(backoff, undefined, { signal: abort.signal }).catch(() => {})
        backoff = Math.min(MAX_BACKOFF_MS, backoff * 2)
      }
    }
  }

  return {
    start () {
      loopDone = loop()
    },
    /** Stop claiming, finish the running job, flush the spool. */
    async stop () {
      abort.abort()
      const inflight = current
      if (inflight) {
        const finished = await Promise.race([inflight.then(() => true, () => true), sleep(stopTimeoutMs).then(() => false)])
        if (!finished) log.warn('running job did not finish in time; its lease will expire and it will run again')
      }
      await loopDone
      const flushed = await flushSpool().catch(() => false)
      if (!flushed) log.warn({ spool: spool.dir }, 'some results are still in the spool; they will be submitted on next start')
    },
    flushSpool
  }
}
