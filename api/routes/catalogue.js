// GET /api/v1/catalogue: what a measurement is, from lib/measurement/ — the
// metrics (id, unit, label, whether it has a rollup and can be compared),
// probes, modes and views, and the words for why a run came over its
// protocol (protocol reasons, Chromium's alternateProtocolUsage). The
// dashboard builds its menus and labels from it, so a metric added to the
// catalogue shows up there without a UI change.
import { METRICS, DEFAULT_METRIC, DEFAULT_PERCENTILES } from '../../lib/measurement/metrics.js'
import { PROBES } from '../../lib/measurement/probes/index.js'
import { MODES, PROTOCOL_OF_MODE } from '../../lib/measurement/modes.js'
import { VIEWS, VIEWS_OF_MODE } from '../../lib/measurement/result.js'
import { BROWSER_CATALOGUE } from '../../lib/measurement/browsers/index.js'
import { ALTERNATE_PROTOCOL_USAGE, ALTERNATE_PROTOCOL_USAGE_LABELS, PROTOCOL_REASONS } from '../../lib/measurement/protocol-reason.js'

const rttFloorSchema = {
  type: ['object', 'null'],
  additionalProperties: false,
  description: 'its least value in round trips on a fresh connection without loss: over QUIC (h3) and over TCP + TLS 1.3 (tcp); the result carries it in RTT as <name>_rtt',
  properties: { h3: { type: 'number' }, tcp: { type: 'number' } }
}

const metricSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: { type: 'string', description: 'API name, with its unit (ttfb_ms)' },
    alias: { type: ['string', 'null'], description: 'Deprecated API name without the unit (ttfb), accepted where the id is; null when the metric has none' },
    column: { type: ['string', 'null'], description: 'results column, or null when the values are per-request samples' },
    samplesOf: { type: ['string', 'null'], description: 'the probe whose samples carry it' },
    unit: { type: 'string' },
    label: { type: 'string' },
    long: { type: 'string' },
    description: { type: 'string' },
    rollup: { type: ['string', 'null'], description: 'rollups column (trends, distributions), or null' },
    comparable: { type: 'boolean', description: 'accepted by the comparison, trends, distribution and alert rules' },
    lowerIsBetter: { type: 'boolean' },
    atLeast: { type: 'array', items: { type: 'string' }, description: 'page metrics it is never below in one page load (results saying otherwise are refused)' },
    timeline: { type: ['string', 'null'], enum: ['span', 'mark', null], description: 'how the run detail draws it: a duration (span), a time since navigation start (mark), or not at all' },
    summary: { type: 'boolean', description: 'a column of the runs table and a tile of the run detail' },
    rttFloor: rttFloorSchema,
    wpt: {
      type: ['object', 'null'],
      additionalProperties: false,
      description: 'where a WebPageTest result has it: a pageData field of the agent\'s devtools file, or the navigation\'s own phases (navigation: true); null: WPT results leave it null',
      properties: { pageData: { type: 'string' }, navigation: { type: 'boolean' } }
    },
    pageScript: { type: 'boolean', description: 'measured by a script of its own in the loaded page' },
    browsers: { type: 'array', items: { type: 'string' }, description: 'the browsers that give it; a result of another browser leaves it null, never zero (docs/BROWSERS.md)' }
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
    modes: MODES.map((id) => ({ id, protocol: PROTOCOL_OF_MODE[id], views: VIEWS_OF_MODE[id] })),
    views: VIEWS,
    browsers: BROWSER_CATALOGUE,
    protocol_reasons: Object.entries(PROTOCOL_REASONS).map(([code, text]) => ({ code, text })),
    alternate_protocol_usage: Object.entries(ALTERNATE_PROTOCOL_USAGE).map(([value, text]) => ({ value, label: ALTERNATE_PROTOCOL_USAGE_LABELS[value] ?? value, text }))
  }
  app.get('/catalogue', {
    schema: {
      description: 'What a measurement is: every metric (its id with the unit, label, rollup, whether it can be compared), probe, mode and view, ' +
        'and the words for why a run came over its protocol: the protocol reasons (details.protocol_reason.code) and Chromium\'s alternateProtocolUsage values. ' +
        'The dashboard reads its menus and labels from here.',
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
            modes: {
              type: 'array',
              items: {
                type: 'object',
                additionalProperties: false,
                properties: {
                  id: { type: 'string' },
                  protocol: { type: ['string', 'null'], description: 'The protocol a run must use to count for the mode; null for auto (whatever the browser chose is what it measures)' },
                  views: { type: 'array', items: { type: 'string' }, description: 'The views the mode has: the forced arms first and repeat; auto also returning' }
                }
              }
            },
            views: { type: 'array', items: { type: 'string' } },
            browsers: {
              type: 'array',
              description: 'The browsers h3lens measures with: how each is driven, and what of a result it cannot give (left null)',
              items: {
                type: 'object',
                additionalProperties: false,
                properties: { id: { type: 'string' }, label: { type: 'string' }, driver: { type: 'string' }, lacks: { type: 'array', items: { type: 'string' } } }
              }
            },
            protocol_reasons: {
              type: 'array',
              description: 'Why a run\'s page came over its protocol (details.protocol_reason.code), in words',
              items: { type: 'object', additionalProperties: false, properties: { code: { type: 'string' }, text: { type: 'string' } } }
            },
            alternate_protocol_usage: {
              type: 'array',
              description: 'Chromium\'s alternateProtocolUsage values (per request: details.requests[].alternate_protocol_usage): a short label and what it means',
              items: { type: 'object', additionalProperties: false, properties: { value: { type: 'string' }, label: { type: 'string' }, text: { type: 'string' } } }
            }
          }
        }
      }
    }
  }, async () => body)
}
