// Schemathesis, the property-based fuzzer test/api-fuzz.test.js runs over
// the OpenAPI document, lives in a virtualenv of its own under .h3lens/,
// with every Python package pinned in test/fuzz/requirements.txt.
// scripts/setup.js --test (what `npm test` runs first) installs it; this
// module says where it is and whether the installed one is the pinned one.
// Node built-ins only: setup.js imports it before node_modules exists.
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
export const FUZZ_DIR = path.join(ROOT, 'test', 'fuzz')
export const REQUIREMENTS = path.join(FUZZ_DIR, 'requirements.txt')

/** The pinned version, as the requirements file names it. */
export function schemathesisVersion () {
  const pin = /^schemathesis==(\S+)$/m.exec(fs.readFileSync(REQUIREMENTS, 'utf8'))
  if (!pin) throw new Error(`${REQUIREMENTS} pins no schemathesis==<version>`)
  return pin[1]
}

/** The virtualenv of the pinned version (a new pin gets a new one). */
export const schemathesisVenv = () => path.join(ROOT, '.h3lens', `schemathesis-${schemathesisVersion()}`)
export const schemathesisBin = () => path.join(schemathesisVenv(), 'bin', 'schemathesis')
const stampFile = () => path.join(schemathesisVenv(), '.h3lens-requirements-sha256')
const requirementsDigest = () => createHash('sha256').update(fs.readFileSync(REQUIREMENTS)).digest('hex')

/** Whether the venv holds exactly what the requirements file pins. */
export function hasSchemathesis () {
  try {
    return fs.readFileSync(stampFile(), 'utf8').trim() === requirementsDigest() && fs.existsSync(schemathesisBin())
  } catch {
    return false
  }
}

/** Called by setup once the pinned packages are installed and answer. */
export function markSchemathesisInstalled () {
  fs.writeFileSync(stampFile(), requirementsDigest() + '\n')
}
