// How this agent measures each probe of the catalogue
// (lib/measurement/probes/), with the job's effective options applied. A
// probe the catalogue has and this map lacks fails its runs with a clear
// error rather than being measured as something else.
import { measurePageViews } from '../measure.js'
import { measureVisits } from '../visits.js'
import { measureParallel } from './parallel.js'
import { measureUpload } from './upload.js'
import { measureJourney, measureJourneyVisits } from './journey.js'

/**
 * @typedef {(o: any, ctx: { job: { repeat_view?: boolean, journey?: any }, options: Record<string, any> }) => Promise<Record<string, any>[]>} ProbeRunner
 */

/** @type {Readonly<Record<string, ProbeRunner>>} */
export const PROBE_RUNNERS = Object.freeze({
  // The auto arm loads the page as a visit sequence (agents/visits.js).
  page: (o, { job, options }) => (o.mode === 'auto' ? measureVisits : measurePageViews)({ ...o, repeatView: Boolean(job.repeat_view), allowEmpty: Boolean(options.allow_empty) }),
  parallel: (o, { options }) => measureParallel({ ...o, targetUrl: options.parallel_url, count: options.parallel_requests }),
  upload: (o, { options }) => {
    if (!options.upload_url) throw new Error('the upload probe has no upload URL (options.upload_url)')
    return measureUpload({ ...o, uploadUrl: options.upload_url, bytes: options.upload_bytes })
  },
  // The journey with its secrets opened (the claim carries them); the auto
  // arm runs it as a first and a returning visit (agents/probes/journey.js).
  journey: (o, { job }) => {
    if (!job.journey?.steps?.length) throw new Error('the journey probe has no journey to run (the monitor\'s journey)')
    return (o.mode === 'auto' ? measureJourneyVisits : measureJourney)({ ...o, journey: job.journey })
  }
})
