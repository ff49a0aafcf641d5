// A bench's scratch data dir and the lifecycle of what it starts there (an
// embedded PostgreSQL, the API, the lab origin): on Ctrl-C or SIGTERM all
// of it stops as it does at the bench's end, and the data dir goes last.
// Without this an interrupted bench left its PostgreSQL running, or its
// lab's namespaces (benchLab).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createLogger } from '../../lib/runtime/log.js'
import { createLifecycle } from '../../lib/runtime/lifecycle.js'
import { labDown, labUp } from '../../lab/netns.js'

/**
 * @param {string} name of the data dir (h3lens-<name>-…)
 * @returns {{ dataDir: string, log: import('pino').Logger, lifecycle: ReturnType<typeof createLifecycle> }}
 *   lifecycle.stopAll('done') at the bench's end stops its parts and removes the data dir
 */
export function benchScratch (name) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `h3lens-${name}-`))
  const log = createLogger({ logLevel: 'warn' })
  const lifecycle = createLifecycle(log)
  // Added first, so stopped last: after the database that lives in it.
  lifecycle.add('data dir', () => fs.rmSync(dataDir, { recursive: true, force: true }))
  lifecycle.handleSignals({ exitCode: 130 })
  return { dataDir, log, lifecycle }
}

/**
 * The lab's namespaces (lab/netns.js labUp), taken down with the bench's
 * other parts. Should Ctrl-C come while the lab is being set up, the set-up
 * ends first (it would go on adding namespaces), then the lab goes by its
 * prefix.
 * @param {ReturnType<typeof createLifecycle>} lifecycle
 * @param {Parameters<typeof labUp>[0] & { prefix: string, runDir: string }} options
 */
export async function benchLab (lifecycle, options) {
  const up = labUp(options)
  lifecycle.add('lab', async () => {
    await up.catch(() => {}) // a failed set-up removes what it made
    await labDown({ prefix: options.prefix, runDir: options.runDir, log: options.log })
  })
  return up
}
