// What setup installs through apt-get on a machine that lacks something.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { EXTRA_PACKAGES, NEEDS, PYTHON_NEEDS, packagesToInstall } from '../scripts/debian-packages.js'

const everything = { has: () => true, runs: () => true }

test('a machine with everything installs nothing', () => {
  assert.deepEqual(packagesToInstall({ ...everything, forTest: true }).pkgs, [])
})

test("Debian's python3 without pip and venv: npm test installs both, npm start only pip, and nothing else", () => {
  const noPython = { has: () => true, runs: () => false }
  assert.deepEqual(packagesToInstall({ ...noPython, forTest: true }).pkgs, ['python3-pip', 'python3-venv'])
  assert.deepEqual(packagesToInstall({ ...noPython, forTest: false }).pkgs, ['python3-pip'])
  const venvOnly = packagesToInstall({ has: () => true, runs: (argv) => argv.join(' ').includes('pip --version'), forTest: true })
  assert.deepEqual(venvOnly.pkgs, ['python3-venv'])
  assert.deepEqual(venvOnly.missing, [], 'no program the product runs is missing')
})

test('a missing program brings its package and the extras, with the Python tools that do not run', () => {
  const { missing, pkgs } = packagesToInstall({ has: (c) => c !== 'chromium', runs: (argv) => !argv.join(' ').includes('ensurepip'), forTest: true })
  assert.deepEqual(missing.map((n) => n.command), ['chromium'])
  assert.deepEqual(pkgs, ['chromium', ...EXTRA_PACKAGES, 'python3-venv'])
  assert.equal(new Set(packagesToInstall({ has: () => false, runs: () => false, forTest: true }).pkgs).size,
    new Set([...NEEDS.map((n) => n.pkg), ...EXTRA_PACKAGES, ...PYTHON_NEEDS.map((n) => n.pkg)]).size)
})

test('on this machine every Python tool setup uses runs, so the Caddy and Schemathesis steps can', () => {
  const { python } = packagesToInstall({ has: () => true, runs: (argv) => runsHere(argv), forTest: true })
  assert.deepEqual(python.map((n) => n.pkg), [])
})

/** @param {string[]} argv */
function runsHere ([command, ...args]) {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0
}
