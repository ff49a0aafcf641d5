// Alert rules: what to watch, where, and whom to tell. Shape checks live in
// the API schemas (api/routes/alerts.js); the rules that span fields and the
// database (known monitors, locations and channels) live here.
import { ValidationError, NotFoundError } from '../runtime/errors.js'
import { ACCEPTED_METRIC_NAMES, canonicalMetric, COMPARABLE_METRICS, DEFAULT_METRIC, minRoundsFor, probeFor, probeOfMetric } from '../measurement/metrics.js'
import { DEFAULT_PROBE, PROBE_IDS } from '../measurement/probes/index.js'
import { isJourneyProbe, splitProbe } from '../measurement/probes/journey.js'
import { stepNames } from '../measurement/journey/steps.js'

export const RULE_KINDS = ['h3_regression', 'h3_failure', 'location_silent', 'error_rate', 'h3_share_drop']
export const SEVERITIES = ['info', 'warning', 'critical']
// The comparison needs rounds; a window under a minute holds none.
export const MIN_WINDOW_S = 60
// Rollups keep a year; a regression over more than a month is a trend, not an alert.
export const MAX_WINDOW_S = 30 * 86400
export const MAX_EVALUATIONS = 100
// Loaded returning visits an h3_share_drop window (and its baseline) needs
// before it says anything (lib/analysis/alert-h3-share.js): with fewer, a
// share's interval spans most of 0–100%.
export const SHARE_MIN_VISITS = 10

const COLUMNS = `id, kind, monitor_id, locations, metric, probe, percentile, min_effect_pct, min_effect_ms, threshold_pct, min_drop_points,
  window_s, evaluations, severity, description, channels, created_at, updated_at`

// Fields each kind uses; a field another kind uses is refused rather than ignored.
/** @type {Record<string, string[]>} */
const USES = {
  h3_regression: ['percentile', 'min_effect_pct', 'min_effect_ms', 'metric', 'probe'],
  h3_failure: ['threshold_pct'],
  error_rate: ['threshold_pct'],
  location_silent: [],
  h3_share_drop: ['threshold_pct', 'min_drop_points']
}
const KIND_FIELDS = ['percentile', 'min_effect_pct', 'min_effect_ms', 'threshold_pct', 'min_drop_points', 'metric', 'probe']

/**
 * The rule as stored, defaults applied, after every check.
 * @param {import('pg').Pool} db
 * @param {Record<string, any>} input a full rule (POST) or the stored rule merged with a patch
 * @param {{ monitorGiven?: boolean, watchGiven?: boolean, locationsGiven?: boolean }} [opts] monitorGiven: the request names the monitor
 *   (a POST, or a patch of monitor_id); watchGiven: it names what the rule watches (a POST, or a patch of metric or probe);
 *   locationsGiven: it names the locations (a POST, or a patch of locations)
 */
async function checkRule (db, input, { monitorGiven = true, watchGiven = true, locationsGiven = true } = {}) {
  const r = { ...input }
  if (!RULE_KINDS.includes(r.kind)) throw new ValidationError(`kind must be one of ${RULE_KINDS.join(', ')}`, 'kind')
  for (const f of KIND_FIELDS) {
    if (r[f] != null && !USES[r.kind].includes(f)) throw new ValidationError(`${f} does not apply to a ${r.kind} rule`, f)
  }
  if (r.kind === 'h3_regression') {
    r.percentile ??= 95
    r.metric ??= DEFAULT_METRIC
    if (!ACCEPTED_METRIC_NAMES.includes(r.metric)) throw new ValidationError(`metric must be one of ${COMPARABLE_METRICS.join(', ')}`, 'metric')
    // The names without a unit (ttfb) are deprecated aliases; rules store the id (ttfb_ms).
    r.metric = canonicalMetric(r.metric)
    r.probe = checkRuleProbe(r.probe ?? null, r.metric)
    if (!(r.percentile > 0 && r.percentile < 100)) throw new ValidationError('percentile must be above 0 and below 100', 'percentile')
    if (r.min_effect_pct == null && r.min_effect_ms == null) throw new ValidationError('an h3_regression rule needs min_effect_pct or min_effect_ms (how much slower is a regression)', 'min_effect_pct')
    if (r.min_effect_pct != null && !(r.min_effect_pct > 0 && r.min_effect_pct <= 1000)) throw new ValidationError('min_effect_pct must be above 0 and at most 1000', 'min_effect_pct')
    if (r.min_effect_ms != null && !(r.min_effect_ms > 0 && r.min_effect_ms <= 600000)) throw new ValidationError('min_effect_ms must be above 0 and at most 600000', 'min_effect_ms')
  } else {
    r.metric = DEFAULT_METRIC
    r.probe = null
  }
  if (r.kind === 'h3_failure' || r.kind === 'error_rate') {
    if (r.threshold_pct == null) throw new ValidationError(`a ${r.kind} rule needs threshold_pct`, 'threshold_pct')
    // Above 100% can never be true, and "above 0%" would fire on one lost load.
    if (!(r.threshold_pct > 0 && r.threshold_pct < 100)) throw new ValidationError('threshold_pct must be above 0 and below 100', 'threshold_pct')
  }
  if (r.kind === 'h3_share_drop') {
    if (r.threshold_pct == null && r.min_drop_points == null) {
      throw new ValidationError('an h3_share_drop rule needs threshold_pct (fire below this share of returning visits over H3), min_drop_points (fire on a drop of this many points against the week before), or both', 'threshold_pct')
    }
    if (r.threshold_pct != null && !(r.threshold_pct > 0 && r.threshold_pct < 100)) throw new ValidationError('threshold_pct must be above 0 and below 100', 'threshold_pct')
    if (r.min_drop_points != null && !(r.min_drop_points > 0 && r.min_drop_points < 100)) throw new ValidationError('min_drop_points must be above 0 and below 100 (percentage points)', 'min_drop_points')
  }
  if (!Number.isInteger(r.window_s) || r.window_s < MIN_WINDOW_S || r.window_s > MAX_WINDOW_S) {
    throw new ValidationError(`window_s must be a whole number of seconds from ${MIN_WINDOW_S} to ${MAX_WINDOW_S}`, 'window_s')
  }
  r.evaluations ??= 1
  if (!Number.isInteger(r.evaluations) || r.evaluations < 1 || r.evaluations > MAX_EVALUATIONS) {
    throw new ValidationError(`evaluations must be a whole number from 1 to ${MAX_EVALUATIONS}`, 'evaluations')
  }
  r.severity ??= 'warning'
  if (!SEVERITIES.includes(r.severity)) throw new ValidationError(`severity must be one of ${SEVERITIES.join(', ')}`, 'severity')
  r.monitor_id ??= null
  if (r.monitor_id !== null) {
    const { rows: [m] } = await db.query('SELECT modes, interval_s, paused, probes, journey, browsers, locations FROM monitors WHERE id = $1 AND deleted_at IS NULL', [r.monitor_id])
    // A rule whose monitor was deleted since stays editable (to point it at
    // another monitor, or change its channels); a monitor given must exist.
    if (!m && monitorGiven) throw new ValidationError(`there is no monitor ${r.monitor_id}`, 'monitor_id')
    // Rules read Chromium's rounds (docs/ALERTS.md).
    if (m && monitorGiven && !m.browsers.includes('chromium')) {
      throw new ValidationError(`monitor ${r.monitor_id} runs in ${m.browsers.join(', ')} only; alert rules read Chromium's rounds: add chromium to the monitor's browsers`, 'monitor_id')
    }
    if (m && r.kind === 'h3_share_drop') checkShareMonitor(m, r)
    // Checked when the monitor or what is watched changes: a rule stored
    // before stays editable when its monitor's probes change since.
    if (m && r.kind === 'h3_regression' && (monitorGiven || watchGiven)) checkRegressionMonitor(m, r)
    // A location the monitor does not run at would never be evaluated.
    // Checked when either is given: a rule stays editable when its
    // monitor's locations change since.
    const elsewhere = m && r.locations && (monitorGiven || locationsGiven) ? r.locations.filter((/** @type {string} */ l) => !m.locations.includes(l)) : []
    if (elsewhere.length) {
      throw new ValidationError(`monitor ${r.monitor_id} does not run at ${elsewhere.join(', ')} (its locations: ${m.locations.join(', ')}), so the rule would never be evaluated there`, 'locations')
    }
  }
  r.locations ??= null
  if (r.locations !== null) {
    if (!r.locations.length) throw new ValidationError('locations must name at least one location, or be left out for all', 'locations')
    const { rows } = await db.query('SELECT id FROM locations WHERE id = ANY($1)', [r.locations])
    const unknown = r.locations.filter((/** @type {string} */ l) => !rows.some((x) => x.id === l))
    if (unknown.length) throw new ValidationError(`unknown location ${unknown.join(', ')}`, 'locations')
    r.locations = [...new Set(r.locations)]
  }
  r.channels = [...new Set(r.channels ?? [])]
  if (r.channels.length) {
    const { rows } = await db.query('SELECT id FROM alert_channels WHERE id = ANY($1)', [r.channels])
    const unknown = r.channels.filter((/** @type {number} */ c) => !rows.some((x) => x.id === c))
    if (unknown.length) throw new ValidationError(`there is no channel ${unknown.join(', ')}`, 'channels')
  }
  r.description ??= null
  return r
}

/**
 * The probe an h3_regression rule compares: null for the metric's own (the
 * page's timings, a samples metric's probe), or a probe that has the
 * metric, such as a journey step (docs/JOURNEYS.md): step_ms of
 * 'journey:login', or ttfb_ms of a navigation step.
 * @param {string | null} probe
 * @param {string} metric its id
 */
function checkRuleProbe (probe, metric) {
  if (probe === null) return null
  if (typeof probe !== 'string' || !(PROBE_IDS.includes(probe) || isJourneyProbe(probe))) {
    throw new ValidationError(`probe must be one of ${PROBE_IDS.join(', ')}, or journey:<step> for a journey's named step`, 'probe')
  }
  if (probeOfMetric(metric) && probeFor(metric, probe) !== probe) {
    throw new ValidationError(`metric ${metric} is measured by the ${probeOfMetric(metric)} probe, not by ${probe}`, 'probe')
  }
  return probe
}

/**
 * An h3_share_drop rule on a named monitor: the monitor runs the auto arm,
 * and the window holds at least SHARE_MIN_VISITS of its rounds, or the rule could
 * never say anything.
 * @param {{ modes: string[], interval_s: number }} m the monitor
 * @param {Record<string, any>} r
 */
function checkShareMonitor (m, r) {
  if (!m.modes.includes('auto')) {
    throw new ValidationError(`monitor ${r.monitor_id} does not run the auto arm (its modes: ${m.modes.join(', ')}); an h3_share_drop rule watches the auto arm's returning visits: add auto to the monitor's modes`, 'monitor_id')
  }
  if (r.window_s < SHARE_MIN_VISITS * m.interval_s) {
    throw new ValidationError(`window_s must hold at least ${SHARE_MIN_VISITS} rounds of monitor ${r.monitor_id} (one every ${m.interval_s} s): at least ${SHARE_MIN_VISITS * m.interval_s}`, 'window_s')
  }
}

/**
 * An h3_regression rule on a named monitor: the monitor runs the probe the
 * rule watches (the metric's, or the rule's probe), and a journey step it
 * names is one of the monitor's journey's named steps, and the window holds
 * the rounds its percentile needs, or the rule could never compare anything.
 * @param {{ probes: string[] | null, journey: any, interval_s: number, paused: boolean }} m the monitor
 * @param {Record<string, any>} r
 */
function checkRegressionMonitor (m, r) {
  const watched = probeFor(r.metric, r.probe) ?? DEFAULT_PROBE
  const { probe, step } = splitProbe(watched)
  const field = r.probe ? 'probe' : 'metric'
  const probes = m.probes ?? [DEFAULT_PROBE]
  if (!probes.includes(probe)) {
    throw new ValidationError(`monitor ${r.monitor_id} does not run the ${probe} probe (its probes: ${probes.join(', ')}), so this rule would have nothing to compare`, field)
  }
  const steps = stepNames(m.journey)
  if (step !== null && !steps.includes(step)) {
    throw new ValidationError(`monitor ${r.monitor_id}'s journey has no step named ${step} (its named steps: ${steps.join(', ') || 'none'})`, 'probe')
  }
  // A percentile is tested only with its minimum rounds in the window; a
  // window a running monitor cannot fill would never breach. (A paused
  // monitor's rounds are imported, at whatever pace they were measured.)
  const rounds = Math.floor(r.window_s / m.interval_s)
  const needed = minRoundsFor(r.percentile)
  if (!m.paused && rounds < needed) {
    throw new ValidationError(`window_s: p${r.percentile} is tested only with ${needed} rounds per location in the window, and monitor ${r.monitor_id} runs ` +
      `${rounds} in ${r.window_s} s (one every ${m.interval_s} s), so this rule could never fire: give window_s at least ${needed * m.interval_s}, ` +
      'a lower percentile, or the monitor a shorter interval', 'window_s')
  }
}

const STORED = ['kind', 'monitor_id', 'locations', 'metric', 'probe', 'percentile', 'min_effect_pct', 'min_effect_ms', 'threshold_pct', 'min_drop_points',
  'window_s', 'evaluations', 'severity', 'description', 'channels']

/**
 * @param {Record<string, any>} row
 * @returns {Record<string, any>}
 */
function present (row) {
  // bigint[] arrives as strings (pg parses int8 scalars only, lib/runtime/db.js).
  /** @type {Record<string, any>} */
  const out = { ...row, channels: row.channels.map(Number) }
  if (out.kind !== 'h3_regression') {
    delete out.metric
    delete out.probe
  }
  return out
}

/** @param {import('pg').Pool} db @param {Record<string, any>} input */
export async function createRule (db, input) {
  const r = await checkRule(db, input)
  const { rows } = await db.query(
    `INSERT INTO alert_rules (${STORED.join(', ')}) VALUES (${STORED.map((_, i) => `$${i + 1}`).join(', ')}) RETURNING ${COLUMNS}`,
    STORED.map((k) => r[k]))
  return present(rows[0])
}

/** @param {import('pg').Pool | import('pg').PoolClient} db @param {number} id */
export async function getRule (db, id) {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM alert_rules WHERE id = $1`, [id])
  if (!rows.length) throw new NotFoundError(`there is no alert rule ${id}`)
  return present(rows[0])
}

/** @param {import('pg').Pool} db */
export async function listRules (db) {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM alert_rules ORDER BY id`)
  return rows.map(present)
}

/**
 * A patch replaces the fields it names; null clears an optional field.
 * @param {import('pg').Pool} db @param {number} id @param {Record<string, any>} patch
 */
export async function updateRule (db, id, patch) {
  const current = await getRule(db, id)
  if (patch.kind && patch.kind !== current.kind) {
    // Another kind's fields would not carry over meaningfully: make a new rule.
    throw new ValidationError('kind cannot change; delete the rule and create another', 'kind')
  }
  const r = await checkRule(db, { ...current, ...patch }, {
    monitorGiven: patch.monitor_id !== undefined,
    watchGiven: ['metric', 'probe', 'percentile', 'window_s'].some((f) => patch[f] !== undefined),
    locationsGiven: patch.locations !== undefined
  })
  const { rows } = await db.query(
    `UPDATE alert_rules SET ${STORED.map((k, i) => `${k} = $${i + 2}`).join(', ')}, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, ...STORED.map((k) => r[k])])
  return present(rows[0])
}

/**
 * Removes the rule with its states and history (lib/analysis/alerts.js
 * deleteRuleClosingAlerts resolves its firing alerts first).
 * @param {import('pg').Pool | import('pg').PoolClient} db
 * @param {number} id
 */
export async function deleteRule (db, id) {
  const { rowCount } = await db.query('DELETE FROM alert_rules WHERE id = $1', [id])
  if (!rowCount) throw new NotFoundError(`there is no alert rule ${id}`)
}

/**
 * A deleted channel leaves every rule that named it.
 * @param {import('pg').PoolClient} client inside the channel's deletion
 * @param {number} channelId
 */
export async function removeChannelFromRules (client, channelId) {
  await client.query('UPDATE alert_rules SET channels = array_remove(channels, $1::bigint) WHERE $1 = ANY(channels)', [channelId])
}
