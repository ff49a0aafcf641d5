// Reading the question the product answers: the regional comparison table,
// percentile trends and whole distributions, all merged from the rollups.
import { stringify } from 'csv-stringify/sync'
import { getMonitor } from '../../lib/monitors.js'
import { regionalComparison } from '../../lib/comparison.js'
import { trends, trendColumns, trendRows, distribution, bucketCount, MAX_POINTS } from '../../lib/trends.js'
import { COMPARABLE_METRICS, DEFAULT_PERCENTILES, probeOfMetric } from '../../lib/metrics-def.js'
import { PROBES } from '../../lib/monitors.js'
import { TIERS } from '../../lib/rollups.js'
import { errorResponses, idParams } from '../schemas.js'

const FIVE_MINUTES = TIERS['5m']
const DAY = 86400e3
// Rollups make long windows cheap; a year is plenty for a comparison.
const MAX_WINDOW_DAYS = 400

const windowQuery = {
  from: { type: 'string', format: 'date-time', description: 'Window start (default: 24 h before `to`). Rounded down to 5 minutes.' },
  to: { type: 'string', format: 'date-time', description: 'Window end (default: now). Rounded up to 5 minutes.' },
  metric: { type: 'string', enum: COMPARABLE_METRICS, default: 'ttfb', description: 'ttfb = responseStart; load = loadEventEnd; fcp, lcp; connect (QUIC: includes the handshake); request = one parallel-probe request; upload = one upload-probe POST (request and upload imply their probe)' },
  probe: { type: 'string', enum: PROBES, default: 'page' },
  view: { type: 'string', enum: ['first', 'repeat'], default: 'first' }
}

const percentilesParam = (def) => ({
  type: 'string',
  maxLength: 100,
  default: def.join(','),
  description: `Comma-separated percentiles, each above 0 and below 100 (default ${def.join(',')})`
})

/**
 * @param {any} app see api/routes/monitors.js
 */
export default async function comparisonRoutes (app) {
  const tags = ['comparison']

  /** Window, percentiles and monitor of a request, validated. */
  async function readQuery (request, { percentiles: wantPercentiles = true } = {}) {
    const q = request.query
    const to = q.to ? new Date(q.to) : new Date()
    const from = q.from ? new Date(q.from) : new Date(+to - DAY)
    if (from > to) throw app.httpErrors.badRequest('from must not be after to')
    if (+to - +from > MAX_WINDOW_DAYS * DAY) throw app.httpErrors.badRequest(`the window is longer than ${MAX_WINDOW_DAYS} days; choose a shorter from/to`)
    const aligned = {
      from: new Date(Math.floor(+from / FIVE_MINUTES) * FIVE_MINUTES),
      to: new Date(Math.ceil(+to / FIVE_MINUTES) * FIVE_MINUTES)
    }
    if (+aligned.to === +aligned.from) aligned.to = new Date(+aligned.from + FIVE_MINUTES)
    const percentiles = wantPercentiles ? parsePercentiles(q.percentiles) : []
    const monitor = await getMonitor(app.db, request.params.id)
    return { monitor, ...aligned, percentiles, metric: q.metric, probe: probeOfMetric(q.metric) ?? q.probe, view: q.view }
  }

  function parsePercentiles (text) {
    const parts = String(text).split(',').map((s) => s.trim()).filter(Boolean)
    if (!parts.length) throw app.httpErrors.badRequest('percentiles is empty; give a list such as 50,95')
    const out = []
    for (const s of parts) {
      const p = Number(s)
      if (!/^\d+(\.\d+)?$/.test(s) || !(p > 0 && p < 100)) {
        throw app.httpErrors.badRequest(`"${s}" is not a percentile; use numbers above 0 and below 100, such as 50,95,99`)
      }
      out.push(p)
    }
    if (out.length > 20) throw app.httpErrors.badRequest('at most 20 percentiles at once')
    return [...new Set(out)].sort((a, b) => a - b)
  }

  const row = {
    type: 'object',
    properties: {
      percentile: { type: 'number' },
      h2_ms: { type: ['number', 'null'] },
      h3_ms: { type: ['number', 'null'] },
      delta_ms: { type: ['number', 'null'], description: 'h3_ms − h2_ms: negative means HTTP/3 is faster' },
      delta_pct: { type: ['number', 'null'], description: 'delta_ms / h2_ms × 100' },
      ci_low_ms: { type: ['number', 'null'], description: 'Lower end of the 95% bootstrap interval of the delta' },
      ci_high_ms: { type: ['number', 'null'] },
      verdict: { type: 'string', enum: ['h3_faster', 'h3_slower', 'no_significant_difference', 'insufficient_data'], description: 'Significant when the interval excludes 0' }
    }
  }
  const modeCounts = { type: 'object', properties: { total: { type: 'integer' }, ok: { type: 'integer' }, errors: { type: 'integer' }, fallbacks: { type: 'integer' } } }
  const perMode = { type: 'object', properties: { h2: { type: ['number', 'null'] }, h3: { type: ['number', 'null'] } } }

  app.get('/monitors/:id/comparison', {
    schema: {
      description: 'The regional H2-versus-H3 table: for each location and for all locations together, each percentile\'s H2 and H3 value, the delta with its 95% interval, sample counts and a verdict. Percentiles come from merged rollup sketches; intervals and tests from capped raw samples (see `method`).',
      tags,
      params: idParams,
      querystring: { type: 'object', additionalProperties: false, properties: { ...windowQuery, percentiles: percentilesParam(DEFAULT_PERCENTILES) } },
      response: {
        200: {
          type: 'object',
          properties: {
            monitor_id: { type: 'integer' },
            metric: { type: 'string' },
            probe: { type: 'string' },
            view: { type: 'string' },
            from: { type: 'string', format: 'date-time' },
            to: { type: 'string', format: 'date-time' },
            percentiles: { type: 'array', items: { type: 'number' } },
            method: { type: 'object', additionalProperties: true, description: 'How the numbers were computed: estimator, interval, sample cap' },
            locations: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  location_id: { type: ['string', 'null'], description: 'null for the all-locations entry' },
                  name: { type: 'string' },
                  region: { type: ['string', 'null'] },
                  rtt_ms: { type: ['number', 'null'], description: 'Round-trip time of the location, where known' },
                  n_h2: { type: 'integer', description: 'Successful H2 runs in the window' },
                  n_h3: { type: 'integer' },
                  insufficient_data: { type: 'boolean' },
                  reason: { type: 'string' },
                  mann_whitney_p: { type: ['number', 'null'], description: 'Two-sided Mann-Whitney U p-value, whole distributions' },
                  cliffs_delta: { type: ['number', 'null'], description: 'Cliff\'s δ of H3 against H2 (negative: H3 tends to be faster)' },
                  verdict: { type: 'string', description: 'Whole-distribution verdict: Mann-Whitney p < 0.05, direction from Cliff\'s δ' },
                  runs: { type: 'object', properties: { h2: modeCounts, h3: modeCounts } },
                  fallback_rate: { ...perMode, description: 'Share of runs that loaded over another protocol than forced' },
                  error_rate: { ...perMode, description: 'Share of runs that failed or timed out' },
                  rows: { type: 'array', items: row }
                }
              }
            }
          }
        },
        ...errorResponses
      }
    }
  }, async (request) => {
    const q = await readQuery(request)
    return regionalComparison(app.db, q)
  })

  app.get('/monitors/:id/trends', {
    schema: {
      description: 'Percentiles per time bucket, location and mode, merged from the rollups. `format=csv` gives one row per (bucket, location, mode) with the columns bucket_start, location_id, mode, metric, count, runs, errors, fallbacks, p<N>_ms.',
      tags,
      params: idParams,
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          ...windowQuery,
          bucket: { type: 'string', enum: Object.keys(TIERS), default: '1h' },
          percentiles: percentilesParam([50, 95]),
          format: { type: 'string', enum: ['json', 'csv'], default: 'json' }
        }
      },
      response: { 200: { type: 'object', additionalProperties: true }, ...errorResponses }
    }
  }, async (request, reply) => {
    const q = await readQuery(request)
    const bucket = request.query.bucket
    if (bucketCount(bucket, q.from, q.to) > MAX_POINTS) {
      throw app.httpErrors.badRequest(`${bucketCount(bucket, q.from, q.to)} buckets of ${bucket} is too many for one series (max ${MAX_POINTS}); use a wider bucket (1h or 1d) or a shorter window`)
    }
    const t = await trends(app.db, { monitorId: q.monitor.id, metric: q.metric, bucket, from: q.from, to: q.to, percentiles: q.percentiles, probe: q.probe, view: q.view })
    if (request.query.format === 'csv') {
      const csv = stringify([...trendRows(t)], { header: true, columns: trendColumns(q.percentiles) })
      return reply.type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="h3lens-trends-${q.monitor.id}-${q.metric}-${bucket}.csv"`)
        .send(csv)
    }
    return t
  })

  app.get('/monitors/:id/distribution', {
    schema: {
      description: 'Quantiles 0, 0.01, …, 1 of each location and mode over the window, for CDF charts.',
      tags,
      params: idParams,
      querystring: { type: 'object', additionalProperties: false, properties: windowQuery },
      response: { 200: { type: 'object', additionalProperties: true }, ...errorResponses }
    }
  }, async (request) => {
    const q = await readQuery(request, { percentiles: false })
    return distribution(app.db, { monitorId: q.monitor.id, metric: q.metric, from: q.from, to: q.to, probe: q.probe, view: q.view })
  })
}
