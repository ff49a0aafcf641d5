// SQL for alert_states (each (rule, monitor, location) is ok, pending,
// firing or resolved), alert_events (every change) and the evaluator row
// that lets one replica evaluate at a time. The state machine and the
// evaluation are lib/analysis/alerts.js. Firing and resolving write one
// delivery per channel into the outbox in the same transaction, so a
// notification exists exactly when the state changed.
import { enqueueDeliveries } from './alert-deliveries.js'

export const ALERT_STATES = ['ok', 'pending', 'firing', 'resolved']

/**
 * Takes the evaluator row for this evaluation, inside the caller's
 * transaction: false when another replica holds it (SKIP LOCKED: nobody
 * waits) or the last run is younger than `intervalS`.
 * @param {import('pg').PoolClient} client
 * @param {Date} now
 * @param {number} intervalS
 */
export async function claimEvaluation (client, now, intervalS) {
  const { rows } = await client.query('SELECT last_run_at FROM alert_evaluator WHERE id = 1 FOR UPDATE SKIP LOCKED')
  // A little slack so a tick a few ms early does not skip a whole interval.
  return rows.length > 0 && !(rows[0].last_run_at && +now - +rows[0].last_run_at < intervalS * 1000 - 500)
}

/** @param {import('pg').PoolClient} client @param {Date} now */
export async function markEvaluated (client, now) {
  await client.query('UPDATE alert_evaluator SET last_run_at = $1 WHERE id = 1', [now])
}

/**
 * Stores one observation of (rule, monitor, location), moving its state by
 * `next` (the state machine's answer for the current state).
 * @param {import('pg').PoolClient} client
 * @param {{ rule: any, monitor: any, observation: any, now: Date, publicUrl: string | null,
 *   next: (cur: { state: string, breaches: number, clears: number }) => { state: string, breaches: number, clears: number } }} o
 * @returns {Promise<boolean>} whether the state changed
 */
export async function applyObservation (client, { rule, monitor, observation, now, publicUrl, next: step }) {
  const key = [rule.id, monitor.id, observation.location_id]
  const { rows } = await client.query(
    'SELECT state, breaches, clears, fired_at, evidence FROM alert_states WHERE rule_id = $1 AND monitor_id = $2 AND location_id = $3', key)
  const cur = rows[0] ?? { state: 'ok', breaches: 0, clears: 0, fired_at: null, evidence: {} }
  const next = step(cur)
  const changed = next.state !== cur.state
  // The evidence kept is what tripped the alert while it fires, the latest observation otherwise.
  const evidence = cur.state === 'firing' && next.state === 'firing' ? cur.evidence : observation.evidence
  const firedAt = next.state === 'firing' && changed ? now : (next.state === 'ok' || next.state === 'pending' ? null : cur.fired_at)
  await client.query(
    `INSERT INTO alert_states (rule_id, monitor_id, location_id, state, breaches, clears, since, fired_at, resolved_at, evaluated_at, evidence)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $7, $10)
     ON CONFLICT (rule_id, monitor_id, location_id) DO UPDATE SET
       state = EXCLUDED.state, breaches = EXCLUDED.breaches, clears = EXCLUDED.clears,
       since = CASE WHEN alert_states.state = EXCLUDED.state THEN alert_states.since ELSE EXCLUDED.since END,
       fired_at = EXCLUDED.fired_at, resolved_at = EXCLUDED.resolved_at, evaluated_at = EXCLUDED.evaluated_at, evidence = EXCLUDED.evidence`,
    [...key, next.state, next.breaches, next.clears, now, firedAt, next.state === 'resolved' ? now : null, evidence])
  if (!changed) return false
  const { rows: [event] } = await client.query(
    'INSERT INTO alert_events (rule_id, monitor_id, location_id, state, previous, at, evidence) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id',
    [...key, next.state, cur.state, now, observation.evidence])
  if ((next.state === 'firing' || next.state === 'resolved') && rule.channels.length) {
    await enqueueDeliveries(client, {
      eventId: event.id,
      channels: rule.channels,
      now,
      body: notification({ rule, monitor, event: next.state, eventId: event.id, locationId: observation.location_id, firedAt, now, evidence, observation, publicUrl })
    })
  }
  return true
}

/**
 * Closes the open alerts (pending or firing) of the given rules that `watched`
 * says are no longer watched: their rule or monitor no longer covers the
 * location, the monitor was deleted, or the rule is being deleted. A firing
 * one resolves at once, with its notification (its evidence says why: no
 * new observation); a pending one goes back to ok.
 * @param {import('pg').PoolClient} client
 * @param {{ rules: Record<string, any>[], watched: (ruleId: number, monitorId: number, locationId: string) => boolean, why: string, now: Date, publicUrl: string | null }} o
 * @returns {Promise<number>} how many states changed
 */
export async function closeUnwatched (client, { rules, watched, why, now, publicUrl }) {
  const byId = new Map(rules.map((r) => [Number(r.id), r]))
  const { rows } = await client.query(
    `SELECT s.rule_id, s.location_id, m.id, m.label, m.url, m.aa_protocol
       FROM alert_states s JOIN monitors m ON m.id = s.monitor_id
      WHERE s.state IN ('pending', 'firing') AND s.rule_id = ANY($1::bigint[])`, [[...byId.keys()]])
  let changes = 0
  for (const r of rows) {
    if (watched(Number(r.rule_id), Number(r.id), r.location_id)) continue
    const observation = { location_id: r.location_id, breach: false, evidence: { unwatched: `${why}; resolved without a new observation` } }
    const close = (/** @type {{ state: string }} */ cur) => ({ state: cur.state === 'firing' ? 'resolved' : 'ok', breaches: 0, clears: 0 })
    if (await applyObservation(client, { rule: byId.get(Number(r.rule_id)), monitor: r, observation, now, publicUrl, next: close })) changes++
  }
  return changes
}

/**
 * The webhook body of a firing or resolved alert (documented in the OpenAPI as alertNotification).
 * @param {{ rule: Record<string, any>, monitor: Record<string, any>, event: string, eventId: number, locationId: string, firedAt: Date | null, now: Date,
 *   evidence: Record<string, any>, observation: import('../analysis/alert-conditions.js').Observation, publicUrl: string | null }} o
 *   rule and monitor: their rows; evidence: what tripped the alert
 */
function notification ({ rule, monitor, event, eventId, locationId, firedAt, now, evidence, observation, publicUrl }) {
  const shown = event === 'firing' ? evidence : observation.evidence
  return {
    version: 1,
    event,
    event_id: eventId,
    alert: {
      rule_id: rule.id,
      kind: rule.kind,
      severity: rule.severity,
      description: rule.description,
      summary: summary(rule, shown),
      monitor_id: monitor.id,
      monitor_label: monitor.label,
      monitor_url: monitor.url,
      aa_protocol: monitor.aa_protocol ?? null,
      location_id: locationId,
      state: event,
      fired_at: firedAt ? new Date(firedAt).toISOString() : null,
      resolved_at: event === 'resolved' ? now.toISOString() : null,
      evidence: shown,
      evidence_url: shown.link ? (publicUrl ? publicUrl.replace(/\/+$/, '') + '/' + shown.link : shown.link) : null
    }
  }
}

/**
 * One line a person reads first.
 * @param {Record<string, any>} rule an alert rule row
 * @param {Record<string, any>} e the evidence of an observation (lib/analysis/alert-conditions.js)
 */
export function summary (rule, e) {
  if (e.unwatched) return e.unwatched[0].toUpperCase() + e.unwatched.slice(1)
  const pct = (/** @type {number | null | undefined} */ v) => (v == null ? '?' : `${Math.round(v * 10) / 10}%`)
  if (rule.kind === 'h3_regression') {
    return `HTTP/3 ${e.delta_pct >= 0 ? 'slower' : 'faster'} than HTTP/2 at p${rule.percentile} ${e.metric}: ` +
      `${e.h3_ms?.toFixed?.(1)} ms vs ${e.h2_ms?.toFixed?.(1)} ms (${e.delta_pct >= 0 ? '+' : ''}${pct(e.delta_pct)}), ${e.rounds_used} rounds`
  }
  if (rule.kind === 'h3_failure') return `HTTP/3 lost ${pct(e.h3_lost_pct)} of ${e.h3_attempted} loads (failed or fell back), threshold ${rule.threshold_pct}%`
  if (rule.kind === 'h3_share_drop') {
    const text = e.text ?? e.reason ?? 'the H3 share of returning visits could not be read'
    return text[0].toUpperCase() + text.slice(1)
  }
  if (rule.kind === 'error_rate') return `failure rate ${pct(e.worst_pct)} (H2 ${pct(e.h2_failure_rate?.rate * 100)}, H3 ${pct(e.h3_failure_rate?.rate * 100)}), threshold ${rule.threshold_pct}%`
  const m = Math.round(rule.window_s / 60)
  return `none of the ${e.due_rounds} round${e.due_rounds === 1 ? '' : 's'} due ${m} to ${2 * m} min ago has a result`
}

// Reading alerts: the current state of each key and the history of changes,
// filtered as the API and dashboard ask.
const STATE_COLUMNS = `s.rule_id, s.monitor_id, m.label AS monitor_label, s.location_id, s.state, s.since, s.fired_at, s.resolved_at,
  s.evaluated_at, s.evidence, r.kind, r.severity, r.description`
const EVENT_COLUMNS = `e.id, e.rule_id, e.monitor_id, m.label AS monitor_label, e.location_id, e.state, e.previous, e.at, e.evidence,
  r.kind, r.severity, r.description`

/**
 * @param {{ state?: string, monitor_id?: number, location_id?: string, rule_id?: number }} f
 * @param {string} alias
 */
function where (f, alias) {
  const clauses = []
  const params = []
  for (const [k, col] of /** @type {const} */ ([['state', 'state'], ['monitor_id', 'monitor_id'], ['location_id', 'location_id'], ['rule_id', 'rule_id']])) {
    if (f[k] === undefined || f[k] === null) continue
    params.push(f[k])
    clauses.push(`${alias}.${col} = $${params.length}`)
  }
  return { sql: clauses.length ? `WHERE ${clauses.join(' AND ')}` : '', params }
}

/**
 * Current states of monitors that exist. Without a state filter, those
 * worth a look: pending, firing and resolved (ok keys are every pair ever
 * evaluated).
 * @param {import('pg').Pool} db
 * @param {{ state?: string, monitor_id?: number, location_id?: string, rule_id?: number }} [f]
 */
export async function currentAlerts (db, f = {}) {
  const w = where(f, 's')
  const notOk = f.state ? '' : `${w.sql ? ' AND' : 'WHERE'} s.state <> 'ok'`
  // A deleted monitor is no longer evaluated; its last states are history, not alerts.
  const { rows } = await db.query(
    `SELECT ${STATE_COLUMNS} FROM alert_states s JOIN alert_rules r ON r.id = s.rule_id
       JOIN monitors m ON m.id = s.monitor_id AND m.deleted_at IS NULL
      ${w.sql}${notOk}
      ORDER BY CASE s.state WHEN 'firing' THEN 0 WHEN 'pending' THEN 1 WHEN 'resolved' THEN 2 ELSE 3 END, s.since DESC, s.rule_id, s.monitor_id, s.location_id`,
    w.params)
  return rows
}

/**
 * Changes of state, newest first.
 * @param {import('pg').Pool} db
 * @param {{ state?: string, monitor_id?: number, location_id?: string, rule_id?: number, limit?: number }} [f]
 */
export async function alertHistory (db, f = {}) {
  const w = where(f, 'e')
  const { rows } = await db.query(
    `SELECT ${EVENT_COLUMNS} FROM alert_events e JOIN alert_rules r ON r.id = e.rule_id JOIN monitors m ON m.id = e.monitor_id
      ${w.sql} ORDER BY e.at DESC, e.id DESC LIMIT $${w.params.length + 1}`, [...w.params, f.limit ?? 100])
  return rows
}

/**
 * What fires now, for /metrics.
 * @param {import('pg').Pool} db
 * @returns {Promise<{ rule_id: number, monitor_id: number, location_id: string }[]>}
 */
export async function firingAlerts (db) {
  const { rows } = await db.query(
    `SELECT s.rule_id, s.monitor_id, s.location_id FROM alert_states s JOIN monitors m ON m.id = s.monitor_id AND m.deleted_at IS NULL
      WHERE s.state = 'firing' ORDER BY s.rule_id, s.monitor_id, s.location_id`)
  return rows
}

/**
 * The evidence of each location where a rule fires for a monitor: what
 * tripped it (kept while it fires). An h3_share_drop rule keeps comparing
 * with the baseline it fired against.
 * @param {import('pg').Pool} db
 * @param {{ ruleId: number, monitorId: number }} key
 * @returns {Promise<Map<string, Record<string, any>>>}
 */
export async function firingEvidence (db, { ruleId, monitorId }) {
  const { rows } = await db.query(
    "SELECT location_id, evidence FROM alert_states WHERE rule_id = $1 AND monitor_id = $2 AND state = 'firing'", [ruleId, monitorId])
  return new Map(rows.map((r) => [r.location_id, r.evidence]))
}
