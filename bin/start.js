// `h3lens start`: the whole product in one process, for trying it out and for
// single-machine deployments.
import fs from 'node:fs/promises'
import path from 'node:path'
import { openDatabase } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { applyStoragePolicies } from '../lib/store/timescale.js'
import { upsertLocation } from '../lib/store/locations.js'
import { authenticateAgent, createAgentToken } from '../lib/store/agents.js'
import { countMonitors, createMonitor } from '../lib/store/monitors.js'
import { ensureAdminKey } from '../lib/store/api-keys.js'
import { startApi } from '../api/server.js'
import { createScheduler } from '../scheduler/scheduler.js'
import { startAgent } from '../agents/main.js'
import { startLabEnvironment } from './lab.js'
import { createGate } from '../lib/runtime/gate.js'
import { assertPortFree, claimDataDir } from '../lib/runtime/instance.js'

// Seeded lab monitors run every two minutes: four pages and one A/A monitor
// per location. The local agents measure one round at a time on the whole
// machine (H3LENS_AGENT_CONCURRENCY 1 keeps timings clean), and a round of
// the three arms (the auto arm starts a browser twice) took 3-20 s on the busy
// 2-core machine, the Asian 1 MB page the longest; with four regions every
// minute a location asked for 300 rounds an hour and could take about 180
// (the Locations page's capacity), so rounds were skipped as "location busy".
// Every two minutes asks for 150. lab-udp-blocked's forced-H3 loads each wait
// out Chromium's 4 s QUIC idle timeout (docs/LAB.md).
const SEED_INTERVAL_S = 120
export const AA_SEED_LABEL = 'A/A calibration (lab 15 KB, h2 vs h2)'

/**
 * @param {{ config: import('../lib/runtime/config.js').Config, log: import('pino').Logger, lifecycle: ReturnType<typeof import('../lib/runtime/lifecycle.js').createLifecycle> }} ctx
 */
export async function runStart (ctx) {
  const { config, log, lifecycle } = ctx
  // Checked before anything starts, so a second start fails at once and
  // names what is taken rather than sharing this one's lab and agents.
  lifecycle.add('data dir lock', claimDataDir(config.dataDir, 'start'))
  await assertPortFree({ host: config.host, port: config.port, what: 'API and dashboard', setting: '--port or PORT' })
  const { pool, embedded } = await openDatabase(ctx)
  await migrate(pool, { log })
  const storage = await applyStoragePolicies(pool, { ...config, log })

  const lab = config.lab === 'off' ? null : await startLabEnvironment(ctx)
  for (const loc of lab?.locations ?? []) await upsertLocation(pool, loc)

  const admin = await ensureAdminKey(pool, config.dataDir)
  const api = await startApi({ db: pool, config, log, labOrigin: lab?.origin.labOrigin ?? null })
  lifecycle.add('api', api.close)
  const scheduler = createScheduler({ db: pool, config, log })
  scheduler.start()
  lifecycle.add('scheduler', scheduler.stop)

  // The local agents share this machine's cores: H3LENS_AGENT_CONCURRENCY
  // rounds at a time in all (default one, so a page load in one region never
  // slows down another region's measurement).
  const gate = createGate(config.agentConcurrency)
  /** @type {Awaited<ReturnType<typeof startAgent>>[]} */
  const agents = []
  // Stopped all at once: one after the other, the agents not yet stopped
  // went on claiming and starting rounds while each waited for its own
  // round to end (a Ctrl-C of four regions took 30 s, and rounds began 18 s
  // after it).
  lifecycle.add('agents', () => Promise.all(agents.map((a) => a.stop())))
  for (const loc of lab?.locations ?? []) {
    const token = await agentTokenFor(pool, config.dataDir, loc.id)
    // With HTTPS on, the local agents trust the API's own certificate (a
    // self-signed one included) besides H3LENS_CA_FILE's CA.
    agents.push(await startAgent({ config: { ...config, apiUrl: api.url, caFile: config.caFile ?? config.tlsCert }, log, token, location: loc.id, lab: loc.target, gate }))
  }

  if (lab && config.seed) await seedMonitors(pool, lab, log)

  const dashboard = `${api.url}/`
  console.log(`
  h3lens is running
    dashboard  ${dashboard}
    API docs   ${api.url}/api/docs
${adminKeyNotice(admin)}
    database   ${embedded ? `embedded PostgreSQL in ${path.join(config.dataDir, 'pg')}` : 'DATABASE_URL'}
    storage    ${storage}
    lab        ${lab ? `${lab.origin.baseUrl} (Caddy ${lab.origin.labOrigin.version}) from ${lab.locations.map((l) => l.id).join(', ')}` : 'off'}${lab?.notice ? `\n    notice     ${lab.notice}` : ''}
  Ctrl-C stops everything.
`)
}

/**
 * The local agents keep their tokens in the data dir so restarts reuse the
 * same agent identity instead of registering a new one each time.
 * @param {import('pg').Pool} pool
 * @param {string} dataDir
 * @param {string} location
 */
async function agentTokenFor (pool, dataDir, location) {
  const file = path.join(dataDir, 'agents', `${location}.token`)
  try {
    const token = (await fs.readFile(file, 'utf8')).trim()
    const agent = await authenticateAgent(pool, token)
    if (agent?.location_id === location) return token
  } catch {}
  const { token } = await createAgentToken(pool, { location, name: `${location}-local` })
  await fs.mkdir(path.dirname(file), { recursive: true })
  await fs.writeFile(file, token + '\n', { mode: 0o600 })
  return token
}

/**
 * An empty database gets one A/A monitor (both arms over HTTP/2 on the
 * 15 KB page), whose comparison shows each location's noise floor: every
 * difference it flags is a false one; and one monitor per lab page, so the
 * dashboard fills at once. The A/A monitor comes first: its rounds are due
 * first, and the noise floor is known before the first real comparison is
 * read.
 * @param {import('pg').Pool} pool
 * @param {Awaited<ReturnType<typeof import('./lab.js').startLabEnvironment>>} lab
 * @param {import('pino').Logger} log
 */
async function seedMonitors (pool, lab, log) {
  if (await countMonitors(pool) > 0) return
  const locations = lab.locations.map((l) => l.id)
  const policy = { labPort: lab.origin.port }
  const small = lab.origin.pages['page-15k']
  if (small) {
    const m = await createMonitor(pool, {
      url: `${lab.origin.baseUrl}${small.path}`, label: AA_SEED_LABEL, interval_s: SEED_INTERVAL_S, locations, aa_protocol: 'h2'
    }, policy)
    log.info({ monitor: m.id, url: m.url, aa_protocol: m.aa_protocol }, 'seeded A/A calibration monitor')
  }
  for (const [name, page] of Object.entries(lab.origin.pages)) {
    if (!page.path.endsWith('.html')) continue
    const m = await createMonitor(pool, { url: `${lab.origin.baseUrl}${page.path}`, label: `Lab ${name}`, interval_s: SEED_INTERVAL_S, locations }, policy)
    log.info({ monitor: m.id, url: m.url }, 'seeded lab monitor')
  }
}

/**
 * Where the admin key is, for the start-up banner; never the key itself.
 * @param {Awaited<ReturnType<typeof ensureAdminKey>>} admin
 */
export function adminKeyNotice (admin) {
  if (admin.file) return `    admin key  ${admin.file}${admin.created ? ' (new; paste it into the dashboard when asked)' : ''}`
  return `    admin key  none: ${'reason' in admin ? admin.reason : ''}`
}
