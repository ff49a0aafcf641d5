// The scheduler's loops. Every tick one creates the rounds coming due; the
// other returns expired leases to the queue, fails rounds nobody claimed,
// folds new results into the rollups and evaluates alerts. Every step is idempotent or takes a lock, so any number of
// replicas may run side by side. Alert rules are evaluated by one replica per
// evaluation interval (a row lock on the evaluator), and each notification
// is sent by the replica that locks its outbox row.
import { scheduleDueJobs, expireLeases, failStaleJobs, pruneFinishedJobs } from '../lib/store/jobs.js'
import { foldAllPending } from '../lib/analysis/rollups.js'
import { evaluateAlerts } from '../lib/analysis/alerts.js'
import { deliverDue } from '../lib/store/alert-deliveries.js'
import { targetPolicy } from '../lib/measurement/targets.js'
import { pruneBeacons } from '../lib/store/rum-beacons.js'
import { pruneFilmstrips } from '../lib/store/filmstrips.js'
import { repeatedFailures } from '../lib/runtime/log.js'

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
 * Real users' beacons older than H3LENS_RUM_RETENTION_DAYS are deleted, as
 * finished jobs are: once a minute, in batches (TimescaleDB also drops
 * whole chunks by its retention policy, lib/store/timescale.js).
 * @param {{ db: import('pg').Pool, config: Partial<import('../lib/runtime/config.js').Config> }} deps
 * @returns {() => Promise<number>} beacons deleted
 */
export function createBeaconPruner ({ db, config }) {
  let last = -Infinity
  return async function pruneOldBeacons () {
    const retentionDays = config.rumRetentionDays ?? 90
    if (!retentionDays || Date.now() - last < PRUNE_EVERY_MS) return 0
    last = Date.now()
    let pruned = 0
    for (let i = 0; i < PRUNE_BATCHES; i++) {
      const n = await pruneBeacons(db, { retentionDays, batch: 5 * PRUNE_BATCH })
      pruned += n
      if (n < 5 * PRUNE_BATCH) break
    }
    return pruned
  }
}

/**
 * Filmstrip frames older than H3LENS_FILMSTRIP_RETENTION_DAYS are deleted
 * the same way, on a retention of their own: frames are a hundred times a
 * result's size, and a week of them explains today's verdicts (docs/FILMSTRIPS.md).
 * @param {{ db: import('pg').Pool, config: Partial<import('../lib/runtime/config.js').Config> }} deps
 * @returns {() => Promise<number>} frames deleted
 */
export function createFilmstripPruner ({ db, config }) {
  let last = -Infinity
  return async function pruneOldFilmstrips () {
    const retentionDays = config.filmstripRetentionDays ?? 30
    if (!retentionDays || Date.now() - last < PRUNE_EVERY_MS) return 0
    last = Date.now()
    let pruned = 0
    for (let i = 0; i < PRUNE_BATCHES; i++) {
      const n = await pruneFilmstrips(db, { retentionDays, batch: 5 * PRUNE_BATCH })
      pruned += n
      if (n < 5 * PRUNE_BATCH) break
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
  // How often a failing loop warns goes by this machine's clock: the
  // database's may be what fails.
  const failureClock = () => now ? now().getTime() : Date.now()
  const pruneJobs = createJobsPruner({ db, config })
  // Webhooks connect through the private-target guard unless it is lifted.
  const targets = targetPolicy(config)
  const pruneOldBeacons = createBeaconPruner({ db, config })
  const pruneOldFilmstrips = createFilmstripPruner({ db, config })

  // Rounds due before the next tick starts are created now, claimable at
  // their due time (scheduleDueJobs), so none waits for a tick.
  const scheduleRounds = () => scheduleDueJobs(db, { maxAttempts: config.maxAttempts, lookAheadMs: config.schedulerTickMs ?? 0 })

  const alertFailures = repeatedFailures(log, 'alert evaluation or delivery', { now: failureClock })

  async function upkeep () {
    const { requeued, failed } = await expireLeases(db)
    const stale = await failStaleJobs(db)
    const folded = await foldAllPending(db)
    const pruned = await pruneJobs() + await pruneOldBeacons() + await pruneOldFilmstrips()
    // A failure here is logged and retried next tick.
    let alerts = { evaluated: false, changes: 0 }
    let deliveries = { delivered: 0, failed: 0 }
    try {
      alerts = await evaluateAlerts(db, { now: await clock(), intervalS: config.alertEvalS ?? 60, timeoutMs: config.pageTimeoutMs, publicUrl: config.publicUrl, log })
      deliveries = await deliverDue(db, { now: await clock(), log, policy: targets })
      alertFailures.succeeded()
    } catch (/** @type {any} */ err) {
      alertFailures.failed(err)
    }
    for (const hook of hooks) await hook()
    return { requeued, failed, stale, folded, pruned, alerts, deliveries }
  }

  /** One tick: the rounds, then the upkeep (tests call it; start() runs the two apart). */
  async function tick () {
    const created = await scheduleRounds()
    const rest = await upkeep()
    return { created, ...rest }
  }

  // The rounds and the upkeep run in two loops, so the upkeep never holds
  // up a round: one evaluation of the three default alert rules over 10,000
  // monitors sends ~40,000 statements (176 s once, on 2 cores shared with
  // other work). The rounds loop's ticks start schedulerTickMs apart (back
  // to back when one takes longer), not schedulerTickMs after the last one
  // ended, so each tick's look-ahead reaches the start of the next.
  let stopped = false
  /**
   * @typedef {{ name: string, fixedRate: boolean, step: () => Promise<Record<string, any>>, busy: (r: Record<string, any>) => unknown, failures: ReturnType<typeof repeatedFailures>,
   *   timer: ReturnType<typeof setTimeout> | null, running: Promise<void> | null }} Loop
   */
  /** @type {Loop[]} */
  const loops = [
    { name: 'rounds', fixedRate: true, step: async () => ({ created: await scheduleRounds() }), busy: (r) => r.created > 0, failures: repeatedFailures(log, 'scheduler rounds', { now: failureClock }), timer: null, running: null },
    {
      name: 'upkeep',
      fixedRate: false,
      step: upkeep,
      busy: (r) => r.requeued || r.failed || r.stale || r.folded || r.pruned || r.alerts.changes || r.deliveries.delivered || r.deliveries.failed,
      failures: repeatedFailures(log, 'scheduler upkeep', { now: failureClock }),
      timer: null,
      running: null
    }
  ]
  /** @param {Loop} loop */
  function run (loop) {
    if (stopped) return
    const startedAt = performance.now()
    loop.running = loop.step()
      .then((r) => {
        loop.failures.succeeded()
        if (loop.busy(r)) log.debug(r, `scheduler ${loop.name}`)
      })
      .catch((/** @type {any} */ err) => loop.failures.failed(err))
      .finally(() => {
        loop.running = null
        const wait = loop.fixedRate ? config.schedulerTickMs - (performance.now() - startedAt) : config.schedulerTickMs
        if (!stopped) loop.timer = setTimeout(() => run(loop), Math.max(0, wait))
      })
  }

  return {
    tick,
    start () {
      stopped = false
      for (const loop of loops) run(loop)
      log.info({ tickMs: config.schedulerTickMs }, 'scheduler running')
    },
    async stop () {
      stopped = true
      for (const loop of loops) clearTimeout(loop.timer ?? undefined)
      await Promise.all(loops.map((loop) => loop.running))
    }
  }
}
