#!/usr/bin/env node
// `npm run typecheck`: TypeScript's check of the JSDoc types, in the three
// configurations editors and `tsc -p` also read:
//   - jsconfig.json, the product code, fully strict;
//   - jsconfig.tests.json, test/ and bench/, strict but allowing an
//     implicit any;
//   - jsconfig.web.json, the dashboard, against the DOM.
//
// The first two are checked in one program, with the product's options: a
// program of its own for the tests would check every product file they
// import a second time, which was 40% of the check's CPU. The tests' own
// files then get the product's options, noImplicitAny included, and the
// errors that only noImplicitAny gives are left out for them. What is left
// is what `tsc -p jsconfig.tests.json` reports for them, and one thing
// more: a `let` without a type gets the type of what it is assigned
// (TypeScript does that only under noImplicitAny), so a use that does not
// fit that type is an error.
//
// Each program keeps its incremental state under .h3lens/cache, as `tsc
// --incremental` would. Prints the errors as tsc does, and exits 1 on any.
//
//   node scripts/typecheck.js
import fs from 'node:fs'
import path from 'node:path'
import ts from 'typescript'
import { ROOT } from './test-plan.js'

const CACHE = path.join(ROOT, '.h3lens', 'cache')
// The errors noImplicitAny adds: TS7005–TS7053 except those of other
// options (7027 unreachable code, 7028 unused label, 7029 fallthrough, 7030
// not all paths return).
const IMPLICIT_ANY = new Set([7005, 7006, 7008, 7010, 7011, 7015, 7016, 7017, 7018, 7019, 7022, 7023, 7024, 7025, 7031, 7032, 7033, 7034, 7041, 7051, 7052, 7053])

/** How errors are printed: paths as tsc prints them, from the project's root. */
const FORMAT_HOST = { getCanonicalFileName: (/** @type {string} */ f) => f, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' }

const product = readConfig('jsconfig.json')
const tests = readConfig('jsconfig.tests.json')
const web = readConfig('jsconfig.web.json')
const productFiles = new Set(product.fileNames)
const testFiles = tests.fileNames.filter((f) => !productFiles.has(f))

const diagnostics = [
  ...check('tsc-code', [...product.fileNames, ...testFiles], product.options, (d) => !(d.file && !productFiles.has(d.file.fileName) && IMPLICIT_ANY.has(d.code))),
  ...check('tsc-web', web.fileNames, web.options, () => true)
]
if (diagnostics.length) {
  process.stdout.write(ts.formatDiagnostics(diagnostics, FORMAT_HOST))
  console.log(`\n${diagnostics.length} type error${diagnostics.length === 1 ? '' : 's'}`)
  process.exit(1)
}

/**
 * A jsconfig file read as `tsc -p` reads it; its own errors end the check.
 * @param {string} name
 */
function readConfig (name) {
  const parsed = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, name), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      console.error(ts.flattenDiagnosticMessageText(d.messageText, '\n'))
      process.exit(2)
    }
  })
  if (!parsed) throw new Error(`${name} could not be read`)
  if (parsed.errors.length) {
    console.error(ts.formatDiagnostics(parsed.errors, FORMAT_HOST))
    process.exit(2)
  }
  return parsed
}

/**
 * Check one program, reusing and then saving its incremental state.
 * @param {string} cacheName the state's file under .h3lens/cache
 * @param {string[]} rootNames
 * @param {import('typescript').CompilerOptions} options
 * @param {(d: import('typescript').Diagnostic) => boolean} keep
 */
function check (cacheName, rootNames, options, keep) {
  fs.mkdirSync(CACHE, { recursive: true })
  const program = ts.createIncrementalProgram({
    rootNames,
    options: { ...options, noEmit: true, incremental: true, tsBuildInfoFile: path.join(CACHE, cacheName) }
  })
  const found = [
    ...program.getConfigFileParsingDiagnostics(),
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...program.getSyntacticDiagnostics(),
    ...program.getSemanticDiagnostics()
  ]
  program.emit()
  return found.filter(keep)
}
