// The outbox of notifications. A delivery row is written in the transaction
// that changed an alert's state; any scheduler replica may send it, but only
// the one holding its row lock (FOR UPDATE SKIP LOCKED, held across the HTTP
// attempt) does, so two replicas never send the same delivery. A failed
// attempt is retried with exponential back-off (30 s doubling, at most an
// hour apart) until RETRY_FOR_S after the delivery was created — at least a
// day — and every attempt is logged in alert_delivery_attempts. Nothing is
// held in memory: a restart of h3lens or of the receiver loses nothing.
//
// Delivery is at least once: if h3lens dies after the receiver answered
// and before the row is marked delivered, the next attempt repeats it with
// the same X-H3lens-Delivery id, on which receivers deduplicate.
import { channelForSending, sendWebhook } from './alert-channels.js'
import { NotFoundError } from '../runtime/errors.js'
import { withTransaction } from './transaction.js'

export const FIRST_RETRY_S = 30
export const MAX_RETRY_S = 3600
export const RETRY_FOR_S = 24 * 3600
export const DELIVERIES_PER_TICK = 50
// A tick starts no delivery past this much time sending: a receiver that
// never answers costs its timeout per delivery, and the scheduler's upkeep
// (alert evaluation, lease expiry, rollups) waits on this step. The rest
// wait for the next tick.
export const DELIVERY_BUDGET_MS = 10_000

/**
 * Seconds to wait after the n-th failed attempt (n ≥ 1).
 * @param {number} n
 */
export function backoffS (n) {
  return Math.min(MAX_RETRY_S, FIRST_RETRY_S * 2 ** Math.min(n - 1, 20))
}

/**
 * @param {import('pg').PoolClient} client inside the state change's transaction
 * @param {{ eventId: number, channels: number[], body: Record<string, any>, now: Date }} o
 */
export async function enqueueDeliveries (client, { eventId, channels, body, now }) {
  await client.query(
    `INSERT INTO alert_deliveries (channel_id, event_id, kind, body, next_attempt_at, created_at)
     SELECT c.id, $1, $2, $3, $4, $4 FROM alert_channels c WHERE c.id = ANY($5)
     ON CONFLICT (event_id, channel_id) DO NOTHING`,
    [eventId, body.event, body, now, channels])
}

/**
 * Sends due deliveries one by one, in order, until none is due, the batch
 * is done or the tick's time budget is spent. Each attempt is logged, and
 * its retry scheduled, at the time it was sent (`now` and the time since).
 * @param {import('pg').Pool} db
 * @param {{ now?: Date, limit?: number, budgetMs?: number, log?: import('pino').Logger, policy?: import('./alert-channels.js').TargetPolicy }} [o]
 *   policy: whether webhooks may reach private addresses (checked again as each connects)
 * @returns {Promise<{ delivered: number, failed: number }>}
 */
export async function deliverDue (db, { now = new Date(), limit = DELIVERIES_PER_TICK, budgetMs = DELIVERY_BUDGET_MS, log, policy } = {}) {
  const started = Date.now()
  const clock = () => new Date(+now + (Date.now() - started))
  let delivered = 0
  let failed = 0
  for (let i = 0; i < limit && Date.now() - started < budgetMs; i++) {
    const outcome = await deliverOne(db, now, clock, log, policy)
    if (outcome === null) break
    if (outcome) delivered++
    else failed++
  }
  return { delivered, failed }
}

/**
 * @param {import('pg').Pool} db
 * @param {Date} now what is due by
 * @param {() => Date} clock the time of an attempt
 * @param {import('pino').Logger} [log]
 * @param {import('./alert-channels.js').TargetPolicy} [policy]
 * @returns {Promise<boolean | null>} null when nothing was due
 */
async function deliverOne (db, now, clock, log, policy) {
  return withTransaction(db, async (client) => {
    const { rows: [d] } = await client.query(
      `SELECT id, channel_id, body, attempts, created_at FROM alert_deliveries
        WHERE status = 'pending' AND next_attempt_at <= $1
        ORDER BY next_attempt_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`, [now])
    if (!d) {
      return null
    }
    const channel = await channelForSending(client, d.channel_id)
    // The timestamp header is the wall clock at sending, which receivers check for freshness.
    const at = clock()
    const result = await sendWebhook(channel, d.body, { deliveryId: d.id, policy })
    await logAttempt(client, d.id, at, result)
    const attempts = d.attempts + 1
    if (result.ok) {
      await client.query("UPDATE alert_deliveries SET status = 'delivered', attempts = $2, delivered_at = $3, last_error = NULL WHERE id = $1", [d.id, attempts, at])
    } else {
      const giveUp = +at - +d.created_at >= RETRY_FOR_S * 1000
      await client.query(
        `UPDATE alert_deliveries SET status = $2, attempts = $3, last_error = $4,
           next_attempt_at = $5::timestamptz + make_interval(secs => $6) WHERE id = $1`,
        [d.id, giveUp ? 'failed' : 'pending', attempts, result.error, at, backoffS(attempts)])
      // The channel's name and id, never its URL's secret parts or the secret.
      log?.warn({ delivery: d.id, channel: channel.id, attempt: attempts, error: result.error, gave_up: giveUp }, 'alert delivery failed')
    }
    return result.ok
  })
}

/**
 * @param {import('pg').PoolClient | import('pg').Pool} client
 * @param {number} deliveryId
 * @param {Date} now
 * @param {Awaited<ReturnType<typeof sendWebhook>>} result
 */
async function logAttempt (client, deliveryId, now, result) {
  await client.query(
    'INSERT INTO alert_delivery_attempts (delivery_id, at, status_code, error, duration_ms) VALUES ($1, $2, $3, $4, $5)',
    [deliveryId, now, result.status_code, result.error, result.duration_ms])
}

/**
 * The "send test" action: one attempt now, logged like any delivery, not retried.
 * @param {import('pg').Pool} db @param {number} channelId
 * @param {import('./alert-channels.js').TargetPolicy} [policy]
 */
export async function sendTest (db, channelId, policy) {
  const channel = await channelForSending(db, channelId)
  if (!channel) throw new NotFoundError(`there is no channel ${channelId}`)
  const now = new Date()
  const body = { version: 1, event: 'test', sent_at: now.toISOString(), channel: { id: channel.id, name: channel.name } }
  const { rows: [d] } = await db.query(
    `INSERT INTO alert_deliveries (channel_id, kind, body, next_attempt_at, created_at, status)
     VALUES ($1, 'test', $2, $3, $3, 'failed') RETURNING id`, [channel.id, body, now])
  const result = await sendWebhook(channel, body, { deliveryId: d.id, now, policy })
  await logAttempt(db, d.id, now, result)
  await db.query('UPDATE alert_deliveries SET status = $2, attempts = 1, delivered_at = $3, last_error = $4 WHERE id = $1',
    [d.id, result.ok ? 'delivered' : 'failed', result.ok ? now : null, result.error])
  return { delivery_id: d.id, ok: result.ok, status_code: result.status_code, error: result.error, duration_ms: result.duration_ms }
}

/**
 * A channel's most recent deliveries with their attempts.
 * @param {import('pg').Pool} db @param {number} channelId @param {number} [limit]
 */
export async function listDeliveries (db, channelId, limit = 50) {
  const { rows } = await db.query(
    `SELECT d.id, d.event_id, d.kind, d.status, d.attempts, d.next_attempt_at, d.created_at, d.delivered_at, d.last_error, d.body,
            COALESCE((SELECT json_agg(json_build_object('at', a.at, 'status_code', a.status_code, 'error', a.error, 'duration_ms', a.duration_ms) ORDER BY a.id)
                        FROM alert_delivery_attempts a WHERE a.delivery_id = d.id), '[]') AS attempt_log
       FROM alert_deliveries d WHERE d.channel_id = $1 ORDER BY d.id DESC LIMIT $2`, [channelId, limit])
  return rows
}
