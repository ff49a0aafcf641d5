// The scheduler's loop. Every tick it creates due rounds, returns expired
// leases to the queue, fails rounds nobody claimed and folds new results into
// the rollups. Every step is idempotent or takes a lock, so any number of
// replicas may run side by side.
import { scheduleDueJobs, expireLeases, failStaleJobs } from '../lib/jobs.js'
import { foldAllPending } from '../lib/rollups.js'

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
    const folded = await foldAllPending(db)
    for (const hook of hooks) await hook()
    if (created || requeued || failed || stale || folded) log.debug({ created, requeued, failed, stale, folded }, 'scheduler tick')
    return { created, requeued, failed, stale, folded }
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
