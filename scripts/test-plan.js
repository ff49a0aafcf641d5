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
const OVERRIDE = /^[ \t]*\/\/[ \t]*run-tests:[ \t]*serial\b[ \t:,—-]*(\S.*)?$/m

/**
 * @typedef {{ file: string, serial: boolean, why: string[] }} Plan
 *   file relative to the repository; why: one line per reason, empty when concurrent
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
      m = { source, specifiers: SPECIFIERS.flatMap((re) => [...source.matchAll(re)].map((x) => x[1])) }
      modules.set(file, m)
    }
    return m
  }
  return files.map((f) => {
    const file = path.resolve(root, f)
    const rel = path.relative(root, file)
    /** @type {string[]} */
    const why = []
    const override = read(file).source.match(OVERRIDE)
    if (override) {
      if (!override[1]) throw new Error(`${rel}: "// run-tests: serial" needs a reason after it`)
      why.push(`marked serial: ${override[1].trim()}`)
    }
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
    why.push(...found.values())
    return { file: rel, serial: why.length > 0, why }
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
