// The upload probe: one POST of upload_bytes; its duration is a sample of
// upload_ms, and upload_mbps the throughput.
import { ValidationError } from '../../runtime/errors.js'
import { LAB_HOSTNAMES } from '../../runtime/lab-host.js'
import { FORCED_MODES } from '../modes.js'
import { wholeNumber } from './option-checks.js'

export const UPLOAD_BYTES = Object.freeze({ default: 1024 * 1024, min: 1024, max: 100 * 1024 * 1024 })
/** The lab origin's upload sink. */
export const LAB_UPLOAD_PATH = '/upload'

/** @type {import('./index.js').Probe} */
export const upload = Object.freeze({
  id: 'upload',
  label: 'Upload',
  hint: 'POST throughput',
  // Arms: the forced arms only (as the parallel probe).
  modes: FORCED_MODES,
  samplesMetric: 'upload_ms',
  // An outlier is judged by the upload's duration.
  outlier: Object.freeze({ label: 'upload ms', rule: 'first_sample', column: null }),
  options: Object.freeze({
    upload_bytes: { type: 'integer', minimum: UPLOAD_BYTES.min, maximum: UPLOAD_BYTES.max, description: `upload probe: POST body size in bytes, 1 KB to 100 MB (default ${UPLOAD_BYTES.default})` },
    upload_url: { type: 'string', minLength: 1, maxLength: 2048, description: `upload probe: URL that accepts the POST (default for lab monitors: ${LAB_UPLOAD_PATH} on the lab origin; required for other sites)` }
  }),
  defaults: Object.freeze({ upload_bytes: UPLOAD_BYTES.default }),
  targets: Object.freeze(['upload_url']),
  check (options, { pageUrl, probes }) {
    wholeNumber(options, 'upload_bytes', UPLOAD_BYTES, ' bytes (1 KB to 100 MB)')
    if (probes.includes('upload') && options.upload_url === undefined && !LAB_HOSTNAMES.includes(pageUrl.hostname)) {
      throw new ValidationError('the upload probe needs options.upload_url: an endpoint of this site that accepts a POST body (only lab monitors default to the lab\'s /upload sink)', 'options.upload_url')
    }
  },
  effective (options, pageUrl) {
    return {
      upload_bytes: options.upload_bytes ?? UPLOAD_BYTES.default,
      upload_url: options.upload_url
        ? new URL(options.upload_url, pageUrl).toString()
        : (LAB_HOSTNAMES.includes(pageUrl.hostname) ? new URL(LAB_UPLOAD_PATH, pageUrl).toString() : null)
    }
  }
})
