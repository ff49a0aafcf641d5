// The scheduler's loop. Every tick it creates due rounds, returns expired
// leases to the queue, fails rounds nobody claimed and folds new results into
// the rollups. Every step is idempotent or takes a lock, so any number of
// replicas may run side by side. Alert rules are evaluated by one replica per
// evaluation interval (a row lock on the evaluator), and each notification
// is sent by the replica that locks its outbox row.
import { scheduleDueJobs, expireLeases, failStaleJobs, pruneFinishedJobs } from '../lib/store/jobs.js'
import { foldAllPending } from '../lib/analysis/rollups.js'
import { evaluateAlerts } from '../lib/store/alert-states.js'
import { deliverDue } from '../lib/store/alert-deliveries.js'

// Finished jobs are pruned once a minute per replica, in batches of
// PRUNE_BATCH rows (one short transaction each) and at most PRUNE_BATCHES
// per run, so a first run over a long backlog never holds up a tick for long:
// 20,000 rows a minute is more than 10,000 monitors x 5 locations at a
// 5-minute interval finish.
const PRUNE_EVERY_MS = 60_000
const PRUNE_BATCH = 1000
const PRUNE_BATCHES = 20
const DEFAULT_JOBS_RETENTION_DAYS = 7

/**
 * The part of the configuration the scheduler reads; the rest have defaults
 * here, so tests may pass only these two.
 * @typedef {Pick<import('../lib/runtime/config.js').Config, 'schedulerTickMs' | 'maxAttempts'>
 *   & Partial<import('../lib/runtime/config.js').Config>} SchedulerConfig
 */

/**
 * @param {{ db: import('pg').Pool, config: Partial<import('../lib/runtime/config.js').Config> }} deps
 * @returns {() => Promise<number>} runs a prune when one is due; jobs deleted
 */
export function createJobsPruner ({ db, config }) {
  let last = -Infinity
  return async function pruneJobs () {
    if (Date.now() - last < PRUNE_EVERY_MS) return 0
    last = Date.now()
    const retentionDays = config.jobsRetentionDays ?? DEFAULT_JOBS_RETENTION_DAYS
    let pruned = 0
    for (let i = 0; i < PRUNE_BATCHES; i++) {
      const n = await pruneFinishedJobs(db, { retentionDays, batch: PRUNE_BATCH })
      pruned += n
      if (n < PRUNE_BATCH) break
    }
    return pruned
  }
}

/**
 * `now` is the clock of alert evaluation and delivery; by default the
 * database's, so replicas on machines whose clocks differ agree on when the
 * last evaluation was (tests pass their own and move it).
 * @param {{ db: import('pg').Pool, config: SchedulerConfig, log: import('pino').Logger, hooks?: Array<() => Promise<void>>, now?: () => Date }} deps
 */
export function createScheduler ({ db, config, log, hooks = [], now }) {
  const clock = async () => now ? now() : (await db.query('SELECT now() AS now')).rows[0].now
  /** @type {NodeJS.Timeout | undefined} */
  let timer
  /** @type {Promise<unknown> | null} the tick under way */
  let running = null
  let stopped = false
  const pruneJobs = createJobsPruner({ db, config })

  async function tick () {
    const created = await scheduleDueJobs(db, { maxAttempts: config.maxAttempts })
    const { requeued, failed } = await expireLeases(db)
    const stale = await failStaleJobs(db)
    const folded = await foldAllPending(db)
    const pruned = await pruneJobs()
    // Alerts must not hold up the rounds: a failure here is logged and retried next tick.
    let alerts = { evaluated: false, changes: 0 }
    let deliveries = { delivered: 0, failed: 0 }
    try {
      alerts = await evaluateAlerts(db, { now: await clock(), intervalS: config.alertEvalS ?? 60, timeoutMs: config.pageTimeoutMs, publicUrl: config.publicUrl, log })
      deliveries = await deliverDue(db, { now: await clock(), log })
    } catch (/** @type {any} */ err) {
      log.warn({ err: err.message }, 'alert evaluation or delivery failed; retrying next tick')
    }
    for (const hook of hooks) await hook()
    if (created || requeued || failed || stale || folded || pruned || alerts.changes || deliveries.delivered || deliveries.failed) {
      log.debug({ created, requeued, failed, stale, folded, pruned, alerts, deliveries }, 'scheduler tick')
    }
    return { created, requeued, failed, stale, folded, pruned, alerts, deliveries }
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
