// Which test files may run at the same time as others, decided from what
// they import, so that a new test file is classified without anyone keeping
// a list. A file runs serially when it, or any module of this repository it
// imports (followed transitively), does one of these:
// - imports puppeteer-core: it drives a browser, whose page loads some
//   tests measure and which takes the machine's cores while it runs;
// - imports node:child_process outside the server rooms (lib/, api/,
//   scheduler/): it starts processes — lab namespaces, linkem, Caddy, an
//   agent, the h3lens CLI or `h3lens start` (test/helpers/process.js),
//   openssl, `ip`. The server rooms are exempt because their one use is the
//   embedded PostgreSQL, which a test starts only through those rooms' own
//   functions and which needs no exclusive machine;
// - carries the comment `// run-tests: serial <reason>`, for a file that
//   must run alone for another reason (it asserts on time, say).
// Everything else only talks to its own database (cloned from the template
// per file) and loopback ports it picks itself, and runs concurrently.
// A file whose only processes are its own business (one-shot CLI commands
// against its own database, `git ls-files`, a fuzzer against its own API)
// may say `// run-tests: concurrent <reason>`: it then runs concurrently
// although it starts processes. The mark cannot take a browser out of the
// serial lane.
// A file that would be serial but spends its time waiting (for intervals,
// timeouts, an outage) or drives a browser only to look at the dashboard,
// measures no page load's time, and holds nothing another file needs (its
// lab has a prefix of its own, its ports are free ones, its processes are
// found by its own data dir) may say `// run-tests: side <reason>`: it then
// runs in the side lane, one file at a time beside the serial lane, so that
// the two halves of the long files take half the time.
// A file carries at most one mark.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')

/** Rooms whose child_process use is the embedded PostgreSQL only. */
const SERVER_ROOMS = ['lib/', 'api/', 'scheduler/']

const SPECIFIERS = [
  /^\s*(?:import|export)\s[^'"`;]*?\sfrom\s*['"]([^'"]+)['"]/gm,
  /^\s*import\s*['"]([^'"]+)['"]/gm,
  /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g
]
// Comments, so that a JSDoc type (`@param {import('puppeteer-core').Page}`)
// is not taken for a dynamic import: block comments, and lines that are
// only a comment.
const COMMENTS = /\/\*[\s\S]*?\*\/|^[ \t]*\/\/.*$/gm
const MARK = (/** @type {string} */ lane) => new RegExp(`^[ \\t]*//[ \\t]*run-tests:[ \\t]*${lane}\\b[ \\t:,—-]*(\\S.*)?$`, 'm')
const LANES = /** @type {const} */ (['serial', 'side', 'concurrent'])

/**
 * @typedef {'serial' | 'side' | 'concurrent'} Lane
 * @typedef {{ file: string, lane: Lane, why: string[] }} Plan
 *   file relative to the repository; why: one line per reason for its lane,
 *   empty when it is concurrent for want of any reason to be serial
 */

/**
 * Classify test files.
 * @param {string[]} files paths of test files
 * @param {{ root?: string }} [opts]
 * @returns {Plan[]}
 */
export function planTests (files, { root = ROOT } = {}) {
  /** @type {Map<string, { specifiers: string[], source: string }>} */
  const modules = new Map()
  const read = (/** @type {string} */ file) => {
    let m = modules.get(file)
    if (!m) {
      const source = fs.readFileSync(file, 'utf8')
      const code = source.replace(COMMENTS, '')
      m = { source, specifiers: SPECIFIERS.flatMap((re) => [...code.matchAll(re)].map((x) => x[1])) }
      modules.set(file, m)
    }
    return m
  }
  return files.map((f) => {
    const file = path.resolve(root, f)
    const rel = path.relative(root, file)
    const { source } = read(file)
    const marks = LANES.flatMap((lane) => {
      const mark = source.match(MARK(lane))
      if (mark && !mark[1]) throw new Error(`${rel}: "// run-tests: ${lane}" needs a reason after it`)
      return mark ? [{ lane, reason: mark[1].trim() }] : []
    })
    if (marks.length > 1) throw new Error(`${rel}: marked ${marks.map((m) => `"// run-tests: ${m.lane}"`).join(' and ')}; keep one`)
    const marked = marks[0]
    /** @type {Map<string, string>} the first (shortest) import chain for each kind of reason */
    const found = new Map()
    for (const { module, chain } of closure(file, read, root)) {
      const { specifiers } = read(module)
      const room = path.relative(root, module)
      const through = chain.length > 2 ? ` (through ${chain.slice(1, -1).join(' → ')})` : ''
      if (specifiers.includes('puppeteer-core') && !found.has('browser')) found.set('browser', `drives a browser: ${room} imports puppeteer-core${through}`)
      if (specifiers.some((x) => x === 'node:child_process' || x === 'child_process') && !SERVER_ROOMS.some((r) => room.startsWith(r)) && !found.has('processes')) {
        found.set('processes', `starts processes: ${room} imports node:child_process${through}`)
      }
    }
    if (marked?.lane === 'concurrent' && found.has('browser')) {
      throw new Error(`${rel}: "// run-tests: concurrent" cannot take a file that drives a browser out of the serial lane (${found.get('browser')})`)
    }
    if (marked?.lane === 'serial') return { file: rel, lane: 'serial', why: [`marked serial: ${marked.reason}`, ...found.values()] }
    if (marked) return { file: rel, lane: marked.lane, why: [`marked ${marked.lane}: ${marked.reason}`, ...[...found.values()].map((w) => `although it ${w}`)] }
    return { file: rel, lane: found.size ? 'serial' : 'concurrent', why: [...found.values()] }
  })
}

/**
 * Every repository module `file` imports, itself included, each with the
 * shortest import chain that reaches it.
 * @param {string} file
 * @param {(file: string) => { specifiers: string[] }} read
 * @param {string} root
 */
function closure (file, read, root) {
  const chains = new Map([[file, [path.relative(root, file)]]])
  const queue = [file]
  while (queue.length) {
    const current = /** @type {string} */ (queue.shift())
    for (const spec of read(current).specifiers) {
      if (!spec.startsWith('.')) continue
      const next = path.resolve(path.dirname(current), spec)
      if (chains.has(next) || !next.startsWith(root + path.sep) || !fs.existsSync(next)) continue
      chains.set(next, [...(chains.get(current) ?? []), path.relative(root, next)])
      queue.push(next)
    }
  }
  return [...chains].map(([module, chain]) => ({ module, chain }))
}

/**
 * The test files under `dir`: every *.test.js, recursively.
 * @param {string} dir
 */
export function findTestFiles (dir) {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.js') && !f.split(path.sep).includes('node_modules'))
    .map((f) => path.join(dir, f))
    .sort()
}
