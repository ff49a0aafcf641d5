// A lab bench stopped by Ctrl-C takes its lab down: no namespace of its
// own is left on the machine (bench/lab-fidelity-net.js).
// run-tests: side — it starts a bench's lab and stops it; it times nothing
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, execFileSync } from 'node:child_process'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { netnsSupport } from '../lab/netns.js'
import { ROOT } from '../scripts/test-plan.js'

const support = await netnsSupport()
/** The bench's namespaces (its PREFIX). */
const ours = () => execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).split('\n').filter((l) => l.startsWith('h3lbench-'))

test('Ctrl-C during bench/lab-fidelity-net.js removes the lab it made, and the bench exits 130', { skip: !support.ok && support.reason }, async () => {
  assert.deepEqual(ours(), [], 'no namespace of the bench\'s before it runs')
  const bench = spawn(process.execPath, ['bench/lab-fidelity-net.js'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  bench.stdout.on('data', (d) => { output += d })
  bench.stderr.on('data', (d) => { output += d })
  const exited = once(bench, 'exit')
  try {
    const until = Date.now() + 30_000
    // Stopped while its lab is still being set up: its first namespace is there.
    while (ours().length < 1 && Date.now() < until) await sleep(20)
    assert.ok(ours().length >= 1, `the bench's lab is coming up: ${output}`)
    bench.kill('SIGINT')
    const [code] = await exited
    assert.equal(code, 130, output)
    assert.deepEqual(ours(), [], 'no namespace left')
  } finally {
    bench.kill('SIGKILL')
    for (const ns of ours()) execFileSync('ip', ['netns', 'del', ns])
  }
})
