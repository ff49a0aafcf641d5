// Response schemas of /api/v1/rum (api/routes/rum.js). As everywhere, they
// are also an allow-list: nothing else leaves the server.
import { BROWSER_FAMILIES } from '../lib/measurement/rum/user-agent.js'

const num = { type: ['number', 'null'] }
const dateTime = { type: 'string', format: 'date-time' }
const counts = { type: 'object', additionalProperties: { type: 'integer' } }
export const shareSchema = {
  type: 'object',
  description: 'Page views over H3 of those whose document came over the network with a known protocol, with its Wilson 95% interval',
  properties: { rate: num, lo: num, hi: num, h3: { type: 'integer' }, known: { type: 'integer' } }
}
const interval = { type: ['object', 'null'], properties: { rate: num, lo: num, hi: num } }

export const siteSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    key: { type: 'string', description: 'The site key: public, it is in every page\'s install tag' },
    name: { type: 'string' },
    origins: { type: 'array', items: { type: 'string' }, description: 'The Origin header of every beacon must be one of these' },
    sample_rate: { type: 'number', description: 'Share of page views that send a beacon, drawn in the page' },
    created_at: dateTime,
    updated_at: dateTime,
    revoked_at: { type: ['string', 'null'], format: 'date-time' },
    install: {
      type: 'object',
      description: 'What to put in the <head> of the site\'s pages',
      properties: {
        tag: { type: 'string', description: 'The one <script> element to add' },
        src: { type: 'string' },
        integrity: { type: 'string', description: 'Subresource Integrity of the snippet (sha384)' },
        version: { type: 'string' }
      }
    }
  }
}

export const siteInput = {
  name: { type: 'string', minLength: 1, maxLength: 100 },
  origins: { type: 'array', minItems: 1, maxItems: 20, items: { type: 'string', maxLength: 300 }, description: 'Origins the pages are served from, such as https://www.example.com' },
  sample_rate: { type: 'number', minimum: 0, maximum: 1, description: 'Share of page views that send a beacon, above 0 (default 1)' }
}

const contrastRow = {
  type: 'object',
  properties: {
    percentile: { type: 'number' },
    h2_ms: { ...num, description: 'Equal-weight mean over the strata used of the stratum\'s H2 percentile' },
    h3_ms: { ...num, description: 'The same for H3' },
    delta_ms: { ...num, description: 'h3_ms − h2_ms: negative means page views over H3 were faster (an association)' },
    delta_pct: num,
    ci_low_ms: { ...num, description: '95% bootstrap interval (page views resampled within stratum and protocol)' },
    ci_high_ms: num,
    p_value: num,
    p_adjusted: { ...num, description: 'As in the synthetic table: a Simes screen per column, Bonferroni over the columns, Benjamini–Hochberg within' },
    min_effect_ms: num,
    page_views: { type: 'object', properties: { h2: { type: 'integer' }, h3: { type: 'integer' } }, description: 'The page views this percentile rests on: its strata\'s, at most 2,000 per stratum and protocol (an evenly spaced subsample above that)' },
    min_page_views: { type: 'integer', description: 'Page views per protocol a stratum needs to take part at this percentile' },
    strata: { type: 'array', items: { type: 'string' }, description: 'The strata averaged: country|connection|visit|browser (unknown for a view with no country; All regions: of every region)' },
    verdict: { type: 'string', enum: ['h3_faster', 'h3_slower', 'no_clear_difference', 'insufficient_data'], description: 'An association, coloured under the synthetic verdicts\' rules' },
    reason: { type: ['string', 'null'] }
  }
}
const percentileRow = { type: 'object', properties: { percentile: { type: 'number' }, value: num, ci_low: num, ci_high: num, n: { type: 'integer' } } }
const byProtocol = { type: 'object', properties: { h2: { type: 'array', items: percentileRow }, h3: { type: 'array', items: percentileRow } } }
const metrics = { type: 'object', properties: { ttfb_ms: byProtocol, lcp_ms: byProtocol } }

const regionSchema = {
  type: 'object',
  properties: {
    region_id: { type: ['string', 'null'], description: 'A location id (its countries), other, unknown, or null for all regions' },
    name: { type: 'string' },
    kind: { type: ['string', 'null'] },
    stratified: { type: 'boolean' },
    location_countries: { type: ['array', 'null'], items: { type: 'string' } },
    page_views: { type: 'integer', description: 'Beacons in the window' },
    kinds: { ...counts, description: 'Page views by kind: network (the document came over the network), cached, prerender, back-forward-cache, restore' },
    protocols: { ...counts, description: 'Network page views by protocol: h3, h2, h1, unknown' },
    countries: { ...counts, description: 'Page views by country (ISO 3166-1 alpha-2)' },
    h3_share: shareSchema,
    browsers: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          family: { type: 'string', enum: BROWSER_FAMILIES },
          page_views: { type: 'integer' },
          protocols: counts,
          h3_share: shareSchema,
          metrics: { ...metrics, description: 'Percentiles by protocol of network page views, each with a 95% bootstrap interval' }
        }
      }
    },
    comparison: {
      type: 'object',
      description: 'H3 against H2 within strata, equal weights: an association, not a controlled comparison',
      properties: { ttfb_ms: { type: 'array', items: contrastRow }, lcp_ms: { type: 'array', items: contrastRow } }
    },
    lab: {
      type: ['object', 'null'],
      description: 'The lab at this location: the auto arm\'s share of navigations over H3 (first and returning visits) of lab_monitor',
      properties: { monitor_id: { type: 'integer' }, first: interval, returning: interval, returning_visits: { type: 'integer' } }
    }
  }
}

export const summarySchema = {
  type: 'object',
  properties: {
    site_id: { type: 'integer' },
    from: dateTime,
    to: dateTime,
    percentiles: { type: 'array', items: { type: 'number' } },
    metrics: { type: 'array', items: { type: 'string' } },
    association: { type: 'string', description: 'What the comparison is and is not, in words; show it with it' },
    lab_monitor: { type: ['object', 'null'], properties: { id: { type: 'integer' }, url: { type: 'string' }, label: { type: ['string', 'null'] } } },
    method: { type: 'object', additionalProperties: { type: 'string' } },
    regions: { type: 'array', items: regionSchema }
  }
}

export const trendSchema = {
  type: 'object',
  properties: {
    site_id: { type: 'integer' },
    from: dateTime,
    to: dateTime,
    bucket_s: { type: 'integer' },
    series: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          region_id: { type: ['string', 'null'] },
          name: { type: 'string' },
          points: { type: 'array', items: { type: 'object', properties: { t: dateTime, page_views: { type: 'integer' }, h3_share: shareSchema } } }
        }
      }
    }
  }
}

export const snippetSchema = {
  type: 'object',
  properties: {
    path: { type: 'string' },
    version: { type: 'string' },
    integrity: { type: 'string' },
    bytes: { type: 'integer' },
    gzip_bytes: { type: 'integer' },
    budget_gzip_bytes: { type: 'integer' },
    web_vitals: { type: 'string', description: 'The version of web-vitals inside' }
  }
}
