#!/usr/bin/env node
// h3lens command-line entry: one subcommand per process (DESIGN §2).
import { parseArgs } from 'node:util'
import { COMMANDS } from './commands.js'
import { ConfigError, VARIABLES } from '../lib/runtime/config.js'
import { VERSION } from '../lib/runtime/version.js'

const USAGE = `h3lens ${VERSION} — is HTTP/3 faster than HTTP/2 for your users, where, by how much, and why?

Usage: h3lens <command> [options]

Commands:
${Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`).join('\n')}

Run "h3lens <command> --help" for a command's options.

Configuration (environment variable, or the flag where one exists):
${/** @type {readonly import('../lib/runtime/config.js').VariableSpec[]} */ (VARIABLES).map((v) => `  ${v.name.padEnd(26)} ${(v.flag ?? '').padEnd(15)} ${v.description}${v.default !== null && v.default !== undefined ? ` (default ${v.default})` : ''}`).join('\n')}
`

/** @param {string[]} argv */
async function main (argv) {
  const [name, ...rest] = argv
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(USAGE)
    return 0
  }
  if (name === '--version' || name === '-v') {
    console.log(VERSION)
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
  return command.run(parsed.values, parsed.positionals ?? [])
}

main(process.argv.slice(2)).then((code) => {
  // Long-running commands return undefined and keep the process alive.
  if (typeof code === 'number') process.exitCode = code
}, (err) => {
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
