// Which lane scripts/run-tests.js runs each test file in: decided from their
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
    assert.deepEqual(plan['test/db.test.js'], { file: 'test/db.test.js', lane: 'concurrent', why: [] })
  } finally {
    remove(root)
  }
})

test('an import named in a comment (a JSDoc type) is not an import', () => {
  // The line comment's import is spelled with \u0028, as this file's lines are not comments.
  const root = repo({
    'agents/faults.js': "/**\n * @param {import('puppeteer-core').Browser} browser\n */\nexport const x = 1\n// import\u0028'puppeteer-core') in a line comment\n",
    'test/agent.test.js': "import { x } from '../agents/faults.js'\nconst y = /** @type {import('puppeteer-core').Page} */ (null)\n"
  })
  try {
    assert.deepEqual(planOf(root)['test/agent.test.js'], { file: 'test/agent.test.js', lane: 'concurrent', why: [] })
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
    assert.deepEqual(planOf(root)['test/api.test.js'], { file: 'test/api.test.js', lane: 'concurrent', why: [] })
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

test('`// run-tests: concurrent` with a reason lets a file that starts processes run concurrently, saying what it overrides; never a browser, never beside the serial mark', () => {
  const root = repo({
    'test/cli.test.js': "// run-tests: concurrent — its processes are one-shot commands against its own database\nimport { spawnSync } from 'node:child_process'\n",
    'test/quiet.test.js': "// run-tests: concurrent — nothing to override\nimport { test } from 'node:test'\n"
  })
  try {
    const plan = planOf(root)
    assert.deepEqual(plan['test/cli.test.js'], {
      file: 'test/cli.test.js',
      lane: 'concurrent',
      why: ['marked concurrent: its processes are one-shot commands against its own database', 'although it starts processes: test/cli.test.js imports node:child_process']
    })
    assert.deepEqual(plan['test/quiet.test.js'], { file: 'test/quiet.test.js', lane: 'concurrent', why: ['marked concurrent: nothing to override'] })
    const rewrite = (/** @type {string} */ source) => fs.writeFileSync(path.join(root, 'test', 'cli.test.js'), source)
    rewrite("// run-tests: concurrent\nimport { spawnSync } from 'node:child_process'\n")
    assert.throws(() => planOf(root), /test\/cli\.test\.js: "\/\/ run-tests: concurrent" needs a reason after it/)
    rewrite("// run-tests: concurrent — it only looks\nimport puppeteer from 'puppeteer-core'\n")
    assert.throws(() => planOf(root), /test\/cli\.test\.js: "\/\/ run-tests: concurrent" cannot take a file that drives a browser out of the serial lane \(drives a browser: test\/cli\.test\.js imports puppeteer-core\)/)
    rewrite("// run-tests: concurrent — one reason\n// run-tests: serial — another\nimport { test } from 'node:test'\n")
    assert.throws(() => planOf(root), /test\/cli\.test\.js: marked "\/\/ run-tests: serial" and "\/\/ run-tests: concurrent"; keep one/)
  } finally {
    remove(root)
  }
})

test('`// run-tests: side` with a reason puts a file that drives a browser or starts processes in the side lane, saying what it overrides; it stands alone', () => {
  const root = repo({
    'test/helpers/agent.js': "import puppeteer from 'puppeteer-core'\nimport { spawn } from 'node:child_process'\nexport const x = 1\n",
    'test/wait.test.js': "// run-tests: side — it waits for intervals and times no page load\nimport { x } from './helpers/agent.js'\n",
    'test/page.test.js': "import { x } from './helpers/agent.js'\n"
  })
  try {
    const plan = planOf(root)
    assert.deepEqual(plan['test/wait.test.js'], {
      file: 'test/wait.test.js',
      lane: 'side',
      why: [
        'marked side: it waits for intervals and times no page load',
        'although it drives a browser: test/helpers/agent.js imports puppeteer-core',
        'although it starts processes: test/helpers/agent.js imports node:child_process'
      ]
    })
    assert.equal(plan['test/page.test.js'].lane, 'serial')
    const rewrite = (/** @type {string} */ source) => fs.writeFileSync(path.join(root, 'test', 'wait.test.js'), source)
    rewrite("// run-tests: side\nimport { x } from './helpers/agent.js'\n")
    assert.throws(() => planOf(root), /test\/wait\.test\.js: "\/\/ run-tests: side" needs a reason after it/)
    rewrite("// run-tests: side — it waits\n// run-tests: concurrent — it is quick\nimport { x } from './helpers/agent.js'\n")
    assert.throws(() => planOf(root), /test\/wait\.test\.js: marked "\/\/ run-tests: side" and "\/\/ run-tests: concurrent"; keep one/)
  } finally {
    remove(root)
  }
})

test('this repository: files that time page loads, labs and `h3lens start` are serial, waiting and dashboard files in the side lane, one-shot CLI files marked concurrent, statistics and API-only files are concurrent', () => {
  const plan = Object.fromEntries(planTests(findTestFiles(path.join(ROOT, 'test'))).map((p) => [p.file, p]))
  for (const file of ['test/measure.test.js', 'test/lab-netns.test.js', 'test/visual-metrics.test.js', 'test/e2e-start.test.js', 'test/firefox-lab.test.js', 'test/timescale.test.js']) {
    assert.equal(plan[file].lane, 'serial', file)
  }
  for (const file of ['test/ui.test.js', 'test/backoff.test.js', 'test/shutdown.test.js', 'test/faults.test.js']) {
    assert.equal(plan[file].lane, 'side', file)
    assert.match(plan[file].why[0], /^marked side: /, file)
  }
  for (const file of ['test/stats-rank.test.js', 'test/api-monitors.test.js', 'test/import.test.js', 'test/test-plan.test.js', 'test/ingest-batch.test.js', 'test/agent-concurrency.test.js']) {
    assert.equal(plan[file].lane, 'concurrent', `${file}: ${plan[file].why}`)
  }
  // Processes of their own that need no exclusive machine, and say so.
  for (const file of ['test/api-fuzz.test.js', 'test/cli.test.js', 'test/doc-references.test.js']) {
    assert.equal(plan[file].lane, 'concurrent', `${file}: ${plan[file].why}`)
    assert.match(plan[file].why[0], /^marked concurrent: /, file)
  }
})

test('docs/TESTING.md names every file a mark moves to another lane, so its lists of marked files are whole', () => {
  const doc = fs.readFileSync(path.join(ROOT, 'docs/TESTING.md'), 'utf8')
  const unnamed = planTests(findTestFiles(path.join(ROOT, 'test')))
    .filter((p) => p.why.some((w) => /^marked /.test(w)))
    .map((p) => p.file)
    .filter((file) => !doc.includes(`\`${file}\``) && !doc.includes(`\`${path.basename(file, '.test.js')}\``))
  assert.deepEqual(unnamed, [], 'marked files TESTING.md does not name')
})
