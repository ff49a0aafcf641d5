// Runs in the page. POSTs a body of `bytes` zero bytes to `url` and returns
// the time in ms from the fetch() call to the end of the response, with the
// status and the byte count the server reports (x-upload-bytes), if any.
// Request bodies are never compressed, so the content of the bytes does not
// matter.
/** @param {string} url @param {number} bytes */
export async function uploadPost (url, bytes) {
  const body = new Uint8Array(bytes)
  const start = performance.now()
  try {
    const res = await fetch(url, { method: 'POST', body, cache: 'no-store' })
    await res.arrayBuffer()
    return { ms: performance.now() - start, status: res.status, received: res.headers.get('x-upload-bytes'), error: null }
  } catch (/** @type {any} */ err) {
    return { ms: performance.now() - start, status: null, received: null, error: String(err && err.message ? err.message : err) }
  }
}
