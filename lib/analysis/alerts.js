// Alert state: each (rule, monitor, location) is ok, pending, firing or
// resolved, kept in alert_states, every change recorded in alert_events.
// A rule fires after `evaluations` consecutive breaching evaluations and
// resolves after as many consecutive clear ones (hysteresis: one noisy
// evaluation neither fires nor resolves). Firing and resolving write one
// delivery per channel into the outbox in the same transaction, so a
// notification exists exactly when the state changed. The state lives in
// PostgreSQL: a restart continues where it was and re-fires nothing.
import { deleteRule, getRule, listRules } from '../store/alert-rules.js'
import { listMonitors } from '../store/monitors.js'
import { applyObservation, claimEvaluation, closeUnwatched, markEvaluated } from '../store/alert-states.js'
import { withTransaction } from '../store/transaction.js'
import { observe, comparisonCache } from './alert-conditions.js'

/**
 * The next state of one key after one observation; null when nothing changes.
 * @param {{ state: string, breaches: number, clears: number }} cur
 * @param {boolean} breach
 * @param {number} n evaluations needed to fire and to resolve
 */
export function nextState (cur, breach, n) {
  const breaches = breach ? cur.breaches + 1 : 0
  const clears = breach ? 0 : cur.clears + 1
  let state = cur.state
  if (breach && cur.state !== 'firing') state = breaches >= n ? 'firing' : 'pending'
  if (!breach && cur.state === 'pending') state = 'ok'
  if (!breach && cur.state === 'firing' && clears >= n) state = 'resolved'
  return { state, breaches, clears }
}

/**
 * One evaluation of every rule, by at most one replica at a time and at most
 * once per `intervalS`: the replica that locks the evaluator row (SKIP
 * LOCKED: the others do not wait) and finds the last run old enough
 * evaluates, writing every state change in the same transaction.
 * @param {import('pg').Pool} db
 * @param {{ now?: Date, intervalS?: number, timeoutMs?: number, publicUrl?: string | null, log?: import('pino').Logger }} [o]
 * @returns {Promise<{ evaluated: boolean, changes: number }>}
 */
export async function evaluateAlerts (db, { now = new Date(), intervalS = 60, timeoutMs = 30000, publicUrl = null, log } = {}) {
  return withTransaction(db, async (client) => {
    if (!await claimEvaluation(client, now, intervalS)) return { evaluated: false, changes: 0 }
    let changes = 0
    const compare = comparisonCache(db, { now, timeoutMs })
    const monitors = await listMonitors(client)
    const rules = await listRules(db)
    /** @type {Set<string>} every (rule, monitor, location) a rule covers now */
    const covered = new Set()
    for (const rule of rules) {
      for (const monitor of monitors.filter((m) => rule.monitor_id === null || m.id === rule.monitor_id)) {
        const locations = monitor.locations.filter((/** @type {string} */ l) => !rule.locations || rule.locations.includes(l))
        for (const l of locations) covered.add(`${rule.id}|${monitor.id}|${l}`)
        if (!locations.length) continue
        let observations
        try {
          observations = await observe(db, rule, monitor, locations, { now, compare })
        } catch (/** @type {any} */ err) {
          log?.warn({ rule: rule.id, monitor: monitor.id, err: err.message }, 'alert rule could not be evaluated')
          continue
        }
        for (const o of observations) {
          const breach = o.breach
          if (breach === null) continue
          const next = (/** @type {{ state: string, breaches: number, clears: number }} */ cur) => nextState(cur, breach, rule.evaluations)
          if (await applyObservation(client, { rule, monitor, observation: o, now, publicUrl, next })) changes++
        }
      }
    }
    // An alert whose rule or monitor stopped covering its location (or
    // whose monitor was deleted) would stay firing with nothing to resolve
    // it: it resolves now, and says why.
    changes += await closeUnwatched(client, {
      rules, now, publicUrl, why: 'no longer watched: the rule or its monitor no longer covers this location, or the monitor was deleted',
      watched: (ruleId, monitorId, locationId) => covered.has(`${ruleId}|${monitorId}|${locationId}`)
    })
    await markEvaluated(client, now)
    return { evaluated: true, changes }
  })
}

/**
 * Deletes a rule with its alerts and history. A firing alert of it is
 * resolved first, with its notification ("the rule was deleted"), so an
 * incident a receiver opened is closed; notifications already queued are
 * still sent, in order.
 * @param {import('pg').Pool} db
 * @param {number} id
 * @param {{ publicUrl?: string | null }} [o]
 */
export async function deleteRuleClosingAlerts (db, id, { publicUrl = null } = {}) {
  await withTransaction(db, async (client) => {
    const rule = await getRule(client, id)
    await closeUnwatched(client, { rules: [rule], watched: () => false, why: 'the rule was deleted', now: new Date(), publicUrl })
    await deleteRule(client, id)
  })
}
