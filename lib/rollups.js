// Rollups are maintained by the scheduler, not on the ingest path. Results
// are written with a row in rollup_pending in the same transaction; the
// scheduler folds pending results into the 5m/1h/1d rollups in batches.
// Why: ingest stays one INSERT per batch (the HTTP target is 5,000 results/s
// on 2 cores), while a result touches 8 metrics × 3 tiers = 24 rollup rows,
// and batching folds many results into each row. Queries merge rollups with
// the pending rows in one snapshot, so answers are exact and current anyway.
import { newSketch, addToSketch, encodeSketch, decodeSketch, mergeSketches } from './stats/index.js'
import { metricSamples, ROLLUP_METRICS } from './metrics-def.js'

export const TIERS = Object.freeze({ '5m': 5 * 60e3, '1h': 3600e3, '1d': 86400e3 })

// One worker at a time folds pending rows (a scheduler replica that does not
// get the lock just skips); `rollups rebuild` holds it for its whole run, so
// a rebuild never races an incremental fold.
const ROLLUP_LOCK = 0x68337275

const RESULT_FIELDS = `id, time, monitor_id, location_id, mode, view, probe, status, protocol_ok,
  ttfb_ms, load_ms, dns_ms, connect_ms, tls_ms, fcp_ms, lcp_ms, dcl_ms, details`

const KEY_COLUMNS = ['monitor_id', 'tier', 'metric', 'probe', 'view', 'location_id', 'mode', 'bucket']

/** @param {Date|number} t @param {number} width */
export function bucketStart (t, width) {
  const ms = +t
  return new Date(ms - (ms % width))
}

/**
 * Aggregate results into rollup deltas, keyed by the rollup primary key.
 * Samples go into five-minute sketches only; hour and day sketches are merges
 * of those. Merging ~100 bins is far cheaper than adding every sample three
 * times: 100k results fold in ~1.5 s instead of ~13 s (measured on 2 cores).
 * @param {Record<string, any>[]} results
 * @returns {Map<string, { key: any[], count: number, runs: number, errors: number, fallbacks: number, sketch: any }>}
 */
export function aggregate (results) {
  /** @type {Map<string, { base: any[], tier: string, bucket: number, runs: number, errors: number, fallbacks: number, metrics: Map<string, { count: number, sketch: any }>, children: Set<any> }>} */
  const nodes = new Map()
  const node = (base, baseKey, tier, bucket) => {
    const k = `${baseKey}|${tier}|${bucket}`
    let n = nodes.get(k)
    if (!n) nodes.set(k, (n = { base, tier, bucket, runs: 0, errors: 0, fallbacks: 0, metrics: new Map(), children: new Set() }))
    return n
  }
  for (const r of results) {
    const base = [r.monitor_id, r.probe, r.view, r.location_id, r.mode]
    const baseKey = base.join('|')
    const t = +r.time
    const n5 = node(base, baseKey, '5m', t - (t % TIERS['5m']))
    const n1h = node(base, baseKey, '1h', t - (t % TIERS['1h']))
    const n1d = node(base, baseKey, '1d', t - (t % TIERS['1d']))
    n1h.children.add(n5)
    n1d.children.add(n1h)
    for (const n of [n5, n1h, n1d]) {
      n.runs++
      if (r.status === 'error' || r.status === 'timeout') n.errors++
      if (r.status === 'protocol_mismatch') n.fallbacks++
    }
    if (r.status !== 'ok' || !r.protocol_ok) continue
    for (const [metric, values] of metricSamples(r)) {
      let m = n5.metrics.get(metric)
      if (!m) n5.metrics.set(metric, (m = { count: 0, sketch: newSketch() }))
      for (const v of values) addToSketch(m.sketch, v)
      m.count += values.length
    }
  }
  // Hours from five-minute buckets, then days from hours.
  for (const tier of ['1h', '1d']) {
    for (const n of nodes.values()) {
      if (n.tier !== tier) continue
      const byMetric = new Map()
      for (const child of n.children) {
        for (const [metric, m] of child.metrics) {
          if (!byMetric.has(metric)) byMetric.set(metric, [])
          byMetric.get(metric).push(m)
        }
      }
      for (const [metric, parts] of byMetric) {
        n.metrics.set(metric, { count: parts.reduce((c, p) => c + p.count, 0), sketch: mergeSketches(parts.map((p) => p.sketch)) })
      }
    }
  }
  const out = new Map()
  for (const n of nodes.values()) {
    const [monitorId, probe, view, locationId, mode] = n.base
    const bucket = new Date(n.bucket)
    // Runs, errors and fallbacks go on every metric's row, so any one
    // metric's rows carry the series' outcome counts.
    for (const metric of ROLLUP_METRICS) {
      const m = n.metrics.get(metric)
      const key = [monitorId, n.tier, metric, probe, view, locationId, mode, bucket]
      out.set(`${monitorId}|${n.tier}|${metric}|${probe}|${view}|${locationId}|${mode}|${n.bucket}`, {
        key, count: m?.count ?? 0, runs: n.runs, errors: n.errors, fallbacks: n.fallbacks, sketch: m?.sketch ?? null
      })
    }
  }
  return out
}

/**
 * Merge aggregated deltas into the rollups table. Rows are created empty
 * first and then locked in key order, so concurrent writers serialise on the
 * row instead of overwriting each other.
 * @param {import('pg').PoolClient} client
 * @param {ReturnType<typeof aggregate>} deltas
 */
async function applyDeltas (client, deltas) {
  if (!deltas.size) return
  const entries = [...deltas.values()]
  const cols = KEY_COLUMNS.map((_, i) => entries.map((e) => e.key[i]))
  const keyArgs = `$1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[]`
  await client.query(
    `INSERT INTO rollups (${KEY_COLUMNS.join(', ')})
     SELECT * FROM unnest(${keyArgs}) ON CONFLICT DO NOTHING`, cols)
  const { rows } = await client.query(
    `SELECT r.${KEY_COLUMNS.join(', r.')}, r.count, r.runs, r.errors, r.fallbacks, r.sketch
       FROM rollups r JOIN unnest(${keyArgs}) AS k(${KEY_COLUMNS.join(', ')}) USING (${KEY_COLUMNS.join(', ')})
      ORDER BY ${KEY_COLUMNS.map((c) => `r.${c}`).join(', ')} FOR UPDATE OF r`, cols)
  const keyOf = (k) => k.map((v) => (v instanceof Date ? +v : v)).join('|')
  const current = new Map(rows.map((r) => [keyOf(KEY_COLUMNS.map((c) => r[c])), r]))
  const updates = entries.map((e) => {
    const cur = current.get(keyOf(e.key))
    const parts = [cur?.sketch, e.sketch].filter(Boolean)
    const sketch = parts.length ? encodeSketch(mergeSketches(parts)) : null
    return { e, count: (cur?.count ?? 0) + e.count, runs: (cur?.runs ?? 0) + e.runs, errors: (cur?.errors ?? 0) + e.errors, fallbacks: (cur?.fallbacks ?? 0) + e.fallbacks, sketch }
  })
  await client.query(
    `UPDATE rollups r SET count = u.count, runs = u.runs, errors = u.errors, fallbacks = u.fallbacks, sketch = u.sketch
       FROM unnest(${keyArgs}, $9::int[], $10::int[], $11::int[], $12::int[], $13::bytea[])
            AS u(${KEY_COLUMNS.join(', ')}, count, runs, errors, fallbacks, sketch)
      WHERE ${KEY_COLUMNS.map((c) => `r.${c} = u.${c}`).join(' AND ')}`,
    [...cols, updates.map((u) => u.count), updates.map((u) => u.runs), updates.map((u) => u.errors), updates.map((u) => u.fallbacks), updates.map((u) => u.sketch)])
}

/**
 * Queue freshly stored results for the rollups (same transaction as the insert).
 * @param {import('pg').PoolClient | import('pg').Pool} db
 * @param {number[]} resultIds
 */
export async function enqueueForRollup (db, resultIds) {
  if (!resultIds.length) return
  await db.query('INSERT INTO rollup_pending (result_id) SELECT unnest($1::bigint[]) ON CONFLICT DO NOTHING', [resultIds])
}

/**
 * Fold up to `batch` pending results into the rollups.
 * @param {import('pg').Pool} db
 * @param {{ batch?: number }} [opts]
 * @returns {Promise<number>} results folded; 0 when another worker holds the lock
 */
export async function foldPendingResults (db, { batch = 5000 } = {}) {
  const client = await db.connect()
  try {
    await client.query('BEGIN')
    const { rows: [{ locked }] } = await client.query('SELECT pg_try_advisory_xact_lock($1) AS locked', [ROLLUP_LOCK])
    if (!locked) {
      await client.query('COMMIT')
      return 0
    }
    const { rows: done } = await client.query(
      `DELETE FROM rollup_pending WHERE result_id IN (
         SELECT result_id FROM rollup_pending ORDER BY result_id LIMIT $1) RETURNING result_id`, [batch])
    if (done.length) {
      const { rows: results } = await client.query(`SELECT ${RESULT_FIELDS} FROM results WHERE id = ANY($1)`, [done.map((d) => d.result_id)])
      await applyDeltas(client, aggregate(results))
    }
    await client.query('COMMIT')
    return done.length
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw err
  } finally {
    client.release()
  }
}

/**
 * Drain the pending queue within a time budget (one scheduler tick).
 * @param {import('pg').Pool} db
 * @param {{ budgetMs?: number }} [opts]
 */
export async function foldAllPending (db, { budgetMs = 800 } = {}) {
  const until = Date.now() + budgetMs
  let total = 0
  for (;;) {
    const n = await foldPendingResults(db)
    total += n
    if (n < 5000 || Date.now() > until) return total
  }
}

/**
 * Recompute rollups from the raw results, for one monitor or all.
 * @param {import('pg').Pool} db
 * @param {{ monitorId?: number, log?: import('pino').Logger }} [opts]
 * @returns {Promise<number>} results folded
 */
export async function rebuildRollups (db, { monitorId, log } = {}) {
  const client = await db.connect()
  let folded = 0
  try {
    await client.query('BEGIN')
    await client.query('SELECT pg_advisory_xact_lock($1)', [ROLLUP_LOCK])
    const only = monitorId === undefined ? '' : 'WHERE monitor_id = $1'
    const args = monitorId === undefined ? [] : [monitorId]
    await client.query(`DELETE FROM rollups ${only}`, args)
    await client.query(`DELETE FROM rollup_pending WHERE result_id IN (SELECT id FROM results ${only})`, args)
    let after = 0
    for (;;) {
      const { rows } = await client.query(
        `SELECT ${RESULT_FIELDS} FROM results WHERE id > $1 ${monitorId === undefined ? '' : 'AND monitor_id = $2'}
          ORDER BY id LIMIT 5000`, [after, ...args])
      if (!rows.length) break
      await applyDeltas(client, aggregate(rows))
      folded += rows.length
      after = rows.at(-1).id
      log?.info({ folded }, 'rebuilding rollups')
    }
    await client.query('COMMIT')
    return folded
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw err
  } finally {
    client.release()
  }
}

/**
 * Split [from, to) — both on 5-minute boundaries — into the fewest aligned
 * buckets: whole UTC days, then whole hours, then five-minute buckets.
 * @param {number} from epoch ms
 * @param {number} to epoch ms
 * @returns {{ tier: '5m'|'1h'|'1d', from: number, to: number }[]}
 */
export function coverWindow (from, to) {
  const ranges = []
  const up = (t, w) => Math.ceil(t / w) * w
  const down = (t, w) => Math.floor(t / w) * w
  const push = (tier, a, b) => { if (a < b) ranges.push({ tier, from: a, to: b }) }
  const hours = (a, b) => {
    const h0 = up(a, TIERS['1h'])
    const h1 = down(b, TIERS['1h'])
    if (h0 < h1) {
      push('1h', h0, h1)
      push('5m', a, h0)
      push('5m', h1, b)
    } else {
      push('5m', a, b)
    }
  }
  const d0 = up(from, TIERS['1d'])
  const d1 = down(to, TIERS['1d'])
  if (d0 < d1) {
    push('1d', d0, d1)
    hours(from, d0)
    hours(d1, to)
  } else {
    hours(from, to)
  }
  return ranges
}

/**
 * Merged sketches and outcome counts per (location, mode) for one metric over
 * a window, from rollups plus not-yet-folded results, read in one snapshot.
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, metric: string, probe: string, view: string, from: Date, to: Date }} q
 * @returns {Promise<Map<string, { location_id: string, mode: string, count: number, runs: number, errors: number, fallbacks: number, sketch: any }>>}
 */
export async function mergedSeries (db, { monitorId, metric, probe, view, from, to }) {
  return withSnapshot(db, async (client) => {
    const ranges = coverWindow(+from, +to)
    const out = new Map()
    const add = (loc, mode, part) => {
      const k = `${loc}|${mode}`
      let s = out.get(k)
      if (!s) out.set(k, (s = { location_id: loc, mode, count: 0, runs: 0, errors: 0, fallbacks: 0, parts: [] }))
      s.count += part.count
      s.runs += part.runs
      s.errors += part.errors
      s.fallbacks += part.fallbacks
      if (part.sketch) s.parts.push(part.sketch)
    }
    if (ranges.length) {
      const { rows } = await client.query(
        `SELECT location_id, mode, count, runs, errors, fallbacks, sketch FROM rollups r
           JOIN unnest($5::text[], $6::timestamptz[], $7::timestamptz[]) AS w(tier, t0, t1)
             ON r.tier = w.tier AND r.bucket >= w.t0 AND r.bucket < w.t1
          WHERE r.monitor_id = $1 AND r.metric = $2 AND r.probe = $3 AND r.view = $4`,
        [monitorId, metric, probe, view, ranges.map((r) => r.tier), ranges.map((r) => new Date(r.from)), ranges.map((r) => new Date(r.to))])
      for (const r of rows) add(r.location_id, r.mode, r)
    }
    for (const part of await pendingParts(client, { monitorId, probe, view, from, to, tier: '5m' })) {
      if (part.key[2] === metric) add(part.key[5], part.key[6], part)
    }
    for (const s of out.values()) {
      s.sketch = s.parts.length ? mergeSketches(s.parts) : null
      delete s.parts
    }
    return out
  })
}

/**
 * Per-bucket series for trends, from one tier plus pending results.
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, metric: string, probe: string, view: string, tier: '5m'|'1h'|'1d', from: Date, to: Date }} q
 */
export async function bucketSeries (db, { monitorId, metric, probe, view, tier, from, to }) {
  return withSnapshot(db, async (client) => {
    const { rows } = await client.query(
      `SELECT location_id, mode, bucket, count, runs, errors, fallbacks, sketch FROM rollups
        WHERE monitor_id = $1 AND metric = $2 AND probe = $3 AND view = $4 AND tier = $5 AND bucket >= $6 AND bucket < $7
        ORDER BY bucket`, [monitorId, metric, probe, view, tier, from, to])
    const out = new Map()
    const add = (loc, mode, bucket, part) => {
      const k = `${loc}|${mode}|${bucket.toISOString()}`
      let b = out.get(k)
      if (!b) out.set(k, (b = { location_id: loc, mode, bucket, count: 0, runs: 0, errors: 0, fallbacks: 0, parts: [] }))
      b.count += part.count
      b.runs += part.runs
      b.errors += part.errors
      b.fallbacks += part.fallbacks
      if (part.sketch) b.parts.push(part.sketch)
    }
    for (const r of rows) add(r.location_id, r.mode, r.bucket, r)
    for (const part of await pendingParts(client, { monitorId, probe, view, from, to, tier })) {
      if (part.key[2] === metric) add(part.key[5], part.key[6], part.key[7], part)
    }
    return [...out.values()].map((b) => {
      const sketch = b.parts.length ? mergeSketches(b.parts) : null
      delete b.parts
      return { ...b, sketch }
    }).sort((a, b) => a.bucket - b.bucket)
  })
}

/** Pending (not yet folded) results of a window, aggregated like rollups. */
async function pendingParts (client, { monitorId, probe, view, from, to, tier }) {
  const { rows } = await client.query(
    `SELECT ${RESULT_FIELDS.split(',').map((c) => `r.${c.trim()}`).join(', ')}
       FROM rollup_pending p JOIN results r ON r.id = p.result_id
      WHERE r.monitor_id = $1 AND r.probe = $2 AND r.view = $3 AND r.time >= $4 AND r.time < $5`,
    [monitorId, probe, view, from, to])
  return [...aggregate(rows).values()].filter((a) => a.key[1] === tier)
}

/** Run reads in one REPEATABLE READ snapshot so a concurrent fold is seen entirely or not at all. */
async function withSnapshot (db, fn) {
  const client = await db.connect()
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
    const out = await fn(client)
    await client.query('COMMIT')
    return out
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw err
  } finally {
    client.release()
  }
}

export { decodeSketch }
