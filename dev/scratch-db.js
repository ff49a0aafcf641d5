// A throw-away PostgreSQL for scripts and benches that run outside the test
// runner (tests get theirs from test/helpers/db.js).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createLogger } from '../lib/runtime/log.js'
import { createPool, startEmbeddedPostgres } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { freePort } from './free-port.js'

/**
 * A throw-away embedded PostgreSQL, migrated, for scripts that run outside
 * the test runner.
 */
export async function startScratchDatabase () {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-ui-'))
  const log = createLogger({ logLevel: 'warn', name: 'scratch-db' })
  const pg = await startEmbeddedPostgres({ dataDir, port: await freePort(), log })
  const pool = createPool(pg.url)
  let stopping = null
  const stop = () => {
    stopping ??= (async () => {
      for (const sig of SIGNALS) process.off(sig, onSignal)
      await pool.end()
      await pg.stop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    })()
    return stopping
  }
  // Ctrl-C stops it too, rather than leaving its PostgreSQL running.
  const onSignal = () => { stop().finally(() => process.exit(130)) }
  for (const sig of SIGNALS) process.once(sig, onSignal)
  await migrate(pool)
  return { pool, stop }
}

const SIGNALS = /** @type {const} */ (['SIGINT', 'SIGTERM'])
