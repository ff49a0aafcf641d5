// Entry of one agent: builds the API client, spool, browser pool and job
// runner, then runs the claim loop until stopped. Used by `h3lens agent` and,
// once per location, by `h3lens start`.
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { createApiClient } from './api-client.js'
import { createSpool } from './spool.js'
import { createAgent } from './agent.js'
import { existsSync } from 'node:fs'
import { createBrowserPool } from './browsers/chromium.js'
import { createFirefoxPool } from './browsers/firefox.js'
import { createJobRunner } from './job-runner.js'
import { createTrialRunner } from './journey/trial.js'
import { createNetlogUploader } from './netlog.js'
import { createFilmstripUploader } from './filmstrip.js'
import { loadCa } from './http.js'
import { startTargetGuard } from './target-guard.js'
import { createResolver, systemResolver } from '../lib/measurement/targets.js'
import { VERSION } from '../lib/runtime/version.js'

/**
 * @param {{ config: import('../lib/runtime/config.js').Config, log: import('pino').Logger, token: string, location: string,
 *   lab?: import('./job-runner.js').LabTarget | null, gate?: ReturnType<typeof import('../lib/runtime/gate.js').createGate> | null,
 *   onFatal?: ((err: Error) => void) | null }} opts onFatal: told when the agent cannot run as started (its token refused, or another location's)
 * @returns {Promise<{ stop: () => Promise<void>, flushSpool: () => Promise<boolean> }>}
 */
export async function startAgent ({ config, log, token, location, lab = null, gate = null, onFatal = null }) {
  const agentLog = log.child({ agent: location })
  const ca = loadCa(config.caFile)
  const pool = createBrowserPool({ executablePath: config.chromiumPath, log: agentLog, dataDir: path.join(config.dataDir, 'agents', location) })
  // Firefox beside Chromium where it is installed (docs/BROWSERS.md): the
  // agent then says so when it claims, and is given Firefox rounds too.
  const firefoxPool = config.firefoxPath && existsSync(config.firefoxPath)
    ? createFirefoxPool({ executablePath: config.firefoxPath, log: agentLog, dataDir: path.join(config.dataDir, 'agents', location) })
    : null
  const guard = await startTargetGuard({ resolver: config.dnsServers?.length ? createResolver({ servers: config.dnsServers }) : systemResolver, log: agentLog })
  const measure = createJobRunner({
    pool, firefoxPool, lab, guard, timeoutMs: config.pageTimeoutMs, log: agentLog,
    uploadNetlog: createNetlogUploader({ apiUrl: config.apiUrl, token, ca }),
    uploadFilmstrip: createFilmstripUploader({ apiUrl: config.apiUrl, token, ca }),
    netlogDir: path.join(config.dataDir, 'agents', location, 'netlogs')
  })
  /** @type {typeof measure} */
  const runJob = gate ? (job, ctx) => gate.run(() => measure(job, ctx)) : measure
  const trial = createTrialRunner({ pool, lab, guard, timeoutMs: config.pageTimeoutMs, log: agentLog })
  /** @type {typeof trial} */
  const runTrial = gate ? (t, ctx) => gate.run(() => trial(t, ctx)) : trial
  const agent = createAgent({
    client: createApiClient({ apiUrl: config.apiUrl, token, ca }),
    spool: createSpool(path.join(config.dataDir, 'spool', location), { log: agentLog }),
    runJob,
    runTrial,
    log: agentLog,
    version: VERSION,
    browserVersion: () => chromiumVersion(config.chromiumPath),
    browsers: firefoxPool ? ['chromium', 'firefox'] : ['chromium'],
    stopTimeoutMs: (config.stopTimeoutS ?? 20) * 1000,
    concurrency: config.agentConcurrency ?? 1,
    location,
    onFatal
  })
  agent.start()
  agentLog.info({ api: config.apiUrl, browsers: firefoxPool ? 'chromium, firefox' : 'chromium', lab: lab ? `${lab.address}${lab.netns ? ` in ${lab.netns}` : ''}` : 'none' }, 'agent running')
  return {
    flushSpool: agent.flushSpool,
    async stop () {
      await agent.stop()
      await pool.close()
      await firefoxPool?.close()
      await guard.close()
    }
  }
}

let cachedVersion
/** @param {string} executable */
async function chromiumVersion (executable) {
  cachedVersion ??= promisify(execFile)(executable, ['--version'], { timeout: 10000 })
    .then(({ stdout }) => stdout.trim().replace(/\s+built on.*$/, ''))
    .catch(() => undefined)
  return cachedVersion
}
