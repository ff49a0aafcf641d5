// JSON schemas shared by routes. Response schemas double as an allow-list:
// fields not named here never leave the server (token hashes, internals).
import { MAX_URL_LENGTH, DEFAULT_INTERVAL_S, DEFAULT_MIN_EFFECT_PCT, DEFAULT_MIN_EFFECT_MS, MIN_INTERVAL_S, MIN_LAB_INTERVAL_S } from '../lib/store/monitors.js'
import { AGENT_FAULT_RECENT_S } from '../lib/store/agents.js'
import { LAB_HOSTNAMES } from '../lib/runtime/lab-host.js'
import { optionsSchema, PROBE_IDS as PROBES } from '../lib/measurement/probes/index.js'
import { FORCED_MODES, MODES } from '../lib/measurement/modes.js'
import { COLUMN_METRICS, TIMING_COLUMNS } from '../lib/measurement/metrics.js'
import { MAX_NOTES, MAX_REQUESTS, VIEWS } from '../lib/measurement/result.js'
import { BROWSERS, DEFAULT_BROWSERS } from '../lib/measurement/browsers/index.js'
import { JOURNEY_LIMITS, STEP_PROBE_PATTERN } from '../lib/measurement/probes/journey.js'
import { ACTION_NAMES } from '../lib/measurement/journey/steps.js'

/**
 * A result's probe: a catalogue probe, or a named step of a journey
 * ('journey:login'; lib/measurement/probes/journey.js).
 */
export const probeValue = {
  type: 'string',
  maxLength: 48,
  pattern: `^(${PROBES.join('|')})$|${STEP_PROBE_PATTERN}`,
  description: `${PROBES.join(', ')}, or journey:<step> for a journey's named step (journey alone is the whole journey)`
}

const ms = (/** @type {string} */ description) => ({ type: ['number', 'null'], description })
const nullableString = { type: ['string', 'null'] }
const dateTime = { type: 'string', format: 'date-time' }

export const errorSchema = {
  $id: 'error',
  type: 'object',
  properties: {
    statusCode: { type: 'integer' },
    error: { type: 'string' },
    message: { type: 'string', description: 'What went wrong, in words a person can act on' },
    field: { type: 'string', description: 'The input field at fault, when there is one' },
    line: { type: 'integer', description: 'The line at fault, for line-based input (results import)' },
    code: { type: 'string' }
  }
}

/**
 * A 400: the error with the field at fault, which every 400 names (the
 * body as a whole is `body`). The OpenAPI document marks field required
 * (api/app.js); the serializer does not, so a 400 that lacked one would
 * still go out as a 400, and the fuzzer (test/api-fuzz.test.js) reports it.
 */
export const badRequestSchema = {
  ...errorSchema,
  $id: 'badRequest',
  properties: { ...errorSchema.properties, field: { type: 'string', description: 'The input field at fault: a field of the body (`options.upload_url`), a path or query parameter, `body` for the body as a whole, or `line N: field` in an import' } }
}

const AA_PROTOCOL_DESCRIPTION = 'A/A calibration monitor: both arms of each round load with this protocol; the arms are still stored as ' +
  'mode h2 (arm A) and h3 (arm B) and compared like any monitor, which shows the location\'s noise floor'
const MODES_DESCRIPTION = 'The arms of each round: h2 = QUIC disabled, h3 = QUIC forced for the page origin, ' +
  'auto = the browser\'s defaults, nothing forced (as users get it: a first visit, then a returning visit that knows the origin\'s Alt-Svc)'
const BROWSERS_DESCRIPTION = 'The browsers each round runs in: a round is one (monitor, location, browser), with every arm in that browser, ' +
  'at the locations whose agents have it (docs/BROWSERS.md)'
const MIN_EFFECT_PCT_DESCRIPTION = 'Practical minimum effect, percent: a verdict needs a difference of at least this much and at least min_effect_ms'
const MIN_EFFECT_MS_DESCRIPTION = 'Practical minimum effect, milliseconds: a verdict needs a difference of at least this much and at least min_effect_pct'

const JOURNEY_DESCRIPTION = 'A multi-step user flow run in every arm of each round (the journey probe; docs/JOURNEYS.md): ' +
  `up to ${JOURNEY_LIMITS.steps} steps of ${ACTION_NAMES.join(', ')}. ` +
  'A step with a name, or the steps between measure_start and measure_end, is measured on its own (results of probe journey:<name>); ' +
  'probe journey is the whole journey. A secret is stored encrypted and shown only as { stored: <reference> }'

/** A stored journey as the API shows it: the allow-list keeps every field but a secret's reference out. */
export const journeySchema = {
  type: ['object', 'null'],
  description: JOURNEY_DESCRIPTION,
  additionalProperties: false,
  properties: {
    steps: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        properties: {
          action: { type: 'string', enum: ACTION_NAMES },
          url: { type: 'string' },
          selector: { type: 'string' },
          text: { type: 'string' },
          value: { type: 'string' },
          script: { type: 'string' },
          secret: {
            type: 'object',
            additionalProperties: false,
            properties: { stored: { type: 'string', description: 'The stored secret\'s reference; give it back as { stored } to keep the secret' } }
          },
          network_idle: { type: 'boolean' },
          ms: { type: 'integer' },
          name: { type: 'string' }
        }
      }
    },
    step_timeout_ms: { type: 'integer', description: `Each step's budget (default ${JOURNEY_LIMITS.stepTimeoutMs.default})` },
    timeout_ms: { type: 'integer', description: `The whole journey's budget in one arm (default ${JOURNEY_LIMITS.timeoutMs.default})` }
  }
}

/** A journey trial's outcome ("try it"), as the agent sends it and the API shows it. */
export const trialOutcomeSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { type: 'string', maxLength: 32, description: 'ok, or the failed step\'s status (error, timeout); protocol_mismatch when a request did not come over H2' },
    error: { type: ['string', 'null'], maxLength: 4000, description: 'The failed step, named' },
    observed_protocol: { type: ['string', 'null'], maxLength: 64 },
    steps: {
      type: 'array',
      maxItems: JOURNEY_LIMITS.steps,
      items: {
        type: 'object',
        additionalProperties: false,
        properties: {
          index: { type: 'integer', minimum: 0 },
          action: { type: 'string', maxLength: 32 },
          name: { type: ['string', 'null'], maxLength: 64 },
          ok: { type: 'boolean' },
          status: { type: 'string', enum: ['ok', 'error', 'timeout'] },
          ms: { type: 'number' },
          error: { type: ['string', 'null'], maxLength: 4000 },
          navigated: { type: 'boolean' },
          url: { type: ['string', 'null'], maxLength: JOURNEY_LIMITS.stepUrlChars },
          ttfb_ms: { type: ['number', 'null'] },
          load_ms: { type: ['number', 'null'] }
        }
      }
    }
  }
}

export const monitorSchema = {
  $id: 'monitor',
  type: 'object',
  properties: {
    id: { type: 'integer' },
    url: { type: 'string' },
    label: nullableString,
    interval_s: { type: 'integer', description: 'Seconds between rounds' },
    locations: { type: 'array', items: { type: 'string' }, description: 'Location ids the monitor runs from' },
    modes: { type: 'array', items: { type: 'string', enum: MODES }, description: MODES_DESCRIPTION },
    browsers: { type: 'array', items: { type: 'string', enum: [...BROWSERS] }, description: BROWSERS_DESCRIPTION },
    probes: { type: 'array', items: { type: 'string', enum: PROBES } },
    repeat_view: { type: 'boolean', description: 'Also measure a second, warm navigation in the same context' },
    options: { type: 'object', additionalProperties: true },
    paused: { type: 'boolean' },
    aa_protocol: { type: ['string', 'null'], enum: [...FORCED_MODES, null], description: AA_PROTOCOL_DESCRIPTION },
    min_effect_pct: { type: 'number', description: MIN_EFFECT_PCT_DESCRIPTION },
    min_effect_ms: { type: 'number', description: MIN_EFFECT_MS_DESCRIPTION },
    journey: journeySchema,
    created_at: dateTime,
    updated_at: dateTime,
    backed_off: {
      type: 'array',
      description: 'Locations where the monitor is backed off (GET only): its last rounds there all timed out, so its interval there is stretched ' +
        '(doubling, at most an hour or its own interval) and the rounds in between are skipped; its first round that does not time out ends it',
      items: {
        type: 'object',
        properties: {
          location_id: { type: 'string' },
          timeouts: { type: 'integer', description: 'Rounds in a row that timed out' },
          interval_s: { type: 'integer', description: 'The stretched interval' },
          until: { ...dateTime, description: 'When its next round there runs' }
        }
      }
    }
  }
}

const monitorInputProperties = {
  url: { type: 'string', minLength: 1, maxLength: MAX_URL_LENGTH, description: 'http or https URL of the page to load' },
  label: { type: ['string', 'null'], maxLength: 200 },
  interval_s: {
    type: 'integer',
    // The schema holds the lab's floor; the real one depends on the URL and is checked with it.
    minimum: MIN_LAB_INTERVAL_S,
    maximum: 86400,
    description: `Seconds between rounds: at least ${MIN_INTERVAL_S}; lab monitors (on ${LAB_HOSTNAMES.join(' or ')}) at least ${MIN_LAB_INTERVAL_S}. Default ${DEFAULT_INTERVAL_S}`
  },
  locations: { type: 'array', items: { type: 'string', maxLength: 63 }, maxItems: 100, description: 'Defaults to every location with an agent (every location when none has one); for a page on the lab origin, the lab locations among them' },
  modes: { type: 'array', items: { type: 'string', enum: MODES }, maxItems: MODES.length, description: `${MODES_DESCRIPTION}. Default: all three (an A/A monitor: h2 and h3)` },
  browsers: {
    type: 'array',
    items: { type: 'string', enum: [...BROWSERS] },
    minItems: 1,
    maxItems: BROWSERS.length,
    uniqueItems: true,
    description: `${BROWSERS_DESCRIPTION}. Default: ${DEFAULT_BROWSERS.join(', ')}`
  },
  probes: { type: 'array', items: { type: 'string', enum: PROBES }, maxItems: PROBES.length },
  repeat_view: { type: 'boolean' },
  options: optionsSchema,
  paused: { type: 'boolean' },
  aa_protocol: { type: ['string', 'null'], enum: [...FORCED_MODES, null], description: `${AA_PROTOCOL_DESCRIPTION}. Needs modes h2 and h3, without auto; null (default) = an ordinary H2-vs-H3 monitor` },
  min_effect_pct: { type: 'number', minimum: 0, maximum: 100, description: `${MIN_EFFECT_PCT_DESCRIPTION} (default ${DEFAULT_MIN_EFFECT_PCT})` },
  min_effect_ms: { type: 'number', minimum: 0, maximum: 3600000, description: `${MIN_EFFECT_MS_DESCRIPTION} (default ${DEFAULT_MIN_EFFECT_MS})` },
  journey: {
    // An object, YAML or JSON text, or null: the journey's own checker
    // (lib/measurement/journey/steps.js) reads it, so that a 400 names the step.
    description: `${JOURNEY_DESCRIPTION}. Given as an object { steps: [...], step_timeout_ms?, timeout_ms? } or as its YAML or JSON text; ` +
      'a 400 names the step and field at fault (journey.steps[3].selector). A new monitor given a journey and no probes runs the journey probe; null removes the journey'
  }
}

export const monitorCreateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: monitorInputProperties
}

export const monitorPatchBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: monitorInputProperties
}

export const locationSchema = {
  $id: 'location',
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    region: { type: 'string' },
    kind: { type: 'string', enum: ['lab', 'real', 'wpt'], description: 'lab = emulated network on this machine; real = an h3lens agent somewhere on the Internet; wpt = WebPageTest agents (wptagent) polling /work/' },
    browsers: {
      type: 'array',
      items: { type: 'string', enum: [...BROWSERS] },
      description: 'The browsers this location\'s agents have (each says so when it claims); a monitor\'s rounds here run in those of its browsers only (docs/BROWSERS.md)'
    },
    countries: {
      type: 'array',
      nullable: true,
      items: { type: 'string' },
      description: 'ISO 3166-1 alpha-2 codes of the countries this location stands for: real users from them are shown under it (docs/RUM.md); null: none'
    },
    profile: {
      type: 'object',
      additionalProperties: true,
      description: 'Network profile of a lab location: rtt_ms, jitter_ms, loss_pct, loss_model, down_kbps, up_kbps, queue_packets, block_udp (true: the path drops all UDP, so QUIC cannot connect)'
    },
    last_refusal: {
      type: 'object',
      nullable: true,
      description: 'The last upload of this location\'s WebPageTest agents that was refused (status 4xx, nothing stored) or stored as an error result ' +
        'because its timings could not be true (status 200); null when none was. The API log has every one.',
      properties: {
        at: { type: 'string', format: 'date-time' },
        agent: { type: 'string', nullable: true, description: 'the agent\'s name (its pc)' },
        test_id: { type: 'string', nullable: true },
        status: { type: 'integer', description: 'the HTTP status workdone answered' },
        reason: { type: 'string' }
      }
    },
    capacity: {
      type: 'object',
      description: 'Rounds per hour the location is asked for (its active monitors\' intervals) against what it can take ' +
        '(live agents × 3600 / the mean seconds a round took from claim to results over the last hour; null while none was measured). ' +
        'skipped_busy: rounds skipped over the last hour because the previous round of their monitor was still pending there.',
      properties: {
        demand_per_hour: { type: 'number' },
        capacity_per_hour: { type: 'number', nullable: true },
        round_s: { type: 'number', nullable: true },
        agents_alive: { type: 'integer' },
        skipped_busy: { type: 'integer' },
        skipped: { type: 'integer', description: 'all rounds skipped over the last hour, including those skipped because no agent was running' },
        over_capacity: { type: 'boolean' }
      }
    }
  }
}

export const agentSchema = {
  $id: 'agent',
  type: 'object',
  properties: {
    id: { type: 'integer' },
    location_id: { type: 'string' },
    name: { type: 'string', description: 'For a WebPageTest agent, its pc name' },
    kind: { type: 'string', enum: ['puppeteer', 'wpt'], description: 'puppeteer = the h3lens agent; wpt = a WebPageTest agent (wptagent)' },
    version: nullableString,
    browser_version: nullableString,
    browsers: { type: 'array', items: { type: 'string' }, description: 'The browsers the agent has (docs/BROWSERS.md)' },
    last_seen_at: { type: ['string', 'null'], format: 'date-time', description: 'Last call; for a WebPageTest agent its last poll or ping' },
    last_result_at: { type: ['string', 'null'], format: 'date-time', description: 'When the agent last delivered results' },
    created_at: dateTime,
    revoked_at: { type: ['string', 'null'], format: 'date-time' },
    alive: { type: 'boolean', description: 'Seen within the last 60 s' },
    faults: { type: 'integer', description: 'Infrastructure faults since the agent was registered: rounds it could not run (its browser did not start or went away, a lease it let expire). Each such round ran again; none was stored as the page\'s error' },
    last_fault_at: { type: ['string', 'null'], format: 'date-time', description: 'When the last infrastructure fault happened' },
    last_fault: { type: ['string', 'null'], description: 'What the last infrastructure fault was' },
    faulty: { type: 'boolean', description: `An infrastructure fault within the last ${AGENT_FAULT_RECENT_S / 60} minutes` }
  }
}

/** One explanation attached to a result, e.g. "QUIC handshake took 3.9 RTT (floor 1)". */
const noteSchema = {
  type: 'object',
  properties: {
    code: { type: 'string', description: 'slow_handshake, slow_ttfb, connection_reused, private_target_blocked (a request the private-target guard refused), private_target_alt_svc (an origin advertised an alternative service at a non-public address, which Firefox may try); content_error, wpt_page_ttfb and wpt_ttfb_agent_clock (WebPageTest agents, docs/WPT.md); or a net-log finding' },
    message: { type: 'string' },
    metric: { type: ['string', 'null'] },
    protocol: { type: ['string', 'null'] },
    rtt: { type: ['number', 'null'], description: 'Measured value in RTT' },
    floor: { type: ['number', 'null'], description: 'Physical floor in RTT' },
    extra_ms: { type: ['number', 'null'] },
    extra_rtt: { type: ['number', 'null'] },
    source: { type: ['string', 'null'], description: 'timing (Navigation Timing and the RTT), netlog, or agent' }
  }
}

const resultProperties = {
  id: { type: 'integer' },
  time: { ...dateTime, description: 'Due time of the round this result belongs to' },
  measured_at: dateTime,
  job_id: { type: 'integer' },
  monitor_id: { type: 'integer' },
  location_id: { type: 'string' },
  browser: { type: 'string', enum: [...BROWSERS], description: 'The browser the run was made in (docs/BROWSERS.md)' },
  agent_id: { type: ['integer', 'null'] },
  mode: { type: 'string', enum: MODES },
  view: { type: 'string', enum: VIEWS },
  probe: probeValue,
  status: { type: 'string', enum: ['ok', 'error', 'timeout', 'protocol_mismatch'], description: 'protocol_mismatch: the page loaded, but not over the forced protocol' },
  error: nullableString,
  observed_protocol: { ...nullableString, description: 'nextHopProtocol of the navigation, normalised (h2, h3, http/1.1)' },
  protocol_ok: { type: 'boolean', description: 'The navigation really used the mode\'s protocol' },
  ...Object.fromEntries(COLUMN_METRICS.map((m) => [m.column, ms(m.description)])),
  bytes: { type: ['integer', 'null'], description: 'Encoded bytes of every response' },
  requests: { type: ['integer', 'null'] },
  h3_request_share: { type: ['number', 'null'], description: 'Share of requests that went over H3 (0..1)' },
  h3_byte_share: { type: ['number', 'null'], description: 'Share of bytes that went over H3 (0..1)' },
  rtt_ms: ms('Round-trip time of the location when the run was made, where known'),
  connect_rtt: { type: ['number', 'null'], description: 'connect_ms in round trips of rtt_ms (floor on a new connection: 1 for QUIC, 2 for TCP+TLS 1.3)' },
  ttfb_rtt: { type: ['number', 'null'], description: 'ttfb_ms in round trips of rtt_ms (floor on a new connection: 2 for H3, 3 for H2)' },
  upload_mbps: { type: ['number', 'null'], description: 'upload probe: body bits / upload duration, Mbit/s' },
  notes: {
    type: ['array', 'null'],
    description: 'What explains this result: handshakes slower than their floor, reused connections, requests the private-target guard refused, net-log findings',
    items: noteSchema
  },
  browser_version: nullableString,
  agent_version: nullableString,
  flags: { type: ['array', 'null'], items: { type: 'string' }, description: 'Exact browser switches of the run: Chromium\'s flags, or Firefox\'s preferences as name=value' },
  samples: { type: ['array', 'null'], items: { type: 'number' }, description: 'export only (the import takes it back): a multi-sample probe\'s values in ms, which its comparison rests on: the parallel probe\'s requests, the upload probe\'s POSTs, a journey step\'s duration; null for a page load' },
  filmstrip_url: { ...nullableString, description: 'export only: where the result\'s frames are listed with their URLs (GET /api/v1/results/{id}/filmstrip); null without frames' },
  protocol_reason: {
    type: ['object', 'null'],
    additionalProperties: false,
    description: 'Why the page came over its protocol (details.protocol_reason; the codes and their words are in GET /api/v1/catalogue): ' +
      'the forced arm\'s switch, or for the auto arm the browser\'s own choice ("Not H3: TCP won the race"); null for results stored before reasons were kept',
    properties: {
      code: { type: 'string' },
      text: { type: 'string' },
      alternate_protocol_usage: { ...nullableString, description: 'Chromium\'s alternateProtocolUsage of the document request' },
      h3_announced: { ...nullableString, description: 'How the origin announced H3: alt-svc, https-record, or null' }
    }
  }
}

export const resultSchema = { $id: 'result', type: 'object', properties: resultProperties }

export const resultDetailSchema = {
  $id: 'resultDetail',
  type: 'object',
  properties: {
    ...resultProperties,
    details: {
      type: 'object',
      additionalProperties: true,
      description: 'Evidence: requests (per request: protocol, connection_id, connection_reused, alternate_protocol_usage, timing phases in ms; the first 1,000 that started), ' +
        'requests_not_kept (how many more the load made, where it made more than 1,000 or its round was too heavy to send whole: the result\'s requests, bytes and shares count them all), ' +
        'a request\'s or a journey step\'s url_length (where its URL is kept to its first 4,000 characters: the whole URL\'s length), ' +
        'origins (Alt-Svc seen per origin, the first 200; origins_not_kept: how many more), samples (parallel and upload probes, ms), warmup (the navigation before a probe), ' +
        'repeat (repeat view: connection reuse, 0-RTT where known), netlog (summary of a captured net log; download at /api/v1/results/{id}/netlog), ' +
        'filmstrip (kind run or rerun, frames, bytes, step_ms, progress as [t_ms, %] pairs, uploaded, error; the frames at /api/v1/results/{id}/filmstrip), ' +
        'failure_kind (on error results: truncated = the document ended before its Content-Length or failed after its headers; ' +
        'h3_unsupported = the origin refused QUIC and advertises no Alt-Svc h3; empty = the document answered 2xx with an empty body and the monitor does not set options.allow_empty; ' +
        'renderer_crashed = the page\'s renderer process crashed while the browser ran on), forced_origins (host:port list QUIC was forced on: the URL\'s redirect chain in h3 mode, empty in h2 mode), ' +
        'context (prepared: whether the run\'s fresh incognito context was made ahead, between rounds; ready_ms: how long the run waited for it)'
    }
  }
}

const timing = { type: ['number', 'null'], minimum: 0, maximum: 3600000 }

/** What an agent submits for one measured load. */
export const submittedResult = {
  type: 'object',
  additionalProperties: false,
  required: ['mode', 'status', 'protocol_ok'],
  properties: {
    mode: { type: 'string', enum: MODES },
    view: { type: 'string', enum: VIEWS },
    probe: probeValue,
    status: { type: 'string', enum: ['ok', 'error', 'timeout', 'protocol_mismatch'] },
    error: { type: ['string', 'null'], maxLength: 4000 },
    observed_protocol: { type: ['string', 'null'], maxLength: 64 },
    protocol_ok: { type: 'boolean' },
    measured_at: { type: 'string', format: 'date-time' },
    ...Object.fromEntries(TIMING_COLUMNS.map((c) => [c, timing])),
    bytes: { type: ['integer', 'null'], minimum: 0, maximum: 1e12 },
    requests: { type: ['integer', 'null'], minimum: 0, maximum: MAX_REQUESTS },
    h3_request_share: { type: ['number', 'null'], minimum: 0, maximum: 1 },
    h3_byte_share: { type: ['number', 'null'], minimum: 0, maximum: 1 },
    rtt_ms: timing,
    connect_rtt: { type: ['number', 'null'], minimum: 0, maximum: 1e6 },
    ttfb_rtt: { type: ['number', 'null'], minimum: 0, maximum: 1e6 },
    upload_mbps: { type: ['number', 'null'], minimum: 0, maximum: 1e6 },
    notes: { type: 'array', maxItems: MAX_NOTES, items: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string', maxLength: 64 }, message: { type: 'string', maxLength: 1000 } } } },
    browser_version: { type: ['string', 'null'], maxLength: 200 },
    agent_version: { type: ['string', 'null'], maxLength: 100 },
    flags: { type: 'array', items: { type: 'string', maxLength: 2000 }, maxItems: 100 },
    // The evidence is the agent's own shape; its lists are of objects, as
    // the run page and the capability matrix read them.
    details: {
      type: 'object',
      properties: {
        requests: { type: 'array', items: { type: 'object' } },
        origins: { type: 'array', items: { type: 'object' } }
      }
    }
  }
}

export const sharedSchemas = [errorSchema, badRequestSchema, monitorSchema, locationSchema, agentSchema, resultSchema, resultDetailSchema]

export const errorResponses = {
  400: { $ref: 'badRequest#' },
  404: { $ref: 'error#' }
}

export const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'integer', minimum: 1, maximum: 2147483647 } }
}

/**
 * Query filters on results, shared by the listing and the export (both go
 * through resultWhere in lib/store/results.js).
 */
export const resultFilterQuery = {
  location: { type: 'string', maxLength: 63 },
  browser: { type: 'string', enum: [...BROWSERS], description: 'Only this browser\'s results' },
  mode: { type: 'string', enum: MODES },
  probe: probeValue,
  view: { type: 'string', enum: VIEWS },
  status: { type: 'string', enum: ['ok', 'error', 'timeout', 'protocol_mismatch'] },
  from: { type: 'string', format: 'date-time', description: 'Inclusive lower bound on the round time' },
  to: { type: 'string', format: 'date-time', description: 'Exclusive upper bound on the round time; default now' }
}
