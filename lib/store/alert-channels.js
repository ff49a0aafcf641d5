// Alert channels: where notifications go. A webhook gets a JSON body (or a
// Slack-compatible one) signed with the channel's secret:
//
//   X-H3lens-Timestamp: <unix seconds when the attempt was sent>
//   X-H3lens-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>
//   X-H3lens-Delivery:  <delivery id, the same on every retry: deduplicate on it>
//
// A receiver recomputes the HMAC over the timestamp, a dot and the raw body
// bytes, compares in constant time and refuses timestamps more than a few
// minutes old (replays). The secret is never returned by the API nor logged.
import crypto from 'node:crypto'
import http from 'node:http'
import https from 'node:https'
import { ValidationError, NotFoundError } from '../runtime/errors.js'
import { oneLineName } from '../runtime/text.js'
import { checkPublicTarget, guardedLookup, guardMessage, literalReason, systemResolver, targetHost } from '../measurement/targets.js'
import { validateMonitorUrl } from './monitors.js'
import { removeChannelFromRules } from './alert-rules.js'
import { withTransaction } from './transaction.js'

export const CHANNEL_FORMATS = ['json', 'slack']
export const MIN_SECRET_LENGTH = 16
// A channel's name, at most (the API's schema says the same, api/alert-schemas.js).
export const MAX_NAME_LENGTH = 200
export const SEND_TIMEOUT_MS = 10000

// Never the secret.
const COLUMNS = 'id, kind, name, url, format, created_at, updated_at'

/**
 * A channel as the API shows it. Webhook URLs often carry a token in their
 * path or query (a Slack webhook is https://hooks.slack.com/services/T…/B…/
 * <token>), and read keys may list channels: past the first path segment
 * the URL is shown as "…".
 * @param {Record<string, any>} row
 */
export function present (row) {
  const u = new URL(row.url)
  const segments = u.pathname.split('/').filter(Boolean)
  if (segments.length <= 1 && !u.search && !u.hash) return row
  return { ...row, url: `${u.origin}/${segments.length ? `${segments[0]}/` : ''}…` }
}

/**
 * @typedef {{ allowPrivateTargets?: boolean, resolve?: (host: string) => Promise<string[]> }} TargetPolicy
 * allowPrivateTargets: webhooks may go to any host (H3LENS_ALLOW_PRIVATE_TARGETS);
 * resolve: how host names are resolved (the system's resolver by default).
 */

/**
 * @param {Record<string, any>} input full channel (POST) or stored channel merged with a patch
 * @param {TargetPolicy} policy
 * @param {(field: string) => boolean} [given] whether the request gives a field (all in a POST): the
 *   checks added since channels were first stored apply to what is given, so a channel stored
 *   before stays editable
 */
async function checkChannel (input, { allowPrivateTargets = false, resolve }, given = () => true) {
  const c = { ...input }
  if (c.kind !== 'webhook') throw new ValidationError('kind must be webhook', 'kind')
  if (given('name')) c.name = oneLineName(c.name, { field: 'name', what: 'a channel\'s name', example: 'ops', max: MAX_NAME_LENGTH })
  try {
    c.url = validateMonitorUrl(c.url)
  } catch (/** @type {any} */ err) {
    throw new ValidationError(err.message, 'url')
  }
  const u = new URL(c.url)
  // Port 0 is no port a receiver listens on (Node would post to the scheme's own).
  if (given('url') && u.port === '0') throw new ValidationError('url names port 0, which no receiver listens on; give the receiver\'s port', 'url')
  if (given('url') && u.hash) throw new ValidationError('url has a #fragment, which is never sent to the receiver; leave it out', 'url')
  if (!allowPrivateTargets) await checkPublicTarget(c.url, { resolve, subject: 'webhooks' })
  if (typeof c.secret !== 'string' || (given('secret') ? c.secret.trim() : c.secret).length < MIN_SECRET_LENGTH) {
    throw new ValidationError(`secret must be at least ${MIN_SECRET_LENGTH} characters besides spaces (the HMAC key of X-H3lens-Signature)`, 'secret')
  }
  c.format ??= 'json'
  if (!CHANNEL_FORMATS.includes(c.format)) throw new ValidationError(`format must be one of ${CHANNEL_FORMATS.join(', ')}`, 'format')
  return c
}

/** @param {import('pg').Pool} db @param {Record<string, any>} input @param {TargetPolicy} policy */
export async function createChannel (db, input, policy) {
  const c = await checkChannel(input, policy)
  const { rows } = await db.query(
    `INSERT INTO alert_channels (kind, name, url, secret, format) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [c.kind, c.name, c.url, c.secret, c.format])
  return present(rows[0])
}

/** @param {import('pg').Pool} db */
export async function listChannels (db) {
  return (await db.query(`SELECT ${COLUMNS} FROM alert_channels ORDER BY id`)).rows.map(present)
}

/** @param {import('pg').Pool} db @param {number} id */
export async function getChannel (db, id) {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM alert_channels WHERE id = $1`, [id])
  if (!rows.length) throw new NotFoundError(`there is no channel ${id}`)
  return present(rows[0])
}

/**
 * The channel with its secret, for sending only.
 * @param {import('pg').Pool | import('pg').PoolClient} db @param {number} id
 */
export async function channelForSending (db, id) {
  const { rows } = await db.query(`SELECT ${COLUMNS}, secret FROM alert_channels WHERE id = $1`, [id])
  return rows[0] ?? null
}

/**
 * A patch without secret keeps the stored one.
 * @param {import('pg').Pool} db
 * @param {number} id
 * @param {Record<string, any>} patch
 * @param {TargetPolicy} policy
 */
export async function updateChannel (db, id, patch, policy) {
  const current = await channelForSending(db, id)
  if (!current) throw new NotFoundError(`there is no channel ${id}`)
  const c = await checkChannel({ ...current, ...patch }, policy, (field) => patch[field] !== undefined)
  const { rows } = await db.query(
    `UPDATE alert_channels SET name = $2, url = $3, secret = $4, format = $5, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, c.name, c.url, c.secret, c.format])
  return present(rows[0])
}

/**
 * Removes the channel, its deliveries, and its id from every rule.
 * @param {import('pg').Pool} db
 * @param {number} id
 */
export async function deleteChannel (db, id) {
  await withTransaction(db, async (client) => {
    const { rowCount } = await client.query('DELETE FROM alert_channels WHERE id = $1', [id])
    if (!rowCount) throw new NotFoundError(`there is no channel ${id}`)
    await removeChannelFromRules(client, id)
  })
}

/**
 * @param {string} secret @param {string | number} timestamp unix seconds @param {string} body the exact bytes sent
 * @returns {string} the X-H3lens-Signature value
 */
export function sign (secret, timestamp, body) {
  return 'v1=' + crypto.createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')
}

/**
 * Checks a signature as a receiver would (used by the tests and documented in docs/ALERTS.md).
 * @param {string} secret @param {string} timestamp @param {string} body @param {string} signature
 */
export function verifySignature (secret, timestamp, body, signature) {
  const want = Buffer.from(sign(secret, timestamp, body))
  const got = Buffer.from(String(signature))
  return want.length === got.length && crypto.timingSafeEqual(want, got)
}

/**
 * One HTTP attempt. Never throws: the outcome is data for the attempt log.
 * Unless private targets are allowed, the address is checked again as the
 * connection is made (the host may resolve elsewhere than when the channel
 * was saved), and a refused one is an attempt that failed with the guard's
 * reason.
 * @param {{ url: string, secret: string, format: string }} channel
 * @param {Record<string, any>} payload the JSON body
 * @param {{ deliveryId: number, now?: Date, policy?: TargetPolicy }} o
 * @returns {Promise<{ ok: boolean, status_code: number | null, error: string | null, duration_ms: number }>}
 */
export async function sendWebhook (channel, payload, { deliveryId, now = new Date(), policy = {} }) {
  const body = JSON.stringify(channel.format === 'slack' ? slackBody(payload) : payload)
  const timestamp = String(Math.floor(+now / 1000))
  const started = performance.now()
  const failed = (/** @type {string} */ error) => ({ ok: false, status_code: null, error: error.slice(0, 500), duration_ms: performance.now() - started })
  const url = new URL(channel.url)
  /** @type {import('node:net').LookupFunction | undefined} */
  let lookup
  if (!policy.allowPrivateTargets) {
    const { host, address } = targetHost(url)
    const why = address && literalReason(address)
    if (why) return failed(guardMessage(host, /** @type {string} */ (address), why))
    lookup = guardedLookup(policy.resolve ?? systemResolver.resolve)
  }
  try {
    const status = await post(url, body, {
      'content-type': 'application/json',
      'user-agent': 'h3lens-alerts',
      'x-h3lens-timestamp': timestamp,
      'x-h3lens-signature': sign(channel.secret, timestamp, body),
      'x-h3lens-delivery': String(deliveryId)
    }, lookup)
    const ok = status >= 200 && status < 300
    return { ok, status_code: status, error: ok ? null : `HTTP ${status}`, duration_ms: performance.now() - started }
  } catch (/** @type {any} */ err) {
    return failed(String(err.code === 'EPRIVATETARGET' ? err.message : err.code ?? err.message))
  }
}

/**
 * POST `body` and read the answer to its end; redirects are not followed
 * (a 3xx is an answer, not a delivery). SEND_TIMEOUT_MS covers the whole
 * exchange.
 * @param {URL} url
 * @param {string} body
 * @param {Record<string, string>} headers
 * @param {import('node:net').LookupFunction | undefined} lookup
 * @returns {Promise<number>} the status code
 */
function post (url, body, headers, lookup) {
  const client = url.protocol === 'https:' ? https : http
  return new Promise((resolve, reject) => {
    const req = client.request(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': Buffer.byteLength(body) },
      lookup,
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS)
    }, (res) => {
      res.on('error', reject)
      res.on('end', () => resolve(/** @type {number} */ (res.statusCode)))
      res.resume()
    })
    req.on('error', (err) => reject(err.name === 'AbortError' ? Object.assign(err, { code: 'TimeoutError' }) : err))
    req.end(body)
  })
}

/**
 * Slack's incoming-webhook shape: one line of text. Slack reads `<…>` in it
 * as a mention (`<!channel>`) or a link (`<https://…|words>`), so every
 * value a user wrote (a monitor's label, a channel's name) or that quotes
 * one (the summary) is escaped as Slack asks (&, < and >); the one link is
 * h3lens's own.
 * @param {Record<string, any>} payload the notification (alertNotification) or a test message
 */
export function slackBody (payload) {
  if (payload.event === 'test') return { text: `h3lens test notification from channel "${slackText(payload.channel?.name)}"` }
  const a = payload.alert
  const icon = payload.event === 'firing' ? ':rotating_light:' : ':white_check_mark:'
  const where = `${slackText(a.monitor_label ?? `monitor ${a.monitor_id}`)} at ${slackText(a.location_id)}`
  return { text: `${icon} [${a.severity}] ${payload.event === 'firing' ? 'FIRING' : 'RESOLVED'}: ${slackText(a.summary)} — ${where}${a.evidence_url ? ` <${a.evidence_url}|evidence>` : ''}` }
}

/** @param {unknown} v */
function slackText (v) {
  return String(v).replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')
}
