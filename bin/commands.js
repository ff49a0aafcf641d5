// The subcommands: their flags, help text and what they run. Each process
// command reads its config once, starts its parts and stops them in reverse
// order on SIGINT/SIGTERM (lib/runtime/lifecycle.js). The API, scheduler,
// agent and lab are imported by the commands that run them: --help and the
// one-shot commands (migrate, keys, agents) then load in ~0.15 s of CPU
// instead of ~0.6 s (Fastify, puppeteer-core and the rest unread).
import { loadConfig, isSlug } from '../lib/runtime/config.js'
import { unknownVariables } from '../lib/runtime/unknown-variables.js'
import { createLogger } from '../lib/runtime/log.js'
import { createLifecycle } from '../lib/runtime/lifecycle.js'
import { openDatabase } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { createAgentToken, listAgents, revokeAgent } from '../lib/store/agents.js'
import { createWptKey, revokeWptKeys } from '../lib/store/wpt-keys.js'
import { wptBrowserProblem } from '../lib/measurement/wpt/job.js'
import { createApiKey, listApiKeys, revokeApiKey, ensureAdminKey } from '../lib/store/api-keys.js'
import { getLocation, upsertLocation } from '../lib/store/locations.js'
import { rebuildRollups } from '../lib/analysis/rollups.js'
import { applyStoragePolicies } from '../lib/store/timescale.js'
import { assertPortFree } from '../lib/runtime/instance.js'
import { enrolLocation, parseLocationSpec, readAgentToken } from './enrol.js'
import { RUM_USAGE, runRum } from './rum.js'
import { idOf } from './args.js'
import { assertMonitorExists } from '../lib/store/monitors.js'

/** @type {import('node:util').ParseArgsConfig['options']} */
const common = {
  'data-dir': { type: 'string' },
  'database-url': { type: 'string' },
  'log-level': { type: 'string' }
}
/** @type {import('node:util').ParseArgsConfig['options']} */
const server = { port: { type: 'string' }, host: { type: 'string' } }

const commonHelp = `  --data-dir DIR          data folder (H3LENS_DATA_DIR, default .h3lens)
  --database-url URL      PostgreSQL URL (DATABASE_URL); unset = embedded PostgreSQL
  --log-level LEVEL       fatal|error|warn|info|debug|trace|silent (LOG_LEVEL)`
const serverHelp = `  --port N                HTTP port (PORT, default 8080)
  --host ADDR             bind address (HOST, default 127.0.0.1)`

/** @type {ReturnType<typeof createLifecycle>[]} */
const lifecycles = []

/**
 * Read config, make a logger and a lifecycle.
 * @param {Record<string, string | boolean>} flags parsed CLI flags
 * @param {string} name the logger's name
 */
function boot (flags, name) {
  const config = loadConfig(process.env, flags)
  const log = createLogger({ logLevel: config.logLevel, name })
  for (const warning of unknownVariables(process.env)) log.warn(warning)
  const lifecycle = createLifecycle(log)
  lifecycle.handleSignals()
  lifecycles.push(lifecycle)
  return { config, log, lifecycle }
}

/**
 * Stop what this process's commands started, in reverse order: called when a
 * command fails, so a refused `start` (a port in use) gives its data dir
 * back instead of leaving h3lens.pid there.
 */
export async function stopStarted () {
  for (const lifecycle of lifecycles.splice(0)) await lifecycle.stopAll('failed')
}

/**
 * A subcommand. `values` are parseArgs' flags, typed by the command's own
 * `options` (a string, a boolean, or a list for `multiple`), hence any here.
 * `positionals`: how many words may follow the command (given the words
 * themselves: a subcommand may take more); none when absent. One more is
 * refused, not ignored: "keys revoke 1 2" would revoke key 1 alone.
 * @typedef {{ summary: string, usage: string, positionals?: (words: string[]) => number,
 *   options: import('node:util').ParseArgsConfig['options'],
 *   run: (values: any, positionals: string[]) => unknown }} Command
 */

/** @type {Record<string, Command>} */
export const COMMANDS = {
  start: {
    summary: 'everything in one process: database, api, dashboard, scheduler, lab and agents',
    options: { ...common, ...server, lab: { type: 'string' }, seed: { type: 'boolean' }, 'no-seed': { type: 'boolean' } },
    usage: `Usage: h3lens start [options]

Starts the whole product: an embedded PostgreSQL (unless DATABASE_URL is set),
migrations, the API and dashboard, the scheduler, the lab origin (Caddy with
HTTP/3) and one agent per lab location. Emulated regions (lab-na, lab-eu,
lab-asia, and lab-udp-blocked, whose network drops UDP so QUIC cannot
connect) need root and /dev/net/tun; otherwise one unshaped "local" location
is used and a notice says why. An empty database gets one monitor per lab page.

Options:
${serverHelp}
${commonHelp}
  --lab MODE              auto|regions|local|off (H3LENS_LAB, default auto)
  --no-seed               do not add lab monitors to an empty database
                          (H3LENS_SEED=false; --seed, the default, adds them)`,
    run: async (values) => {
      const flags = { ...values }
      if (values['no-seed']) flags.seed = 'false'
      const { runStart } = await import('./start.js')
      return runStart(boot(flags, 'h3lens'))
    }
  },
  api: {
    summary: 'the REST API and dashboard',
    options: { ...common, ...server },
    usage: `Usage: h3lens api [options]

Serves the REST API (/api/v1), its OpenAPI docs (/api/docs), the agent
endpoints and the dashboard. Applies pending migrations first. When the
database has no write key yet, it creates an admin key and leaves it in
<data dir>/admin-key (mode 0600).

Options:
${serverHelp}
${commonHelp}`,
    run: async (values) => {
      const [{ startApi }, { adminKeyNotice }] = await Promise.all([import('../api/server.js'), import('./start.js')])
      const ctx = boot(values, 'h3lens-api')
      await assertPortFree({ host: ctx.config.host, port: ctx.config.port, what: 'API and dashboard', setting: '--port or PORT' })
      const { pool } = await openDatabase(ctx)
      await migrate(pool, { log: ctx.log })
      const admin = await ensureAdminKey(pool, ctx.config.dataDir)
      const api = await startApi({ db: pool, config: ctx.config, log: ctx.log })
      ctx.lifecycle.add('api', api.close)
      console.log(adminKeyNotice(admin))
    }
  },
  scheduler: {
    summary: 'rounds, leases, rollups, alerts and webhooks, pruning (several may run)',
    options: { ...common },
    usage: `Usage: h3lens scheduler [options]

Creates each monitor's rounds on time, returns expired leases to the queue and
fails rounds nobody claimed; folds the trends' rollups, evaluates the alert
rules and delivers their webhooks; deletes finished jobs, real-user beacons
and filmstrip frames past their retention. Any number of replicas may run at
once. It reads H3LENS_PAGE_TIMEOUT_MS, H3LENS_ALLOW_PRIVATE_TARGETS,
H3LENS_DNS_SERVERS and H3LENS_PUBLIC_URL too: give it the API's.

Options:
${commonHelp}`,
    run: async (values) => {
      const { createScheduler } = await import('../scheduler/scheduler.js')
      const ctx = boot(values, 'h3lens-scheduler')
      const { pool } = await openDatabase(ctx)
      await migrate(pool, { log: ctx.log })
      const scheduler = createScheduler({ db: pool, config: ctx.config, log: ctx.log })
      scheduler.start()
      ctx.lifecycle.add('scheduler', scheduler.stop)
    }
  },
  agent: {
    summary: 'claims jobs for one location and measures them in its browsers',
    options: { 'api-url': { type: 'string' }, token: { type: 'string' }, 'token-file': { type: 'string' }, location: { type: 'string' }, 'data-dir': { type: 'string' }, 'log-level': { type: 'string' } },
    usage: `Usage: h3lens agent --location ID [options]

Claims jobs of its location from the API, loads each page in headless
Chromium (and Firefox where a monitor asks for it) once per arm: HTTP/3
forced on, QUIC off, and as a user's browser would (auto), and submits the
results. Results are spooled under the data dir until the API acknowledges
them. The agent has no database access. For lab locations it reads the lab
state written by "h3lens lab" from the data dir.

Options:
  --api-url URL           API base URL (H3LENS_API_URL, default http://127.0.0.1:$PORT;
                          https with H3LENS_TLS_CERT)
  --token TOKEN           agent token (H3LENS_AGENT_TOKEN) from "h3lens agents token"
  --token-file FILE       or a file holding it (H3LENS_AGENT_TOKEN_FILE), as "h3lens agents enrol" writes
  --location ID           location id (H3LENS_LOCATION)
  --data-dir DIR          spool and browser profiles (H3LENS_DATA_DIR, default .h3lens)
  --log-level LEVEL       (LOG_LEVEL, default info)`,
    run: async (values) => {
      const flags = { ...values, 'api-url': values['api-url'] }
      const ctx = boot(flags, 'h3lens-agent')
      const { config } = ctx
      const token = config.agentToken = await readAgentToken(config)
      const location = config.location
      if (!token || !location) {
        const missing = [!token && 'H3LENS_AGENT_TOKEN (--token) or H3LENS_AGENT_TOKEN_FILE (--token-file)', !location && 'H3LENS_LOCATION (--location)'].filter(Boolean)
        throw Object.assign(new Error(`the agent needs ${missing.join(' and ')}; create a token with "h3lens agents token --location <id>"`), { userFacing: true })
      }
      const [{ readLabTarget }, { startAgent }] = await Promise.all([import('./lab.js'), import('../agents/main.js')])
      const lab = await readLabTarget(config.dataDir, location)
      // A token the API refuses, or another location's, stops the agent with an error: waiting would change nothing.
      const agent = await startAgent({
        config,
        log: ctx.log,
        token,
        location,
        lab,
        onFatal: (/** @type {Error} */ err) => {
          console.error(`h3lens agent: ${err.message}`)
          process.exitCode = 1
          ctx.lifecycle.stopAll('failed').then(() => process.exit(1))
        }
      })
      ctx.lifecycle.add('agent', agent.stop)
    }
  },
  migrate: {
    summary: 'applies database migrations and exits',
    options: { ...common },
    usage: `Usage: h3lens migrate [options]

Applies pending migrations from migrations/ in order, under an advisory lock,
and exits. Applied migrations are immutable: when one's file no longer matches
the checksum recorded as it ran, this (and every command that migrates on
start) refuses, naming the file.

Options:
${commonHelp}`,
    run: async (values) => {
      const ctx = boot(values, 'h3lens-migrate')
      const { pool } = await openDatabase(ctx)
      const applied = await migrate(pool, { log: ctx.log })
      console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date')
      console.log(`storage: ${await applyStoragePolicies(pool, { ...ctx.config, log: ctx.log })}`)
      await ctx.lifecycle.stopAll('done')
      return 0
    }
  },
  lab: {
    summary: 'the lab: HTTP/3 origin and emulated regions (lab [up] | lab down)',
    options: { 'data-dir': { type: 'string' }, 'log-level': { type: 'string' }, lab: { type: 'string' } },
    positionals: () => 1,
    usage: `Usage: h3lens lab [up] [--lab auto|regions|local]
       h3lens lab down

"lab" or "lab up" runs the lab in the foreground until Ctrl-C: Caddy serving
the test pages over HTTPS with H1, H2 and H3 on one port (H3LENS_LAB_PORT,
default 8443), and, with root and /dev/net/tun, one network namespace per
emulated location joined to the origin by the linkem link emulator. It writes
the lab state to <data dir>/lab/state.json for agents.

"lab down" removes whatever a crashed lab left behind: namespaces, TUN
devices, linkem and Caddy processes.

Options:
  --lab MODE              auto|regions|local (H3LENS_LAB, default auto)
  --data-dir DIR          (H3LENS_DATA_DIR, default .h3lens)
  --log-level LEVEL       (LOG_LEVEL, default info)`,
    run: async (values, positionals) => {
      const sub = positionals[0] ?? 'up'
      const { runLab, labDownCommand } = await import('./lab.js')
      if (sub === 'down') return labDownCommand(boot(values, 'h3lens-lab'))
      if (sub !== 'up') throw Object.assign(new Error(`unknown lab command "${sub}"; use "lab up" or "lab down"`), { userFacing: true })
      return runLab(boot(values, 'h3lens-lab'))
    }
  },
  rollups: {
    summary: 'rollups rebuild [--monitor ID]: recompute rollups from raw results',
    options: { ...common, monitor: { type: 'string' } },
    positionals: () => 1,
    usage: `Usage: h3lens rollups rebuild [--monitor ID]

Recomputes the 5m/1h/1d rollups (the sketches behind percentiles, trends and
the comparison) from the raw results, for one monitor or all. Safe while the
product runs: the rebuild holds the rollup lock, so the scheduler's
incremental folding waits for it.

Options:
  --monitor ID            only this monitor
${commonHelp}`,
    run: async (values, positionals) => {
      if (positionals[0] !== 'rebuild') throw Object.assign(new Error(`unknown rollups command "${positionals[0] ?? ''}"; use "rollups rebuild"`), { userFacing: true })
      const monitorId = values.monitor === undefined ? undefined : idOf(values.monitor)
      if (monitorId === null) throw Object.assign(new Error(`--monitor must be a monitor id, not "${values.monitor}"`), { userFacing: true })
      const ctx = boot(values, 'h3lens-rollups')
      try {
        const { pool } = await openDatabase(ctx)
        await migrate(pool)
        // A deleted monitor's results are kept, so its rollups can be rebuilt; one never created is an error, not "0 results".
        if (monitorId !== undefined) await assertMonitorExists(pool, monitorId).catch((err) => { throw Object.assign(err, { userFacing: true }) })
        const started = Date.now()
        const folded = await rebuildRollups(pool, { monitorId, log: ctx.log })
        console.log(`rebuilt rollups from ${folded} results${monitorId ? ` of monitor ${monitorId}` : ''} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
      } finally {
        await ctx.lifecycle.stopAll('done')
      }
      return 0
    }
  },
  agents: {
    summary: 'agent identities: agents token --location ID | agents enrol --token-dir DIR --location ID=REGION | agents wpt-key --location ID | agents list | agents revoke ID',
    options: {
      ...common, location: { type: 'string', multiple: true }, name: { type: 'string' }, region: { type: 'string' }, 'token-dir': { type: 'string' },
      'wpt-shaping': { type: 'string' }, 'wpt-browser': { type: 'string' }, revoke: { type: 'boolean' }
    },
    positionals: ([sub]) => sub === 'revoke' ? 2 : 1,
    usage: `Usage: h3lens agents token --location ID [--region TEXT] [--name NAME]
       h3lens agents enrol --token-dir DIR --location ID[=REGION] [--location ...]
       h3lens agents wpt-key --location ID [--region TEXT] [--wpt-shaping on|off] [--wpt-browser NAME]
       h3lens agents wpt-key --location ID --revoke
       h3lens agents list
       h3lens agents revoke ID

"token" registers an agent for a location and prints its token once (only a
hash is stored). Give it to the agent as H3LENS_AGENT_TOKEN.

"enrol" makes sure each location exists (created with REGION when given)
and that DIR/<location>.token holds a valid token for it, creating the
agent and the file (mode 0600) when not; tokens that still work are kept,
so it is safe to run on every deployment. Agents read their file through
H3LENS_AGENT_TOKEN_FILE. It prints the files, never the tokens.

"wpt-key" prints a key for WebPageTest agents (wptagent) of a location of
kind "wpt", once (only a hash is stored). Start each agent with
--server https://HOST/work/ --location ID --key KEY; every agent (pc name)
that polls with it is listed under the location. --wpt-shaping on sends
the location's network profile to its agents as traffic shaping (an agent
started with --shaper none fails shaped tests; default off), --wpt-browser
names the browser its agents run (wptagent's name of a Chromium-based
browser: Chrome, Chrome Beta, Chromium, Edge, Brave, Opera, Vivaldi;
default Chrome), as each test forces or turns off QUIC with Chromium's
command line; both
are kept in the location's profile. "wpt-key --revoke" stops every key of
the location at once (its agents' next call for work is refused); make a
new key for the agents still trusted.

"list" shows each agent: id, location, kind, name, alive or idle, revoked,
last seen. "revoke" stops an agent's token at once (every call it makes is
refused from then on; its leased rounds run again when their lease runs
out): do it when the machine it ran on is no longer trusted, then give a
new token to its replacement.

Options:
  --location ID           the location the token or key is bound to (enrol: several, ID=REGION)
  --token-dir DIR         enrol: where the token files go
  --region TEXT           token, wpt-key: create the location (kind "real", or "wpt" for wpt-key)
                          if it does not exist yet (enrol takes ID=REGION instead)
  --name NAME             token: a name for the agent (default <location>-agent; enrol always
                          names it so)
  --wpt-shaping on|off    wpt-key: shape the location's WebPageTest tests (default off)
  --wpt-browser NAME      wpt-key: the browser its WebPageTest agents run (default Chrome)
  --revoke                wpt-key: revoke the location's keys instead of making one
${commonHelp}`,
    run: async (values, positionals) => {
      const revokeId = positionals[0] === 'revoke' ? idOf(positionals[1]) : null
      if (positionals[0] === 'revoke' && revokeId === null) {
        throw Object.assign(new Error(`agents revoke needs the id of an agent (see "h3lens agents list"), not "${positionals[1] ?? ''}"`), { userFacing: true })
      }
      // --location here names the agents' locations, not this process's.
      const ctx = boot({ ...values, location: undefined }, 'h3lens-agents')
      const { pool } = await openDatabase(ctx)
      await migrate(pool)
      try {
        const sub = positionals[0]
        const locations = values.location ?? []
        if (sub === 'token') {
          if (locations.length !== 1) throw Object.assign(new Error('agents token needs one --location <id>'), { userFacing: true })
          values.location = locations[0]
          if (!isSlug(values.location)) throw Object.assign(new Error(`--location "${values.location}" must be lowercase letters, digits and dashes`), { userFacing: true })
          if (values.region && !(await getLocation(pool, values.location))) {
            await upsertLocation(pool, { id: values.location, name: values.location, region: values.region, kind: 'real' })
            console.error(`created location ${values.location} (${values.region})`)
          }
          const { agent, token } = await createAgentToken(pool, { location: values.location, name: values.name })
          console.error(`agent ${agent.id} (${agent.name}) registered for location ${agent.location_id}; its token (shown once):`)
          console.log(token)
        } else if (sub === 'enrol') {
          if (!values['token-dir'] || !locations.length) throw Object.assign(new Error('agents enrol needs --token-dir DIR and at least one --location ID[=REGION]'), { userFacing: true })
          // Every --location is read before any is enrolled: a bad one leaves nothing half done.
          const specs = locations.map((/** @type {string} */ spec) => parseLocationSpec(spec))
          const twice = specs.find((/** @type {{ id: string }} */ s, /** @type {number} */ i) => specs.findIndex((/** @type {{ id: string }} */ o) => o.id === s.id) !== i)
          if (twice) throw Object.assign(new Error(`agents enrol: --location ${twice.id} is given more than once; give each location once`), { userFacing: true })
          for (const { id, region } of specs) {
            const { file, created } = await enrolLocation(pool, { location: id, region, tokenDir: values['token-dir'] })
            console.log(`${id}\t${file}\t${created ? 'new agent enrolled' : 'existing token kept'}`)
          }
        } else if (sub === 'wpt-key' && values.revoke) {
          if (locations.length !== 1) throw Object.assign(new Error('agents wpt-key --revoke needs one --location <id>'), { userFacing: true })
          if (values.region || values['wpt-shaping'] !== undefined || values['wpt-browser'] !== undefined) {
            throw Object.assign(new Error('agents wpt-key --revoke takes --location alone'), { userFacing: true })
          }
          const revoked = await revokeWptKeys(pool, { location: locations[0] }).catch((err) => { throw Object.assign(err, { userFacing: true }) })
          console.log(revoked
            ? `${revoked} key${revoked === 1 ? '' : 's'} of location ${locations[0]} revoked; its WebPageTest agents are refused until they have a new key ("h3lens agents wpt-key --location ${locations[0]}")`
            : `location ${locations[0]} has no key to revoke`)
        } else if (sub === 'wpt-key') {
          if (locations.length !== 1) throw Object.assign(new Error('agents wpt-key needs one --location <id>'), { userFacing: true })
          values.location = locations[0]
          // The flags are checked before anything is created.
          const shaping = values['wpt-shaping']
          if (shaping !== undefined && !['on', 'off'].includes(shaping)) throw Object.assign(new Error(`--wpt-shaping must be on or off, not "${shaping}"`), { userFacing: true })
          const browser = values['wpt-browser']
          if (browser !== undefined && !/^[A-Za-z][A-Za-z0-9 ._-]{0,39}$/.test(browser)) throw Object.assign(new Error(`--wpt-browser "${browser}" must be a browser name as wptagent knows it, such as Chrome`), { userFacing: true })
          const browserProblem = browser === undefined ? null : wptBrowserProblem(browser)
          if (browserProblem) throw Object.assign(new Error(`--wpt-browser ${browserProblem}`), { userFacing: true })
          if (!isSlug(values.location)) throw Object.assign(new Error(`--location "${values.location}" must be lowercase letters, digits and dashes`), { userFacing: true })
          if (!(await getLocation(pool, values.location))) {
            if (!values.region) throw Object.assign(new Error(`location "${values.location}" does not exist; give --region TEXT to create it`), { userFacing: true })
            await upsertLocation(pool, { id: values.location, name: values.location, region: values.region, kind: 'wpt' })
            console.error(`created location ${values.location} (${values.region}, WebPageTest agents)`)
          }
          if (shaping !== undefined || browser !== undefined) {
            const loc = /** @type {any} */ (await getLocation(pool, values.location))
            if (loc.kind !== 'wpt') throw Object.assign(new Error(`location ${values.location} is of kind ${loc.kind}, not wpt: --wpt-shaping and --wpt-browser are for WebPageTest locations`), { userFacing: true })
            const profile = { ...loc.profile, ...(shaping !== undefined ? { wpt_shaping: shaping === 'on' } : {}), ...(browser !== undefined ? { wpt_browser: browser } : {}) }
            await upsertLocation(pool, { ...loc, profile })
            console.error(`location ${values.location}: traffic shaping ${profile.wpt_shaping ? 'on' : 'off'}, browser ${profile.wpt_browser ?? 'Chrome'}`)
          }
          const { key } = await createWptKey(pool, { location: values.location }).catch((err) => {
            throw Object.assign(new Error(err.message), { userFacing: true })
          })
          console.error(`key for WebPageTest agents of location ${values.location} (shown once); start wptagent with --server https://HOST/work/ --location ${values.location} --key KEY`)
          console.log(key)
        } else if (sub === 'list') {
          for (const a of await listAgents(pool)) {
            console.log([a.id, a.location_id, a.kind, a.name, a.alive ? 'alive' : 'idle', a.revoked_at ? 'revoked' : '', a.last_seen_at?.toISOString() ?? 'never seen'].join('\t'))
          }
        } else if (sub === 'revoke') {
          const agent = await revokeAgent(pool, /** @type {number} */ (revokeId)).catch((err) => { throw Object.assign(err, { userFacing: true }) })
          console.log(`agent ${agent.id} (${agent.name}, location ${agent.location_id}) revoked: its token is refused from now on, and its leased rounds run again when their lease runs out`)
        } else {
          throw Object.assign(new Error(`unknown agents command "${sub ?? ''}"; use "agents token --location ID", "agents enrol --token-dir DIR --location ID=REGION", "agents wpt-key --location ID", "agents list" or "agents revoke ID"`), { userFacing: true })
        }
      } finally {
        await ctx.lifecycle.stopAll('done')
      }
      return 0
    }
  },
  keys: {
    summary: 'API keys: keys create --role read|write --name NAME | keys list | keys revoke ID',
    options: { ...common, role: { type: 'string' }, name: { type: 'string' } },
    positionals: ([sub]) => sub === 'revoke' ? 2 : 1,
    usage: `Usage: h3lens keys create --role read|write --name NAME
       h3lens keys list
       h3lens keys revoke ID

API keys for the REST API and the dashboard, sent as "Authorization: Bearer
<key>". A read key may call every GET; a write key may also make every other
request (monitors, alert rules and channels, imports, real-user sites,
locations). "create" prints the key once (only a hash is stored);
"revoke" stops a key at once. Reading needs no key when H3LENS_PUBLIC_READ=true.

Options:
  --role read|write       what the key may do (create; default read)
  --name NAME             what the key is for, e.g. grafana (create)
${commonHelp}`,
    run: async (values, positionals) => {
      /** @type {(message: string) => never} */
      const fail = (message) => { throw Object.assign(new Error(message), { userFacing: true }) }
      const [sub, arg] = positionals
      if (!['create', 'list', 'revoke'].includes(sub)) fail(`unknown keys command "${sub ?? ''}"; use "keys create --role read|write --name NAME", "keys list" or "keys revoke ID"`)
      const id = idOf(arg)
      if (sub === 'revoke' && id === null) fail(`keys revoke needs the id of a key (see "h3lens keys list"), not "${arg ?? ''}"`)
      if (sub === 'create' && !values.name) fail('keys create needs --name NAME, saying what the key is for (e.g. grafana, ci)')
      const ctx = boot(values, 'h3lens-keys')
      try {
        const { pool } = await openDatabase(ctx)
        await migrate(pool)
        if (sub === 'create') {
          const { key, secret } = await createApiKey(pool, { name: values.name, role: values.role ?? 'read' })
          console.error(`API key ${key.id} (${key.name}, role ${key.role}) created; it is shown once:`)
          console.log(secret)
        } else if (sub === 'list') {
          for (const k of await listApiKeys(pool)) {
            console.log([k.id, k.name, k.role, `${k.key_prefix}…`, k.revoked_at ? `revoked ${k.revoked_at.toISOString()}` : 'active',
              k.last_used_at ? `last used ${k.last_used_at.toISOString()}` : 'never used'].join('\t'))
          }
        } else {
          await revokeApiKey(pool, /** @type {number} */ (id)) // a revoke without an id failed above
          console.log(`API key ${id} revoked`)
          if (!(await listApiKeys(pool)).some((k) => k.role === 'write' && !k.revoked_at)) {
            console.error('warning: no write key is left, so nothing can be changed through the dashboard or the API: ' +
              'create one with "h3lens keys create --role write --name NAME" (the next "h3lens start" makes a new admin key too)')
          }
        }
      } finally {
        await ctx.lifecycle.stopAll('done')
      }
      return 0
    }
  },
  rum: {
    summary: 'real users: rum sites create|list|tag|update|revoke, rum countries --location ID CC,CC',
    options: { ...common, name: { type: 'string' }, origin: { type: 'string', multiple: true }, sample: { type: 'string' }, location: { type: 'string' }, 'base-url': { type: 'string' } },
    positionals: ([group, sub]) => group === 'countries' ? 2 : ['tag', 'update', 'revoke'].includes(sub) ? 3 : 2,
    usage: `${RUM_USAGE}
${commonHelp}`,
    run: async (values, positionals) => {
      // --location here names the location whose countries are set, not this process's.
      const ctx = boot({ ...values, location: undefined }, 'h3lens-rum')
      try {
        const { pool } = await openDatabase(ctx)
        await migrate(pool)
        await runRum({ pool, config: ctx.config }, values, positionals)
      } finally {
        await ctx.lifecycle.stopAll('done')
      }
      return 0
    }
  }
}
