import { mkdir, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { gradientPng, heightForBytes } from './png.js'
import { shopFiles } from './shop.js'

// The lab's test pages are generated rather than committed: the 1 MB page
// would bloat the repository, and generating from a fixed seed gives the same
// bytes everywhere. Sizes follow the field studies the product reproduces
// (Cloudflare's 15 KB and 1 MB pages) plus a many-resources page, where HTTP/2
// and HTTP/3 multiplexing differ most.

/** @typedef {{ path: string, description: string, bytes: number, requests: number }} LabPage */

const WORDS = ('quic stream frame packet handshake latency window congestion ' +
  'loss retransmit multiplex priority header table datagram migration ' +
  'round trip ack pacing cubic bbr resume ticket crypto initial origin').split(' ')

/**
 * Deterministic PRNG (mulberry32) so every build yields identical files.
 * @param {number} seed
 */
function prng (seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * Paragraphs of filler text adding up to roughly `bytes` of HTML.
 * @param {number} bytes
 * @param {number} seed
 */
function filler (bytes, seed) {
  const rand = prng(seed)
  const paragraphs = []
  let size = 0
  while (size < bytes) {
    const words = []
    for (let i = 0; i < 60; i++) words.push(WORDS[Math.floor(rand() * WORDS.length)])
    const p = `<p>${words.join(' ')}.</p>\n`
    paragraphs.push(p)
    size += p.length
  }
  return paragraphs.join('')
}

/**
 * @param {{ title: string, head?: string, body: string }} parts
 */
function htmlPage ({ title, head = '', body }) {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="icon" href="data:,">
<style>body{font:16px/1.5 sans-serif;margin:2rem auto;max-width:60rem;color:#222}img.hero{display:block;width:100%;height:auto}</style>
${head}</head>
<body>
<h1>${title}</h1>
${body}</body>
</html>
`
}

/**
 * A page of `htmlBytes` of HTML plus one hero image of `imageBytes`, which is
 * also the page's largest contentful paint.
 * @param {{ name: string, title: string, htmlBytes: number, imageBytes: number, imageWidth: number, seed: number }} spec
 * @returns {Record<string, Buffer>}
 */
function heroPage ({ name, title, htmlBytes, imageBytes, imageWidth, seed }) {
  const height = heightForBytes(imageWidth, imageBytes)
  const image = gradientPng({ width: imageWidth, height, hue: (seed % 10) / 10 })
  const imagePath = `/assets/${name}-hero.png`
  const shell = htmlPage({ title, body: '' })
  const body = `<img class="hero" src="${imagePath}" width="${imageWidth}" height="${height}" alt="">\n` +
    filler(Math.max(0, htmlBytes - shell.length - 120), seed)
  return {
    [`/${name}.html`]: Buffer.from(htmlPage({ title, body })),
    [imagePath]: image
  }
}

/**
 * 20 stylesheets, 20 scripts and 20 images of about 1 KB each.
 * @returns {Record<string, Buffer>}
 */
function manyPage () {
  /** @type {Record<string, Buffer>} */
  const files = {}
  const head = []
  const imgs = []
  for (let i = 0; i < 20; i++) {
    const n = String(i).padStart(2, '0')
    files[`/assets/many/s${n}.css`] = Buffer.from(
      `/* ${filler(900, 100 + i).replace(/<\/?p>/g, '')} */\n.c${n}{border-left:${i % 5 + 1}px solid #${(0x224466 + i * 0x050301).toString(16)}}\n`)
    files[`/assets/many/j${n}.js`] = Buffer.from(
      `// ${filler(900, 200 + i).replace(/<\/?p>|\n/g, '')}\nwindow.loaded = (window.loaded || 0) + 1\n`)
    files[`/assets/many/i${n}.png`] = gradientPng({ width: 16, height: 20, hue: i / 20 })
    head.push(`<link rel="stylesheet" href="/assets/many/s${n}.css">`, `<script src="/assets/many/j${n}.js" defer></script>`)
    imgs.push(`<img src="/assets/many/i${n}.png" width="48" height="60" alt="" class="c${n}">`)
  }
  const body = `<p>Sixty small resources on one origin: 20 stylesheets, 20 scripts, 20 images.</p>\n<div>${imgs.join('')}</div>\n` + filler(2000, 300)
  files['/page-many.html'] = Buffer.from(htmlPage({ title: 'h3lens lab: many small resources', head: head.join('\n') + '\n', body }))
  return files
}

const HERO_PAGES = [
  { name: 'page-15k', title: 'h3lens lab: 15 KB page', htmlBytes: 11 * 1024, imageBytes: 4 * 1024, imageWidth: 40, seed: 15 },
  { name: 'page-100k', title: 'h3lens lab: 100 KB page', htmlBytes: 30 * 1024, imageBytes: 70 * 1024, imageWidth: 200, seed: 100 },
  { name: 'page-1m', title: 'h3lens lab: 1 MB page', htmlBytes: 24 * 1024, imageBytes: 1000 * 1024, imageWidth: 800, seed: 1000 }
]

/** @type {Record<string, string>} */
const DESCRIPTIONS = {
  'page-15k': 'About 15 KB: HTML plus one small hero image (Cloudflare 2020 small page).',
  'page-100k': 'About 100 KB: HTML plus one hero image.',
  'page-1m': 'About 1 MB: HTML plus one large hero image (Cloudflare 2020 1 MB page; congestion control dominates).',
  'page-many': 'About 75 KB in 61 requests: HTML plus 20 stylesheets, 20 scripts and 20 images of ~1 KB (multiplexing).'
}

/**
 * The page that paints in known steps: black bands on white, revealed at
 * known times after the navigation's start, each covering a known share
 * of the viewport. Speed Index and visually complete follow by hand
 * (lib/measurement/visual.js handPaintedMetrics): a band's pixels count
 * in proportion to its area in the colour histograms Speed Index compares.
 * Steps 700 ms apart: 10 % of the first is 70 ms, several frames of slack
 * on a busy machine, and each gap is shorter than the quiet second after
 * which capture stops (agents/filmstrip.js).
 */
export const PAINT_STEPS = Object.freeze({
  path: '/paint-steps.html',
  steps: Object.freeze([
    Object.freeze({ at_ms: 700, share: 0.4 }),
    Object.freeze({ at_ms: 1400, share: 0.3 }),
    Object.freeze({ at_ms: 2100, share: 0.2 }),
    Object.freeze({ at_ms: 2800, share: 0.1 })
  ])
})

function paintStepsPage () {
  const bands = PAINT_STEPS.steps.map((s, i) => `<div id="b${i}" style="height:${s.share * 100}vh"></div>`).join('\n')
  // No text and no favicon request: nothing paints but the bands.
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>h3lens lab: paints in known steps</title>
<link rel="icon" href="data:,">
<style>html,body{margin:0;padding:0;background:#fff;overflow:hidden}div{background:#000;visibility:hidden}</style>
</head>
<body>
${bands}
<script>
for (const [i, at] of ${JSON.stringify(PAINT_STEPS.steps.map((s) => s.at_ms))}.entries()) {
  setTimeout(() => { document.getElementById('b' + i).style.visibility = 'visible' }, Math.max(0, at - performance.now()))
}
</script>
</body>
</html>
`
}

/**
 * Write every test page and asset under `dir` and describe the pages.
 * Files are written under temporary names and renamed, so an origin already
 * serving `dir` never sees a half-written file.
 * @param {string} dir
 * @returns {Promise<Record<string, LabPage>>}
 */
export async function buildSite (dir) {
  /** @type {Record<string, LabPage>} */
  const pages = {}
  /** @type {Record<string, Buffer>} */
  const files = {}
  for (const spec of HERO_PAGES) {
    const pageFiles = heroPage(spec)
    Object.assign(files, pageFiles)
    pages[spec.name] = describe(spec.name, pageFiles)
  }
  const many = manyPage()
  Object.assign(files, many)
  pages['page-many'] = describe('page-many', many)
  // The shop's login form and assets; the rest of it answers from the backend (./shop.js).
  Object.assign(files, shopFiles())
  // Not one of the pages above (those are the field studies' sizes): the
  // visual metrics' ground truth, test/visual-metrics.test.js.
  files[PAINT_STEPS.path] = Buffer.from(paintStepsPage())

  for (const [urlPath, content] of Object.entries(files)) {
    const file = path.join(dir, ...urlPath.split('/'))
    await mkdir(path.dirname(file), { recursive: true })
    const tmp = `${file}.${process.pid}.tmp`
    await writeFile(tmp, content)
    await rename(tmp, file)
  }
  return pages
}

/**
 * @param {string} name
 * @param {Record<string, Buffer>} files
 * @returns {LabPage}
 */
function describe (name, files) {
  const values = Object.values(files)
  return {
    path: `/${name}.html`,
    description: DESCRIPTIONS[name],
    bytes: values.reduce((sum, b) => sum + b.length, 0),
    requests: values.length
  }
}
