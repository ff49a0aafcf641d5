#!/usr/bin/env node
// The real-user snippet's size (GET /rum/v1/h3lens.js): the whole file, and
// its parts, raw and gzipped (level 9), against the 4 KB gzipped budget.
// web-vitals' attribution build is measured beside it: why it is not used.
//
//   node bench/rum-snippet.js
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { gzipSync } from 'node:zlib'
import { buildSnippet, compactSource, webVitalsBuild, SNIPPET_BUDGET_GZIP_BYTES } from '../lib/measurement/rum/snippet.js'
import { h3lensBeacon } from '../lib/measurement/rum/page.js'
import { benchArgs } from './lib/args.js'

benchArgs(import.meta.url)

const gz = (/** @type {string | Buffer} */ b) => gzipSync(b, { level: 9 }).length
const s = buildSnippet()
const vitals = webVitalsBuild()
const own = compactSource(h3lensBeacon)
const dist = path.dirname(createRequire(import.meta.url).resolve('web-vitals'))
const attribution = fs.readFileSync(path.join(dist, 'web-vitals.attribution.iife.js'))
const row = (/** @type {string} */ what, /** @type {number} */ raw, /** @type {number} */ zipped) => console.log(`| ${what} | ${raw.toLocaleString('en')} | ${zipped.toLocaleString('en')} |`)
console.log(`real-user snippet — web-vitals ${s.webVitals}, version ${s.version}, ${s.integrity}`)
console.log('| part | bytes | gzipped |')
console.log('|---|---|---|')
row('**the snippet as served**', s.bytes, s.gzipBytes)
row('web-vitals standard build (inside it)', Buffer.byteLength(vitals.source), gz(vitals.source))
row('h3lens beacon (inside it)', Buffer.byteLength(own), gz(own))
row('web-vitals attribution build (not used)', attribution.length, gz(attribution))
console.log(`\nbudget ${SNIPPET_BUDGET_GZIP_BYTES.toLocaleString('en')} bytes gzipped: ${s.gzipBytes <= SNIPPET_BUDGET_GZIP_BYTES ? 'met' : 'EXCEEDED'} (${(s.gzipBytes / SNIPPET_BUDGET_GZIP_BYTES * 100).toFixed(0)}%)`)
if (s.gzipBytes > SNIPPET_BUDGET_GZIP_BYTES) process.exitCode = 1
