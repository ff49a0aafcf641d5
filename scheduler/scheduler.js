// The scheduler's loop. Every tick it creates due rounds, returns expired
// leases to the queue and fails rounds nobody claimed. Every step is a single
// idempotent statement, so any number of replicas may run side by side.
import { scheduleDueJobs, expireLeases, failStaleJobs } from '../lib/jobs.js'

/**
 * @param {{ db: import('pg').Pool, config: Record<string, any>, log: import('pino').Logger, hooks?: Array<() => Promise<void>> }} deps
 */
export function createScheduler ({ db, config, log, hooks = [] }) {
  let timer = null
  let running = null
  let stopped = false

  async function tick () {
    const created = await scheduleDueJobs(db, { maxAttempts: config.maxAttempts })
    const { requeued, failed } = await expireLeases(db)
    const stale = await failStaleJobs(db)
    for (const hook of hooks) await hook()
    if (created || requeued || failed || stale) log.debug({ created, requeued, failed, stale }, 'scheduler tick')
    return { created, requeued, failed, stale }
  }

  function loop () {
    if (stopped) return
    running = tick()
      .catch((err) => log.warn({ err: err.message }, 'scheduler tick failed; retrying next tick'))
      .finally(() => {
        running = null
        if (!stopped) timer = setTimeout(loop, config.schedulerTickMs)
      })
  }

  return {
    tick,
    start () {
      stopped = false
      loop()
      log.info({ tickMs: config.schedulerTickMs }, 'scheduler running')
    },
    async stop () {
      stopped = true
      clearTimeout(timer)
      await running
    }
  }
}
