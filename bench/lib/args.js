// Every bench's command line: node:util's parseArgs, and besides it
// `--help` (or -h), which prints the bench's own opening comment (what it
// measures and how it is run) and exits, and a one-line error for an option
// it does not take, instead of a stack. A bench calls it before it starts
// anything.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

/**
 * @template {import('node:util').ParseArgsConfig} T
 * @param {string} url the bench's import.meta.url
 * @param {T} [config] parseArgs' config, without `args`
 * @returns {ReturnType<typeof parseArgs<T>>}
 */
export function benchArgs (url, config = /** @type {T} */ ({})) {
  const file = fileURLToPath(url)
  const name = benchName(url)
  /** @type {any} */
  let parsed
  try {
    parsed = parseArgs({ ...config, options: { ...config.options, help: { type: 'boolean', short: 'h' } } })
  } catch (/** @type {any} */ err) {
    console.error(`${name}: ${err.message.split('\n')[0]} (node ${name} --help says what it takes)`)
    process.exit(2)
  }
  if (parsed.values.help) {
    console.log(usage(file))
    process.exit(0)
  }
  delete parsed.values.help
  return parsed
}

/**
 * A file's opening comment, without its `// ` marks.
 * @param {string} file
 */
export function usage (file) {
  const lines = fs.readFileSync(file, 'utf8').split('\n')
  if (lines[0].startsWith('#!')) lines.shift()
  const comment = []
  for (const line of lines) {
    if (!line.startsWith('//')) break
    comment.push(line.replace(/^\/\/ ?/, ''))
  }
  return comment.join('\n')
}

/**
 * A whole-number option within its bounds (every load a bench makes is
 * bounded in count and time); outside them, or not a whole number, the
 * bench stops with one line that names the option and its bounds.
 * @param {string} url the bench's import.meta.url
 * @param {Record<string, unknown>} values parsed options
 * @param {string} name
 * @param {{ min: number, max?: number }} bounds
 */
export function countOption (url, values, name, { min, max = Number.MAX_SAFE_INTEGER }) {
  const n = Number(values[name])
  if (Number.isInteger(n) && n >= min && n <= max) return n
  const within = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`
  console.error(`${benchName(url)}: --${name} must be a whole number ${within}, not "${values[name]}"`)
  process.exit(2)
}

/**
 * A bench as its messages name it: bench/<file>.
 * @param {string} url the bench's import.meta.url
 */
function benchName (url) {
  return `bench/${path.basename(fileURLToPath(url))}`
}
