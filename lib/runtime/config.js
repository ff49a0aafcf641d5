// Configuration is read from the environment (and CLI flags) exactly once, at
// process start, and validated in one place so that a typo fails fast with the
// name of the variable instead of surfacing later as an odd runtime error.
import net from 'node:net'
import path from 'node:path'

export class ConfigError extends Error {
  /** @param {string[]} problems */
  constructor (problems) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`)
    this.name = 'ConfigError'
    this.problems = problems
  }
}

/**
 * Every variable h3lens reads. `flag` is the CLI flag that overrides it.
 * docs/CONFIGURATION.md's table describes the same variables (and the
 * README's its essentials), so keep descriptions short and accurate.
 */
export const VARIABLES = /** @type {const} */ ([
  { name: 'PORT', key: 'port', flag: '--port', type: 'port', default: 8080, description: 'HTTP port of the API and dashboard' },
  { name: 'HOST', key: 'host', flag: '--host', type: 'string', default: '127.0.0.1', description: 'address the API binds to (0.0.0.0 to accept remote agents)' },
  { name: 'H3LENS_TLS_CERT', key: 'tlsCert', type: 'path', default: null, description: 'api: PEM certificate (chain) to serve HTTPS with; needs H3LENS_TLS_KEY' },
  { name: 'H3LENS_TLS_KEY', key: 'tlsKey', type: 'path', default: null, description: 'api: PEM private key of H3LENS_TLS_CERT' },
  { name: 'H3LENS_CA_FILE', key: 'caFile', type: 'path', default: null, description: 'agent: PEM CA (or the API\'s self-signed certificate) trusted for an https H3LENS_API_URL, besides the system\'s; certificates are always verified' },
  { name: 'H3LENS_DATA_DIR', key: 'dataDir', flag: '--data-dir', type: 'path', default: '.h3lens', description: 'where the embedded database, lab certificate, spool and logs live' },
  { name: 'DATABASE_URL', key: 'databaseUrl', flag: '--database-url', type: 'postgresUrl', default: null, description: 'PostgreSQL connection string; unset = embedded PostgreSQL under the data dir' },
  { name: 'H3LENS_DB_POOL_MAX', key: 'dbPoolMax', type: 'int', min: 1, max: 1000, default: 10, description: 'database connections each process may open' },
  { name: 'H3LENS_EMBEDDED_PG_PORT', key: 'embeddedPgPort', type: 'port', default: 54329, description: 'port of the embedded PostgreSQL (loopback only)' },
  { name: 'LOG_LEVEL', key: 'logLevel', flag: '--log-level', type: 'enum', values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info', description: 'log verbosity' },
  { name: 'H3LENS_API_URL', key: 'apiUrl', flag: '--api-url', type: 'httpUrl', default: null, description: 'agent: base URL of the API (default http://127.0.0.1:$PORT; https with H3LENS_TLS_CERT)' },
  { name: 'H3LENS_AGENT_TOKEN', key: 'agentToken', flag: '--token', type: 'string', default: null, description: 'agent: token from `h3lens agents token --location X`' },
  { name: 'H3LENS_AGENT_TOKEN_FILE', key: 'agentTokenFile', flag: '--token-file', type: 'path', default: null, description: 'agent: file holding the token, as `h3lens agents enrol` writes it (used when H3LENS_AGENT_TOKEN is unset)' },
  { name: 'H3LENS_LOCATION', key: 'location', flag: '--location', type: 'slug', default: null, description: 'agent: location id the agent measures from' },
  { name: 'H3LENS_AGENT_CONCURRENCY', key: 'agentConcurrency', type: 'int', min: 1, max: 16, default: 1, description: 'agent: rounds measured at once; with start, on the whole machine (1 keeps timings clean)' },
  { name: 'H3LENS_PAGE_TIMEOUT_MS', key: 'pageTimeoutMs', type: 'int', min: 1000, max: 300000, default: 30000, description: 'agent: timeout of one page load; api and scheduler: where a failed load counts in the comparison and alerts (give every process the same)' },
  { name: 'H3LENS_CHROMIUM', key: 'chromiumPath', type: 'string', default: '/usr/bin/chromium', description: 'path of the Chromium binary' },
  { name: 'H3LENS_FIREFOX', key: 'firefoxPath', type: 'string', default: '/usr/bin/firefox-esr', whenEmpty: null, description: 'agent: path of the Firefox binary (Debian\'s firefox-esr); the agent runs Firefox rounds when it is there, and none when it is not or this is empty' },
  { name: 'H3LENS_LEASE_S', key: 'leaseSeconds', type: 'int', min: 10, max: 3600, default: 120, description: 'how long a claimed job stays leased without a heartbeat' },
  { name: 'H3LENS_MAX_ATTEMPTS', key: 'maxAttempts', type: 'int', min: 1, max: 20, default: 3, description: 'attempts before a job is marked failed' },
  { name: 'H3LENS_JOBS_RETENTION_DAYS', key: 'jobsRetentionDays', type: 'int', min: 1, max: 3650, default: 7, description: 'scheduler: delete finished jobs (done, failed, cancelled, skipped) this many days after they finished; their results are kept' },
  { name: 'H3LENS_SCHEDULER_TICK_MS', key: 'schedulerTickMs', type: 'int', min: 100, max: 60000, default: 1000, description: 'how often the scheduler looks for due work' },
  { name: 'H3LENS_LAB_PORT', key: 'labPort', type: 'port', default: 8443, description: 'HTTPS (TCP+UDP) port of the lab origin' },
  { name: 'H3LENS_LAB', key: 'lab', flag: '--lab', type: 'enum', values: ['auto', 'regions', 'local', 'off'], default: 'auto', description: 'start: emulated regions when possible (auto), force them (regions), loopback only (local), or no lab (off)' },
  { name: 'H3LENS_LAB_BACKEND', key: 'labBackend', type: 'enum', values: ['linkem', 'netem'], default: 'linkem', description: 'link emulator for lab regions' },
  { name: 'H3LENS_COMPRESS_AFTER_DAYS', key: 'compressAfterDays', type: 'int', min: 0, max: 3650, default: 7, description: 'TimescaleDB: compress raw results older than this (0 = never)' },
  { name: 'H3LENS_RETENTION_DAYS', key: 'retentionDays', type: 'int', min: 0, max: 36500, default: 0, description: 'TimescaleDB: drop raw results and their round summaries older than this (0 = keep; rollups are kept)' },
  { name: 'H3LENS_PUBLIC_READ', key: 'publicRead', type: 'bool', default: false, description: 'let anyone read the REST API and /metrics without a key (writes still need a write key)' },
  { name: 'H3LENS_AUTH_FAILURES_PER_MIN', key: 'authFailuresPerMin', type: 'int', min: 0, max: 100000, default: 20, description: 'wrong keys or tokens one client address may present per minute before its wrong ones get 429; right keys and tokens are never limited by it (0 = no limit)' },
  { name: 'H3LENS_AGENT_REQUESTS_PER_MIN', key: 'agentRequestsPerMin', type: 'int', min: 0, max: 1000000, default: 600, description: 'requests one agent token may make per minute before it gets 429 (0 = no limit)' },
  { name: 'H3LENS_ALLOW_PRIVATE_TARGETS', key: 'allowPrivateTargets', type: 'bool', default: false, description: 'let monitors and webhooks target loopback, private and link-local addresses and hosts that do not resolve (api and scheduler, which delivers webhooks: give both the same; agents follow the API\'s)' },
  { name: 'H3LENS_DNS_SERVERS', key: 'dnsServers', type: 'dnsServers', default: null, description: 'DNS servers (address or address:port, comma-separated) the private-target guard resolves monitor and webhook hosts with, after /etc/hosts, in the api, the scheduler and agents; unset = the system resolver' },
  { name: 'H3LENS_COMPARISON_MAX_AGE_S', key: 'comparisonMaxAgeS', type: 'int', min: 0, max: 3600, default: 60, description: 'api: how old a computed comparison may be when it is served again (0 = compute every time); past half of it the next request refreshes it in the background. computed_at and the Age header say how old an answer is; an import is seen at once' },
  { name: 'H3LENS_ALERT_EVAL_S', key: 'alertEvalS', type: 'int', min: 10, max: 3600, default: 60, description: 'seconds between evaluations of the alert rules (one replica evaluates each time)' },
  { name: 'H3LENS_PUBLIC_URL', key: 'publicUrl', type: 'httpUrl', default: null, description: 'the dashboard\'s address as people reach it, for evidence links in alert notifications (scheduler) and the real-users install tag (api)' },
  { name: 'H3LENS_STOP_TIMEOUT_S', key: 'stopTimeoutS', type: 'int', min: 0, max: 600, default: 20, description: 'agent: on SIGTERM, how long a running job may finish before it is released' },
  { name: 'H3LENS_RUM_RETENTION_DAYS', key: 'rumRetentionDays', type: 'int', min: 0, max: 36500, default: 90, description: 'real users: delete beacons whose page view began more than this many days ago (0 = keep)' },
  { name: 'H3LENS_FILMSTRIP_RETENTION_DAYS', key: 'filmstripRetentionDays', type: 'int', min: 0, max: 36500, default: 30, description: 'scheduler: delete filmstrip frames stored more than this many days ago (0 = keep); their results and visual metrics stay (docs/FILMSTRIPS.md)' },
  { name: 'H3LENS_RUM_SITE_PER_MIN', key: 'rumSitePerMin', type: 'int', min: 0, max: 10000000, default: 60000, description: 'real users: beacons one site may send per minute before the rest get 429 (0 = no limit)' },
  { name: 'H3LENS_RUM_ADDRESS_PER_MIN', key: 'rumAddressPerMin', type: 'int', min: 0, max: 1000000, default: 600, description: 'real users: beacons one client address (IPv6: its /64) may send per minute before the rest get 429 (0 = no limit)' },
  { name: 'H3LENS_RUM_CLIENT_IP_HEADER', key: 'rumClientIpHeader', type: 'headerName', default: null, description: 'real users behind a CDN or proxy: the request header holding the visitor\'s address (e.g. cf-connecting-ip; x-forwarded-for uses its last entry); set it only when the API is reachable through that proxy alone' },
  { name: 'H3LENS_RUM_COUNTRY_DB', key: 'rumCountryDb', type: 'path', default: null, description: 'real users: an IP-to-country .mmdb file to use instead of the packaged one (IPtoASN, public domain)' },
  { name: 'H3LENS_SECRET_KEY', key: 'secretKey', type: 'string', default: null, description: 'api: the key (32 bytes, base64 or 64 hex digits) journeys\' secrets are encrypted with; unset = <data dir>/secret-key, made on first use (docs/JOURNEYS.md)' },
  { name: 'H3LENS_SECRET_KEY_PREVIOUS', key: 'secretKeyPrevious', type: 'string', default: null, description: 'api: the key before a rotation; secrets sealed with it are sealed again with H3LENS_SECRET_KEY at start' },
  { name: 'H3LENS_SEED', key: 'seed', flag: '--seed', type: 'bool', default: true, description: 'start: seed lab monitors into an empty database' }
])

/**
 * One entry of VARIABLES, exactly (Config is derived from these).
 * @typedef {typeof VARIABLES[number]} Variable
 */

/**
 * What every entry of VARIABLES may carry, for the code that reads them.
 * @typedef {{ name: string, key: string, flag?: string, type: Variable['type'], min?: number, max?: number,
 *   values?: readonly string[], default: string | number | boolean | null, whenEmpty?: null, description: string }} VariableSpec
 * whenEmpty: the value a variable set to the empty string takes, where empty means "none" rather than "unset" (the default)
 */

/**
 * What each parser of a variable's `type` returns.
 * @typedef {{ string: string, path: string, port: number, int: number, bool: boolean,
 *   slug: string, httpUrl: string, postgresUrl: string, dnsServers: string[], headerName: string }} ParsedTypes
 */

/**
 * The validated configuration loadConfig returns: one key per entry of
 * VARIABLES, holding its parser's result (for an enum, one of its values),
 * or null when it is unset and has no default. apiUrl always has a value
 * (loadConfig derives it from the port when unset).
 * @typedef {Omit<{ [V in Variable as V['key']]:
 *   (V extends { type: 'enum', values: readonly (infer E)[] } ? E : ParsedTypes[Exclude<V['type'], 'enum'>])
 *   | (V['default'] extends null ? null : never) }, 'apiUrl'> & { apiUrl: string }} Config
 */

/** @type {{ [T in Variable['type']]: (v: string, spec: VariableSpec) => string | number | boolean | string[] }} */
const PARSERS = {
  string: (v) => v,
  path: (v) => path.resolve(v),
  // Decimal digits only (spaces around them, as an env file may leave, are
  // fine): Number() alone would read "0x50" as 80.
  port: (v) => {
    const n = /^\s*\d+\s*$/.test(v) ? Number(v) : NaN
    if (!Number.isInteger(n) || n < 1 || n > 65535) throw new Error('must be a port number between 1 and 65535')
    return n
  },
  int: (v, spec) => {
    const n = /^\s*-?\d+\s*$/.test(v) ? Number(v) : NaN
    if (!Number.isInteger(n)) throw new Error('must be a whole number')
    if (spec.min !== undefined && n < spec.min) throw new Error(`must be at least ${spec.min}`)
    if (spec.max !== undefined && n > spec.max) throw new Error(`must be at most ${spec.max}`)
    return n
  },
  bool: (v) => {
    if (/^(1|true|yes|on)$/i.test(v)) return true
    if (/^(0|false|no|off)$/i.test(v)) return false
    throw new Error('must be true or false')
  },
  enum: (v, spec) => {
    // Every enum variable has its values.
    const values = /** @type {readonly string[]} */ (spec.values)
    if (!values.includes(v)) throw new Error(`must be one of ${values.join(', ')}`)
    return v
  },
  slug: (v) => {
    if (!isSlug(v)) throw new Error('must be lowercase letters, digits and dashes')
    return v
  },
  httpUrl: (v) => {
    let u
    try { u = new URL(v) } catch { throw new Error('must be an absolute URL such as http://127.0.0.1:8080') }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('must use http or https')
    // It is logged and shown (an agent logs the API it talks to); an agent
    // proves itself with its token, never with a password in the URL.
    if (u.username || u.password) throw new Error('must not carry a user name or password (user:pass@): it would be logged; an agent authenticates with H3LENS_AGENT_TOKEN')
    // A base address that paths are added to.
    if (u.search || u.hash) throw new Error('must not carry a query (?…) or fragment (#…): paths are added to it')
    return v.replace(/\/+$/, '')
  },
  dnsServers: (v) => {
    const servers = v.split(',').map((s) => s.trim()).filter(Boolean)
    const bad = servers.find((s) => !net.isIP(s) && !/^(\d+\.\d+\.\d+\.\d+|\[[\da-f:.]+\]):\d{1,5}$/i.test(s))
    if (!servers.length || bad) throw new Error(`must be IP addresses, each with an optional port (1.1.1.1, 127.0.0.1:5353, [::1]:53)${bad ? `; "${bad}" is not one` : ''}`)
    return servers
  },
  headerName: (v) => {
    if (!/^[A-Za-z0-9-]{1,64}$/.test(v)) throw new Error('must be an HTTP header name such as cf-connecting-ip')
    return v.toLowerCase()
  },
  postgresUrl: (v) => {
    let u
    try { u = new URL(v) } catch { throw new Error('must be a URL such as postgres://user:pass@host:5432/db') }
    if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') throw new Error('must start with postgres:// or postgresql://')
    return v
  }
}

/**
 * Location ids and similar: lowercase letters, digits and dashes.
 * @param {string} v
 */
export function isSlug (v) {
  return /^[a-z0-9][a-z0-9-]{0,62}$/.test(v)
}

/**
 * @param {Record<string, string|undefined>} env usually process.env
 * @param {Record<string, string|boolean>} [flags] parsed CLI flags, keyed by flag name without dashes
 * @returns {Config}
 */
export function loadConfig (env, flags = {}) {
  /** @type {Record<string, string | number | boolean | string[] | null>} */
  const config = {}
  /** @type {string[]} */
  const problems = []
  for (const spec of /** @type {readonly VariableSpec[]} */ (VARIABLES)) {
    const flagName = spec.flag?.slice(2)
    const fromFlag = flagName !== undefined && flags[flagName] !== undefined
    const raw = fromFlag ? String(flags[flagName]) : env[spec.name]
    if (raw === '' && spec.whenEmpty !== undefined) {
      config[spec.key] = spec.whenEmpty
      continue
    }
    if (raw === undefined || raw === '') {
      config[spec.key] = spec.type === 'path' && spec.default ? path.resolve(String(spec.default)) : spec.default
      continue
    }
    try {
      config[spec.key] = PARSERS[spec.type](raw, spec)
    } catch (/** @type {any} */ err) {
      const where = fromFlag ? `${spec.flag} (${spec.name})` : spec.name
      problems.push(`${where}=${JSON.stringify(withoutPassword(raw))} ${err.message}`)
    }
  }
  if (Boolean(config.tlsCert) !== Boolean(config.tlsKey)) problems.push('H3LENS_TLS_CERT and H3LENS_TLS_KEY go together: set both to serve HTTPS, or neither')
  if (problems.length) throw new ConfigError(problems)
  config.apiUrl ??= `${config.tlsCert ? 'https' : 'http'}://127.0.0.1:${config.port}`
  // built key by key from VARIABLES above, which is what Config is derived from
  return /** @type {Config} */ (/** @type {unknown} */ (config))
}

/**
 * A value as an error may show it: the password of a URL-like value
 * (scheme://user:password@…) masked, even where the value is no valid URL.
 * @param {string} raw
 */
function withoutPassword (raw) {
  return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@:]*:)[^@]*@/i, '$1***@')
}
