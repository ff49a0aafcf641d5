// The real-user snippet served at GET /rum/v1/h3lens.js: web-vitals' own
// standard build, byte for byte as the pinned package ships it, followed by
// h3lens's part (./page.js), in one function so neither leaves a global on
// the site's page. Put together in memory when the API starts, not by a
// build step: the file is two known pieces and one wrapper.
//
// Why the standard build and not web-vitals' attribution build: the
// attribution build alone is 4.3 KB gzipped (web-vitals 5.3.0), over the
// snippet's 4 KB budget; the standard one is 2.4 KB and gives every metric's
// performance entries, from which ./page.js reads the attribution h3lens
// keeps (the LCP element and its resource and render delay, the INP target
// and its three phases, the CLS source; the TTFB phases come from the
// navigation entry). Why 5.x and not 6.x: 6.x's standard build adds soft
// navigations (3.3 KB gzipped), which have no network navigation and so no
// protocol to compare. `node bench/rum-snippet.js` prints the sizes.
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import { ValidationError } from '../../runtime/errors.js'
import { h3lensBeacon } from './page.js'
import { SNIPPET_BOUNDS } from './beacon.js'

const require = createRequire(import.meta.url)

/** The snippet's budget, gzipped (docs/BENCHMARKS.md, "The snippet"). */
export const SNIPPET_BUDGET_GZIP_BYTES = 4096

/** The pinned web-vitals' version and its standard IIFE build, as shipped. */
export function webVitalsBuild () {
  // The package exports no package.json; its main file is in dist/.
  const dist = path.dirname(require.resolve('web-vitals'))
  const version = JSON.parse(fs.readFileSync(path.join(dist, '..', 'package.json'), 'utf8')).version
  const source = fs.readFileSync(path.join(dist, 'web-vitals.iife.js'), 'utf8')
  return { version, source }
}

/**
 * ./page.js's function as served: whole-line comments and indentation
 * dropped (the file keeps to a style where that is safe: no literal spans
 * lines, no comment ends a line of code).
 * @param {Function} fn
 */
export function compactSource (fn) {
  return fn.toString().split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('//') && !line.startsWith('/*') && !line.startsWith('*'))
    .join('\n')
    // JSDoc casts and parameter types, for the type checker only.
    .replace(/\/\*\*[^*]*\*\/ ?/g, '')
}

/**
 * @returns {{ body: Buffer, gzipped: Buffer, integrity: string, version: string, etag: string, bytes: number, gzipBytes: number, webVitals: string }}
 *   integrity: the Subresource Integrity value of the body (sha384); version: the first 12 hex of its sha256, the
 *   `v` query parameter of the install tag
 */
export function buildSnippet () {
  const vitals = webVitalsBuild()
  // The source-map comment points at a file h3lens does not serve.
  const library = vitals.source.replace(/\n?\/\/# sourceMappingURL=.*\s*$/, '')
  const text = `/*! h3lens real-user snippet; includes web-vitals ${vitals.version} (Apache-2.0, Google LLC) */\n` +
    `(function(){${library}\n;(${compactSource(h3lensBeacon)})(webVitals,document.currentScript,${JSON.stringify(SNIPPET_BOUNDS)})})();\n`
  const body = Buffer.from(text)
  const sha256 = createHash('sha256').update(body).digest('hex')
  const gzipped = gzipSync(body, { level: 9 })
  return {
    body,
    gzipped,
    integrity: `sha384-${createHash('sha384').update(body).digest('base64')}`,
    version: sha256.slice(0, 12),
    etag: `"${sha256.slice(0, 32)}"`,
    bytes: body.length,
    gzipBytes: gzipped.length,
    webVitals: vitals.version
  }
}

/**
 * The install tag for a site: one <script> element, config in data
 * attributes, pinned by its integrity. The base URL must be an absolute
 * http(s) URL; it is written as the URL parser serialises it, every
 * attribute escaped, so no address can add markup to the tag.
 * @param {{ baseUrl: string, key: string, sampleRate: number, snippet: { integrity: string, version: string }, field?: string }} o
 *   field: what to name when the base URL is refused
 * @throws {ValidationError}
 */
export function installTag ({ baseUrl, key, sampleRate, snippet, field = 'base_url' }) {
  const src = snippetSource({ baseUrl, snippet, field })
  const attribute = (/** @type {unknown} */ v) => String(v).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
  return `<script async src="${attribute(src)}" integrity="${attribute(snippet.integrity)}" crossorigin="anonymous" data-key="${attribute(key)}" data-sample="${attribute(sampleRate)}"></script>`
}

/**
 * The snippet's address under a base URL, which must be an absolute
 * http(s) URL without credentials, query or fragment. Callers check it
 * before they change anything, so a refused address changes nothing.
 * @param {{ baseUrl: string, snippet: { version: string }, field?: string }} o
 *   field: what to name when the base URL is refused
 * @throws {ValidationError}
 */
export function snippetSource ({ baseUrl, snippet, field = 'base_url' }) {
  let base
  try {
    base = new URL(baseUrl)
  } catch {
    base = null
  }
  if (!base || !['http:', 'https:'].includes(base.protocol) || base.username || base.password || base.search || base.hash) {
    throw new ValidationError(`${field} "${baseUrl}" is not the address browsers reach h3lens at: give an absolute http(s) URL such as https://h3lens.example.com, without credentials, query or fragment`, field)
  }
  return `${base.origin}${base.pathname.replace(/\/+$/, '')}/rum/v1/h3lens.js?v=${snippet.version}`
}

/** @type {ReturnType<typeof buildSnippet> | null} */
let built = null
/** The snippet of this process, put together on first use. */
export function currentSnippet () {
  built ??= buildSnippet()
  return built
}
