// How long a request may take to send its body. An agent far from the API,
// on a slow uplink, sends rounds of MBs (a heavy page's request list, a
// batch from its spool): a fixed deadline that fits a fast link cut those
// off at every try, and an agent whose oldest round never got through
// claimed nothing again. Both ends allow a body MIN_UPLOAD_BYTES_PER_S: the
// agent before it gives up on an answer, the API before it closes the
// request.

/** The slowest upload allowed for: 512 kbit/s. */
export const MIN_UPLOAD_BYTES_PER_S = 64 * 1024

/**
 * The time a body of `bytes` may take to send, in ms.
 * @param {number} bytes
 */
export function uploadAllowanceMs (bytes) {
  return Math.ceil(bytes / MIN_UPLOAD_BYTES_PER_S * 1000)
}
