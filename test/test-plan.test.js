// Which test files scripts/run-tests.js runs serially: decided from their
// imports, so a new file that drives a browser or starts processes is
// serial without anyone listing it, and a database-only file is not.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { findTestFiles, planTests, ROOT } from '../scripts/test-plan.js'

/**
 * A throwaway repository of the given files.
 * @param {Record<string, string>} files path → source
 */
function repo (files) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-test-plan-'))
  for (const [file, source] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true })
    fs.writeFileSync(path.join(root, file), source)
  }
  return root
}

const remove = (/** @type {string} */ root) => fs.rmSync(root, { recursive: true, force: true })

const planOf = (/** @type {string} */ root) => Object.fromEntries(planTests(findTestFiles(path.join(root, 'test')), { root }).map((p) => [p.file, p]))

test('a browser or a started process anywhere in a file\'s imports makes it serial, with the import chain as the reason', () => {
  const root = repo({
    'test/helpers/ui.js': "import puppeteer from 'puppeteer-core'\nexport const x = 1\n",
    'test/helpers/wrap.js': "export { x } from './ui.js'\n",
    'test/page.test.js': "import { x } from './helpers/wrap.js'\n",
    'lab/netns.js': "import { execFile } from 'node:child_process'\nexport const up = 1\n",
    // A dynamic import, spelled with \u0028 so that this file does not import lab/ itself.
    'test/lab.test.js': "import { test } from 'node:test'\nconst { up } = await import\u0028'../lab/netns.js')\n",
    'test/cli.test.js': "import { spawnSync } from 'node:child_process'\n",
    'test/db.test.js': "import { test } from 'node:test'\nimport { pool } from '../lib/store/db.js'\n",
    'lib/store/db.js': "import pg from 'pg'\nexport const pool = 1\n"
  })
  try {
    const plan = planOf(root)
    assert.deepEqual(plan['test/page.test.js'].why, ['drives a browser: test/helpers/ui.js imports puppeteer-core (through test/helpers/wrap.js)'])
    assert.deepEqual(plan['test/lab.test.js'].why, ['starts processes: lab/netns.js imports node:child_process'])
    assert.deepEqual(plan['test/cli.test.js'].why, ['starts processes: test/cli.test.js imports node:child_process'])
    assert.deepEqual(plan['test/db.test.js'], { file: 'test/db.test.js', serial: false, why: [] })
  } finally {
    remove(root)
  }
})

test('the server rooms\' own child_process (the embedded PostgreSQL) leaves a file concurrent; import cycles end', () => {
  const root = repo({
    'lib/runtime/db.js': "import childProcess from 'node:child_process'\nimport { a } from '../store/a.js'\nexport const db = 1\n",
    'lib/store/a.js': "import { db } from '../runtime/db.js'\nexport const a = 1\n",
    'api/app.js': "import { db } from '../lib/runtime/db.js'\n",
    'test/api.test.js': "import '../api/app.js'\n"
  })
  try {
    assert.deepEqual(planOf(root)['test/api.test.js'], { file: 'test/api.test.js', serial: false, why: [] })
  } finally {
    remove(root)
  }
})

test('`// run-tests: serial` with a reason makes a file serial; without a reason it is an error', () => {
  const root = repo({ 'test/clock.test.js': "// run-tests: serial — asserts that a cache answer is at most 2 s old\nimport { test } from 'node:test'\n" })
  try {
    assert.deepEqual(planOf(root)['test/clock.test.js'].why, ['marked serial: asserts that a cache answer is at most 2 s old'])
    fs.writeFileSync(path.join(root, 'test', 'clock.test.js'), "// run-tests: serial\nimport { test } from 'node:test'\n")
    assert.throws(() => planOf(root), /test\/clock\.test\.js: "\/\/ run-tests: serial" needs a reason after it/)
  } finally {
    remove(root)
  }
})

test('this repository: browser, lab and CLI files are serial, statistics and API-only files are concurrent', () => {
  const plan = Object.fromEntries(planTests(findTestFiles(path.join(ROOT, 'test'))).map((p) => [p.file, p]))
  for (const file of ['test/ui.test.js', 'test/lab-netns.test.js', 'test/cli.test.js', 'test/e2e-start.test.js', 'test/faults.test.js']) {
    assert.equal(plan[file].serial, true, file)
  }
  for (const file of ['test/stats-rank.test.js', 'test/api-monitors.test.js', 'test/import.test.js', 'test/test-plan.test.js']) {
    assert.equal(plan[file].serial, false, `${file}: ${plan[file].why}`)
  }
})
