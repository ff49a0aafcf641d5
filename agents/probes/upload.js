// The upload probe (the Firefox method): after a warm-up navigation to the
// monitor URL, one POST of `bytes` to the upload URL. Its duration is the
// comparable metric (lower is better, like every other); the throughput in
// Mbit/s is kept for display.
import { measure } from '../measure.js'
import { uploadPost } from '../page/upload-post.js'
import { ProbeError, evaluateIsolated, withTimeout } from '../page-metrics.js'
import { round } from '../../lib/measurement/units.js'
import { judgeProtocol, warmUp } from './parallel.js'

/**
 * @param {import('../measure.js').MeasureOptions & { uploadUrl: string, bytes?: number }} opts
 */
export async function measureUpload ({ uploadUrl, bytes = 1024 * 1024, ...opts }) {
  const { url, mode, timeoutMs = 30_000 } = opts
  const protocol = opts.protocol ?? mode
  return measure({ ...opts, probe: 'upload' }, async ({ page, result, network, summarize }) => {
    result.target_url = uploadUrl
    await warmUp(page, url, protocol, timeoutMs, result, network)
    const timeout = (/** @type {string} */ message) => new ProbeError(message, { url: uploadUrl, probe: 'upload', status: 'timeout' })
    const answer = await withTimeout(evaluateIsolated(page, uploadPost, uploadUrl, bytes), timeoutMs, `uploading ${bytes} bytes`, timeout)
    await summarize(result)
    result.upload_bytes = bytes
    if (answer.error !== null || answer.status >= 400) {
      throw new ProbeError(`upload of ${bytes} bytes to ${uploadUrl} failed: ${answer.error ?? `HTTP ${answer.status}`}`, { url: uploadUrl, probe: 'upload' })
    }
    // The lab sink (and any endpoint that cares to) says what it received:
    // an upload that arrived short is no measurement of the full size.
    if (answer.received !== null && Number(answer.received) !== bytes) {
      throw new ProbeError(`the server received ${answer.received} of ${bytes} bytes: ${uploadUrl}`, { url: uploadUrl, probe: 'upload' })
    }
    result.samples = [round(answer.ms)]
    result.upload_mbps = round((bytes * 8) / (answer.ms / 1000) / 1e6, 2)
    judgeProtocol(result, result.requests_detail.filter((/** @type {import('../network.js').RequestDetail} */ r) => r.url === uploadUrl && r.method === 'POST'), protocol)
  })
}

/** @type {import('./index.js').ProbeRunner} */
export async function run (o, { options }) {
  if (!options.upload_url) throw new Error('the upload probe has no upload URL (options.upload_url)')
  return measureUpload({ ...o, uploadUrl: options.upload_url, bytes: options.upload_bytes })
}
