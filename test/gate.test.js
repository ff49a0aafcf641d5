import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { createGate } from '../lib/runtime/gate.js'

test('a gate of 1 runs tasks one at a time, in arrival order, and survives a failing task', async () => {
  const gate = createGate(1)
  let running = 0
  let most = 0
  const order = []
  const task = (i, fail = false) => gate.run(async () => {
    running++
    most = Math.max(most, running)
    await sleep(5)
    order.push(i)
    running--
    if (fail) throw new Error(`task ${i} failed`)
    return i
  })
  const results = await Promise.allSettled([task(1), task(2, true), task(3), task(4)])
  assert.equal(most, 1)
  assert.deepEqual(order, [1, 2, 3, 4])
  assert.equal(results[1].status, 'rejected')
  assert.equal(/** @type {any} */ (results[3]).value, 4)
})
