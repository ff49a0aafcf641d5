#!/usr/bin/env node
// h3lens command-line entry: one subcommand per process (docs/DESIGN.md §2).
// Only Node's own modules are imported up front: the commands import the npm
// packages, and before `npm ci` a person asking for --help should be told
// that, not shown a stack of ERR_MODULE_NOT_FOUND.
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { ConfigError, VARIABLES } from '../lib/runtime/config.js'
import { VERSION } from '../lib/runtime/version.js'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
// The configuration table's columns in --help, as wide as their longest entry.
const SPECS = /** @type {readonly import('../lib/runtime/config.js').VariableSpec[]} */ (VARIABLES)
const NAME_WIDTH = Math.max(...SPECS.map((v) => v.name.length))
const FLAG_WIDTH = Math.max(...SPECS.map((v) => (v.flag ?? '').length))

/** @type {typeof import('./commands.js') | null} */
let commands = null

/** @returns {Promise<Record<string, import('./commands.js').Command>>} */
async function loadCommands () {
  try {
    commands = await import('./commands.js')
    return commands.COMMANDS
  } catch (/** @type {any} */ err) {
    const missing = err?.code === 'ERR_MODULE_NOT_FOUND' && /Cannot find package '([^']+)'/.exec(String(err.message))
    if (!missing) throw err
    throw Object.assign(new Error(`the npm packages h3lens needs are not installed (there is no "${missing[1]}"): run "npm ci" in ${ROOT} first ` +
      '(npm start and npm test run it for you)'), { userFacing: true })
  }
}

/** @param {Record<string, import('./commands.js').Command>} COMMANDS */
const usage = (COMMANDS) => `h3lens ${VERSION} — is HTTP/3 faster than HTTP/2 for your users, where, by how much, and why?

Usage: h3lens <command> [options]

Commands:
${Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`).join('\n')}

Run "h3lens <command> --help" for a command's options.

Configuration (environment variable, or the flag where one exists):
${SPECS.map((v) => `  ${v.name.padEnd(NAME_WIDTH)} ${(v.flag ?? '').padEnd(FLAG_WIDTH)} ${v.description}${v.default !== null && v.default !== undefined ? ` (default ${v.default})` : ''}`).join('\n')}
`

/** @param {string[]} argv */
async function main (argv) {
  const [name, ...rest] = argv
  if (name === '--version' || name === '-v') {
    console.log(VERSION)
    return 0
  }
  const COMMANDS = await loadCommands()
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    // "h3lens help agents" is "h3lens agents --help".
    const about = name === 'help' && rest[0] !== undefined ? COMMANDS[rest[0]] : null
    if (name === 'help' && rest[0] !== undefined && !about) {
      console.error(`h3lens: unknown command "${rest[0]}". Commands: ${Object.keys(COMMANDS).join(', ')}. See h3lens --help.`)
      return 2
    }
    process.stdout.write(about ? about.usage + '\n' : usage(COMMANDS))
    return 0
  }
  const command = COMMANDS[name]
  if (!command) {
    console.error(`h3lens: unknown command "${name}". Commands: ${Object.keys(COMMANDS).join(', ')}. See h3lens --help.`)
    return 2
  }
  let parsed
  try {
    parsed = parseArgs({ args: rest, options: { help: { type: 'boolean', short: 'h' }, ...command.options }, allowPositionals: Boolean(command.positionals), strict: true })
  } catch (/** @type {any} */ err) {
    console.error(`h3lens ${name}: ${err.message}\n\n${command.usage}`)
    return 2
  }
  if (/** @type {any} */ (parsed.values).help) {
    process.stdout.write(command.usage + '\n')
    return 0
  }
  const words = parsed.positionals ?? []
  const extra = words[command.positionals?.(words) ?? 0]
  if (extra !== undefined) {
    console.error(`h3lens ${name}: unexpected argument "${extra}"\n\n${command.usage}`)
    return 2
  }
  return command.run(parsed.values, words)
}

main(process.argv.slice(2)).then((code) => {
  // Long-running commands return undefined and keep the process alive.
  if (typeof code === 'number') process.exitCode = code
}, async (err) => {
  // A command that fails while starting (a port in use) stops what it had
  // started, so it leaves no lock file or half-started parts behind.
  await commands?.stopStarted()
  console.error(`h3lens: ${describeFailure(err)}`)
  process.exit(1)
})

/**
 * Domain errors (bad input, unknown id, a port in use) carry a message for
 * people; anything else gets its stack. Libraries may reject with anything,
 * undefined included, so nothing here assumes an Error.
 * @param {unknown} err
 */
function describeFailure (err) {
  if (!(err instanceof Error)) {
    return `failed with ${err === undefined ? 'no reason given' : JSON.stringify(err) ?? String(err)} (a bug: please report it with the log above)`
  }
  const e = /** @type {Error & { userFacing?: boolean, statusCode?: number }} */ (err)
  if (err instanceof ConfigError || e.userFacing || (e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500)) return err.message
  return err.stack ?? String(err)
}
