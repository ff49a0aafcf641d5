// Reading alerts: the current state of each (rule, monitor, location) and
// the history of changes, filtered as the API and dashboard ask.

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
  for (const [k, col] of [['state', 'state'], ['monitor_id', 'monitor_id'], ['location_id', 'location_id'], ['rule_id', 'rule_id']]) {
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
