import { spawn, execFile } from 'node:child_process'
import { once } from 'node:events'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import https from 'node:https'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import pino from 'pino'
import { caddyVersion, chooseCaddy, FALLBACK_WARNING, labOriginInfo } from './caddy.js'
import { ensureLabCert, LAB_HOSTNAME } from './cert.js'
import { LAB_ALT_HOSTNAME } from '../lib/runtime/lab-host.js'
import { buildSite } from './site/build.js'
import { startUploadSink, SLOW_DEFAULT_MS, TRUNCATED_DECLARED_BYTES, TRUNCATED_SENT_BYTES } from './site/upload-sink.js'
import { SHOP_BACKEND_PATHS } from './site/shop.js'

export { LAB_HOSTNAME } from './cert.js'

const execFileAsync = promisify(execFile)

export class OriginStartError extends Error {
  /**
   * @param {string} message
   * @param {{ port: number, netns: string | null, logTail: string[], cause?: unknown }} context
   */
  constructor (message, { port, netns, logTail, cause }) {
    super(message, { cause })
    this.name = 'OriginStartError'
    this.port = port
    this.netns = netns
    this.logTail = logTail
  }
}

// Caddy is started under this tiny shell so that it dies with us even when
// this process is killed outright (SIGKILL, OOM): the shell watches its stdin,
// a pipe from us, and stops Caddy when it reaches EOF. `read` is a builtin, so
// the watcher is one subshell the script can kill and reap itself, leaving no
// orphan behind. SIGTERM to the shell is passed on to Caddy and the shell
// waits for Caddy to exit, so the shell's exit means Caddy is gone.
const SUPERVISOR = `
"$@" </dev/null &
child=$!
exec 3<&0
{ while read -r _ <&3; do :; done; kill -TERM "$child" 2>/dev/null; } &
watcher=$!
exec 3<&-
trap 'kill -TERM "$child" 2>/dev/null' TERM INT HUP
wait "$child"; status=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; status=$?; done
kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null
exit "$status"
`

const READY_MESSAGE = 'serving initial configuration'
const STOP_GRACE_MS = 5000

/**
 * Start the lab origin: Caddy serving the test pages over HTTPS with HTTP/1.1,
 * HTTP/2 and HTTP/3 on one port (TCP and UDP), with a certificate its own
 * authority issued (lab/cert.js) for lab.h3lens.test and lab2.h3lens.test (a second origin on the same
 * port, the target of /redirect-cross-origin). With `noH3Port`, the same
 * site is also served on that port over HTTP/1.1 and HTTP/2 only: no UDP
 * listener, no Alt-Svc, an origin without HTTP/3.
 *
 * @param {{
 *   dataDir: string,
 *   port?: number,
 *   noH3Port?: number | null,
 *   listen?: string,
 *   netns?: string | null,
 *   log?: import('pino').Logger,
 *   caddyPath?: string, // default: the pinned Caddy setup installed, else Debian's (lab/caddy.js)
 *   startTimeoutMs?: number
 * }} opts
 */
export async function startOrigin ({
  dataDir, port = 8443, noH3Port = null, listen = '127.0.0.1', netns = null,
  log = pino({ level: 'silent' }), caddyPath, startTimeoutMs = 15_000
}) {
  const caddy = caddyPath ?? chooseCaddy({ dataDir }).path
  const labOrigin = labOriginInfo(await caddyVersion(caddy))
  if (labOrigin.distorts_h3) log.warn({ caddy, version: labOrigin.version }, FALLBACK_WARNING)
  const labDir = path.join(path.resolve(dataDir), 'lab')
  await mkdir(labDir, { recursive: true })
  const cert = await ensureLabCert(labDir)
  const siteDir = path.join(labDir, 'site')
  const pages = await buildSite(siteDir)
  // The readiness probe goes through the namespace's own loopback.
  if (netns) await execFileAsync('ip', ['-n', netns, 'link', 'set', 'lo', 'up'])
  let sink
  try {
    sink = await startUploadSink(labDir, `upload-${port}.sock`)
  } catch (/** @type {any} */ err) {
    throw new OriginStartError(`lab origin on port ${port} did not start: upload sink: ${err.message}`, { port, netns, logTail: [], cause: err })
  }

  // Inside a lab namespace the origin answers on every address the namespace
  // has; outside one it stays on the address it was given (loopback).
  const bind = netns ? '' : listen
  const probeHost = netns || ['0.0.0.0', '::', ''].includes(listen) ? '127.0.0.1' : listen
  const caddyHome = path.join(labDir, 'caddy')
  const configPath = path.join(labDir, `caddy-${port}.json`)
  await writeFile(configPath, JSON.stringify(caddyConfig({
    bind, port, noH3Port, siteDir, certPath: cert.certPath, keyPath: cert.keyPath,
    sinkSocket: sink.socketPath, storageDir: path.join(caddyHome, 'storage')
  }), null, 2))

  const command = [caddy, 'run', '--config', configPath]
  if (netns) command.unshift('ip', 'netns', 'exec', netns)
  const child = spawn('sh', ['-c', SUPERVISOR, 'h3lens-origin', ...command], {
    detached: true, // own process group, so cleanup can signal all of it
    stdio: ['pipe', 'ignore', 'pipe'],
    env: {
      ...process.env,
      // Keep Caddy's own files in the data folder, not the user's home.
      HOME: caddyHome,
      XDG_DATA_HOME: path.join(caddyHome, 'data'),
      XDG_CONFIG_HOME: path.join(caddyHome, 'config')
    }
  })
  const killGroup = () => {
    try { process.kill(-(/** @type {number} */ (child.pid)), 'SIGKILL') } catch {}
  }
  process.on('exit', killGroup)
  const exited = once(child, 'exit').catch((err) => [null, err.message]) // spawn failure
  const output = watchCaddyLog(child, log.child({ component: 'caddy', port }))

  /** @type {Promise<void> | null} */
  let stopping = null
  const stop = () => {
    stopping ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM')
        const timer = setTimeout(killGroup, STOP_GRACE_MS)
        await exited
        clearTimeout(timer)
      }
      killGroup() // anything left in the group after the shell is gone
      process.off('exit', killGroup)
      child.stdin.destroy()
      await sink.close()
      log.info({ port }, 'lab origin stopped')
    })()
    return stopping
  }

  try {
    const ca = await readFile(cert.certPath)
    const probe = netns
      ? () => probeInNetns({ netns, host: probeHost, port, caPath: cert.certPath })
      : () => probeOrigin({ host: probeHost, port, ca })
    await waitReady({ output, exited, probe, timeoutMs: startTimeoutMs })
  } catch (/** @type {any} */ err) {
    await stop()
    const why = output.lastProblem ? `${err.message}: ${output.lastProblem}` : err.message
    throw new OriginStartError(`lab origin on port ${port} did not start: ${why}`,
      { port, netns, logTail: output.tail, cause: err })
  }
  log.info({ port, netns, caddyPid: child.pid, caddy, version: labOrigin.version }, 'lab origin serving')
  // Caddy gone while serving (killed, crashed): every lab round fails from
  // then on with a connection error, so the log says why, once, as linkem's does.
  // GET /api/v1/locations and the Locations page say so too (labOrigin).
  exited.then(([code, signal]) => {
    if (stopping) return
    Object.assign(labOrigin, { running: false, exited_at: new Date().toISOString() })
    log.error({ port, netns, code, signal, logTail: output.tail.slice(-5) }, 'lab origin (Caddy) exited unexpectedly; lab rounds fail until h3lens is restarted')
  })

  return {
    hostname: LAB_HOSTNAME,
    port,
    baseUrl: `https://${LAB_HOSTNAME}:${port}`,
    /** The second origin (another host name, same server and port). */
    altBaseUrl: `https://${LAB_ALT_HOSTNAME}:${port}`,
    /** The same site over HTTP/1.1 and HTTP/2 only, when started with noH3Port. */
    noH3BaseUrl: noH3Port ? `https://${LAB_HOSTNAME}:${noH3Port}` : null,
    /** Address that reaches the origin from the caller's namespace; null inside a lab namespace. */
    address: netns ? null : probeHost,
    spki: cert.spki,
    certPath: cert.certPath,
    /** The lab's certificate authority, which issued certPath's leaf (what Firefox trusts). */
    caPath: cert.caPath,
    keyPath: cert.keyPath,
    /** Which server answers, for GET /api/v1/locations: { server: 'caddy', version, distorts_h3, running, exited_at }. */
    labOrigin,
    pages,
    endpoints: {
      noop: { path: '/noop', description: 'Empty 204 response, for parallel-request probes.' },
      upload: { path: '/upload', description: 'Accepts a POST body of any size, reads all of it, answers 204 with x-upload-bytes.' },
      hang: { path: '/hang', description: 'Never answers: a page that hangs until the client gives up.' },
      slow: { path: '/slow', description: `A small HTML page answered after ?ms= milliseconds (default ${SLOW_DEFAULT_MS}, at most 60,000).` },
      empty: { path: '/empty', description: 'A 200 HTML document with an empty body.' },
      truncated: { path: '/truncated', description: `An HTML document that declares Content-Length ${TRUNCATED_DECLARED_BYTES} and ends after ${TRUNCATED_SENT_BYTES} bytes.` },
      crossOriginRedirect: { path: '/redirect-cross-origin', description: `302 to the 15 KB page on the second origin, ${LAB_ALT_HOSTNAME}.` },
      shop: { path: '/shop/login.html', description: 'A small shop for journeys: a login form (user lab), the account page behind it (/shop/account), and a search (/shop/search?q=).' }
    },
    stop
  }
}

/**
 * @param {{ bind: string, port: number, noH3Port?: number | null, siteDir: string, certPath: string, keyPath: string, sinkSocket: string, storageDir: string }} opts
 */
export function caddyConfig ({ bind, port, noH3Port = null, siteDir, certPath, keyPath, sinkSocket, storageDir }) {
  const cors = {
    'Access-Control-Allow-Origin': ['*'],
    'Access-Control-Allow-Methods': ['GET, POST, OPTIONS'],
    'Access-Control-Allow-Headers': ['*'],
    'Access-Control-Max-Age': ['600'],
    'Cache-Control': ['no-store']
  }
  const setHeaders = (/** @type {Record<string, string[]>} */ headers) => ({ handler: 'headers', response: { set: headers } })
  const noContent = { handler: 'static_response', status_code: 204 }
  const site = {
    // No ACME, no redirects, no certificate management: the
    // certificate is the locally generated one, loaded from files.
    automatic_https: { disable: true },
    tls_connection_policies: [{ certificate_selection: { any_tag: ['lab'] }, default_sni: LAB_HOSTNAME }],
    routes: [
      { match: [{ path: ['/noop', '/upload'], method: ['OPTIONS'] }], handle: [setHeaders(cors), noContent], terminal: true },
      { match: [{ path: ['/noop'] }], handle: [setHeaders(cors), noContent], terminal: true },
      // Caddy's own responders answer before the body arrives, which
      // would make upload timings meaningless; the sink reads it all.
      // It also sends /truncated, which only a backend can get wrong, holds
      // /hang unanswered, answers /slow late and /empty with no body. Each
      // write is passed on at once (flush_interval -1), as a streaming
      // backend's would be. A connection to the sink for each request: a
      // kept one that the sink closed as idle (Node's 5 s) just as Caddy
      // sent a request on it answered the page with Caddy's 502.
      {
        match: [{ path: ['/upload', '/truncated', '/hang', '/slow', '/empty', ...SHOP_BACKEND_PATHS] }],
        handle: [setHeaders(cors), {
          handler: 'reverse_proxy',
          flush_interval: -1,
          transport: { protocol: 'http', keep_alive: { enabled: false } },
          upstreams: [{ dial: `unix/${sinkSocket}` }]
        }],
        terminal: true
      },
      {
        match: [{ path: ['/redirect-cross-origin'] }],
        handle: [{ handler: 'static_response', status_code: 302, headers: { Location: [`https://${LAB_ALT_HOSTNAME}:${port}/page-15k.html`] } }],
        terminal: true
      },
      // Pages revalidate, assets are cacheable, so a repeat view shows a warm cache.
      { match: [{ path: ['*.html'] }], handle: [setHeaders({ 'Cache-Control': ['no-cache'] })] },
      { match: [{ path: ['/assets/*'] }], handle: [setHeaders({ 'Cache-Control': ['public, max-age=86400'] })] },
      { handle: [setHeaders({ 'Timing-Allow-Origin': ['*'] }), { handler: 'file_server', root: siteDir }] }
    ]
  }
  return {
    // No admin endpoint: nothing to clash between instances, nothing to reach.
    admin: { disabled: true, config: { persist: false } },
    storage: { module: 'file_system', root: storageDir },
    logging: { logs: { default: { level: 'INFO' } } },
    apps: {
      http: {
        grace_period: '1s',
        servers: {
          lab: { listen: [`${bind}:${port}`], protocols: ['h1', 'h2', 'h3'], ...site },
          // Caddy applies protocols per listener: this one has no UDP socket
          // and sends no Alt-Svc.
          ...(noH3Port ? { 'lab-no-h3': { listen: [`${bind}:${noH3Port}`], protocols: ['h1', 'h2'], ...site } } : {})
        }
      },
      tls: {
        certificates: { load_files: [{ certificate: certPath, key: keyPath, tags: ['lab'] }] }
      }
    }
  }
}

/**
 * Forward Caddy's JSON log lines to our logger and notice when it is serving.
 * @param {{ stderr: import('node:stream').Readable }} child
 * @param {import('pino').Logger} log
 */
function watchCaddyLog (child, log) {
  /** @type {(v?: undefined) => void} */
  let markReady = () => {}
  const output = {
    /** @type {string[]} */
    tail: [],
    /** Caddy's last error, for the message when it fails to start. */
    lastProblem: null,
    ready: new Promise((resolve) => { markReady = resolve })
  }
  createInterface({ input: child.stderr }).on('line', (line) => {
    output.tail.push(line)
    if (output.tail.length > 20) output.tail.shift()
    let entry
    // Fatal start-up errors come as plain text ("Error: loading initial config: ...").
    try { entry = JSON.parse(line) } catch { entry = { level: 'error', msg: line } }
    const problem = entry.level === 'error' || entry.level === 'fatal'
    if (problem) output.lastProblem = entry.error ? `${entry.msg}: ${entry.error}` : entry.msg
    log[problem ? 'warn' : 'debug']({ caddy: entry }, entry.msg)
    if (entry.msg === READY_MESSAGE) markReady()
  })
  return output
}

/**
 * Wait for our Caddy to say it serves, then for an HTTPS answer. The log line
 * comes first so that another server already on the port cannot pass for ours.
 * @param {{ output: { ready: Promise<void> }, exited: Promise<unknown[]>, probe: () => Promise<{ status: number }>, timeoutMs: number }} opts
 */
async function waitReady ({ output, exited, probe, timeoutMs }) {
  let reason = null
  let timer
  const over = new Promise((/** @type {(v?: undefined) => void} */ resolve) => {
    exited.then(([code, signal]) => { reason ??= new Error(`caddy exited (${signal ?? code})`); resolve() })
    timer = setTimeout(() => { reason ??= new Error(`no answer within ${timeoutMs} ms`); resolve() }, timeoutMs)
  })
  try {
    await Promise.race([output.ready, over])
    while (!reason) {
      const answered = await Promise.race([
        probe().then(({ status }) => status === 204, () => false), // not up yet: try again
        over.then(() => false)
      ])
      if (answered) return
      if (!reason) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw reason
  } finally {
    clearTimeout(timer)
  }
}

/**
 * One HTTPS request to the origin's /noop, verifying the lab certificate.
 * @param {{ host: string, port: number, ca?: Buffer | string, timeoutMs?: number }} opts
 * @returns {Promise<{ status: number, headers: import('node:http').IncomingHttpHeaders }>}
 */
export function probeOrigin ({ host, port, ca, timeoutMs = 2000 }) {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host, port, path: '/noop', servername: LAB_HOSTNAME, ca, agent: false, timeout: timeoutMs,
      headers: { host: `${LAB_HOSTNAME}:${port}` }
    }, (res) => {
      res.resume()
      // A response to a client request always has a status.
      res.on('end', () => resolve({ status: /** @type {number} */ (res.statusCode), headers: res.headers }))
    })
    req.on('timeout', () => req.destroy(new Error('probe timed out')))
    req.on('error', reject)
    req.end()
  })
}

const ORIGIN_MODULE = fileURLToPath(import.meta.url)

/**
 * The same probe, run by a short-lived Node inside the namespace: the origin's
 * addresses there are not reachable from here.
 * @param {{ netns: string, host: string, port: number, caPath: string }} opts
 * @returns {Promise<{ status: number }>}
 */
function probeInNetns ({ netns, host, port, caPath }) {
  const script = `import { readFileSync } from 'node:fs'
import { probeOrigin } from ${JSON.stringify(ORIGIN_MODULE)}
const { status } = await probeOrigin({ host: ${JSON.stringify(host)}, port: ${port}, ca: readFileSync(${JSON.stringify(caPath)}) })
process.stdout.write(String(status))`
  return new Promise((resolve, reject) => {
    execFile('ip', ['netns', 'exec', netns, process.execPath, '--input-type=module', '-e', script],
      { timeout: 5000 }, (err, stdout) => err ? reject(err) : resolve({ status: Number(stdout) }))
  })
}
