// The benches' command lines (bench/lib/args.js): --help prints what the
// bench measures and how it is run, and an option it does not take is one
// line that says so, not a stack; every bench reads its arguments that way.
// run-tests: concurrent — its processes are benches asked for --help, which start nothing
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { ROOT } from '../scripts/test-plan.js'

const bench = (/** @type {string[]} */ ...args) => spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', timeout: 30_000 })

test('--help prints the bench\'s own description and usage and starts nothing; an unknown option is one line naming it, exit 2', () => {
  for (const file of ['bench/bootstrap.js', 'bench/target-guard.js']) {
    const help = bench(file, '--help')
    assert.equal(help.status, 0, help.stderr)
    assert.match(help.stdout, new RegExp(`node ${file.replace('.', '\\.')}`), `${file}: the usage line`)
    assert.doesNotMatch(help.stdout, /^\/\//m, 'without the comment marks')
    assert.equal(help.stderr, '')
  }
  const wrong = bench('bench/bootstrap.js', '--runs', '1', '--bogus')
  assert.equal(wrong.status, 2)
  assert.equal(wrong.stdout, '', 'nothing measured')
  assert.equal(wrong.stderr, "bench/bootstrap.js: Unknown option '--bogus' (node bench/bootstrap.js --help says what it takes)\n")
})

test('a count outside the bench\'s bounds is refused naming the option and its bounds, never silently raised or capped', () => {
  for (const [args, said] of [
    [['bench/agent-throughput.js', '--rounds', '1'], '--rounds must be a whole number of at least 2, not "1"'],
    [['bench/quic-handshake.js', '--runs', '1.5'], '--runs must be a whole number from 1 to 50, not "1.5"'],
    [['bench/load.js', '--agents', '5000'], '--agents must be a whole number from 1 to 2000, not "5000"']
  ]) {
    const r = bench(...args)
    assert.equal(r.status, 2, r.stderr)
    assert.equal(r.stdout, '', 'nothing measured')
    assert.equal(r.stderr, `${args[0]}: ${said}\n`)
  }
})

test('every bench reads its command line through benchArgs, so each has --help', () => {
  const files = fs.readdirSync(path.join(ROOT, 'bench')).filter((f) => f.endsWith('.js'))
  assert.ok(files.length > 20)
  const without = files.filter((f) => !fs.readFileSync(path.join(ROOT, 'bench', f), 'utf8').includes('benchArgs(import.meta.url'))
  assert.deepEqual(without, [])
})
