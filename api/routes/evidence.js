// The evidence behind the numbers: which origins of a monitored page speak
// HTTP/3 (the capability matrix), and the Chromium net log of a result.
import { getMonitor } from '../../lib/store/monitors.js'
import { getResult } from '../../lib/store/results.js'
import { capabilityMatrix } from '../../lib/store/monitor-origins.js'
import { getNetlog } from '../../lib/store/netlogs.js'
import { filmstripFrame, filmstripFrames, matchedRounds, roundArms } from '../../lib/store/filmstrips.js'
import { pickRound, whyThisRound } from '../../lib/analysis/side-by-side.js'
import { COLUMN_METRICS, metricOf } from '../../lib/measurement/metrics.js'
import { ValidationError } from '../../lib/runtime/errors.js'

/** The page metrics a round can be picked by: those with a column and a comparison. */
const SIDE_BY_SIDE_METRICS = COLUMN_METRICS.filter((m) => m.comparable).map((m) => m.id)
const DAY_MS = 86400e3

const filmstripSchema = {
  type: ['object', 'null'],
  properties: {
    kind: { type: 'string' },
    step_ms: { type: 'number' },
    frames: { type: 'array', items: { type: 'object', properties: { seq: { type: 'integer' }, t_ms: { type: 'number' }, bytes: { type: 'integer' }, url: { type: 'string' } } } },
    progress: { type: 'array', items: { type: 'object', properties: { t_ms: { type: 'number' }, progress: { type: 'number' } } } }
  }
}
import { errorResponses, idParams } from '../schemas.js'

const cell = {
  type: 'object',
  properties: {
    location_id: { type: 'string' },
    alt_svc: { type: ['string', 'null'], description: 'Last Alt-Svc header value the origin sent to this location' },
    h3_advertised: { type: 'boolean', description: 'That header offered h3' },
    first_advertised_at: { type: ['string', 'null'], format: 'date-time' },
    last_advertised_at: { type: ['string', 'null'], format: 'date-time' },
    served_h3: { type: 'boolean', description: 'At least one request to the origin really went over HTTP/3' },
    h3_requests: { type: 'integer' },
    h2_requests: { type: 'integer' },
    other_requests: { type: 'integer' },
    last_h3_at: { type: ['string', 'null'], format: 'date-time' },
    first_seen_at: { type: 'string', format: 'date-time' },
    last_seen_at: { type: 'string', format: 'date-time' }
  }
}

/**
 * @param {import('fastify').FastifyInstance} app see api/routes/monitors.js
 */
export default async function evidenceRoutes (app) {
  app.get('/monitors/:id/capabilities', {
    schema: {
      description: 'H3 capability matrix: every origin the monitored page used, per location, with its Alt-Svc advertisement and the protocols it was really served over. ' +
        'Collected from the response headers of normal runs (Alt-Svc comes with H2 responses, so a monitor that runs only h3 mode sees served_h3 but rarely an advertisement).',
      tags: ['evidence'],
      params: idParams,
      response: {
        200: {
          type: 'object',
          properties: {
            monitor_id: { type: 'integer' },
            locations: { type: 'array', items: { type: 'string' } },
            origins: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  origin: { type: 'string' },
                  h3_advertised: { type: 'boolean', description: 'Advertised h3 to at least one location' },
                  served_h3: { type: 'boolean', description: 'Served over h3 to at least one location' },
                  locations: { type: 'array', items: cell }
                }
              }
            }
          }
        },
        ...errorResponses
      }
    }
  }, async (/** @type {import('../types.js').IdRequest} */ request) => {
    await getMonitor(app.db, request.params.id)
    return capabilityMatrix(app.db, request.params.id)
  })

  app.get('/results/:id/netlog', {
    schema: {
      description: 'The Chromium net log of a result, gzip-compressed JSON (open it with the netlog viewer). ' +
        'It exists when the monitor captures every run (options.netlog = always) or when the result was an outlier (then details.netlog.kind = rerun: the same probe and mode ran again at once with capture on).',
      tags: ['evidence'],
      params: idParams,
      response: {
        200: {
          description: 'The net log, gzip-compressed JSON, as a download; the x-netlog-kind header says whether it is the run\'s own (run) or an outlier\'s rerun (rerun)',
          content: { 'application/gzip': { schema: { type: 'string', format: 'binary' } } }
        },
        ...errorResponses
      }
    }
  }, async (/** @type {import('../types.js').IdRequest} */ request, reply) => {
    const result = await getResult(app.db, request.params.id)
    if (!result) return reply.notFound(`result ${request.params.id} does not exist`)
    const netlog = await getNetlog(app.db, result)
    if (!netlog) {
      return reply.notFound(`result ${request.params.id} has no net log: one is captured for every run when the monitor's options.netlog is "always", and for outlier runs when it is "outliers"`)
    }
    return reply
      .header('content-type', 'application/gzip')
      .header('content-disposition', `attachment; filename="h3lens-result-${result.id}-${result.mode}.netlog.json.gz"`)
      .header('x-netlog-kind', netlog.kind)
      .send(netlog.gzip)
  })

  app.get('/results/:id/filmstrip', {
    schema: {
      description: 'The frames of a page load (JPEG, about 400 px wide, at most one per 100 ms, ms since the navigation\'s start) and its visual progress. ' +
        'Capture slows a load, so frames never come from the load the timings are from: with options.filmstrip = always each arm loads once more with capture after the round\'s timing loads (kind capture), ' +
        'with outliers an outlier\'s arm loads again at once with capture (kind rerun). Kept for H3LENS_FILMSTRIP_RETENTION_DAYS.',
      tags: ['evidence'],
      params: idParams,
      response: {
        200: {
          type: 'object',
          properties: {
            result_id: { type: 'integer' },
            mode: { type: 'string' },
            kind: { type: 'string', enum: ['capture', 'rerun', 'wpt_screen'], description: 'capture: the arm loaded once more, with capture, after the round\'s timing loads (options.filmstrip = always); rerun: an outlier\'s arm loaded again at once with capture (outliers); wpt_screen: the one screenshot a WebPageTest agent took at the end of this load' },
            step_ms: { type: 'number', description: 'Frames are at most one per step' },
            frames: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  seq: { type: 'integer' },
                  t_ms: { type: 'number', description: 'When the frame was painted, ms since the navigation\'s start' },
                  bytes: { type: 'integer' },
                  url: { type: 'string', description: 'The frame, image/jpeg' }
                }
              }
            },
            progress: {
              type: 'array',
              description: 'Visual progress (0–100 %) at each distinct frame, as Speed Index reads it',
              items: { type: 'object', properties: { t_ms: { type: 'number' }, progress: { type: 'number' } } }
            }
          }
        },
        ...errorResponses
      }
    }
  }, async (/** @type {import('../types.js').IdRequest} */ request, reply) => {
    const result = await getResult(app.db, request.params.id)
    if (!result) return reply.notFound(`result ${request.params.id} does not exist`)
    const film = await filmstripOf(app.db, result)
    if (!film) return reply.notFound(noFilmstrip(result))
    return { result_id: result.id, mode: result.mode, ...film }
  })

  app.get('/monitors/:id/side-by-side', {
    schema: {
      description: 'The H2 and H3 loads of one round, to see side by side: the round of a location whose H2 − H3 (of `metric`) is nearest the Δ the comparison reports at `percentile` ' +
        '(H2\'s percentile minus H3\'s over the window\'s rounds where both arms loaded), among rounds with frames in both arms when there are any; `why` says so in words. ' +
        'Each arm\'s filmstrip is null when it has no frames (with `no_filmstrip` saying why).',
      tags: ['evidence'],
      params: idParams,
      querystring: {
        type: 'object',
        additionalProperties: false,
        required: ['location'],
        properties: {
          location: { type: 'string', minLength: 1, maxLength: 63 },
          percentile: { type: 'integer', minimum: 1, maximum: 99, default: 95 },
          metric: { type: 'string', enum: SIDE_BY_SIDE_METRICS, default: 'load_ms' },
          from: { type: 'string', format: 'date-time', description: 'default: 7 days before `to`' },
          to: { type: 'string', format: 'date-time', description: 'default: now' }
        }
      },
      response: {
        200: {
          type: 'object',
          properties: {
            monitor_id: { type: 'integer' },
            location_id: { type: 'string' },
            metric: { type: 'string' },
            percentile: { type: 'integer' },
            rounds: { type: 'integer', description: 'Rounds in the window where both arms loaded with a value' },
            framed_rounds: { type: 'integer', description: 'Of those, rounds with frames in both arms' },
            percentile_delta_ms: { type: ['number', 'null'] },
            h2_percentile_ms: { type: ['number', 'null'] },
            h3_percentile_ms: { type: ['number', 'null'] },
            why: { type: 'string' },
            round: {
              type: ['object', 'null'],
              properties: {
                job_id: { type: 'integer' },
                time: { type: 'string', format: 'date-time' },
                delta_ms: { type: 'number' },
                arms: {
                  type: 'object',
                  properties: Object.fromEntries(['h2', 'h3'].map((arm) => [arm, {
                    type: 'object',
                    properties: {
                      result_id: { type: 'integer' },
                      value_ms: { type: ['number', 'null'] },
                      speed_index_ms: { type: ['number', 'null'] },
                      visually_complete_ms: { type: ['number', 'null'] },
                      filmstrip: filmstripSchema,
                      no_filmstrip: { type: ['string', 'null'] }
                    }
                  }]))
                }
              }
            }
          }
        },
        ...errorResponses
      }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Params: { id: number }, Querystring: { location: string, percentile: number, metric: string, from?: string, to?: string } }>} */ request) => {
    const q = request.query
    const monitor = await getMonitor(app.db, request.params.id)
    if (!monitor.locations.includes(q.location)) throw new ValidationError(`monitor ${monitor.id} does not run at location ${q.location}; it runs at ${monitor.locations.join(', ')}`, 'location')
    const to = q.to ? new Date(q.to) : new Date()
    const from = q.from ? new Date(q.from) : new Date(to.getTime() - 7 * DAY_MS)
    if (from > to) throw new ValidationError('from must not be after to', 'from')
    const m = metricOf(q.metric)
    const pick = pickRound(await matchedRounds(app.db, { monitorId: monitor.id, locationId: q.location, column: /** @type {string} */ (m.column), from, to }), q.percentile)
    const head = { monitor_id: monitor.id, location_id: q.location, metric: m.id, percentile: q.percentile }
    if (!pick) {
      return { ...head, rounds: 0, framed_rounds: 0, percentile_delta_ms: null, h2_percentile_ms: null, h3_percentile_ms: null, round: null,
        why: `No round in the window loaded in both arms at ${q.location}, so there is no round to show.` }
    }
    const results = await roundArms(app.db, pick.round.job_id)
    /** @type {Record<string, any>} */
    const arms = {}
    for (const arm of ['h2', 'h3']) {
      const r = results[arm]
      const film = r ? await filmstripOf(app.db, r) : null
      arms[arm] = {
        result_id: r?.id, value_ms: r?.[/** @type {string} */ (m.column)] ?? null, speed_index_ms: r?.speed_index_ms ?? null, visually_complete_ms: r?.visually_complete_ms ?? null,
        filmstrip: film, no_filmstrip: film ? null : r ? noFilmstrip(r) : 'no result'
      }
    }
    return {
      ...head,
      rounds: pick.rounds,
      framed_rounds: pick.framed_rounds,
      percentile_delta_ms: pick.percentile_delta_ms,
      h2_percentile_ms: pick.h2_percentile_ms,
      h3_percentile_ms: pick.h3_percentile_ms,
      why: whyThisRound(pick, { percentile: q.percentile, metric: m.label }),
      round: { job_id: pick.round.job_id, time: pick.round.time.toISOString(), delta_ms: pick.delta_ms, arms }
    }
  })

  app.get('/results/:id/filmstrip/:seq', {
    schema: {
      description: 'One frame of a result\'s filmstrip, image/jpeg.',
      tags: ['evidence'],
      params: { type: 'object', required: ['id', 'seq'], additionalProperties: false, properties: { id: idParams.properties.id, seq: { type: 'integer', minimum: 0, maximum: 100000 } } },
      response: {
        200: { description: 'The frame, a JPEG', content: { 'image/jpeg': { schema: { type: 'string', format: 'binary' } } } },
        ...errorResponses
      }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Params: { id: number, seq: number } }>} */ request, reply) => {
    const result = await getResult(app.db, request.params.id)
    if (!result) return reply.notFound(`result ${request.params.id} does not exist`)
    const jpeg = await filmstripFrame(app.db, result, request.params.seq)
    if (!jpeg) return reply.notFound(`result ${request.params.id} has no frame ${request.params.seq}`)
    return reply.header('content-type', 'image/jpeg').header('cache-control', 'private, max-age=86400').send(jpeg)
  })
}

/**
 * A result's filmstrip as the views draw it, or null.
 * @param {import('pg').Pool} db
 * @param {any} result a results row
 */
async function filmstripOf (db, result) {
  const frames = await filmstripFrames(db, result)
  if (!frames.length) return null
  // Shaped as the checks on the way in ask (lib/measurement/checks.js badDetails); a row stored before them may hold anything.
  const info = result.details?.filmstrip ?? {}
  const progress = Array.isArray(info.progress) ? info.progress.filter((/** @type {unknown} */ p) => Array.isArray(p) && Number.isFinite(p[0]) && Number.isFinite(p[1])) : []
  return {
    kind: typeof info.kind === 'string' ? info.kind : 'capture',
    step_ms: Number.isFinite(info.step_ms) ? info.step_ms : 100,
    frames: frames.map((f) => ({ ...f, url: filmstripFrameUrl(result.id, f.seq) })),
    progress: progress.map((/** @type {[number, number]} */ [t, p]) => ({ t_ms: t, progress: p }))
  }
}

/**
 * Where a result's frame is served.
 * @param {number} resultId
 * @param {number} seq
 */
export function filmstripFrameUrl (resultId, seq) {
  return `/api/v1/results/${resultId}/filmstrip/${seq}`
}

/**
 * Why a result has no frames, in words a person reads in the run detail.
 * @param {Record<string, any>} result
 */
function noFilmstrip (result) {
  const info = result.details?.filmstrip
  if (info?.error) return `no filmstrip for result ${result.id}: ${info.error}`
  if (info) return `no filmstrip for result ${result.id}: its frames are not stored here (deleted after H3LENS_FILMSTRIP_RETENTION_DAYS, or the result was imported)`
  if (result.browser && result.browser !== 'chromium') return `no filmstrip for result ${result.id}: frames come from Chromium's screencast, and this run is ${result.browser}'s`
  return `no filmstrip for result ${result.id}: capture was off (options.filmstrip; "outliers" captures only runs above the p99 of recent runs)`
}
