// The dashboard's time window as read from its address (web/query.js):
// pure logic, checked in Node.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { timeWindow } from '../web/query.js'

const NOW = Date.parse('2026-11-29T12:00:00Z')
const read = (/** @type {string} */ query) => timeWindow(new URLSearchParams(query), NOW)

test('a custom window longer than the API compares is said once and the last 24 hours shown; one in another year carries its years', () => {
  const long = read('window=custom&from=2020-01-01T00:00:00Z')
  assert.equal(long.custom, false)
  assert.match(long.error ?? '', /longer than 400 days, the most a comparison reads; showing the last 24 h/)
  assert.equal(+long.to - +long.from, 86400e3)
  const year = read('window=custom&from=2025-12-01T00:00:00Z&to=2026-01-02T00:00:00Z')
  assert.equal(year.custom, true)
  assert.equal(year.error, undefined)
  assert.match(year.label, /2025.*2026/)
  assert.doesNotMatch(read('window=custom&from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z').label, /2026/)
  assert.match(read('window=custom&from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z').error ?? '', /needs a start before its end/)
})
