// How the dashboard writes times and shares (web/dom.js): pure logic,
// checked in Node.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ms, msInterval, pct } from '../web/dom.js'

test('a difference below the last digit shown is zero, never "−0.0"; one under a tenth of a millisecond keeps a second digit', () => {
  assert.equal(pct(-0.04, { signed: true }), '0.0%')
  assert.equal(pct(0.04, { signed: true }), '0.0%')
  assert.equal(pct(-0.06, { signed: true }), '−0.1%')
  assert.equal(pct(-12.4, { signed: true }), '−12%')
  assert.equal(ms(-0.004, { signed: true }), '0.0 ms')
  assert.equal(ms(0.03, { signed: true }), '+0.03 ms')
  assert.equal(ms(-0.04), '−0.04 ms')
  assert.equal(ms(0.05), '0.1 ms')
  assert.equal(ms(3.14159), '3.1 ms')
  // An interval that excludes 0 does not read as reaching it.
  assert.equal(msInterval(0.03, 1.2), '+0.03 ms … +1.2 ms')
})
