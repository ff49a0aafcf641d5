// The page probe: one navigation per arm (measure.js), with a repeat view on
// request; the auto arm loads the page as a visit sequence (visits.js).
import { measurePageViews } from '../measure.js'
import { measureVisits } from '../visits.js'

/** @type {import('./index.js').ProbeRunner} */
export function run (o, { job, options }) {
  return (o.mode === 'auto' ? measureVisits : measurePageViews)({ ...o, repeatView: Boolean(job.repeat_view), allowEmpty: Boolean(options.allow_empty) })
}
