// JSON schemas of alert rules, channels, alerts and the webhook body. The
// response schemas are allow-lists: a channel's secret is not named, so it
// never leaves the server.
import { RULE_KINDS, SEVERITIES } from '../lib/store/alert-rules.js'
import { CHANNEL_FORMATS } from '../lib/store/alert-channels.js'
import { ALERT_STATES } from '../lib/store/alert-states.js'
import { ACCEPTED_METRIC_NAMES } from '../lib/measurement/metrics.js'
import { BASELINE_S, DROP_ALPHA, FLOOR_CONFIDENCE, MIN_VISITS } from '../lib/analysis/alert-h3-share.js'

const BASELINE = `the ${BASELINE_S / 86400} days before the window`

const dateTime = { type: 'string', format: 'date-time' }
const nullableDateTime = { type: ['string', 'null'], format: 'date-time' }
const id = { type: 'integer', minimum: 1, maximum: 2147483647 }

const ruleFields = {
  kind: { type: 'string', enum: RULE_KINDS, description: 'h3_regression: the matched-round comparison cell at `percentile` says h3_slower by at least min_effect_pct % and/or min_effect_ms ms; h3_failure: H3 failure-or-fallback rate above threshold_pct and failure verdict h3_fails_more; location_silent: no result from a location for window_s while it had due rounds; error_rate: either arm\'s failure rate above threshold_pct; ' +
    `h3_share_drop: the auto arm's returning visits over H3 are below threshold_pct (the Wilson ${Math.round(FLOOR_CONFIDENCE * 1000) / 10}% interval wholly below it), or at least min_drop_points lower than in ${BASELINE} (one-sided Fisher exact test at p ≤ ${DROP_ALPHA}); needs at least ${MIN_VISITS} loaded returning visits in the window` },
  monitor_id: { type: ['integer', 'null'], minimum: 1, maximum: 2147483647, description: 'One monitor; null or absent: every monitor' },
  locations: { type: ['array', 'null'], items: { type: 'string', maxLength: 63 }, maxItems: 100, description: 'Only these locations; null or absent: all of the monitor\'s' },
  metric: { type: 'string', enum: ACCEPTED_METRIC_NAMES, description: 'h3_regression only: the compared metric (default ttfb_ms). The names without a unit (ttfb, load, …) are deprecated aliases, stored as the id' },
  probe: { type: ['string', 'null'], maxLength: 48, description: 'h3_regression only: the probe compared; null or absent: the metric\'s own (page timings: page). A journey\'s whole run is journey, a named step journey:<name> (docs/JOURNEYS.md), with metric step_ms or a navigation step\'s page timing' },
  percentile: { type: ['number', 'null'], description: 'h3_regression: the percentile cell watched (default 95)' },
  min_effect_pct: { type: ['number', 'null'], description: 'h3_regression: H3 slower by at least this many percent' },
  min_effect_ms: { type: ['number', 'null'], description: 'h3_regression: H3 slower by at least this many milliseconds' },
  threshold_pct: { type: ['number', 'null'], description: 'h3_failure and error_rate: the rate, in percent, above which the rule breaches; h3_share_drop: the share of returning visits over H3, in percent, below which it breaches' },
  min_drop_points: { type: ['number', 'null'], description: `h3_share_drop: the drop, in percentage points, of the returning visits' H3 share against ${BASELINE} at which it breaches (while it fires, against the baseline it fired on)` },
  window_s: { type: 'integer', description: 'The window each evaluation looks at, ending now (comparison windows are aligned to 5 minutes like the dashboard\'s)' },
  evaluations: { type: 'integer', description: 'Consecutive breaching evaluations before it fires, and clear ones before it resolves (default 1)' },
  severity: { type: 'string', enum: SEVERITIES, description: 'default warning' },
  description: { type: ['string', 'null'], maxLength: 500 },
  channels: { type: 'array', items: id, maxItems: 20, description: 'Channel ids notified when it fires and resolves' }
}

export const ruleCreateBody = { type: 'object', additionalProperties: false, required: ['kind', 'window_s'], properties: ruleFields }
export const rulePatchBody = { type: 'object', additionalProperties: false, minProperties: 1, properties: ruleFields }

export const alertRuleSchema = {
  $id: 'alertRule',
  title: 'alertRule',
  type: 'object',
  properties: { id: { type: 'integer' }, ...ruleFields, created_at: dateTime, updated_at: dateTime }
}

const channelFields = {
  kind: { type: 'string', enum: ['webhook'] },
  name: { type: 'string', minLength: 1, maxLength: 200 },
  url: { type: 'string', maxLength: 2048, description: 'http(s) URL receiving a POST per notification; a host that is or resolves to a private address, or does not resolve, only with H3LENS_ALLOW_PRIVATE_TARGETS=true. Shown with everything past its first path segment as "…" (webhook URLs often carry a token)' },
  secret: { type: 'string', minLength: 1, maxLength: 500, description: 'HMAC-SHA256 key of X-H3lens-Signature (at least 16 characters); write-only' },
  format: { type: 'string', enum: CHANNEL_FORMATS, description: 'json: the alertNotification body; slack: {"text": "…"} for a Slack incoming webhook (signed the same way)' }
}
export const channelCreateBody = { type: 'object', additionalProperties: false, required: ['kind', 'name', 'url', 'secret'], properties: channelFields }
export const channelPatchBody = { type: 'object', additionalProperties: false, minProperties: 1, properties: channelFields }

export const alertChannelSchema = {
  $id: 'alertChannel',
  title: 'alertChannel',
  type: 'object',
  properties: { id: { type: 'integer' }, kind: channelFields.kind, name: channelFields.name, url: channelFields.url, format: channelFields.format, created_at: dateTime, updated_at: dateTime }
}

const evidence = {
  type: 'object',
  additionalProperties: true,
  description: 'What the evaluation saw. h3_regression: metric, percentile, from, to, analysis, verdict, h2_ms, h3_ms, delta_ms, delta_pct, ci_low_ms, ci_high_ms, p_adjusted, rounds_used; ' +
    'h3_failure: h3_attempted, h3_lost_pct, h3_failure_rate, h3_fallback_rate, h2_failure_rate, failure_verdict; error_rate: h2/h3 attempted and failure_rate, worst_pct; ' +
    'location_silent: window_s, due_rounds, answered_rounds (of them, the rounds with a result), last_result_at; h3_share_drop: from, to, visits, loaded, h3, share {rate, lo, hi} (Wilson at `confidence`), confidence, baseline_from, baseline_to, baseline_frozen, ' +
    'baseline_loaded, baseline_h3, baseline_share, threshold_pct, below_threshold, min_drop_points, drop_points, p_value, alpha, dropped, min_visits, reason, text (the evidence in words). `link`: the dashboard route showing it (the monitor page with that window, metric and percentile)'
}

/** What an alert state and an alert event both say: whose rule, which monitor and location, which state. */
const alertKeyProperties = {
  rule_id: { type: 'integer' },
  kind: { type: 'string', enum: RULE_KINDS },
  severity: { type: 'string' },
  description: { type: ['string', 'null'] },
  monitor_id: { type: 'integer' },
  monitor_label: { type: ['string', 'null'] },
  location_id: { type: 'string' },
  state: { type: 'string', enum: ALERT_STATES }
}

export const alertStateSchema = {
  $id: 'alertState',
  title: 'alertState',
  type: 'object',
  properties: {
    ...alertKeyProperties,
    since: dateTime,
    fired_at: nullableDateTime,
    resolved_at: nullableDateTime,
    evaluated_at: dateTime,
    evidence
  }
}

export const alertEventSchema = {
  $id: 'alertEvent',
  title: 'alertEvent',
  type: 'object',
  properties: {
    id: { type: 'integer' },
    ...alertKeyProperties,
    previous: { type: 'string', enum: ALERT_STATES },
    at: dateTime,
    evidence
  }
}

export const alertNotificationSchema = {
  $id: 'alertNotification',
  title: 'alertNotification',
  type: 'object',
  description: 'The body POSTed to a json-format webhook. Headers: X-H3lens-Timestamp (unix seconds), ' +
    'X-H3lens-Signature: "v1=" + hex(HMAC-SHA256(secret, timestamp + "." + raw body)), X-H3lens-Delivery (the same id on every retry; deduplicate on it). ' +
    'A 2xx answer marks it delivered; anything else is retried with back-off (30 s doubling, at most 1 h apart) for 24 h.',
  properties: {
    version: { type: 'integer', enum: [1] },
    event: { type: 'string', enum: ['firing', 'resolved', 'test'] },
    event_id: { type: 'integer', description: 'The alert event (absent for test)' },
    sent_at: { type: 'string', format: 'date-time', description: 'test only' },
    channel: { type: 'object', properties: { id: { type: 'integer' }, name: { type: 'string' } }, description: 'test only' },
    alert: {
      type: 'object',
      properties: {
        rule_id: { type: 'integer' },
        kind: { type: 'string', enum: RULE_KINDS },
        severity: { type: 'string', enum: SEVERITIES },
        description: { type: ['string', 'null'] },
        summary: { type: 'string', description: 'One line in words' },
        monitor_id: { type: 'integer' },
        monitor_label: { type: ['string', 'null'] },
        monitor_url: { type: 'string' },
        aa_protocol: { type: ['string', 'null'] },
        location_id: { type: 'string' },
        state: { type: 'string', enum: ['firing', 'resolved'] },
        fired_at: nullableDateTime,
        resolved_at: nullableDateTime,
        evidence,
        evidence_url: { type: ['string', 'null'], description: 'The evidence link, absolute when H3LENS_PUBLIC_URL is set' }
      }
    }
  }
}

export const alertSchemas = [alertRuleSchema, alertChannelSchema, alertStateSchema, alertEventSchema, alertNotificationSchema]

export const alertFilterQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    state: { type: 'string', enum: ALERT_STATES },
    monitor_id: id,
    location_id: { type: 'string', maxLength: 63 },
    rule_id: id,
    limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100, description: 'History entries (newest first)' }
  }
}
