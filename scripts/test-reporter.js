// A node:test reporter for scripts/run-tests.js, which runs each test file
// as its own `node <file>` and needs, from each, what a person reads at the
// end of the run: the counts node:test prints in its summary, every failed
// test with its error, and the CPU time the file took. One JSON object per
// line. A file that fails outside its tests (it throws on import, or after
// a test has ended) exits non-zero with its error in its own output, which
// the runner reports.
import fs from 'node:fs'
import { inspect } from 'node:util'

/** The summary counts node:test reports as diagnostics of no file (`tests 12`, `pass 11`, …). */
const COUNTS = /^(tests|suites|pass|fail|cancelled|skipped|todo) (\d+)$/

/**
 * @param {AsyncIterable<{ type: string, data: any }>} source
 */
export default async function* summaryReporter (source) {
  for await (const { type, data } of source) {
    if (type === 'test:fail' && !isSuiteOfFailures(data)) {
      yield line({ kind: 'fail', file: data.file, line: data.line, name: data.name, error: describe(data.details.error) })
    } else if (type === 'test:diagnostic' && data.file === undefined) {
      const m = COUNTS.exec(data.message)
      if (m) yield line({ kind: 'count', name: m[1], n: Number(m[2]) })
    }
  }
  const cpu = cpuSeconds()
  if (cpu !== null) yield line({ kind: 'cpu', seconds: cpu })
}

/**
 * The CPU time of this process (the test file's, where node:test runs its
 * reporters) and of the children it has waited for: the browsers, Caddy and
 * lab processes the file started and ended. Linux only (/proc); null
 * elsewhere.
 * @returns {number | null}
 */
function cpuSeconds () {
  try {
    // After the command's closing parenthesis: utime, stime, cutime, cstime are fields 14–17, in clock ticks (USER_HZ, 100 on Linux).
    const fields = fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')
    return fields.slice(11, 15).reduce((a, f) => a + Number(f), 0) / 100
  } catch {
    return null
  }
}

/** @param {any} data a suite that failed only because a test in it failed is not a failure of its own */
function isSuiteOfFailures (data) {
  return data.details.type === 'suite' && data.details.error?.failureType === 'subtestsFailed'
}

/** @param {any} error */
function describe (error) {
  const cause = error?.cause ?? error
  return inspect(cause, { depth: 4 }).split('\n').slice(0, 40).join('\n')
}

/** @param {object} o */
function line (o) {
  return JSON.stringify(o) + '\n'
}
