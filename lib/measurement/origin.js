// A URL's origin, as the measurements compare them: a request's against the
// page's, a monitor's against a real-users site's.

/**
 * @param {unknown} url a URL as a browser, an agent or a user wrote it, or anything
 * @returns {string} its origin ("https://example.com:8443"), or '' when it has none
 */
export function originOf (url) {
  if (typeof url !== 'string') return ''
  try { return new URL(url).origin } catch { return '' }
}
