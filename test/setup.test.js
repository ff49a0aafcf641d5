// What setup installs through apt-get on a machine that lacks something.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { EXTRA_PACKAGES, NEEDS, PYTHON_NEEDS, packagesToInstall } from '../scripts/debian-packages.js'

const everything = { has: () => true, runs: () => true }
const BOTH = new Set(['caddy', 'schemathesis'])

test('a machine with everything installs nothing', () => {
  assert.deepEqual(packagesToInstall({ ...everything, steps: BOTH }).pkgs, [])
})

test("Debian's python3 without pip and venv: npm test installs both, npm start only pip, and neither once its step is done", () => {
  const noPython = { has: () => true, runs: () => false }
  assert.deepEqual(packagesToInstall({ ...noPython, steps: BOTH }).pkgs, ['python3-pip', 'python3-venv'])
  assert.deepEqual(packagesToInstall({ ...noPython, steps: new Set(['caddy']) }).pkgs, ['python3-pip'])
  assert.deepEqual(packagesToInstall({ ...noPython, steps: new Set() }).pkgs, [], 'Caddy and Schemathesis installed: no Python needed, no apt-get at every start')
  const venvOnly = packagesToInstall({ has: () => true, runs: (argv) => argv.join(' ').includes('pip --version'), steps: BOTH })
  assert.deepEqual(venvOnly.pkgs, ['python3-venv'])
  assert.deepEqual(venvOnly.missing, [], 'no program the product runs is missing')
})

test('a missing program brings its package and the extras, with the Python tools that do not run', () => {
  const { missing, pkgs } = packagesToInstall({ has: (c) => c !== 'chromium', runs: (argv) => !argv.join(' ').includes('ensurepip'), steps: BOTH })
  assert.deepEqual(missing.map((n) => n.command), ['chromium'])
  assert.deepEqual(pkgs, ['chromium', ...EXTRA_PACKAGES, 'python3-venv'])
  assert.equal(new Set(packagesToInstall({ has: () => false, runs: () => false, steps: BOTH }).pkgs).size,
    new Set([...NEEDS.map((n) => n.pkg), ...EXTRA_PACKAGES, ...PYTHON_NEEDS.map((n) => n.pkg)]).size)
})

// As root, setup has installed them (CI); otherwise it only named them.
test('on this machine every Python tool setup uses runs, so the Caddy and Schemathesis steps can', { skip: process.getuid?.() !== 0 && 'not root: setup names the packages rather than installing them' }, () => {
  const { python } = packagesToInstall({ has: () => true, runs: (argv) => runsHere(argv), steps: BOTH })
  assert.deepEqual(python.map((n) => n.pkg), [])
})

/** @param {string[]} argv */
function runsHere ([command, ...args]) {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0
}
