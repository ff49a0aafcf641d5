// Reading the question the product answers: the regional comparison table,
// percentile trends and whole distributions, all merged from the rollups.
import { stringify } from 'csv-stringify/sync'
import { getMonitor } from '../../lib/store/monitors.js'
import { browsersWithRounds, seriesWasMeasured } from '../../lib/store/round-summaries.js'
import { JOURNEY_PROBE, splitProbe } from '../../lib/measurement/probes/journey.js'
import { stepNames } from '../../lib/measurement/journey/steps.js'
import { ValidationError } from '../../lib/runtime/errors.js'
import { ANALYSES, NO_DIFFERENCE_CODES, VERDICTS } from '../../lib/analysis/comparison.js'
import { crossBrowser, READINGS } from '../../lib/analysis/browsers.js'
import { autoComparison, AUTO_VISITS, CONTRASTS, CONTRAST_VERDICTS, SHARE_VIEWS, STORIES } from '../../lib/analysis/auto.js'
import { createComparisonCache } from '../../lib/analysis/comparison-cache.js'
import { trends, trendColumns, trendRows, distribution, bucketCount, MAX_POINTS } from '../../lib/analysis/trends.js'
import { ACCEPTED_METRIC_NAMES, canonicalMetric, COMPARABLE_METRICS, DEFAULT_METRIC, DEFAULT_PERCENTILES, METRICS, probeFor, probeOfMetric } from '../../lib/measurement/metrics.js'
import { FORCED_VIEWS, VIEWS } from '../../lib/measurement/result.js'
import { TIERS } from '../../lib/analysis/rollups.js'
import { csvText } from '../../lib/store/results-export.js'
import { errorResponses, idParams, probeValue } from '../schemas.js'
import { BROWSERS } from '../../lib/measurement/browsers/index.js'
import { FIRST_TIME } from '../../lib/runtime/date-time.js'

const FIVE_MINUTES = TIERS['5m']
const DAY = 86400e3
// The last instant a four-digit year writes: a window's end rounded up past
// it would be echoed as "+010000-01-01…", which no client parses back.
const LAST_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999)
// Rollups make long windows cheap; a year is plenty for a comparison.
const MAX_WINDOW_DAYS = 400
// 2026-11-22, when metric names gained their unit, as an RFC 9745 date.
const METRIC_ALIASES_DEPRECATED = `@${Date.UTC(2026, 10, 22) / 1000}`

const windowQuery = {
  from: { type: 'string', format: 'date-time', description: 'Window start (default: 24 h before `to`). Rounded down to 5 minutes.' },
  to: { type: 'string', format: 'date-time', description: 'Window end (default: now). Rounded up to 5 minutes.' },
  metric: {
    type: 'string',
    enum: ACCEPTED_METRIC_NAMES,
    default: DEFAULT_METRIC,
    description: METRICS.filter((m) => COMPARABLE_METRICS.includes(m.id)).map((m) => `${m.id} = ${m.description}`).join('; ') +
      ` (${METRICS.filter((m) => m.comparable && m.samplesOf).map((m) => m.id).join(' and ')} imply their probe). ` +
      `Deprecated: the names without a unit (${METRICS.filter((m) => m.comparable && m.alias).map((m) => m.alias).join(', ')}) are still accepted ` +
      'for one version; the response then names the id and carries a Deprecation header.'
  },
  probe: { ...probeValue, default: 'page' },
  view: { type: 'string', enum: VIEWS, default: 'first' },
  browser: { type: 'string', enum: [...BROWSERS], default: 'chromium', description: 'Whose rounds: a round is one browser\'s, with every arm in it (docs/BROWSERS.md)' }
}

const windowFields = {
  monitor_id: { type: 'integer' },
  metric: { type: 'string', description: 'The metric id (a deprecated alias in the request is answered with the id)' },
  probe: { type: 'string' },
  view: { type: 'string' },
  browser: { type: 'string' },
  from: { type: 'string', format: 'date-time' },
  to: { type: 'string', format: 'date-time' }
}
const nullableMs = { type: ['number', 'null'] }
const REASON_CODE = {
  type: ['string', 'null'],
  enum: [...NO_DIFFERENCE_CODES, null],
  description: 'A tested cell that is no difference: why, as a code (interval_includes_zero, not_significant after the correction, below_minimum_effect; ' +
    'faster_arm_fails_more: in matched rounds, the arm that looks faster fails more often, as it would by failing its slowest loads; ' +
    'faster_arm_failures: in matched rounds, the gain does not hold with the rounds the faster arm did not load in counted as its slowest loads; ' +
    'faster_arm_missing: in either analysis, the faster arm has no result at all in some rounds where the other loaded (an import that left them out), so its gain is withheld); null otherwise, the reason then says why'
}

/**
 * A list of series, one per location and mode, each with its points.
 * @param {Record<string, object>} fields the series' own fields besides location_id, mode and points
 * @param {object} point schema of one point
 */
const seriesSchema = (fields, point) => ({
  type: 'array',
  items: {
    type: 'object',
    additionalProperties: false,
    properties: { location_id: { type: 'string' }, mode: { type: 'string' }, ...fields, points: { type: 'array', items: point } }
  }
})

const trendsResponse = {
  type: 'object',
  additionalProperties: false,
  required: ['monitor_id', 'metric', 'bucket', 'from', 'to', 'percentiles', 'series'],
  properties: {
    ...windowFields,
    bucket: { type: 'string', enum: Object.keys(TIERS) },
    percentiles: { type: 'array', items: { type: 'number' } },
    series: seriesSchema({}, {
      type: 'object',
      additionalProperties: false,
      properties: {
        t: { type: 'string', format: 'date-time', description: 'Bucket start; a bucket the window cuts holds only its part inside the window, and t is where that part starts (the window\'s from for the first)' },
        count: { type: 'integer', description: 'Values merged into the bucket' },
        runs: { type: 'integer' },
        errors: { type: 'integer' },
        fallbacks: { type: 'integer' }
      },
      patternProperties: { '^p[0-9_]+$': { ...nullableMs, description: 'The requested percentile (p50, p99_9), ms' } }
    })
  }
}

const distributionResponse = {
  type: 'object',
  additionalProperties: false,
  required: ['monitor_id', 'metric', 'from', 'to', 'series'],
  properties: {
    ...windowFields,
    series: seriesSchema({ count: { type: 'integer' } },
      { type: 'object', additionalProperties: false, properties: { q: { type: 'number' }, ms: nullableMs } })
  }
}

const percentilesParam = (/** @type {readonly number[]} */ def) => ({
  type: 'string',
  maxLength: 100,
  default: def.join(','),
  description: `Comma-separated percentiles, each above 0 and below 100 (default ${def.join(',')})`
})

/**
 * The query string of windowQuery (defaults filled in), plus `percentiles`
 * where the route takes it.
 * @typedef {{ from?: string, to?: string, metric: string, probe: string, view: string, browser: string, percentiles?: string }} WindowQuery
 */
/**
 * @template [Q={}] what the route's query string adds to WindowQuery
 * @typedef {import('fastify').FastifyRequest<{ Params: { id: number }, Querystring: WindowQuery & Q }>} WindowRequest
 */

/**
 * @param {import('fastify').FastifyInstance} app see api/routes/monitors.js
 */
export default async function comparisonRoutes (app) {
  const tags = ['comparison']
  const comparisons = createComparisonCache({ maxAgeMs: app.config.comparisonMaxAgeS * 1000 })
  // A deprecated metric alias (ttfb for ttfb_ms) still works for one version,
  // and says so: RFC 9745's Deprecation header, with the date the names
  // were deprecated, and which name to use instead.
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.deprecatedMetric) reply.header('deprecation', METRIC_ALIASES_DEPRECATED).header('x-h3lens-deprecated', `metric=${request.deprecatedMetric}: use metric=${canonicalMetric(request.deprecatedMetric)}`)
    return payload
  })

  /**
   * Window, percentiles and monitor of a request, validated.
   * @param {WindowRequest} request
   */
  async function readQuery (request, { percentiles: wantPercentiles = true } = {}) {
    const q = request.query
    const metric = canonicalMetric(q.metric)
    if (metric !== q.metric) request.deprecatedMetric = q.metric
    const aligned = windowOf(q)
    const percentiles = wantPercentiles ? parsePercentiles(q.percentiles) : []
    const monitor = await getMonitor(app.db, request.params.id)
    const probe = probeFor(metric, q.probe)
    // What the request itself names: the schema's defaults (the page probe,
    // Chromium) are no question of the user's.
    const named = new URLSearchParams(request.url.split('?')[1] ?? '')
    await checkSeries(monitor, {
      probe: probe !== q.probe ? probe : named.has('probe') ? q.probe : undefined,
      browser: named.has('browser') ? q.browser : undefined,
      probeField: probe !== q.probe ? 'metric' : 'probe'
    })
    return { monitor, ...aligned, percentiles, metric, probe, view: q.view, browser: q.browser ?? 'chromium' }
  }

  /**
   * The window a request names, checked and aligned to 5 minutes.
   * @param {{ from?: string, to?: string }} q
   */
  function windowOf (q) {
    const to = q.to ? new Date(q.to) : new Date()
    // A day before `to` by default, never before the first time a date-time may name.
    const from = q.from ? new Date(q.from) : new Date(Math.max(+to - DAY, FIRST_TIME))
    if (from > to) throw new ValidationError('from must not be after to', 'from')
    if (+to - +from > MAX_WINDOW_DAYS * DAY) throw new ValidationError(`the window is longer than ${MAX_WINDOW_DAYS} days; choose a later from or an earlier to`, 'from')
    const aligned = {
      from: new Date(Math.floor(+from / FIVE_MINUTES) * FIVE_MINUTES),
      to: new Date(Math.min(Math.ceil(+to / FIVE_MINUTES) * FIVE_MINUTES, LAST_TIME))
    }
    if (+aligned.to === +aligned.from) aligned.to = new Date(+aligned.from + FIVE_MINUTES)
    return aligned
  }

  /**
   * A probe (a journey step) and a browser the monitor runs, or ran before
   * (a probe or step renamed or removed since, a browser no longer run:
   * their rounds are kept): any other is a mistyped or mistaken one, which
   * would read as an empty answer, "not enough data" where the question
   * was the wrong one. `probeField`: the probe was asked for (probe) or
   * follows from the metric (metric).
   * @param {Record<string, any>} monitor
   * @param {{ probe: string | undefined, browser: string | undefined, probeField: 'probe' | 'metric' }} asked
   */
  async function checkSeries (monitor, { probe, browser, probeField }) {
    if (probe !== undefined) {
      const step = splitProbe(probe)
      const names = step.probe === JOURNEY_PROBE && step.step !== null ? stepNames(monitor.journey) : null
      const runs = names ? names.includes(/** @type {string} */ (step.step)) : monitor.probes.includes(step.probe)
      if (!runs && !(await seriesWasMeasured(app.db, { monitorId: monitor.id, probe }))) {
        const whose = probeField === 'metric' ? `: that metric is the ${step.probe} probe's` : ''
        throw new ValidationError(names
          ? `monitor ${monitor.id} has no journey step named ${step.step} (its named steps: ${names.join(', ') || 'none'}), nor rounds of one`
          : `monitor ${monitor.id} runs no ${step.probe} probe (its probes: ${monitor.probes.join(', ')}), nor has rounds of one${whose}`, probeField)
      }
    }
    if (browser !== undefined && !monitor.browsers.includes(browser) && !(await seriesWasMeasured(app.db, { monitorId: monitor.id, browser }))) {
      throw new ValidationError(`monitor ${monitor.id} does not run in ${browser} (its browsers: ${monitor.browsers.join(', ')}), nor has rounds there`, 'browser')
    }
  }

  /** @param {string | undefined} text */
  function parsePercentiles (text) {
    const parts = String(text).split(',').map((s) => s.trim()).filter(Boolean)
    if (!parts.length) throw new ValidationError('percentiles is empty; give a list such as 50,95', 'percentiles')
    const out = []
    for (const s of parts) {
      const p = Number(s)
      if (!/^\d+(\.\d+)?$/.test(s) || !(p > 0 && p < 100)) {
        throw new ValidationError(`percentiles: "${s}" is not a percentile; use numbers above 0 and below 100, such as 50,95,99`, 'percentiles')
      }
      out.push(p)
    }
    if (out.length > 20) throw new ValidationError('percentiles: at most 20 percentiles at once', 'percentiles')
    return [...new Set(out)].sort((a, b) => a - b)
  }

  const interval = { type: 'object', properties: { rate: { type: ['number', 'null'] }, lo: { type: ['number', 'null'] }, hi: { type: ['number', 'null'] } } }
  const row = {
    type: 'object',
    properties: {
      percentile: { type: 'number' },
      h2_ms: { type: ['number', 'null'], description: 'percentile_cont of the H2 samples of the rounds used (arm A of an A/A monitor)' },
      h3_ms: { type: ['number', 'null'], description: 'the same for H3 (arm B of an A/A monitor), from the same rounds' },
      delta_ms: { type: ['number', 'null'], description: 'h3_ms − h2_ms: negative means HTTP/3 is faster' },
      delta_pct: { type: ['number', 'null'], description: 'delta_ms / h2_ms × 100' },
      ci_low_ms: { type: ['number', 'null'], description: 'Lower end of the 95% round-level bootstrap interval of the delta' },
      ci_high_ms: { type: ['number', 'null'] },
      p_value: { type: ['number', 'null'], description: 'Two-sided p-value of "delta is 0" from the bootstrap standard error; null when the cell is not tested' },
      p_adjusted: { type: ['number', 'null'], description: 'Adjusted p-value: max(Benjamini–Hochberg within the column, number of columns × the column\'s Simes p-value); the cell may claim a difference when it is ≤ 0.05' },
      rounds: { type: 'integer', description: 'Rounds the cell rests on (all locations: summed over the locations combined)' },
      min_rounds: { type: 'integer', description: 'Rounds this percentile needs before it is tested (more for the tail)' },
      interval_rounds: { type: 'integer', description: 'Only above 2,000 rounds, in a location\'s cell whose interval could not be scaled to all its rounds (tied timings, or a percentile in a gap between clusters): the rounds of the evenly spaced subsample its interval and p-value are of. Its percentiles and Δ are of all `rounds`' },
      min_effect_ms: { type: ['number', 'null'], description: 'The practical minimum |delta| for a verdict: max(min_effect.pct % of h2_ms, min_effect.ms)' },
      locations: { type: 'array', items: { type: 'string' }, description: 'All locations only: the locations averaged (equal weight) in this row' },
      verdict: { type: 'string', enum: ['h3_faster', 'h3_slower', 'no_clear_difference', 'insufficient_data'], description: 'h3_faster/h3_slower only when p_adjusted ≤ 0.05, the interval excludes 0, |delta| ≥ min_effect_ms and rounds ≥ min_rounds' },
      reason: { type: ['string', 'null'], description: 'Why the cell is not a difference, when it is not' },
      reason_code: REASON_CODE
    }
  }
  const modeCounts = { type: 'object', properties: { total: { type: 'integer' }, ok: { type: 'integer' }, errors: { type: 'integer' }, fallbacks: { type: 'integer' } } }
  const perMode = { type: 'object', properties: { h2: { type: ['number', 'null'] }, h3: { type: ['number', 'null'] } } }
  const armState = { type: 'string', enum: ['ok', 'failed', 'fallback', 'unsupported', 'no_value', 'missing'] }
  const arm = {
    type: 'object',
    properties: {
      attempted: { type: 'integer', description: 'Rounds in which this arm ran' },
      ok: { type: 'integer', description: 'Loaded with the forced protocol' },
      failed: { type: 'integer', description: 'Error or timeout (including incomplete documents)' },
      fallback: { type: 'integer', description: 'Loaded over another protocol than forced (protocol_mismatch)' },
      unsupported: { type: 'integer', description: 'The origin refused QUIC and advertises no Alt-Svc h3' },
      failure_rate: { ...interval, description: '(failed + unsupported) / attempted with its Wilson 95% interval' },
      fallback_rate: { ...interval, description: 'fallback / attempted with its Wilson 95% interval' }
    }
  }

  app.get('/monitors/:id/comparison', {
    schema: {
      description: 'The regional H2-versus-H3 table, built around the round (one round runs both arms at one location moments apart). ' +
        'For each location and for all locations together (stratified: per-location effects averaged with equal weight), each percentile\'s H2 and H3 value, ' +
        'the delta with its 95% round-level bootstrap interval, the rounds it rests on and a verdict corrected for multiple comparisons (Benjamini–Hochberg over the view\'s cells) ' +
        'with a practical minimum effect. `analysis=matched` (default) uses the rounds where both arms loaded with their forced protocol; `analysis=itt` (intention to treat) ' +
        'every round where both arms ran, a failed load counted at the page timeout. Failures are data: per-arm failure and fallback rates with intervals and a paired McNemar test. ' +
        'See `method` and docs/STATISTICS.md.',
      tags,
      params: idParams,
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          ...windowQuery,
          // The forced arms have no returning visit: that is the auto arm's (GET /monitors/{id}/auto).
          view: { ...windowQuery.view, enum: FORCED_VIEWS },
          percentiles: percentilesParam(DEFAULT_PERCENTILES),
          analysis: { type: 'string', enum: ANALYSES, default: 'matched', description: 'matched: rounds where both arms loaded with their forced protocol; itt: every round where both arms ran, failed loads at the page timeout' }
        }
      },
      response: {
        200: {
          type: 'object',
          properties: {
            monitor_id: { type: 'integer' },
            metric: { type: 'string' },
            probe: { type: 'string' },
            view: { type: 'string' },
            browser: { type: 'string', enum: [...BROWSERS] },
            analysis: { type: 'string', enum: ANALYSES },
            computed_at: {
              type: 'string',
              format: 'date-time',
              description: 'When this answer was computed. An answer is served again for up to H3LENS_COMPARISON_MAX_AGE_S (default 60 s; the Age header gives its age in seconds); ' +
                'send Cache-Control: no-cache to have it computed now. Imports are seen at once.'
            },
            from: { type: 'string', format: 'date-time' },
            to: { type: 'string', format: 'date-time' },
            percentiles: { type: 'array', items: { type: 'number' } },
            aa_protocol: { type: ['string', 'null'], description: 'Set for an A/A calibration monitor: both arms load with this protocol, so every flagged cell is a false positive' },
            min_effect: { type: 'object', properties: { pct: { type: 'number' }, ms: { type: 'number' } }, description: 'The practical minimum effect of this monitor' },
            cells: { type: 'object', properties: { tested: { type: 'integer' }, flagged: { type: 'integer' } }, description: 'Cells of the view that were tested, and that claim a difference' },
            method: { type: 'object', additionalProperties: { type: 'string' }, description: 'How the numbers were computed, in words' },
            locations: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  location_id: { type: ['string', 'null'], description: 'null for the all-locations entry' },
                  name: { type: 'string' },
                  region: { type: ['string', 'null'] },
                  kind: { type: ['string', 'null'] },
                  rtt_ms: { type: ['number', 'null'], description: 'Round-trip time of the location, where known' },
                  stratified: { type: 'boolean', description: 'All locations: per-location effects averaged with equal weight' },
                  rounds: {
                    type: 'object',
                    properties: {
                      total: { type: 'integer', description: 'Rounds in the window' },
                      matched: { type: 'integer', description: 'Rounds in which both arms loaded with their forced protocol' },
                      available: { type: 'integer', description: 'Rounds this analysis could use' },
                      used: { type: 'integer', description: 'Rounds the percentiles, deltas and intervals rest on (all available ones)' },
                      resampled: { type: 'integer', description: 'Rounds the bootstrap, the paired test and the unpaired tests read: used, or above 2,000 an evenly spaced subsample of them (the interval is then scaled to all used rounds; see method.round_cap)' },
                      excluded: { type: 'array', items: { type: 'object', properties: { h2: armState, h3: armState, rounds: { type: 'integer' } } }, description: 'Rounds left out of the matched set, by the state of each arm' }
                    }
                  },
                  arms: { type: 'object', properties: { h2: arm, h3: arm } },
                  failure: {
                    type: 'object',
                    description: 'Failure asymmetry: does one arm fail or fall back more often in the same rounds? Exact McNemar test on discordant rounds',
                    properties: {
                      rounds: { type: 'integer' },
                      h3_only: { type: 'integer', description: 'Rounds where only H3 did not load with its protocol' },
                      h2_only: { type: 'integer' },
                      p: { type: ['number', 'null'] },
                      p_adjusted: { type: ['number', 'null'] },
                      verdict: { type: 'string', enum: ['h3_fails_more', 'h3_fails_less', 'no_clear_difference', 'insufficient_data', 'h3_not_supported'] }
                    }
                  },
                  h3_supported: { type: ['boolean', 'null'], description: 'false when every H3 attempt met an origin that refused QUIC (no Alt-Svc h3)' },
                  n_h2: { type: 'integer', description: 'H2 samples in the rounds used' },
                  n_h3: { type: 'integer' },
                  insufficient_data: { type: 'boolean' },
                  reason: { type: 'string' },
                  paired: {
                    type: 'object',
                    description: 'Wilcoxon signed-rank on per-round differences with the Hodges–Lehmann shift (all locations: Stouffer-combined, mean shift)',
                    properties: {
                      rounds: { type: 'integer' },
                      p: { type: ['number', 'null'] },
                      p_adjusted: { type: ['number', 'null'] },
                      z: { type: 'number' },
                      method: { type: ['string', 'null'] },
                      hodges_lehmann_ms: { type: ['number', 'null'], description: 'Estimated per-round shift H3 − H2' },
                      ci_low_ms: { type: ['number', 'null'] },
                      ci_high_ms: { type: ['number', 'null'] }
                    }
                  },
                  mann_whitney_p: { type: ['number', 'null'], description: 'Unpaired: two-sided Mann-Whitney U p-value on the samples of the rounds.resampled rounds (all used rounds up to 2,000), for description' },
                  cliffs_delta: { type: ['number', 'null'], description: 'Cliff\'s δ of H3 against H2 (negative: H3 tends to be faster), over the same rounds as mann_whitney_p' },
                  verdict: { type: 'string', enum: ['h3_faster', 'h3_slower', 'no_clear_difference', 'insufficient_data', 'h3_not_supported'], description: 'Location verdict from the paired test (BH-corrected over locations, practical minimum on the Hodges–Lehmann shift)' },
                  cells: { type: 'object', properties: { tested: { type: 'integer' }, flagged: { type: 'integer' } } },
                  users_get: {
                    type: ['object', 'null'],
                    additionalProperties: false,
                    description: 'As users get it, from the auto arm\'s visits in the window (page probe, whatever the metric): the location\'s story in words and the H3 share of its returning visits. ' +
                      'null for all locations and where the auto arm has no visit. GET /monitors/{id}/auto has the rest (every visit, the race outcomes, the received gain)',
                    properties: {
                      story: { type: 'object', additionalProperties: false, properties: { code: { type: 'string', enum: Object.keys(STORIES) }, text: { type: 'string' } } },
                      returning: {
                        type: 'object',
                        additionalProperties: false,
                        properties: {
                          visits: { type: 'integer', description: 'Returning visits in the window' },
                          loaded: { type: 'integer', description: 'Those that loaded' },
                          h3: { type: 'integer', description: 'Those whose page came over H3' },
                          navigation_share: { type: 'object', additionalProperties: false, properties: { rate: { type: ['number', 'null'] }, lo: { type: ['number', 'null'] }, hi: { type: ['number', 'null'] } }, description: 'h3 / loaded with its Wilson 95% interval' }
                        }
                      }
                    }
                  },
                  runs: { type: 'object', properties: { h2: modeCounts, h3: modeCounts }, description: 'Deprecated: the arms object has the same counts with intervals' },
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
  }, async (/** @type {WindowRequest<{ analysis: string }>} */ request, reply) => {
    const q = await readQuery(request)
    const fresh = /\bno-cache\b/i.test(request.headers['cache-control'] ?? '')
    const { answer, ageMs } = await comparisons.answer(app.db, { ...q, analysis: request.query.analysis, timeoutMs: app.config.pageTimeoutMs }, { fresh })
    reply.header('age', String(Math.floor(ageMs / 1000)))
    return answer
  })

  const gain = {
    type: 'object',
    additionalProperties: false,
    properties: {
      rounds: { type: 'integer', description: 'Rounds the cell rests on' },
      h2_ms: { type: ['number', 'null'] },
      h3_ms: { type: ['number', 'null'] },
      delta_ms: { type: ['number', 'null'], description: 'h3_ms − h2_ms in this browser: negative means HTTP/3 is faster' },
      delta_pct: { type: ['number', 'null'] },
      ci_low_ms: { type: ['number', 'null'], description: 'The 95% round-level bootstrap interval of delta_ms' },
      ci_high_ms: { type: ['number', 'null'] },
      verdict: { type: 'string', enum: Object.values(VERDICTS) },
      reason: { type: ['string', 'null'] }
    }
  }

  app.get('/monitors/:id/browsers', {
    schema: {
      description: 'The cross-browser comparison: per location (and all locations), the H3 gain in each browser the monitor runs, ' +
        'on the same percentile, each from that browser\'s own rounds (GET /monitors/{id}/comparison?browser=…) with its interval and verdict, ' +
        'and what they say together: a gain both browsers show is the server\'s and the path\'s, a gain only one browser shows is its HTTP/3 stack\'s (docs/BROWSERS.md).',
      tags,
      params: idParams,
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          from: windowQuery.from,
          to: windowQuery.to,
          metric: windowQuery.metric,
          percentile: { type: 'number', minimum: 1, maximum: 99.9, default: 50, description: 'The percentile compared, 1 to 99.9 (default 50)' },
          analysis: { type: 'string', enum: ANALYSES, default: 'matched' }
        }
      },
      response: {
        200: {
          type: 'object',
          additionalProperties: false,
          properties: {
            monitor_id: { type: 'integer' },
            metric: { type: 'string' },
            probe: { type: 'string' },
            percentile: { type: 'number' },
            analysis: { type: 'string' },
            from: { type: 'string', format: 'date-time' },
            to: { type: 'string', format: 'date-time' },
            browsers: { type: 'array', items: { type: 'string' }, description: 'The browsers compared: those the monitor runs and any other it has rounds of in the window (with one, every reading is one_browser)' },
            locations: {
              type: 'array',
              items: {
                type: 'object',
                additionalProperties: false,
                properties: {
                  location_id: { type: ['string', 'null'], description: 'null for all locations' },
                  name: { type: 'string' },
                  region: { type: ['string', 'null'] },
                  kind: { type: ['string', 'null'] },
                  gains: { type: 'object', additionalProperties: gain, description: 'Per browser' },
                  difference: {
                    type: ['object', 'null'],
                    additionalProperties: false,
                    description: 'Whether the browsers\' gains are apart, relative to each browser\'s H2: the first browser\'s delta_pct minus the second\'s (delta_pct, in points), its standard error ' +
                      '(each browser\'s read from its 95% interval over its H2, added), the two-sided p-value and the p-value adjusted over the locations (Benjamini–Hochberg); ' +
                      '"disagree" needs p_adjusted ≤ 0.05. delta_ms is the same difference in ms, as shown. Null when a browser has no interval',
                    properties: {
                      browsers: { type: 'array', items: { type: 'string' } },
                      delta_ms: { type: 'number' },
                      delta_pct: { type: 'number' },
                      se_pct: { type: 'number' },
                      p: { type: 'number' },
                      p_adjusted: { type: ['number', 'null'] }
                    }
                  },
                  reading: {
                    type: 'object',
                    additionalProperties: false,
                    properties: { code: { type: 'string', enum: Object.keys(READINGS) }, text: { type: 'string' } }
                  }
                }
              }
            }
          }
        },
        ...errorResponses
      }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Params: { id: number }, Querystring: WindowQuery & { percentile: number, analysis: string } }>} */ request) => {
    const q = await readQuery(/** @type {WindowRequest} */ (/** @type {unknown} */ (request)), { percentiles: false })
    const percentile = request.query.percentile
    // The page probe unless the metric is another probe's (upload_mbps).
    const probe = q.probe ?? 'page'
    // The browsers the monitor runs, and any it ran before that has rounds
    // in the window, in the catalogue's order.
    const runs = q.monitor.browsers ?? ['chromium']
    const before = await browsersWithRounds(app.db, { monitorId: q.monitor.id, probe, view: 'first', from: q.from, to: q.to, browsers: BROWSERS.filter((b) => !runs.includes(b)) })
    const browsers = BROWSERS.filter((b) => runs.includes(b) || before.includes(b))
    /** @type {Record<string, any>} */
    const answers = {}
    for (const browser of browsers) {
      const { answer } = await comparisons.answer(app.db, { ...q, probe, view: 'first', browser, percentiles: [percentile], analysis: request.query.analysis, timeoutMs: app.config.pageTimeoutMs })
      answers[browser] = answer
    }
    return {
      monitor_id: q.monitor.id,
      metric: q.metric,
      probe,
      percentile,
      analysis: request.query.analysis,
      from: q.from.toISOString(),
      to: q.to.toISOString(),
      browsers,
      locations: crossBrowser(answers, percentile)
    }
  })

  app.get('/monitors/:id/browsers-with-rounds', {
    schema: {
      description: 'The browsers the monitor has rounds of in the window (the probe\'s first views), whether it still runs them or not: ' +
        'the dashboard\'s browser switch offers each, and a browser it ran before is read with ?browser= on the other routes.',
      tags,
      params: idParams,
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: { from: windowQuery.from, to: windowQuery.to, probe: windowQuery.probe }
      },
      response: {
        200: {
          type: 'object',
          additionalProperties: false,
          properties: {
            monitor_id: windowFields.monitor_id,
            probe: windowFields.probe,
            from: windowFields.from,
            to: windowFields.to,
            browsers: { type: 'array', items: { type: 'string', enum: [...BROWSERS] }, description: 'In the catalogue\'s order' }
          }
        },
        ...errorResponses
      }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Params: { id: number }, Querystring: { from?: string, to?: string, probe: string } }>} */ request) => {
    const { from, to } = windowOf(request.query)
    const monitor = await getMonitor(app.db, request.params.id)
    const { probe } = request.query
    const browsers = await browsersWithRounds(app.db, { monitorId: monitor.id, probe, view: 'first', from, to, browsers: BROWSERS })
    return { monitor_id: monitor.id, probe, from: from.toISOString(), to: to.toISOString(), browsers }
  })

  const num = { type: ['number', 'null'] }
  const share = { type: 'object', additionalProperties: false, properties: { rate: num, lo: num, hi: num } }
  const counts = { type: 'object', additionalProperties: { type: 'integer' } }
  const contrast = {
    type: 'object',
    additionalProperties: false,
    properties: {
      arm: { type: 'string' },
      ref: { type: 'string' },
      delta_ms: { ...num, description: 'arm − ref at the percentile: negative means the arm is faster' },
      delta_pct: { ...num, description: 'delta_ms / ref_ms × 100' },
      ref_ms: num,
      ci_low_ms: num,
      ci_high_ms: num,
      p_value: num,
      p_adjusted: { ...num, description: 'Adjusted p-value of the view\'s correction (a column per location, visit and contrast, selected by Benjamini–Hochberg over their Simes p-values; `method.verdict`)' },
      min_effect_ms: num,
      verdict: {
        type: 'string',
        enum: Object.values(CONTRAST_VERDICTS),
        description: 'faster/slower: the arm against ref, under the forced table\'s rule (p_adjusted ≤ 0.05, the interval excludes 0, |delta| ≥ min_effect_ms, enough rounds)'
      },
      reason: { type: ['string', 'null'] },
      reason_code: REASON_CODE
    }
  }
  const autoRow = {
    type: 'object',
    additionalProperties: false,
    properties: {
      percentile: { type: 'number' },
      rounds: { type: 'integer', description: 'Rounds the row\'s numbers rest on: those in which all three arms loaded (the visit\'s matched set), or above 2,000 of them an evenly spaced subsample' },
      min_rounds: { type: 'integer' },
      h2_ms: num,
      h3_ms: num,
      auto_ms: num,
      contrasts: { type: 'object', additionalProperties: false, properties: Object.fromEntries(CONTRASTS.map((c) => [c.id, { ...contrast, description: c.label }])) },
      received_gain: {
        type: 'object',
        additionalProperties: false,
        description: '(H2 − auto) / (H2 − H3): the share of the forced H3 gain the auto arm gets (1 = all of it); shown only where H3 − H2 of the same rounds is "faster"',
        properties: {
          shown: { type: 'boolean' },
          value: num,
          ci_low: num,
          ci_high: num,
          level: { ...num, description: 'The interval\'s confidence: 1 − 0.05 × shown / tested over the view\'s forced-gain cells (0.95 when all are shown), so that among the shares shown, 5% or fewer miss their truth' },
          reason: { type: ['string', 'null'] }
        }
      }
    }
  }
  const armFailures = { type: 'object', additionalProperties: false, properties: { attempted: { type: 'integer' }, failed: { type: 'integer' }, rate: share } }
  const visit = {
    type: 'object',
    additionalProperties: false,
    properties: {
      rounds: {
        type: 'object',
        additionalProperties: false,
        properties: {
          total: { type: 'integer' },
          matched: { type: 'integer' },
          available: { type: 'integer' },
          used: { type: 'integer' },
          excluded: { type: 'array', items: { type: 'object', additionalProperties: false, properties: { h2: { type: 'string' }, h3: { type: 'string' }, auto: { type: 'string' }, rounds: { type: 'integer' } } } }
        }
      },
      failures: { type: 'object', additionalProperties: false, properties: { h2: armFailures, h3: armFailures, auto: armFailures } },
      insufficient_data: { type: 'boolean' },
      reason: { type: 'string' },
      rows: { type: 'array', items: autoRow }
    }
  }
  const viewShare = {
    type: 'object',
    additionalProperties: false,
    properties: {
      visits: { type: 'integer' },
      loaded: { type: 'integer' },
      h3: { type: 'integer', description: 'Visits whose page came over H3' },
      navigation_share: { ...share, description: 'h3 / loaded with its Wilson 95% interval' },
      byte_share: { ...share, properties: { ...share.properties, n: { type: 'integer', description: 'The loaded visits that fetched bytes, which the share rests on' } }, description: 'Bytes over H3 / bytes of the visits that loaded, with a 95% interval (Wilson, at the effective number of visits)' },
      reasons: { ...counts, description: 'Visits by protocol reason code (details.protocol_reason.code)' },
      alternate_protocol_usage: { ...counts, description: 'Loaded visits by Chromium\'s alternateProtocolUsage of the document' }
    }
  }

  app.get('/monitors/:id/auto', {
    schema: {
      description: 'As users get it: the auto arm (the browser\'s defaults, nothing forced) beside the forced arms, per location. ' +
        'The H3 share of each visit (first, returning, repeat) with intervals and the reasons the browser gave; per visit and percentile, ' +
        'paired per round, auto − H2, auto − H3 and the forced H3 − H2 of the same rounds with round-bootstrap intervals and corrected verdicts; ' +
        'and the received gain (H2 − auto) / (H2 − H3), shown only where the forced gain is a verdict. See `method` and docs/STATISTICS.md.',
      tags,
      params: idParams,
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          from: windowQuery.from,
          to: windowQuery.to,
          metric: windowQuery.metric,
          browser: windowQuery.browser,
          percentiles: percentilesParam(DEFAULT_PERCENTILES)
        }
      },
      response: {
        200: {
          type: 'object',
          additionalProperties: false,
          properties: {
            monitor_id: { type: 'integer' },
            metric: { type: 'string' },
            from: { type: 'string', format: 'date-time' },
            to: { type: 'string', format: 'date-time' },
            percentiles: { type: 'array', items: { type: 'number' } },
            has_auto: { type: 'boolean', description: 'Whether the monitor runs the auto arm now (its modes include auto)' },
            min_effect: { type: 'object', additionalProperties: false, properties: { pct: { type: 'number' }, ms: { type: 'number' } } },
            cells: { type: 'object', additionalProperties: false, properties: { tested: { type: 'integer' }, flagged: { type: 'integer' } } },
            method: { type: 'object', additionalProperties: { type: 'string' } },
            locations: {
              type: 'array',
              items: {
                type: 'object',
                additionalProperties: false,
                properties: {
                  location_id: { type: 'string' },
                  name: { type: 'string' },
                  region: { type: ['string', 'null'] },
                  kind: { type: ['string', 'null'] },
                  story: {
                    type: 'object',
                    additionalProperties: false,
                    properties: { code: { type: 'string', enum: Object.keys(STORIES) }, text: { type: 'string', description: 'What the location\'s users get, in words' } }
                  },
                  shares: { type: 'object', additionalProperties: false, properties: Object.fromEntries(SHARE_VIEWS.map((v) => [v, viewShare])) },
                  visits: { type: 'object', additionalProperties: false, properties: Object.fromEntries(AUTO_VISITS.map((v) => [v, visit])) }
                }
              }
            }
          }
        },
        ...errorResponses
      }
    }
  }, async (/** @type {WindowRequest} */ request) => {
    // A property of the arm, whatever the monitor runs: said before the monitor's own probes are.
    const own = probeOfMetric(canonicalMetric(request.query.metric))
    if (own && own !== 'page') throw new ValidationError(`metric ${request.query.metric} is a ${own} probe's; the auto arm runs the page probe, so choose a page timing (${COMPARABLE_METRICS.filter((m) => !probeOfMetric(m)).join(', ')})`, 'metric')
    const q = await readQuery(request)
    return autoComparison(app.db, { monitor: q.monitor, metric: q.metric, percentiles: q.percentiles, from: q.from, to: q.to, browser: q.browser })
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
      response: {
        200: {
          description: 'The series as JSON, or with format=csv as a CSV download',
          content: { 'application/json': { schema: trendsResponse }, 'text/csv': { schema: { type: 'string' } } }
        },
        ...errorResponses
      }
    }
  }, async (/** @type {WindowRequest<{ bucket: keyof typeof TIERS, format: 'json' | 'csv' }>} */ request, reply) => {
    const q = await readQuery(request)
    const bucket = request.query.bucket
    if (bucketCount(bucket, q.from, q.to) > MAX_POINTS) {
      throw new ValidationError(`${bucketCount(bucket, q.from, q.to)} buckets of ${bucket} is too many for one series (max ${MAX_POINTS}); use a wider bucket (1h or 1d) or a shorter window`, 'bucket')
    }
    const t = await trends(app.db, { monitorId: q.monitor.id, metric: q.metric, bucket, from: q.from, to: q.to, percentiles: q.percentiles, probe: q.probe, view: q.view, browser: q.browser })
    if (request.query.format === 'csv') {
      const csv = stringify([...trendRows(t)], { header: true, columns: trendColumns(q.percentiles), cast: { string: csvText } })
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
      response: { 200: distributionResponse, ...errorResponses }
    }
  }, async (/** @type {WindowRequest} */ request) => {
    const q = await readQuery(request, { percentiles: false })
    return distribution(app.db, { monitorId: q.monitor.id, metric: q.metric, from: q.from, to: q.to, probe: q.probe, view: q.view, browser: q.browser })
  })
}
