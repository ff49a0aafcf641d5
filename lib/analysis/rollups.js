// Rollups are maintained by the scheduler, not on the ingest path (the
// SQL is lib/store/rollups.js; here, what goes into them and how they are
// read back). Results
// are written with a row in rollup_pending in the same transaction; the
// scheduler folds pending results into the 5m/1h/1d rollups in batches.
// Why: ingest stays one INSERT per batch (the HTTP target is 5,000 results/s
// on 2 cores), while a result touches 8 metrics × 3 tiers = 24 rollup rows,
// and batching folds many results into each row. Queries merge rollups with
// the pending rows in one snapshot, so answers are exact and current anyway.
import { newSketch, addToSketch, encodeSketch, mergeSketches, sketchCount, readEncoded } from './stats/index.js'
import { metricOf, metricSamples, ROLLUP_COLUMNS } from '../measurement/metrics.js'
import { clearRollups, pendingResults, resultsForRollups, rollupBuckets, rollupsInRanges, takePendingResults, upsertRollups } from '../store/rollups.js'
import { withTransaction } from '../store/transaction.js'

// Reads in one REPEATABLE READ snapshot, so a concurrent fold is seen entirely or not at all.
const SNAPSHOT = { begin: 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' }

export const TIERS = Object.freeze({ '5m': 5 * 60e3, '1h': 3600e3, '1d': 86400e3 })

/** @param {Date|number} t @param {number} width */
export function bucketStart (t, width) {
  const ms = +t
  return new Date(ms - (ms % width))
}

/**
 * @typedef {{ key: any[], runs: number, errors: number, fallbacks: number, sketches: Map<string, any> }} RollupDelta
 */

/**
 * Aggregate results into rollup deltas, one per rollup row (series × tier ×
 * bucket). Samples go into five-minute sketches only; hour and day sketches
 * are merges of those, which is far cheaper than adding every sample three
 * times.
 * @param {Record<string, any>[]} results
 * @returns {Map<string, RollupDelta>}
 */
export function aggregate (results) {
  /** @type {Map<string, RollupDelta & { tier: string, children: Set<RollupDelta> }>} */
  const nodes = new Map()
  /**
   * @param {Record<string, any>} r a result row
   * @param {string} baseKey
   * @param {string} tier
   * @param {number} width the tier's bucket width in ms
   */
  const node = (r, baseKey, tier, width) => {
    const bucket = +r.time - (+r.time % width)
    const k = `${baseKey}|${tier}|${bucket}`
    let n = nodes.get(k)
    if (!n) {
      const key = [r.monitor_id, tier, r.probe, r.view, r.location_id, r.mode, new Date(bucket), r.browser ?? 'chromium']
      nodes.set(k, (n = { key, tier, runs: 0, errors: 0, fallbacks: 0, sketches: new Map(), children: new Set() }))
    }
    return n
  }
  for (const r of results) {
    const baseKey = `${r.monitor_id}|${r.probe}|${r.view}|${r.location_id}|${r.mode}|${r.browser ?? 'chromium'}`
    const n5 = node(r, baseKey, '5m', TIERS['5m'])
    const n1h = node(r, baseKey, '1h', TIERS['1h'])
    const n1d = node(r, baseKey, '1d', TIERS['1d'])
    n1h.children.add(n5)
    n1d.children.add(n1h)
    for (const n of [n5, n1h, n1d]) {
      n.runs++
      if (r.status === 'error' || r.status === 'timeout') n.errors++
      if (r.status === 'protocol_mismatch') n.fallbacks++
    }
    if (r.status !== 'ok' || !r.protocol_ok) continue
    for (const [metric, values] of metricSamples(r)) {
      if (!ROLLUP_COLUMNS.includes(metric)) throw new Error(`rollup column "${metric}" does not exist`)
      let sketch = n5.sketches.get(metric)
      if (!sketch) n5.sketches.set(metric, (sketch = newSketch()))
      for (const v of values) addToSketch(sketch, v)
    }
  }
  // Hours from five-minute buckets, then days from hours.
  for (const tier of ['1h', '1d']) {
    for (const n of nodes.values()) {
      if (n.tier !== tier) continue
      const parts = new Map()
      for (const child of n.children) {
        for (const [metric, sketch] of child.sketches) {
          if (!parts.has(metric)) parts.set(metric, [])
          parts.get(metric).push(sketch)
        }
      }
      for (const [metric, list] of parts) n.sketches.set(metric, list.length === 1 ? list[0] : mergeSketches(list))
    }
  }
  const out = new Map()
  for (const [k, n] of nodes) out.set(k, { key: n.key, runs: n.runs, errors: n.errors, fallbacks: n.fallbacks, sketches: n.sketches })
  return out
}

/**
 * Fold up to `batch` pending results into the rollups.
 * @param {import('pg').Pool} db
 * @param {{ batch?: number }} [opts]
 * @returns {Promise<number>} results folded; 0 when another worker holds the lock
 */
export async function foldPendingResults (db, { batch = 5000 } = {}) {
  return withTransaction(db, async (client) => {
    const results = await takePendingResults(client, batch)
    if (results === null) return 0
    if (results.length) await upsertRollups(client, [...aggregate(results).values()], mergeRollupRow)
    return results.length
  })
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
  return withTransaction(db, async (client) => {
    let folded = 0
    await clearRollups(client, monitorId)
    let after = 0
    for (;;) {
      const rows = await resultsForRollups(client, { after, monitorId, limit: 5000 })
      if (!rows.length) break
      await upsertRollups(client, [...aggregate(rows).values()], mergeRollupRow)
      folded += rows.length
      after = rows.at(-1).id
      log?.info({ folded }, 'rebuilding rollups')
    }
    return folded
  })
}

/**
 * A rollup row after adding a delta: counts summed, sketches merged, in
 * ROLLUP_COLUMNS order.
 * @param {Record<string, any> | undefined} cur the stored row (encoded sketches), if any
 * @param {RollupDelta} delta
 */
function mergeRollupRow (cur, delta) {
  const sketches = ROLLUP_COLUMNS.map((m) => {
    const parts = [cur?.[m], delta.sketches.get(m)].filter(Boolean)
    return parts.length ? encodeSketch(mergeSketches(parts)) : null
  })
  return { runs: (cur?.runs ?? 0) + delta.runs, errors: (cur?.errors ?? 0) + delta.errors, fallbacks: (cur?.fallbacks ?? 0) + delta.fallbacks, sketches }
}

/**
 * Split [from, to) — both on 5-minute boundaries — into the fewest aligned
 * buckets: whole UTC days, then whole hours, then five-minute buckets.
 * @param {number} from epoch ms
 * @param {number} to epoch ms
 * @returns {{ tier: '5m'|'1h'|'1d', from: number, to: number }[]}
 */
export function coverWindow (from, to) {
  /** @type {{ tier: '5m'|'1h'|'1d', from: number, to: number }[]} */
  const ranges = []
  const up = (/** @type {number} */ t, /** @type {number} */ w) => Math.ceil(t / w) * w
  const down = (/** @type {number} */ t, /** @type {number} */ w) => Math.floor(t / w) * w
  const push = (/** @type {'5m'|'1h'|'1d'} */ tier, /** @type {number} */ a, /** @type {number} */ b) => { if (a < b) ranges.push({ tier, from: a, to: b }) }
  const hours = (/** @type {number} */ a, /** @type {number} */ b) => {
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
 * The rollup column of a metric (id or alias); only names from the catalogue reach SQL.
 * @param {string} metric
 */
function metricColumn (metric) {
  const column = metricOf(metric).rollup
  if (!column) throw new Error(`metric "${metric}" has no rollup`)
  return column
}

/**
 * Merged sketches and outcome counts per (location, mode) for one metric over
 * a window, from rollups plus not-yet-folded results, read in one snapshot.
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, metric: string, probe: string, view: string, browser?: string, from: Date, to: Date }} q
 * @returns {Promise<Map<string, { location_id: string, mode: string, count: number, runs: number, errors: number, fallbacks: number, sketch: any }>>}
 */
export async function mergedSeries (db, { monitorId, metric, probe, view, browser = 'chromium', from, to }) {
  const column = metricColumn(metric)
  return withTransaction(db, async (client) => {
    const ranges = coverWindow(+from, +to)
    const groups = new Groups((r) => `${r.location_id}|${r.mode}`)
    for (const r of await rollupsInRanges(client, { monitorId, probe, view, browser, column, ranges })) groups.add(r)
    for (const d of await pendingDeltas(client, { monitorId, probe, view, browser, from, to, tier: '5m' })) {
      groups.add({ location_id: d.key[4], mode: d.key[5], runs: d.runs, errors: d.errors, fallbacks: d.fallbacks, sketch: d.sketches.get(column) })
    }
    return new Map([...groups.finish()].map((g) => [`${g.location_id}|${g.mode}`, g]))
  }, SNAPSHOT)
}

/**
 * Per-bucket series for trends, from one tier plus pending results, over
 * exactly the window: a bucket the window cuts (its first or last, when
 * from or to is not on the tier's boundary) holds only what of it lies in
 * the window, read from the finer tiers that cover that part (as the
 * distribution reads a window), its point at the start of that part. The
 * whole buckets are the tier's own.
 * @param {import('pg').Pool} db
 * @param {{ monitorId: number, metric: string, probe: string, view: string, browser?: string, tier: '5m'|'1h'|'1d', from: Date, to: Date }} q
 */
export async function bucketSeries (db, { monitorId, metric, probe, view, browser = 'chromium', tier, from, to }) {
  const column = metricColumn(metric)
  const width = TIERS[tier]
  const series = { monitorId, probe, view, browser }
  return withTransaction(db, async (client) => {
    const groups = new Groups((r) => `${r.location_id}|${r.mode}|${+r.bucket}`, { keepEncoded: true })
    /** @param {any} d @param {Date} bucket */
    const fromDelta = (d, bucket) => ({ location_id: d.key[4], mode: d.key[5], bucket, runs: d.runs, errors: d.errors, fallbacks: d.fallbacks, sketch: d.sketches.get(column) })
    const start = Math.ceil(+from / width) * width
    const end = Math.floor(+to / width) * width
    /** @type {[number, number][]} the parts of cut buckets */
    const parts = start <= end ? [[+from, start], [end, +to]] : [[+from, +to]]
    if (start < end) {
      const whole = { from: new Date(start), to: new Date(end) }
      for (const r of await rollupBuckets(client, { ...series, column, tier, ...whole })) groups.add(r)
      for (const d of await pendingDeltas(client, { ...series, ...whole, tier })) groups.add(fromDelta(d, d.key[6]))
    }
    for (const [a, b] of parts) {
      if (a >= b) continue
      const at = new Date(a)
      for (const r of await rollupsInRanges(client, { ...series, column, ranges: coverWindow(a, b) })) groups.add({ ...r, bucket: at })
      for (const d of await pendingDeltas(client, { ...series, from: at, to: new Date(b), tier: '5m' })) groups.add(fromDelta(d, at))
    }
    return [...groups.finish()].sort((x, y) => x.bucket - y.bucket)
  }, SNAPSHOT)
}

/** Sums outcome counts and merges sketches of rows that share a group key. */
class Groups {
  /** @param {(row: any) => string} keyOf @param {{ keepEncoded?: boolean }} [opts] */
  constructor (keyOf, { keepEncoded = false } = {}) {
    this.keyOf = keyOf
    this.keepEncoded = keepEncoded
    this.map = new Map()
  }

  /** @param {{ location_id: string, mode: string, bucket?: Date, runs: number, errors: number, fallbacks: number, sketch: any }} row sketch: a sketch or its encoded bytes */
  add (row) {
    const k = this.keyOf(row)
    let g = this.map.get(k)
    if (!g) this.map.set(k, (g = { location_id: row.location_id, mode: row.mode, bucket: row.bucket, runs: 0, errors: 0, fallbacks: 0, parts: [] }))
    g.runs += row.runs
    g.errors += row.errors
    g.fallbacks += row.fallbacks
    if (row.sketch) g.parts.push(row.sketch)
  }

  * finish () {
    for (const { parts, ...g } of this.map.values()) {
      if (this.keepEncoded && parts.length === 1 && parts[0] instanceof Uint8Array) {
        // One stored row: trends read its quantiles straight from the bins.
        const read = readEncoded(parts[0])
        yield { ...g, encoded: parts[0], read, sketch: null, count: read.count }
        continue
      }
      const sketch = parts.length ? mergeSketches(parts) : null
      yield { ...g, encoded: null, sketch, count: sketch ? sketchCount(sketch) : 0 }
    }
  }
}

/**
 * Pending (not yet folded) results of a window, aggregated like rollups.
 * @param {import('pg').PoolClient} client
 * @param {{ monitorId: number, probe: string, view: string, browser: string, from: Date, to: Date, tier: '5m'|'1h'|'1d' }} q
 */
async function pendingDeltas (client, { monitorId, probe, view, browser, from, to, tier }) {
  const rows = await pendingResults(client, { monitorId, probe, view, browser, from, to })
  return [...aggregate(rows).values()].filter((d) => d.key[1] === tier)
}
