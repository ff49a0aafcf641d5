// SQL for the round_summaries table (migrations/013_round_summaries.sql):
// one row per round, probe and view, with each arm's state and values,
// kept current by a trigger on results in the results' own transaction. The
// comparison (lib/analysis/comparison.js) reads its rounds here instead of grouping
// the window's results into rounds.
import { BROWSERS } from '../measurement/browsers/index.js'
import { metricOf } from '../measurement/metrics.js'
import { withTransaction } from './transaction.js'

/**
 * @typedef {{ kind: 'count', location_id: string, h2: string, h3: string, imported: boolean | null, n: number }
 *   | { kind: 'used', location_id: string, h2: string, h3: string, n: number, job_id: string, k: number, h2_v: number[] | null, h3_v: number[] | null }
 *   | { kind: 'exact', location_id: string, h2_q: number[], h3_q: number[], h2_n: number, h3_n: number }} RoundWindowRow
 */

/**
 * A window's rounds of one series: how many rounds at each location fell
 * into each pair of arm states for this metric, and the rounds the analysis
 * uses with their values, evenly subsampled to `cap` per location (the k-th
 * usable round by (time, job) is used when k·cap / n and (k + 1)·cap / n
 * differ in their whole part, so exactly min(n, cap) rounds).
 *
 * Three reads of the series index: the state counts; the usable rounds'
 * job ids in order, one array per location, from which the rounds to use
 * are picked here; then the values of just those. Grouping, numbering and
 * subsampling in one statement (window functions over every round) took
 * ~1 s of a 30-day window's 216,000 rounds on the 2 shared cores.
 *
 * With `qs`, a location with more usable rounds than `cap` also gets its
 * arms' exact percentiles over all of them (kind 'exact'). All reads see
 * one snapshot.
 *
 * States per metric: an ok arm without this metric's value is no_value; an
 * arm with no result is missing.
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, metric: string, probe: string, view: string, browser?: string, from: Date, to: Date, analysis: string, cap: number, qs?: number[], timeoutMs?: number }} w
 *   browser: the series' browser (a round is one browser's; Chromium when not said)
 * @returns {Promise<RoundWindowRow[]>}
 */
export async function readRoundWindow (db, w) {
  // One snapshot for every read: the counts, the rounds picked, their exact
  // percentiles and their values describe the same rounds while agents store
  // new ones.
  return withTransaction(db, (client) => readWindow(client, w), { begin: 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' })
}

/**
 * Whether a round that lacks an arm was imported: none of its results came
 * from an agent. An agent (or a WebPageTest location) stores a round's
 * results together, every arm it was asked for, so its rounds lack only
 * the arms the monitor did not run then (its modes changed); only an
 * import can leave an arm's result out. Null for a round with every arm.
 * @param {string} lacks SQL: the round lacks an arm
 */
const IMPORTED = (lacks) => `CASE WHEN ${lacks} THEN NOT EXISTS (SELECT 1 FROM results r WHERE r.job_id = s.job_id AND r.agent_id IS NOT NULL) END`

/**
 * @param {import('pg').PoolClient} db
 * @param {Parameters<typeof readRoundWindow>[1]} w
 * @returns {Promise<RoundWindowRow[]>}
 */
async function readWindow (db, w) {
  const column = metricOf(w.metric).column
  const value = (/** @type {'h2' | 'h3'} */ arm) => column
    ? `CASE WHEN s.${arm}_${column} IS NOT NULL THEN ARRAY[s.${arm}_${column}] END`
    : `s.${arm}_samples`
  const has = (/** @type {'h2' | 'h3'} */ arm) => column ? `s.${arm}_${column} IS NOT NULL` : `s.${arm}_samples IS NOT NULL`
  const state = (/** @type {'h2' | 'h3'} */ arm) => `CASE WHEN s.${arm}_state = 'ok' AND NOT (${has(arm)}) THEN 'no_value' ELSE s.${arm}_state END`
  const usable = w.analysis === 'itt'
    ? `${state('h2')} IN ('ok', 'failed', 'fallback', 'unsupported') AND ${state('h3')} IN ('ok', 'failed', 'fallback', 'unsupported')`
    : `s.h2_state = 'ok' AND s.h3_state = 'ok' AND ${has('h2')} AND ${has('h3')}`
  // The browser is spliced in as a literal from the catalogue's list, so
  // the other statements keep their parameter numbers.
  const series = `s.monitor_id = $1 AND s.probe = $2 AND s.view = $3 AND s.browser = '${browserOf(w)}' AND s.time >= $4 AND s.time < $5`
  const args = [w.monitorId, w.probe, w.view, w.from, w.to]
  // imported: of a round with an arm missing, whether no agent measured it
  // (lib/analysis/comparison.js unloaded).
  const { rows: counts } = await db.query(
    `SELECT 'count' AS kind, s.location_id, coalesce(${state('h2')}, 'missing') AS h2, coalesce(${state('h3')}, 'missing') AS h3,
            ${IMPORTED('s.h2_state IS NULL OR s.h3_state IS NULL')} AS imported, count(*)::int AS n
       FROM round_summaries s WHERE ${series} GROUP BY 2, 3, 4, 5`, args)
  const { rows: usableRounds } = await db.query(
    `SELECT s.location_id, array_agg(s.job_id ORDER BY s.time, s.job_id) AS jobs
       FROM round_summaries s WHERE ${series} AND ${usable} GROUP BY 1`, args)
  const over = usableRounds.filter((r) => r.jobs.length > w.cap).map((r) => r.location_id)
  const exact = w.qs?.length && over.length ? await exactQuantiles(db, w, { column, usable, series, args, value, over }) : []
  /** @type {Map<string, { location_id: string, k: number, n: number }>} */
  const picked = new Map()
  for (const { location_id: location, jobs } of usableRounds) {
    const n = jobs.length
    for (let k = 0; k < n; k++) {
      if (n <= w.cap || Math.floor(k * w.cap / n) !== Math.floor((k + 1) * w.cap / n)) picked.set(String(jobs[k]), { location_id: location, k, n })
    }
  }
  const { rows: values } = await db.query(
    `SELECT s.job_id::text AS job_id, ${state('h2')} AS h2, ${state('h3')} AS h3, ${value('h2')} AS h2_v, ${value('h3')} AS h3_v
       FROM round_summaries s WHERE s.job_id = ANY($6::bigint[]) AND ${series}`, [...args, [...picked.keys()]])
  const used = values.map((r) => {
    const p = /** @type {{ location_id: string, k: number, n: number }} */ (picked.get(r.job_id))
    return { kind: /** @type {'used'} */ ('used'), location_id: p.location_id, h2: r.h2, h3: r.h3, n: p.n, k: p.k, job_id: r.job_id, h2_v: r.h2_v, h3_v: r.h3_v }
  })
  return [...counts, ...used, ...exact]
}

/**
 * percentile_cont of each arm over every usable round of the locations
 * whose rounds are subsampled (`over`), so they still show the percentiles
 * of all of them. Intention to treat fills an arm without a value as the
 * comparison does: the timeout, as many times as the other arm has samples
 * (at least once).
 * @param {import('pg').Pool | import('pg').PoolClient} db
 * @param {{ qs?: number[], analysis: string, timeoutMs?: number }} w
 * @param {{ column: string | null, usable: string, series: string, args: any[], value: (arm: 'h2' | 'h3') => string, over: string[] }} q
 * @returns {Promise<RoundWindowRow[]>}
 */
async function exactQuantiles (db, w, { column, usable, series, args, value, over }) {
  const itt = w.analysis === 'itt'
  // $8, the timeout, only where intention to treat fills with it.
  const params = [...args, w.qs, over, ...(itt ? [w.timeoutMs ?? 30000] : [])]
  const scope = `${series} AND ${usable} AND s.location_id = ANY($7::text[])`
  if (column) {
    const v = (/** @type {'h2' | 'h3'} */ arm) => itt ? `coalesce(s.${arm}_${column}, $8::float8)` : `s.${arm}_${column}`
    const { rows } = await db.query(
      `SELECT s.location_id, percentile_cont($6::float8[]) WITHIN GROUP (ORDER BY ${v('h2')}) AS h2_q,
              percentile_cont($6::float8[]) WITHIN GROUP (ORDER BY ${v('h3')}) AS h3_q, count(*)::int AS n
         FROM round_summaries s WHERE ${scope} GROUP BY 1`, params)
    return rows.map((r) => ({ kind: /** @type {'exact'} */ ('exact'), location_id: r.location_id, h2_q: r.h2_q, h3_q: r.h3_q, h2_n: r.n, h3_n: r.n }))
  }
  const filled = (/** @type {'h2' | 'h3'} */ arm, /** @type {'h2' | 'h3'} */ other) => itt
    ? `CASE WHEN cardinality(${value(arm)}) > 0 THEN ${value(arm)} ELSE array_fill($8::float8, ARRAY[greatest(coalesce(cardinality(${value(other)}), 0), 1)]) END`
    : value(arm)
  const { rows } = await db.query(
    `SELECT s.location_id, a.arm, percentile_cont($6::float8[]) WITHIN GROUP (ORDER BY a.v) AS q, count(*)::int AS n
       FROM round_summaries s
       CROSS JOIN LATERAL (SELECT 'h2' AS arm, unnest(${filled('h2', 'h3')}) AS v UNION ALL SELECT 'h3', unnest(${filled('h3', 'h2')})) a
      WHERE ${scope} GROUP BY 1, 2`, params)
  /** @type {Map<string, RoundWindowRow & { kind: 'exact' }>} */
  const byLocation = new Map()
  for (const r of rows) {
    const e = byLocation.get(r.location_id) ?? { kind: /** @type {'exact'} */ ('exact'), location_id: r.location_id, h2_q: [], h3_q: [], h2_n: 0, h3_n: 0 }
    e[r.arm === 'h2' ? 'h2_q' : 'h3_q'] = r.q
    e[r.arm === 'h2' ? 'h2_n' : 'h3_n'] = r.n
    byLocation.set(r.location_id, e)
  }
  return [...byLocation.values()]
}

/**
 * TimescaleDB: drop summaries with the raw results they summarise (the
 * results' retention policy, H3LENS_RETENTION_DAYS). On plain PostgreSQL
 * nothing drops results, so nothing drops summaries either.
 * @param {import('pg').Pool} db
 * @param {{ retentionDays?: number }} opts
 */
export async function applyRoundSummaryRetention (db, { retentionDays }) {
  await db.query(`SELECT remove_retention_policy('round_summaries', if_exists => true)`)
  if (retentionDays !== undefined && retentionDays > 0) await db.query(`SELECT add_retention_policy('round_summaries', make_interval(days => $1))`, [retentionDays])
}

/**
 * @typedef {{ kind: 'count', location_id: string, h2: string, h3: string, auto: string, imported: boolean | null, n: number }
 *   | { kind: 'used', location_id: string, job_id: string, n: number, k: number, h2_v: number, h3_v: number, auto_v: number }} VisitRoundRow
 */

/**
 * A window's rounds of one monitor for the auto arm's analysis: per round,
 * the forced arms' first (cold) view and the auto arm's `visit` (first or
 * returning). The returning visit is paired with the forced arms' first
 * view: both load without a live connection or a cached response, and the
 * forced arms have no returning visit of their own.
 *
 * Like readRoundWindow: counts of rounds by the three arms' states for this
 * metric (no_value, missing as there), then the usable rounds (all three
 * arms ok with a value) evenly subsampled to `cap` per location, with their
 * values; one snapshot. Column metrics only: the auto arm runs the page probe.
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, metric: string, visit: 'first' | 'returning', browser?: string, from: Date, to: Date, cap: number }} w
 * @returns {Promise<VisitRoundRow[]>}
 */
export async function readVisitRounds (db, w) {
  const column = metricOf(w.metric).column
  if (!column) throw new TypeError(`${w.metric} has no column; the auto arm's analysis reads page timings`)
  return withTransaction(db, async (client) => {
    const a = w.visit === 'returning' ? 'v' : 's'
    const state = (/** @type {string} */ alias, /** @type {string} */ arm) =>
      `CASE WHEN ${alias}.${arm}_state = 'ok' AND ${alias}.${arm}_${column} IS NULL THEN 'no_value' ELSE ${alias}.${arm}_state END`
    const from = `round_summaries s
      LEFT JOIN round_summaries v ON v.job_id = s.job_id AND v.probe = s.probe AND v.time = s.time AND v.view = 'returning'
      WHERE s.monitor_id = $1 AND s.probe = 'page' AND s.view = 'first' AND s.browser = '${browserOf(w)}' AND s.time >= $2 AND s.time < $3`
    const args = [w.monitorId, w.from, w.to]
    const usable = `s.h2_state = 'ok' AND s.h3_state = 'ok' AND ${a}.auto_state = 'ok'
      AND s.h2_${column} IS NOT NULL AND s.h3_${column} IS NOT NULL AND ${a}.auto_${column} IS NOT NULL`
    const { rows: counts } = await client.query(
      `SELECT 'count' AS kind, s.location_id, coalesce(${state('s', 'h2')}, 'missing') AS h2, coalesce(${state('s', 'h3')}, 'missing') AS h3,
              coalesce(${state(a, 'auto')}, 'missing') AS auto,
              ${IMPORTED(`s.h2_state IS NULL OR s.h3_state IS NULL OR ${a}.auto_state IS NULL`)} AS imported, count(*)::int AS n
         FROM ${from} GROUP BY 2, 3, 4, 5, 6`, args)
    const { rows: usableRounds } = await client.query(
      `SELECT s.location_id, array_agg(s.job_id ORDER BY s.time, s.job_id) AS jobs FROM ${from} AND ${usable} GROUP BY 1`, args)
    /** @type {Map<string, { location_id: string, k: number, n: number }>} */
    const picked = new Map()
    for (const { location_id: location, jobs } of usableRounds) {
      const n = jobs.length
      for (let k = 0; k < n; k++) {
        if (n <= w.cap || Math.floor(k * w.cap / n) !== Math.floor((k + 1) * w.cap / n)) picked.set(String(jobs[k]), { location_id: location, k, n })
      }
    }
    const { rows: values } = await client.query(
      `SELECT s.job_id::text AS job_id, s.h2_${column} AS h2_v, s.h3_${column} AS h3_v, ${a}.auto_${column} AS auto_v
         FROM ${from} AND s.job_id = ANY($4::bigint[])`, [...args, [...picked.keys()]])
    const used = values.map((r) => {
      const p = /** @type {{ location_id: string, k: number, n: number }} */ (picked.get(r.job_id))
      return { kind: /** @type {'used'} */ ('used'), location_id: p.location_id, job_id: r.job_id, n: p.n, k: p.k, h2_v: r.h2_v, h3_v: r.h3_v, auto_v: r.auto_v }
    })
    return [...counts, ...used]
  }, { begin: 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' })
}

/**
 * Per location, the rounds of a window in which each forced arm ran (page
 * probe, first view) and those in which it failed: an error, a timeout or a
 * refused QUIC handshake. The auto arm's story reads them to tell "QUIC
 * blocked on this path" (H3's) and whether a page the auto arm fails on
 * loads when forced (H2's); lib/analysis/auto.js counts the same states
 * from readVisitRounds, the overview asks for them without the paired
 * analysis.
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, from: Date, to: Date, browser?: string }} w
 * @returns {Promise<{ location_id: string, h2: { attempted: number, failed: number }, h3: { attempted: number, failed: number } }[]>}
 */
export async function forcedFailures (db, { monitorId, from, to, browser }) {
  const { rows } = await db.query(
    `SELECT location_id,
            count(*) FILTER (WHERE h2_state IS NOT NULL)::int AS h2_attempted, count(*) FILTER (WHERE h2_state IN ('failed', 'unsupported', 'fallback'))::int AS h2_failed,
            count(*) FILTER (WHERE h3_state IS NOT NULL)::int AS h3_attempted, count(*) FILTER (WHERE h3_state IN ('failed', 'unsupported', 'fallback'))::int AS h3_failed
       FROM round_summaries
      WHERE monitor_id = $1 AND probe = 'page' AND view = 'first' AND browser = $4 AND time >= $2 AND time < $3
      GROUP BY 1`, [monitorId, from, to, browserOf({ browser })])
  return rows.map((r) => ({
    location_id: r.location_id,
    h2: { attempted: r.h2_attempted, failed: r.h2_failed },
    h3: { attempted: r.h3_attempted, failed: r.h3_failed }
  }))
}

/**
 * Whether a monitor has any round of a probe (a journey step renamed or
 * removed since keeps its rounds under its old name), in a browser, or of
 * both, in the round summaries or in the rollups that outlive them.
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, probe?: string, browser?: string }} w
 */
export async function seriesWasMeasured (db, { monitorId, probe, browser }) {
  const { rows: [row] } = await db.query(
    `SELECT EXISTS (SELECT 1 FROM round_summaries WHERE monitor_id = $1 AND ($2::text IS NULL OR probe = $2) AND ($3::text IS NULL OR browser = $3))
         OR EXISTS (SELECT 1 FROM rollups WHERE monitor_id = $1 AND ($2::text IS NULL OR probe = $2) AND ($3::text IS NULL OR browser = $3)) AS measured`,
    [monitorId, probe ?? null, browser ?? null])
  return row.measured
}

/**
 * Which of `browsers` have a round of the series in the window, in their
 * order: a browser a monitor ran before is still compared over the windows
 * it has rounds in.
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, probe: string, view: string, from: Date, to: Date, browsers: readonly string[] }} w
 * @returns {Promise<string[]>}
 */
export async function browsersWithRounds (db, { monitorId, probe, view, from, to, browsers }) {
  if (!browsers.length) return []
  const { rows } = await db.query(
    `SELECT b FROM unnest($5::text[]) WITH ORDINALITY AS u (b, i) WHERE EXISTS (
       SELECT 1 FROM round_summaries s WHERE s.monitor_id = $1 AND s.probe = $2 AND s.view = $3 AND s.browser = b AND s.time >= $4 AND s.time < $6)
      ORDER BY i`,
    [monitorId, probe, view, from, browsers.map((b) => browserOf({ browser: b })), to])
  return rows.map((r) => r.b)
}

/**
 * The browser of a read (Chromium when not said), checked against the
 * catalogue's list: some reads splice it into their SQL as a literal, so
 * their other statements keep their parameter numbers.
 * @param {{ browser?: string }} w
 */
export function browserOf (w) {
  const browser = w.browser ?? 'chromium'
  if (!BROWSERS.includes(/** @type {any} */ (browser))) throw new Error(`unknown browser ${JSON.stringify(browser)}; browsers are ${BROWSERS.join(', ')}`)
  return browser
}
