// GET /api/v1/catalogue: what a measurement is, from lib/measurement/ — the
// metrics (id, unit, label, whether it has a rollup and can be compared),
// probes, modes and views. The dashboard builds its menus and labels from it,
// so a metric added to the catalogue shows up there without a UI change.
import { METRICS, DEFAULT_METRIC, DEFAULT_PERCENTILES } from '../../lib/measurement/metrics.js'
import { PROBES } from '../../lib/measurement/probes/index.js'
import { MODES, PROTOCOL_OF_MODE } from '../../lib/measurement/modes.js'
import { VIEWS } from '../../lib/measurement/result.js'

const metricSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: { type: 'string', description: 'API name, with its unit (ttfb_ms)' },
    alias: { type: 'string', description: 'Deprecated API name without the unit (ttfb), accepted for one version' },
    column: { type: ['string', 'null'], description: 'results column, or null when the values are per-request samples' },
    samplesOf: { type: ['string', 'null'], description: 'the probe whose samples carry it' },
    unit: { type: 'string' },
    label: { type: 'string' },
    long: { type: 'string' },
    description: { type: 'string' },
    rollup: { type: ['string', 'null'], description: 'rollups column (trends, distributions), or null' },
    comparable: { type: 'boolean', description: 'accepted by the comparison, trends, distribution and alert rules' },
    lowerIsBetter: { type: 'boolean' }
  }
}

const probeSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: { type: 'string' },
    label: { type: 'string' },
    hint: { type: 'string' },
    samplesMetric: { type: ['string', 'null'] },
    options: { type: 'array', items: { type: 'string' }, description: 'monitor options (monitors.options) this probe reads' },
    defaults: { type: 'object', additionalProperties: true }
  }
}

/** @param {any} app */
export default async function catalogueRoutes (app) {
  const body = {
    metrics: METRICS,
    default_metric: DEFAULT_METRIC,
    default_percentiles: DEFAULT_PERCENTILES,
    probes: PROBES.map((p) => ({ id: p.id, label: p.label, hint: p.hint, samplesMetric: p.samplesMetric, options: Object.keys(p.options), defaults: p.defaults })),
    modes: MODES.map((id) => ({ id, protocol: PROTOCOL_OF_MODE[id] })),
    views: VIEWS
  }
  app.get('/catalogue', {
    schema: {
      description: 'What a measurement is: every metric (its id with the unit, label, rollup, whether it can be compared), probe, mode and view. ' +
        'The dashboard reads its menus from here.',
      tags: ['catalogue'],
      response: {
        200: {
          type: 'object',
          additionalProperties: false,
          properties: {
            metrics: { type: 'array', items: metricSchema },
            default_metric: { type: 'string' },
            default_percentiles: { type: 'array', items: { type: 'number' } },
            probes: { type: 'array', items: probeSchema },
            modes: { type: 'array', items: { type: 'object', additionalProperties: false, properties: { id: { type: 'string' }, protocol: { type: 'string' } } } },
            views: { type: 'array', items: { type: 'string' } }
          }
        }
      }
    }
  }, async () => body)
}
