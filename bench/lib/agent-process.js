// One h3lens agent in a process of its own, so that bench/peers.js can count
// the CPU of the agent and its browsers apart from the API, the database and
// the lab origin it runs beside. Started by bench/peers.js with the usual
// environment (H3LENS_DATA_DIR, H3LENS_API_URL, LOG_LEVEL) and, in
// H3LENS_BENCH_AGENT, the agent token and the lab target as JSON. Runs until
// SIGTERM, then stops the way `h3lens agent` does.
import { loadConfig } from '../../lib/runtime/config.js'
import { createLogger } from '../../lib/runtime/log.js'
import { startAgent } from '../../agents/main.js'

const { token, lab } = JSON.parse(process.env.H3LENS_BENCH_AGENT ?? '{}')
const config = loadConfig(process.env)
const log = createLogger({ logLevel: config.logLevel ?? 'warn' })
const agent = await startAgent({ config, log, token, location: 'local', lab })
process.once('SIGTERM', () => {
  agent.stop().then(() => process.exit(0), (err) => {
    console.error(err)
    process.exit(1)
  })
})
