// The scheduler's loop. Every tick it creates due rounds, returns expired
// leases to the queue, fails rounds nobody claimed and folds new results into
// the rollups. Every step is idempotent or takes a lock, so any number of
// replicas may run side by side. Alert rules are evaluated by one replica per
// evaluation interval (a row lock on the evaluator), and each notification
// is sent by the replica that locks its outbox row.
import { scheduleDueJobs, expireLeases, failStaleJobs } from '../lib/jobs.js'
import { foldAllPending } from '../lib/rollups.js'
import { evaluateAlerts } from '../lib/alerts.js'
import { deliverDue } from '../lib/alert-deliveries.js'

/**
 * `now` is the clock of alert evaluation and delivery; by default the
 * database's, so replicas on machines whose clocks differ agree on when the
 * last evaluation was (tests pass their own and move it).
 * @param {{ db: import('pg').Pool, config: Record<string, any>, log: import('pino').Logger, hooks?: Array<() => Promise<void>>, now?: () => Date }} deps
 */
export function createScheduler ({ db, config, log, hooks = [], now }) {
  const clock = async () => now ? now() : (await db.query('SELECT now() AS now')).rows[0].now
  let timer = null
  let running = null
  let stopped = false

  async function tick () {
    const created = await scheduleDueJobs(db, { maxAttempts: config.maxAttempts })
    const { requeued, failed } = await expireLeases(db)
    const stale = await failStaleJobs(db)
    const folded = await foldAllPending(db)
    // Alerts must not hold up the rounds: a failure here is logged and retried next tick.
    let alerts = { evaluated: false, changes: 0 }
    let deliveries = { delivered: 0, failed: 0 }
    try {
      alerts = await evaluateAlerts(db, { now: await clock(), intervalS: config.alertEvalS ?? 60, timeoutMs: config.pageTimeoutMs, publicUrl: config.publicUrl, log })
      deliveries = await deliverDue(db, { now: await clock(), log })
    } catch (err) {
      log.warn({ err: err.message }, 'alert evaluation or delivery failed; retrying next tick')
    }
    for (const hook of hooks) await hook()
    if (created || requeued || failed || stale || folded || alerts.changes || deliveries.delivered || deliveries.failed) {
      log.debug({ created, requeued, failed, stale, folded, alerts, deliveries }, 'scheduler tick')
    }
    return { created, requeued, failed, stale, folded, alerts, deliveries }
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
