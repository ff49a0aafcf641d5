// The hysteresis of alert states, as pure logic: what a sequence of
// breaching (1) and clear (0) evaluations does to one alert.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { nextState } from '../lib/analysis/alerts.js'

/** States after each evaluation of `seq` ("1101…") with `n` evaluations to fire and to resolve. */
function run (seq, n) {
  let cur = { state: 'ok', breaches: 0, clears: 0 }
  return [...seq].map((c) => (cur = nextState(cur, c === '1', n)).state)
}

const changes = (states) => states.filter((s, i) => s !== (states[i - 1] ?? 'ok'))

test('it fires after n breaches in a row and resolves after n clear ones', () => {
  assert.deepEqual(run('111000', 3), ['pending', 'pending', 'firing', 'firing', 'firing', 'resolved'])
  assert.deepEqual(run('10', 1), ['firing', 'resolved'])
})

test('a condition flapping at the threshold neither fires nor, once firing, resolves', () => {
  assert.deepEqual(changes(run('1010101010', 3)).filter((s) => s === 'firing'), [])
  const states = run('111' + '01'.repeat(20), 3)
  assert.deepEqual(changes(states), ['pending', 'firing'], 'fires once, no resolve/fire spam')
  assert.equal(states.at(-1), 'firing')
})

test('after resolving it can fire again, through pending', () => {
  assert.deepEqual(changes(run('111000111', 3)), ['pending', 'firing', 'resolved', 'pending', 'firing'])
})
