// Monitors: what to measure, from where, how often. Validation that needs the
// database (known locations) lives here; shape checks live in the API schemas.
import { ValidationError, NotFoundError } from '../runtime/errors.js'
import { LAB_HOSTNAMES } from '../runtime/lab-host.js'
import { checkPublicTarget } from '../measurement/targets.js'
import { badPortReason } from '../measurement/ports.js'
import { checkOptions, probeOf, probeTargets, PROBE_IDS as PROBES } from '../measurement/probes/index.js'
import { DEFAULT_MODES, FORCED_MODES, MODES } from '../measurement/modes.js'
import { checkJourney, journeyTargets } from '../measurement/journey/steps.js'
import { journeyOrigins, sealJourney } from '../measurement/journey/secrets.js'
import { JOURNEY_PROBE } from '../measurement/probes/journey.js'
import { BROWSERS, DEFAULT_BROWSERS } from '../measurement/browsers/index.js'

export { MODES } from '../measurement/modes.js'
export { PROBE_IDS as PROBES } from '../measurement/probes/index.js'
// Real sites are not hammered: one round a minute is the floor. The lab
// origin is ours, so lab monitors may run every 10 s.
export const MIN_INTERVAL_S = 60
export const MIN_LAB_INTERVAL_S = 10
export const DEFAULT_INTERVAL_S = 300
export const MAX_URL_LENGTH = 2048

// The verdict rule's default practical minimum effect: max(2%, 1 ms).
export const DEFAULT_MIN_EFFECT_PCT = 2
export const DEFAULT_MIN_EFFECT_MS = 1

// journey_secrets is never among them: only a round's claim opens it (lib/store/jobs.js).
const COLUMNS = `id, url, label, interval_s, locations, modes, browsers, probes, repeat_view, options, paused,
  aa_protocol, min_effect_pct, min_effect_ms, journey, created_at, updated_at, results_changed_at`

/** @param {string} url */
export function isLabUrl (url) {
  try { return LAB_HOSTNAMES.includes(new URL(url).hostname) } catch { return false }
}

/**
 * Whether a URL is on the lab origin: https on a lab host name and, when the
 * lab's port is known, that port. Another port of the lab host name is not
 * the lab: in local mode the name maps to this machine's loopback, where the
 * database and the API listen too.
 * @param {string} url
 * @param {number | null} [labPort]
 */
export function isLabOrigin (url, labPort = null) {
  const u = new URL(url)
  if (u.protocol !== 'https:' || !LAB_HOSTNAMES.includes(u.hostname)) return false
  return labPort === null || Number(u.port || 443) === labPort
}

/**
 * Checks a monitor URL and returns it normalised.
 * @param {unknown} value
 */
export function validateMonitorUrl (value) {
  if (typeof value !== 'string' || value.trim() === '') throw new ValidationError('url is required, for example https://example.com/', 'url')
  const raw = value.trim()
  if (raw.length > MAX_URL_LENGTH) throw new ValidationError(`url is longer than ${MAX_URL_LENGTH} characters`, 'url')
  let u
  try {
    u = new URL(raw)
  } catch {
    throw new ValidationError(`"${raw.slice(0, 100)}" is not a valid URL; write it in full, for example https://example.com/`, 'url')
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new ValidationError(`url must use http or https, not ${u.protocol.replace(':', '')}`, 'url')
  }
  if (u.username || u.password) throw new ValidationError('url must not contain a user name or password', 'url')
  if (!u.hostname) throw new ValidationError('url has no host name', 'url')
  // The lab's names are matched as written: with a trailing dot a lab page would be looked up as an outside name.
  if (u.hostname.endsWith('.') && LAB_HOSTNAMES.includes(u.hostname.slice(0, -1))) {
    throw new ValidationError(`url names the lab host with a trailing dot; write ${u.hostname.slice(0, -1)}`, 'url')
  }
  // What is stored is the URL percent-encoded, up to nine times the length
  // sent; past the limit it could be saved once and never sent back.
  const normalised = u.toString()
  if (normalised.length > MAX_URL_LENGTH) throw new ValidationError(`url is ${normalised.length} characters once percent-encoded, longer than ${MAX_URL_LENGTH}`, 'url')
  return normalised
}

/**
 * A URL a browser loads (a monitor's, or a journey's base): a monitor URL
 * on a port browsers will load. A webhook's URL, which Node posts to, may
 * use any port.
 * @param {unknown} value
 * @returns {string} normalised
 * @throws {ValidationError} naming url
 */
export function validatePageUrl (value) {
  const url = validateMonitorUrl(value)
  const badPort = badPortReason(new URL(url))
  if (badPort) throw new ValidationError(`url: ${badPort}`, 'url')
  return url
}

/**
 * Validates a full or partial monitor against the rules that span fields and
 * the database, and returns the fields to store.
 * @param {import('pg').Pool | import('pg').PoolClient} db
 * @param {Record<string, any>} input
 * @param {Record<string, any>} [existing] the stored monitor, for PATCH
 * @param {MonitorPolicy} [policy]
 */
async function checkMonitor (db, input, existing, policy = {}) {
  /** @type {Record<string, any>} the monitor's columns to store */
  const out = {}
  if (input.url !== undefined || !existing) {
    out.url = validatePageUrl(input.url)
  }
  const url = out.url ?? existing?.url
  if (input.label !== undefined) out.label = input.label === null ? null : String(input.label).trim() || null

  if (input.locations !== undefined) {
    const wanted = [...new Set(input.locations)]
    if (wanted.length === 0) throw new ValidationError('choose at least one location', 'locations')
    const { rows } = await db.query('SELECT id FROM locations WHERE id = ANY($1)', [wanted])
    const known = new Set(rows.map((r) => r.id))
    const unknown = wanted.filter((l) => !known.has(l))
    if (unknown.length) {
      const { rows: all } = await db.query('SELECT id FROM locations ORDER BY id')
      throw new ValidationError(`unknown location${unknown.length > 1 ? 's' : ''} ${unknown.map((l) => `"${l}"`).join(', ')}; known locations are ${all.map((r) => r.id).join(', ')}`, 'locations')
    }
    out.locations = wanted
  } else if (!existing) {
    out.locations = await defaultLocations(db, { labOnly: isLabOrigin(url, policy.labPort ?? null) })
  }
  if (input.modes !== undefined) {
    const modes = [...new Set(input.modes)]
    if (modes.length === 0) throw new ValidationError(`choose at least one mode (${MODES.join(', ')})`, 'modes')
    out.modes = MODES.filter((m) => modes.includes(m))
  }
  if (input.browsers !== undefined) {
    const browsers = [...new Set(input.browsers)]
    if (browsers.length === 0) throw new ValidationError(`choose at least one browser (${BROWSERS.join(', ')})`, 'browsers')
    const unknown = browsers.filter((b) => !BROWSERS.includes(b))
    if (unknown.length) throw new ValidationError(`unknown browser ${unknown.map((b) => `"${b}"`).join(', ')}; browsers are ${BROWSERS.join(', ')}`, 'browsers')
    out.browsers = BROWSERS.filter((b) => browsers.includes(b))
  }
  if (input.probes !== undefined) {
    const probes = [...new Set(input.probes)]
    if (probes.length === 0) throw new ValidationError(`choose at least one probe (${PROBES.join(', ')})`, 'probes')
    const unknown = probes.filter((p) => !PROBES.includes(p))
    if (unknown.length) throw new ValidationError(`unknown probe ${unknown.map((p) => `"${p}"`).join(', ')}; probes are ${PROBES.join(', ')}`, 'probes')
    out.probes = PROBES.filter((p) => probes.includes(p))
  }
  Object.assign(out, checkJourneyField(input, existing, url, policy))
  // A new monitor given a journey and no probes runs its journey.
  if (!existing && input.probes === undefined && out.journey) out.probes = [JOURNEY_PROBE]
  const journey = out.journey !== undefined ? out.journey : existing?.journey ?? null
  if ((out.probes ?? existing?.probes ?? []).includes(JOURNEY_PROBE) && !journey) {
    throw new ValidationError('the journey probe needs a journey: { steps: [...] } (docs/JOURNEYS.md)', input.probes !== undefined ? 'probes' : 'journey')
  }
  // A probe that runs in some browsers only (the journey: Chromium) is
  // refused on a monitor that measures in another too: every round of that
  // browser would fail. Checked when one of them changes, so a monitor
  // stored before can still be paused or renamed.
  const browsersNow = /** @type {readonly string[]} */ (out.browsers ?? existing?.browsers ?? DEFAULT_BROWSERS)
  const combinationChanged = !existing || input.browsers !== undefined || input.probes !== undefined || input.journey !== undefined
  for (const id of combinationChanged ? out.probes ?? existing?.probes ?? [] : []) {
    const probe = probeOf(id)
    const only = /** @type {readonly string[] | undefined} */ (probe.browsers)
    const others = only ? browsersNow.filter((b) => !only.includes(b)) : []
    if (others.length) {
      throw new ValidationError(`the ${probe.label.toLowerCase()} probe runs in ${only?.join(' and ')} only, not ${others.join(' or ')}: ` +
        `measure ${others.join(' and ')} in a monitor of its own`, input.browsers !== undefined ? 'browsers' : input.probes !== undefined ? 'probes' : 'journey')
    }
  }
  // An arm that none of the monitor's probes runs (the auto arm with only
  // the parallel or upload probe) would never measure anything: a round of
  // that arm alone has no result to store. Checked when either changes.
  // A new monitor given no modes runs the default arms its probes run.
  if (!existing || input.modes !== undefined || input.probes !== undefined) {
    const probesNow = /** @type {string[]} */ (out.probes ?? existing?.probes ?? ['page']).map(probeOf)
    const runs = (/** @type {any} */ mode) => probesNow.some((p) => p.modes.includes(mode))
    if (!existing && input.modes === undefined && !DEFAULT_MODES.every(runs)) out.modes = DEFAULT_MODES.filter(runs)
    const idle = /** @type {string[]} */ (out.modes ?? existing?.modes ?? DEFAULT_MODES).filter((mode) => !runs(mode))
    if (idle.length) {
      const runners = PROBES.map(probeOf).filter((p) => idle.every((mode) => p.modes.includes(/** @type {any} */ (mode)))).map((p) => p.id)
      throw new ValidationError(`no probe of this monitor runs the ${idle.join(' and ')} arm${idle.length > 1 ? 's' : ''}, which only the ${runners.join(' and ')} probe${runners.length > 1 ? 's' : ''} run: ` +
        `add one of them to probes, or remove ${idle.join(' and ')} from modes`, input.probes !== undefined && input.modes === undefined ? 'probes' : 'modes')
    }
  }
  // Options depend on the URL (same-origin rule), the probes (upload needs
  // a URL) and the locations (target rules), so a change to any of them
  // checks them again, and with them the targets.
  if (input.options !== undefined || input.url !== undefined || input.probes !== undefined || input.locations !== undefined || input.journey !== undefined) {
    const options = input.options !== undefined ? input.options : existing?.options
    const checked = checkOptions(options, { url, probes: out.probes ?? existing?.probes ?? ['page'] })
    if (input.options !== undefined) out.options = checked
    if (!policy.allowPrivateTargets) {
      const field = input.url === undefined && input.locations !== undefined ? 'locations' : 'url'
      const targets = [[url, field], ...probeTargets(checked).map((t) => [t.url, `options.${t.key}`]),
        // Every page a journey navigates to, as the monitor URL.
        ...(journey ? journeyTargets(journey).map(([u, f]) => [u, input.journey !== undefined ? f : field]) : [])]
      await checkTargets(db, /** @type {[string, string][]} */ (targets), out.locations ?? existing?.locations, policy)
    }
  }

  const interval = input.interval_s ?? existing?.interval_s ?? DEFAULT_INTERVAL_S
  const min = isLabUrl(url) ? MIN_LAB_INTERVAL_S : MIN_INTERVAL_S
  if (interval < min) {
    throw new ValidationError(`interval_s must be at least ${min} seconds${min === MIN_INTERVAL_S ? ` (only lab monitors, on ${LAB_HOSTNAMES.join(' or ')}, may run every ${MIN_LAB_INTERVAL_S} s)` : ''}`, 'interval_s')
  }
  if (input.interval_s !== undefined || !existing) out.interval_s = interval
  for (const k of ['repeat_view', 'paused']) if (input[k] !== undefined) out[k] = input[k]
  Object.assign(out, checkVerdictSettings(input, out, existing))
  return out
}

/**
 * The monitor's journey as given (an object, or YAML or JSON text), checked
 * against the monitor URL, its new secrets sealed and the stored ones it
 * keeps carried over; null removes it. Nothing when the input has none.
 * @param {Record<string, any>} input
 * @param {Record<string, any> | undefined} existing with journey_secrets when the input has a journey
 * @param {string} url
 * @param {MonitorPolicy} policy
 */
function checkJourneyField (input, existing, url, policy) {
  if (input.journey === undefined) return {}
  if (input.journey === null) return { journey: null, journey_secrets: {} }
  const checked = checkJourney(input.journey, { url })
  // Stored secrets go where the journey they were stored with went.
  const origins = existing ? new Set(journeyOrigins(existing.journey, existing.url)) : undefined
  const { journey, secrets } = sealJourney(checked, { box: policy.secrets, stored: existing?.journey_secrets, origins, storedIn: existing?.journey ?? null, url })
  return { journey, journey_secrets: secrets }
}

/**
 * The private-target guard at save time (lib/measurement/targets.js): every
 * URL a monitor's agents will fetch is on the lab origin, which only lab
 * locations reach, or on a host that resolves to public addresses only.
 * Lab locations are no exception for other targets: in local mode the lab
 * is this machine, and its Chromium reaches what this machine reaches.
 * @param {import('pg').Pool | import('pg').PoolClient} db
 * @param {[string, string][]} targets URL and the field it came from
 * @param {string[]} locations
 * @param {MonitorPolicy} policy
 */
async function checkTargets (db, targets, locations, { labPort = null, resolve } = {}) {
  const { rows } = await db.query("SELECT id FROM locations WHERE id = ANY($1) AND kind <> 'lab' ORDER BY id", [locations])
  const notLab = rows.map((r) => r.id)
  const checked = new Set()
  for (const [url, field] of targets) {
    const { origin, hostname } = new URL(url)
    if (checked.has(origin)) continue
    checked.add(origin)
    if (isLabOrigin(url, labPort)) {
      if (notLab.length) {
        throw new ValidationError(`${field} is on the lab origin (${origin}), which only lab locations reach, not ${notLab.join(', ')}`, field)
      }
      continue
    }
    if (LAB_HOSTNAMES.includes(hostname)) {
      throw new ValidationError(`${field} (${origin}) is not the lab origin${labPort === null ? '' : ` https://${hostname}:${labPort}`}; ` +
        'lab host names reach nothing else', field)
    }
    await checkPublicTarget(url, { resolve, field })
  }
}

/**
 * The private-target guard for a journey that is not (yet) a monitor's: the
 * URL it starts from and every page it navigates to, as a monitor's
 * (lib/store/journey-trials.js).
 * @param {import('pg').Pool} db
 * @param {string} url
 * @param {{ steps: import('../measurement/journey/steps.js').Step[] }} journey
 * @param {string[]} locations
 * @param {MonitorPolicy} policy
 */
export async function checkJourneyTargets (db, url, journey, locations, policy) {
  await checkTargets(db, [[url, 'url'], ...journeyTargets(journey)], locations, policy)
}

/**
 * A/A calibration and the practical minimum effect. An A/A monitor needs
 * both arms, since its arms are stored as mode h2 (arm A) and h3 (arm B).
 * @param {Record<string, any>} input
 * @param {Record<string, any>} checked fields already validated (modes)
 * @param {Record<string, any>} [existing]
 */
function checkVerdictSettings (input, checked, existing) {
  /** @type {{ aa_protocol?: string | null, min_effect_pct?: number, min_effect_ms?: number, modes?: string[] }} */
  const out = {}
  if (input.aa_protocol !== undefined) {
    if (input.aa_protocol !== null && !FORCED_MODES.includes(input.aa_protocol)) {
      throw new ValidationError(`aa_protocol must be h2, h3 or null, not ${JSON.stringify(input.aa_protocol)}`, 'aa_protocol')
    }
    out.aa_protocol = input.aa_protocol
  }
  const aa = out.aa_protocol !== undefined ? out.aa_protocol : existing?.aa_protocol ?? null
  const modes = checked.modes ?? existing?.modes ?? (aa ? FORCED_MODES : DEFAULT_MODES)
  if (aa && (modes.length !== FORCED_MODES.length || !FORCED_MODES.every((m) => modes.includes(m)))) {
    const field = input.modes !== undefined && input.aa_protocol === undefined ? 'modes' : 'aa_protocol'
    throw new ValidationError(`an A/A monitor (aa_protocol ${aa}) runs two arms, stored as modes h2 and h3; modes must be exactly h2 and h3`, field)
  }
  // A new A/A monitor that names no modes gets its two arms, not the default three.
  if (aa && !existing && !checked.modes) out.modes = [...FORCED_MODES]
  for (const [k, max] of /** @type {const} */ ([['min_effect_pct', 100], ['min_effect_ms', Infinity]])) {
    if (input[k] === undefined) continue
    const v = input[k]
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > max) {
      throw new ValidationError(`${k} must be a number from 0${max === Infinity ? ' up' : ` to ${max}`}, not ${JSON.stringify(v)}`, k)
    }
    out[k] = v
  }
  return out
}

/**
 * Locations that have an agent registered; all locations when none has.
 * For a page on the lab origin, the lab's locations among them (the only
 * ones that reach it), unless there are none: then the target check says why.
 * @param {import('pg').Pool | import('pg').PoolClient} db
 * @param {{ labOnly?: boolean }} [opts]
 */
async function defaultLocations (db, { labOnly = false } = {}) {
  const { rows } = await db.query(
    `SELECT l.id, l.kind = 'lab' AS lab, EXISTS (SELECT 1 FROM agents a WHERE a.location_id = l.id AND a.revoked_at IS NULL) AS staffed
       FROM locations l ORDER BY l.id`)
  const staffed = rows.some((r) => r.staffed) ? rows.filter((r) => r.staffed) : rows
  const reach = labOnly ? staffed.filter((r) => r.lab) : staffed
  return (reach.length ? reach : staffed).map((r) => r.id)
}

/**
 * @typedef {{ allowPrivateTargets?: boolean, labPort?: number | null, resolve?: (host: string) => Promise<string[]>,
 *   secrets?: import('../runtime/secret-box.js').SecretBox | null }} MonitorPolicy
 * allowPrivateTargets: monitors may target any host, private and
 * unresolvable ones included (lib/measurement/targets.js); off unless the
 * deployment says so. labPort: the lab origin's port (H3LENS_LAB_PORT), when
 * known. resolve: how host names are resolved (the system's resolver by default).
 * secrets: the box a journey's secrets are sealed with (lib/runtime/secret-box.js).
 */

/** @param {import('pg').Pool} db @param {Record<string, any>} input @param {MonitorPolicy} [policy] */
export async function createMonitor (db, input, policy) {
  const m = await checkMonitor(db, input, undefined, policy)
  const { rows } = await db.query(
    `INSERT INTO monitors (url, label, interval_s, locations, modes, probes, repeat_view, options, paused,
                           aa_protocol, min_effect_pct, min_effect_ms, journey, journey_secrets, browsers)
     VALUES ($1, $2, $3, $4, $5, coalesce($6, '{page}'::text[]),
             coalesce($7, false), coalesce($8, '{}'::jsonb), coalesce($9, false), $10, $11, $12, $13, coalesce($14, '{}'::jsonb), $15)
     RETURNING ${COLUMNS}`,
    [m.url, m.label ?? null, m.interval_s, m.locations, m.modes ?? [...DEFAULT_MODES], m.probes ?? null,
      m.repeat_view ?? null, m.options ?? null, m.paused ?? null, m.aa_protocol ?? null,
      m.min_effect_pct ?? DEFAULT_MIN_EFFECT_PCT, m.min_effect_ms ?? DEFAULT_MIN_EFFECT_MS, m.journey ?? null, m.journey_secrets ?? null, m.browsers ?? [...DEFAULT_BROWSERS]])
  return rows[0]
}

/** @param {import('pg').Pool | import('pg').PoolClient} db @param {number} id */
export async function getMonitor (db, id) {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM monitors WHERE id = $1 AND deleted_at IS NULL`, [id])
  if (!rows[0]) throw new NotFoundError(`monitor ${id} does not exist`)
  return rows[0]
}

/**
 * Note that results of the monitor were written outside the agents' flow
 * (an import): cached comparisons of it are no longer current (migration 017).
 * @param {import('pg').Pool | import('pg').PoolClient} db
 * @param {number} id
 */
export async function markResultsChanged (db, id) {
  await db.query('UPDATE monitors SET results_changed_at = clock_timestamp() WHERE id = $1', [id])
}

/** @param {import('pg').Pool | import('pg').PoolClient} db */
export async function listMonitors (db) {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM monitors WHERE deleted_at IS NULL ORDER BY id`)
  return rows
}

/** @param {import('pg').Pool | import('pg').PoolClient} db @param {number} id @param {Record<string, any>} patch @param {MonitorPolicy} [policy] */
export async function updateMonitor (db, id, patch, policy) {
  const existing = await getMonitor(db, id)
  // A journey given again may keep secrets stored before ({ stored: ref }).
  if (patch.journey) existing.journey_secrets = await journeySecrets(db, id)
  const m = await checkMonitor(db, patch, existing, policy)
  const sets = []
  const values = [id]
  for (const [k, v] of Object.entries(m)) {
    values.push(v)
    sets.push(`${k} = $${values.length}`)
  }
  if (!sets.length) return existing
  // A new interval starts a new grid of rounds from now.
  if (m.interval_s !== undefined && m.interval_s !== existing.interval_s) sets.push('anchor_at = now()')
  const { rows } = await db.query(
    `UPDATE monitors SET ${sets.join(', ')}, updated_at = now() WHERE id = $1 AND deleted_at IS NULL RETURNING ${COLUMNS}`,
    values)
  if (!rows[0]) throw new NotFoundError(`monitor ${id} does not exist`)
  return rows[0]
}

/**
 * A monitor's sealed journey secrets, by reference: for the claim of a
 * round (opened for its agent) and for a journey that keeps them.
 * @param {import('pg').Pool | import('pg').PoolClient} db
 * @param {number} id
 * @returns {Promise<Record<string, string>>}
 */
export async function journeySecrets (db, id) {
  const { rows } = await db.query('SELECT journey_secrets FROM monitors WHERE id = $1', [id])
  return rows[0]?.journey_secrets ?? {}
}

/**
 * After a key rotation (docs/JOURNEYS.md): every journey secret sealed with
 * another key than the current one is opened (with the previous key) and
 * sealed again with the current one. Trials in flight are short-lived and
 * simply dropped. A secret that opens with neither key fails the start,
 * naming its monitor, rather than failing every round later.
 * @param {import('pg').Pool} db
 * @param {import('../runtime/secret-box.js').SecretBox} box
 * @returns {Promise<number>} secrets sealed again
 */
export async function resealJourneySecrets (db, box) {
  const { rows } = await db.query("SELECT id, journey_secrets FROM monitors WHERE journey_secrets <> '{}'::jsonb")
  let n = 0
  for (const m of rows) {
    const stale = Object.entries(/** @type {Record<string, string>} */ (m.journey_secrets)).filter(([, sealed]) => !box.isCurrent(sealed))
    if (!stale.length) continue
    const fresh = { ...m.journey_secrets }
    for (const [ref, sealed] of stale) {
      try {
        fresh[ref] = box.seal(box.open(sealed))
      } catch (/** @type {any} */ err) {
        throw new Error(`monitor ${m.id}: ${err.message}`)
      }
    }
    await db.query('UPDATE monitors SET journey_secrets = $2 WHERE id = $1 AND journey_secrets = $3', [m.id, fresh, m.journey_secrets])
    n += stale.length
  }
  await db.query("DELETE FROM journey_trials WHERE journey_secrets <> '{}'::jsonb")
  return n
}

/**
 * Soft delete: the monitor stops running and disappears from the API; its
 * results stay in the database for export and audits.
 * @param {import('pg').Pool} db @param {number} id
 */
export async function deleteMonitor (db, id) {
  const { rowCount } = await db.query('UPDATE monitors SET deleted_at = now() WHERE id = $1 AND deleted_at IS NULL', [id])
  if (!rowCount) throw new NotFoundError(`monitor ${id} does not exist`)
  await db.query("UPDATE jobs SET state = 'cancelled', finished_at = now(), updated_at = now() WHERE monitor_id = $1 AND state = 'queued'", [id])
}

/**
 * A monitor's results stay exportable after the monitor is deleted (DELETE
 * keeps them), so "unknown" means never created, not "deleted".
 * @param {import('pg').Pool} db
 * @param {number} monitorId
 */
export async function assertMonitorExists (db, monitorId) {
  const { rows } = await db.query('SELECT 1 FROM monitors WHERE id = $1', [monitorId])
  if (!rows[0]) throw new NotFoundError(`monitor ${monitorId} does not exist`)
}

/**
 * Monitors ever created, deleted ones included (a database whose monitors
 * were all deleted is not an empty one to seed).
 * @param {import('pg').Pool} db
 */
export async function countMonitors (db) {
  const { rows } = await db.query('SELECT count(*)::int AS n FROM monitors')
  return rows[0].n
}
