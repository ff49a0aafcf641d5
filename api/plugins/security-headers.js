import fp from 'fastify-plugin'
import helmet from '@fastify/helmet'

/**
 * Security headers on every response. The dashboard is static ES modules and
 * stylesheets from this origin, so the policy allows nothing else: no inline
 * script or style, no other origin, no framing. The API docs (swagger-ui)
 * set their own, slightly wider policy on their prefix (see api/app.js).
 * `upgrade-insecure-requests` is left out on purpose: h3lens is usually
 * reached over plain HTTP on a private address, where upgrading would break
 * every asset.
 */
export const DASHBOARD_CSP = {
  'default-src': ["'self'"],
  'script-src': ["'self'"],
  'script-src-attr': ["'none'"],
  'style-src': ["'self'"],
  // blob: filmstrip frames, fetched with the API key (which an <img> cannot
  // send) and shown from blob URLs this page made (web/api.js frameUrl).
  'img-src': ["'self'", 'data:', 'blob:'],
  'font-src': ["'self'"],
  'connect-src': ["'self'"],
  'object-src': ["'none'"],
  'base-uri': ["'self'"],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"]
}

/**
 * swagger-ui renders with inline style attributes and data: images; its
 * scripts are still files from this origin.
 */
export const DOCS_CSP = { ...DASHBOARD_CSP, 'style-src': ["'self'", "'unsafe-inline'"] }

/** @param {Record<string, string[]>} directives */
export const cspString = (directives) => Object.entries(directives).map(([k, v]) => `${k} ${v.join(' ')}`).join('; ')

export default fp(async (app) => {
  await app.register(helmet, {
    contentSecurityPolicy: { useDefaults: false, directives: DASHBOARD_CSP },
    // Browsers ignore HSTS over plain HTTP; behind a TLS proxy it applies to
    // this host only, never to sibling subdomains h3lens knows nothing of.
    strictTransportSecurity: { maxAge: 15552000, includeSubDomains: false },
    referrerPolicy: { policy: 'no-referrer' }
  })
}, { name: 'security-headers' })
