// Reading a monitor's results back in a test.
import assert from 'node:assert/strict'

/**
 * The result of `probe` in the arm `mode` among `items` (a results listing),
 * failing the test when there is none.
 * @param {Record<string, any>[]} items
 * @param {string} probe
 * @param {string} mode
 */
export function resultOf (items, probe, mode) {
  return items.find((r) => r.probe === probe && r.mode === mode) ?? assert.fail(`no ${probe} result in the ${mode} arm`)
}
