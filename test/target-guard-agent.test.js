// The private-target guard at run time, with a real agent, real Chromium and
// the real API: a monitor saved while its name resolved to a public address
// is measured after the name has been pointed at this machine's loopback
// (DNS rebinding). Every run of every probe, both arms and the repeat view
// is stored as an error that names the guard, and the internal service the
// name now points at never sees a connection. Names resolve through a DNS
// server the test controls (this machine has no outside DNS), which both
// the API and the agent use (H3LENS_DNS_SERVERS).
// run-tests: side — its runs are refused by the guard, its services and DNS server are on free ports, and it times no page load
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { once } from 'node:events'
import dgram from 'node:dgram'
import { setTimeout as sleep } from 'node:timers/promises'
import { startApi } from '../api/server.js'
import { startAgent } from '../agents/main.js'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { createFirefoxPool } from '../agents/browsers/firefox.js'
import { measurePage } from '../agents/measure.js'
import { createJobRunner } from '../agents/job-runner.js'
import { createTrialRunner } from '../agents/journey/trial.js'
import { startOrigin } from '../lab/origin.js'
import { GUARD_NOT_IN_FORCE, GUARD_NOT_IN_FORCE_FIREFOX, startTargetGuard } from '../agents/target-guard.js'
import { netnsSupport } from '../lab/netns.js'
import { createResolver, nonPublicReason } from '../lib/measurement/targets.js'
import { checkJourney } from '../lib/measurement/journey/steps.js'
import { LAB_HOSTNAME, LAB_ALT_HOSTNAME } from '../lib/runtime/lab-host.js'
import { loadConfig } from '../lib/runtime/config.js'
import { createLogger } from '../lib/runtime/log.js'
import { createApiKey } from '../lib/store/api-keys.js'
import { createAgentToken } from '../lib/store/agents.js'
import { upsertLocation } from '../lib/store/locations.js'
import { scheduleDueJobs } from '../lib/store/jobs.js'
import { createTestDatabase } from './helpers/db.js'
import { startInternalService } from './helpers/receiver.js'
import { freePort } from '../dev/free-port.js'
import { startDnsServer } from '../dev/dns-server.js'
import { bridgeIntoNetns } from '../dev/netns-bridge.js'

const FIREFOX = process.env.H3LENS_FIREFOX ?? '/usr/bin/firefox-esr'
const GUARD = 'blocked by the private-target guard: host rebind.test resolves to 127.0.0.1 (loopback)'
const ALT_SVC_NOTE = (/** @type {number} */ port) => `http://pub.test advertised h3 at 127.0.0.1:${port}, a non-public address (loopback): a Chromium run refuses it; ` +
  'Firefox connects to an Alt-Svc host that needs no lookup without asking the private-target guard, so a Firefox run may have sent it a connection attempt'
let database, dns, dataDir, internal
const log = createLogger({ logLevel: process.env.TEST_LOG_LEVEL ?? 'silent' })

before(async () => {
  database = await createTestDatabase()
  dns = await startDnsServer({ 'rebind.test': ['93.184.215.14'] })
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-guard-agent-'))
  // What an attacker would want the agent to read: a service on the agent's loopback.
  internal = await startInternalService()
})

after(async () => {
  internal?.close()
  await dns?.close()
  await database?.drop()
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
})

test('a name that resolves to loopback only after the monitor was saved is blocked on every request of the run, and nothing reaches the internal service', async () => {
  const config = loadConfig({
    PORT: String(await freePort()), H3LENS_DATA_DIR: dataDir, LOG_LEVEL: 'silent', H3LENS_DNS_SERVERS: dns.server, H3LENS_PAGE_TIMEOUT_MS: '10000'
  })
  const api = await startApi({ db: database.pool, config, log })
  const stops = [() => api.close()]
  try {
    const key = (await createApiKey(database.pool, { name: 'guard', role: 'write' })).secret
    await upsertLocation(database.pool, { id: 'eu-west', name: 'Europe', region: 'Europe', kind: 'real' })
    const base = `http://rebind.test:${internal.port}`
    const res = await fetch(`${api.url}/api/v1/monitors`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        url: `${base}/admin`, locations: ['eu-west'], interval_s: 3600, modes: ['h2', 'h3'], probes: ['page', 'parallel', 'upload'], repeat_view: true,
        options: { parallel_url: `${base}/noop`, upload_url: `${base}/upload`, upload_bytes: 1024 }
      })
    })
    assert.equal(res.status, 201, await res.clone().text())
    const monitor = await res.json()

    // Saved while public; now the name points at the agent's own loopback.
    dns.set('rebind.test', ['127.0.0.1'])
    await scheduleDueJobs(database.pool, { maxAttempts: 1 })
    const { token } = await createAgentToken(database.pool, { location: 'eu-west' })
    const agent = await startAgent({ config: { ...config, apiUrl: api.url }, log, token, location: 'eu-west' })
    stops.unshift(() => agent.stop())

    let rows = []
    for (const until = Date.now() + 90_000; Date.now() < until;) {
      ({ rows } = await database.pool.query(
        `SELECT r.probe, r.mode, r.view, r.status, r.error, r.bytes, r.notes, r.details, r.flags, j.state FROM results r JOIN jobs j ON j.id = r.job_id
          WHERE r.monitor_id = $1 ORDER BY r.probe, r.mode, r.view`, [monitor.id]))
      if (rows.length && rows[0].state === 'done') break
      await sleep(100)
    }
    assert.deepEqual(rows.map((r) => `${r.probe}/${r.mode}/${r.view}`), [
      'page/h2/first', 'page/h2/repeat', 'page/h3/first', 'page/h3/repeat', 'parallel/h2/first', 'parallel/h3/first', 'upload/h2/first', 'upload/h3/first'
    ], 'every run of the round was stored')
    for (const r of rows) {
      assert.equal(r.status, 'error', `${r.probe}/${r.mode}/${r.view}`)
      assert.ok(r.flags.some((f) => /^--host-resolver-rules=<private-target guard: \d+ rules>$/.test(f)), `the run records that it was guarded: ${r.flags}`)
      if (r.view === 'repeat') assert.equal(r.error, `not run: the first view failed (${GUARD})`)
      else assert.equal(r.error, GUARD, `${r.probe}/${r.mode}: ${r.error}`)
      assert.equal(r.bytes, 0)
      assert.doesNotMatch(JSON.stringify(r), /internal secret/)
    }
    assert.deepEqual(internal.connections, [], 'no connection reached the internal service: not the page, the probes nor the RTT ping')
  } finally {
    for (const stop of stops) await stop()
  }
})

// A public address this test can serve from: 93.184.215.14 on the loopback
// of a network namespace of its own, where Chromium runs (as a lab region's
// does). Chromium reaches the guard's resolver at the same loopback address
// and port as in this machine's namespace, over a bridge (dev/netns-bridge.js)
// that adds no address here: an address change on this machine is a
// network change to every Chromium on it, which fails the loads under way
// with ERR_NETWORK_CHANGED, in this file and in any other running beside it.
// Only with root and network namespaces; skipped otherwise, with the reason.
const support = await netnsSupport()

test('in a guarded run a public page loads, and its redirects, subresources, fetches, WebSockets and WebRTC to private targets are refused by the guard; so are names the browser resolves without the guard',
  { skip: !support.ok && `needs network namespaces: ${support.reason}` }, async () => {
    const ns = `h3gd-${process.pid}`
    const ip = (/** @type {string[]} */ ...args) => execFileSync('ip', args, { stdio: 'pipe' })
    /** Run a script with node inside the namespace; what it prints. */
    const insideNs = (/** @type {string} */ script) => execFileSync('ip', ['netns', 'exec', ns, process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8' })
    const stops = []
    try {
      ip('netns', 'add', ns)
      stops.unshift(() => ip('netns', 'del', ns))
      ip('-n', ns, 'link', 'set', 'lo', 'up')
      ip('-n', ns, 'addr', 'add', '93.184.215.14/32', 'dev', 'lo')
      // The namespace's system resolver is a DNS server of the site's that
      // answers loopback for any name: what a network's own DNS or mDNS
      // could answer for a name a browser resolves past the guard.
      fs.mkdirSync(`/etc/netns/${ns}`, { recursive: true })
      stops.unshift(() => fs.rmSync(`/etc/netns/${ns}`, { recursive: true, force: true }))
      fs.writeFileSync(`/etc/netns/${ns}/resolv.conf`, 'nameserver 127.0.0.1\n')

      // The public site on 93.184.215.14:80, and the internal service on the namespace's 127.0.0.1.
      const internalPort = 8181
      const page = (/** @type {string} */ body) => `<!doctype html><title>t</title>${body}`
      const site = spawn('ip', ['netns', 'exec', ns, process.execPath, '--input-type=module', '-e', `
        import http from 'node:http'
        import dgram from 'node:dgram'
        import { parseQuery, buildAnswer } from ${JSON.stringify(new URL('../agents/dns-message.js', import.meta.url).href)}
        const hits = []
        const pages = ${JSON.stringify({
          '/ok': page('<h1>public</h1>'),
          '/subresources': page(`<img src="http://127.0.0.1:${internalPort}/literal.png"><img src="http://rebind.test:${internalPort}/name.png">
            <script>
              fetch('http://[::ffff:7f00:1]:${internalPort}/fetch').catch(() => {})
              new WebSocket('ws://127.0.0.1:${internalPort}/ws').onerror = () => {}
              new Worker(URL.createObjectURL(new Blob(["fetch('http://10.0.0.1/', { mode: 'no-cors' }).catch(() => {}); fetch('http://127.0.0.1:${internalPort}/worker', { mode: 'no-cors' }).catch(() => {})"])))
              const pc = new RTCPeerConnection({ iceServers: [{ urls: ['stun:127.0.0.1:${internalPort}', 'stun:10.0.0.1:${internalPort}'] },
                { urls: ['turn:127.0.0.1:${internalPort}?transport=udp', 'turn:127.0.0.1:${internalPort}?transport=tcp'], username: 'u', credential: 'p' }] })
              pc.createDataChannel('probe')
              pc.createOffer().then((o) => pc.setLocalDescription(o))
            </script>`)
        })}
        http.createServer((req, res) => {
          if (req.url === '/hits') return res.end(JSON.stringify(hits))
          if (req.socket.localAddress === '10.0.0.1') return hits.push('10.0.0.1' + req.url) && res.end('private')
          if (req.url === '/redirect-literal') return res.writeHead(302, { location: 'http://127.0.0.1:${internalPort}/admin' }).end()
          if (req.url === '/redirect-name') return res.writeHead(302, { location: 'http://rebind.test:${internalPort}/admin' }).end()
          if (req.url === '/redirect-mdns') return res.writeHead(302, { location: 'http://nas.local:${internalPort}/admin' }).end()
          if (req.url === '/redirect-resolver') return res.writeHead(302, { location: 'http://resolver.h3lens.invalid:${internalPort}/admin' }).end()
          // An alternative service at the internal service's literal, which Firefox would try without a lookup.
          const altSvc = req.url === '/subresources' ? { 'alt-svc': 'h3="127.0.0.1:${internalPort}"; ma=60' } : {}
          res.writeHead(pages[req.url] ? 200 : 404, { 'content-type': 'text/html', ...altSvc }).end(pages[req.url] ?? 'no')
        }).on('connection', (socket) => socket.localAddress === '10.0.0.1' && hits.push('connection to 10.0.0.1')).listen(80, '0.0.0.0')
        http.createServer((req, res) => { hits.push(req.url); res.end('internal secret: do not store') }).on('connection', () => hits.push('connection')).listen(${internalPort}, '127.0.0.1')
        // What a page's WebRTC would reach of it, or of the private address: STUN and TURN over UDP.
        dgram.createSocket('udp4').on('message', (_m, from) => hits.push('udp datagram from ' + from.address)).bind(${internalPort}, '0.0.0.0')
        const systemDns = dgram.createSocket('udp4')
        systemDns.on('message', (m, from) => {
          const q = parseQuery(m)
          hits.push('system resolver asked for ' + q.name)
          systemDns.send(buildAnswer(q, { addresses: q.type === 1 ? ['127.0.0.1'] : [], ttl: 0 }), from.port, from.address)
        }).bind(53, '127.0.0.1', () => console.log('ready'))
      `], { stdio: ['ignore', 'pipe', 'inherit'] })
      stops.unshift(() => { site.kill('SIGKILL') })
      await once(site.stdout, 'data')
      ip('-n', ns, 'addr', 'add', '10.0.0.1/32', 'dev', 'lo') // a private address the worker tries

      dns.set('pub.test', ['93.184.215.14'])
      dns.set('rebind.test', ['127.0.0.1'])
      const guard = await startTargetGuard({ resolver: createResolver({ servers: [dns.server] }) })
      stops.unshift(() => guard.close())
      const bridge = await bridgeIntoNetns({ ns, port: guard.port, dir: dataDir })
      stops.unshift(() => bridge.close())
      const pool = createBrowserPool({ dataDir })
      stops.unshift(() => pool.close())
      const measure = (/** @type {string} */ path) => measurePage({ pool, url: `http://pub.test${path}`, mode: 'h2', netns: ns, guard, timeoutMs: 15_000 })

      // The public page loads through the guard's resolver (plain HTTP: HTTP/1.1, so not an h2 run).
      const ok = await measure('/ok')
      assert.equal(ok.status, 'protocol_mismatch', ok.error)
      assert.equal(ok.observed_protocol, 'http/1.1')
      assert.ok(ok.ttfb_ms > 0 && ok.load_ms >= ok.ttfb_ms)
      assert.ok(dns.asked.some((q) => q.name === 'pub.test'), 'Chromium asked the guard, which asked DNS')

      for (const [path, why] of [
        ['/redirect-literal', 'blocked by the private-target guard: host 127.0.0.1 is a non-public address (loopback)'],
        ['/redirect-name', 'blocked by the private-target guard: host rebind.test resolves to 127.0.0.1 (loopback)'],
        // Chromium resolves *.local with the system's resolver, even in secure mode.
        ['/redirect-mdns', 'blocked by the private-target guard: host nas.local is a multicast DNS name (.local), which only a local network answers'],
        ['/redirect-resolver', 'blocked by the private-target guard: host resolver.h3lens.invalid is the guard\'s own resolver, which answers on its port only']
      ]) {
        const r = await measure(path)
        assert.equal(r.status, 'error', path)
        assert.equal(r.error, why, path)
      }

      const sub = await measure('/subresources')
      assert.equal(sub.status, 'protocol_mismatch', 'the page itself loaded')
      assert.deepEqual(sub.guard_notes.map((/** @type {any} */ n) => n.message).sort(), [
        // The worker's fetch, recorded on the worker's own target.
        'blocked by the private-target guard: host 10.0.0.1 is a non-public address (private)',
        'blocked by the private-target guard: host 127.0.0.1 is a non-public address (loopback)',
        'blocked by the private-target guard: host ::ffff:7f00:1 is a non-public address (loopback, as IPv4-mapped 127.0.0.1)',
        'blocked by the private-target guard: host rebind.test resolves to 127.0.0.1 (loopback)',
        ALT_SVC_NOTE(internalPort)
      ])

      // The same page in Firefox, where Firefox is installed: its WebRTC, too, sends nothing.
      if (fs.existsSync(FIREFOX)) {
        const firefoxPool = createFirefoxPool({ dataDir, executablePath: FIREFOX })
        stops.unshift(() => firefoxPool.close())
        const ff = await measurePage({ pool: firefoxPool, url: 'http://pub.test/subresources', mode: 'h2', netns: ns, guard, timeoutMs: 15_000 })
        assert.equal(ff.status, 'protocol_mismatch', `Firefox loaded the page itself: ${ff.error}`)
        assert.ok(ff.guard_notes?.some((/** @type {any} */ n) => n.code === 'private_target_alt_svc' && n.message === ALT_SVC_NOTE(internalPort)), 'the Firefox run says its page advertised a private alternative service')
        // Firefox finds the guard's resolver by its name at loopback, whatever the port: only its own port is the resolver's.
        for (const [path, why] of [
          ['/redirect-resolver', 'blocked by the private-target guard: host resolver.h3lens.invalid is the guard\'s own resolver, which answers on its port only'],
          ['/redirect-mdns', 'blocked by the private-target guard: host nas.local is a multicast DNS name (.local), which only a local network answers']
        ]) {
          const r = await measurePage({ pool: firefoxPool, url: `http://pub.test${path}`, mode: 'h2', netns: ns, guard, timeoutMs: 15_000 })
          assert.equal(r.status, 'error', `Firefox ${path}: ${r.error}`)
          assert.equal(r.error, why, `Firefox ${path}`)
        }
      }

      // A machine-wide Chromium policy (any file under /etc/chromium/policies)
      // makes Chromium ignore the secure DNS the guard sets in each profile's
      // Local State, and ask the system's resolver instead. Such a browser
      // (its Local State left unwritten, as the policy leaves it unread) is
      // found out before a round's first load, and the round loads nothing.
      // The agent's lab is in the namespace, so its browsers run there.
      const inNs = { spki: '', hostname: LAB_HOSTNAME, address: '127.0.0.1', port: null, netns: ns }
      const job = { id: 1, url: `http://rebind.test:${internalPort}/admin`, modes: ['h2'] }
      const underPolicy = createBrowserPool({ dataDir })
      stops.unshift(() => underPolicy.close())
      const noDoh = { ...underPolicy, acquire: (/** @type {any} */ spec) => underPolicy.acquire({ ...spec, localState: null }) }
      const refused = createJobRunner({ pool: noDoh, lab: inNs, guard, timeoutMs: 15_000, log })
      for (let i = 0; i < 2; i++) await assert.rejects(refused(job, { location: { kind: 'lab' } }), { message: GUARD_NOT_IN_FORCE }, 'and again for the next round')
      // The same guard in a browser that uses it: the check passes, the round runs.
      const fresh = await startTargetGuard({ resolver: createResolver({ servers: [dns.server] }) })
      stops.unshift(() => fresh.close())
      const freshBridge = await bridgeIntoNetns({ ns, port: fresh.port, dir: dataDir })
      stops.unshift(() => freshBridge.close())
      const [guarded] = await createJobRunner({ pool, lab: inNs, guard: fresh, timeoutMs: 15_000, log })(job, { location: { kind: 'lab' } })
      assert.equal(guarded.error, GUARD)

      // Firefox's guard is preferences of each profile, which a machine-wide
      // Firefox policy overrides: one that turns its secure DNS off, or one
      // that sets its proxy (and so drops the proxy script that refuses
      // private literals). An installation under such a policy (its own
      // distribution/policies.json) is found out before a Firefox round's
      // first load; the same agent's Chromium rounds still run.
      if (fs.existsSync(FIREFOX)) {
        const bridges = async (/** @type {any} */ g) => {
          for (const port of [g.port, g.checkPort]) {
            const b = await bridgeIntoNetns({ ns, port, dir: dataDir })
            stops.unshift(() => b.close())
          }
        }
        for (const policies of [{ DNSOverHTTPS: { Enabled: false, Locked: true } }, { Proxy: { Mode: 'none', Locked: true } }]) {
          const g = await startTargetGuard({ resolver: createResolver({ servers: [dns.server] }) })
          stops.unshift(() => g.close())
          await bridges(g)
          const policed = createFirefoxPool({ dataDir, executablePath: firefoxUnderPolicy(path.join(dataDir, `policy-${Object.keys(policies)[0]}`), policies) })
          stops.unshift(() => policed.close())
          const runner = createJobRunner({ pool, firefoxPool: policed, lab: inNs, guard: g, timeoutMs: 15_000, log })
          await assert.rejects(runner({ ...job, browser: 'firefox' }, { location: { kind: 'lab' } }), { message: GUARD_NOT_IN_FORCE_FIREFOX }, JSON.stringify(policies))
          const [chromium] = await runner(job, { location: { kind: 'lab' } })
          assert.equal(chromium.error, GUARD, 'the agent\'s Chromium rounds run')
        }
        // The same installation without a policy: the check passes, the Firefox round runs, refused by the guard.
        const g = await startTargetGuard({ resolver: createResolver({ servers: [dns.server] }) })
        stops.unshift(() => g.close())
        await bridges(g)
        const firefoxPool = createFirefoxPool({ dataDir, executablePath: FIREFOX })
        stops.unshift(() => firefoxPool.close())
        const [ff] = await createJobRunner({ pool, firefoxPool, lab: inNs, guard: g, timeoutMs: 15_000, log })({ ...job, browser: 'firefox' }, { location: { kind: 'lab' } })
        assert.equal(ff.error, GUARD)
      }

      const hits = JSON.parse(insideNs("process.stdout.write(await (await fetch('http://93.184.215.14/hits')).text())"))
      // Chromium's own connectivity check asks the system's resolver for a
      // public name of Google's: no page's doing. The browser that ignored
      // the guard asked it for the check's name (which is how it was found
      // out) and for Chromium's component check.
      const own = ['connectivitycheck.gstatic.com', 'update.googleapis.com', 'firefox.settings.services.mozilla.com'].map((n) => `system resolver asked for ${n}`)
      const pages = hits.filter((/** @type {string} */ h) => !own.includes(h) && !/^system resolver asked for [0-9a-f]{16}\.guard-check\.h3lens\.invalid$/.test(h))
      assert.deepEqual(pages, [], JSON.stringify(pages) + ': the internal service saw no connection (not from a redirect, an image, a fetch, a WebSocket nor WebRTC), and the system resolver no question')
    } finally {
      for (const stop of stops) await stop()
    }
  })

test('the lab is no loophole at run time: a lab monitor on another port of the lab host fails its round, a loopback monitor at a lab location is guarded', async () => {
  // Monitors saved before the API refused them (an older version, or straight into the database).
  const config = loadConfig({ PORT: String(await freePort()), H3LENS_DATA_DIR: dataDir, LOG_LEVEL: 'silent', H3LENS_DNS_SERVERS: dns.server, H3LENS_PAGE_TIMEOUT_MS: '10000' })
  const api = await startApi({ db: database.pool, config, log })
  const stops = [() => api.close()]
  try {
    await database.pool.query("UPDATE jobs SET state = 'cancelled' WHERE state IN ('queued', 'leased')")
    const { rows: [onPort, onLoopback] } = await database.pool.query(
      `INSERT INTO monitors (url, interval_s, locations, modes) VALUES ($1, 3600, '{local}', '{h2}'), ($2, 3600, '{local}', '{h2}') RETURNING id`,
      [`https://lab.h3lens.test:${internal.port}/`, `http://127.0.0.1:${internal.port}/`])
    await scheduleDueJobs(database.pool, { maxAttempts: 1 })
    const { token } = await createAgentToken(database.pool, { location: 'local' })
    // The lab as `h3lens start` describes it to a local agent: its origin is on port 8443 of 127.0.0.1.
    const agent = await startAgent({ config: { ...config, apiUrl: api.url }, log, token, location: 'local', lab: { spki: 'AAAA', address: '127.0.0.1', port: 8443, netns: null } })
    stops.unshift(() => agent.stop())

    let jobs = []
    for (const until = Date.now() + 60_000; Date.now() < until;) {
      ({ rows: jobs } = await database.pool.query('SELECT monitor_id, state, last_error FROM jobs WHERE monitor_id = ANY($1) ORDER BY monitor_id', [[onPort.id, onLoopback.id]]))
      if (jobs.every((j) => ['done', 'failed'].includes(j.state))) break
      await sleep(100)
    }
    assert.deepEqual(jobs.map((j) => j.state), ['failed', 'done'])
    assert.match(jobs[0].last_error, new RegExp(`https://lab\\.h3lens\\.test:${internal.port}/ is not the lab origin \\(https://lab\\.h3lens\\.test:8443\\); lab runs reach the lab origin only`))
    const { rows: [loopback] } = await database.pool.query('SELECT status, error FROM results WHERE monitor_id = $1', [onLoopback.id])
    assert.deepEqual(loopback, { status: 'error', error: 'blocked by the private-target guard: host 127.0.0.1 is a non-public address (loopback)' })
    assert.deepEqual(internal.connections, [], 'the service on the lab host\'s loopback was never reached')
  } finally {
    for (const stop of stops) await stop()
  }
})

/**
 * A lab run that tries to leave the lab: a journey on the lab origin whose
 * script fetches another port of the lab host name, this machine's loopback
 * by address and by name, and a name outside the lab, all on the port of a
 * service listening on loopback. In local mode the lab's address is this
 * machine's loopback, so each would reach that service if the lab browser
 * let it; the step throws, naming what it reached.
 * @param {{ id: number, pageUrl: string, port: number, udpPort: number, browser: string }} o
 *   pageUrl: a page of the lab origin; port: the internal service's; udpPort: a UDP service's
 */
function labEscapeJob ({ id, pageUrl, port, udpPort, browser }) {
  const targets = [
    `https://${LAB_HOSTNAME}:${port}/`, `https://${LAB_ALT_HOSTNAME}:${port}/`,
    `http://127.0.0.1:${port}/`, `https://127.0.0.1:${port}/`, `http://localhost:${port}/`, `https://elsewhere.example:${port}/`
  ]
  // WebRTC's STUN and TURN go to IP literals without a lookup: the UDP service on loopback must get no datagram.
  const script = `const urls = ${JSON.stringify(targets)};
const pc = new RTCPeerConnection({ iceServers: [{ urls: ['stun:127.0.0.1:${udpPort}'] }, { urls: ['turn:127.0.0.1:${udpPort}?transport=udp'], username: 'u', credential: 'p' }] });
pc.createDataChannel('probe');
await pc.setLocalDescription(await pc.createOffer());
await new Promise((resolve) => setTimeout(resolve, 1500));
pc.close();
const tried = await Promise.all(urls.map((u) => fetch(u, { mode: 'no-cors' }).then(() => u + ' reached', () => u + ' refused')));
const reached = tried.filter((t) => t.endsWith('reached'));
if (reached.length) throw new Error(reached.join(', '));`
  const journey = checkJourney({ steps: [{ action: 'navigate', url: pageUrl }, { action: 'eval', script, name: 'escape' }] }, { url: pageUrl })
  return { id, url: pageUrl, modes: ['h2'], probes: ['journey'], journey, browser }
}

test('a lab run in local mode reaches the lab origin only: a journey\'s script finds no other port of the lab host, of loopback, nor another name, and its WebRTC sends no datagram', async () => {
  // The lab as `h3lens start --lab local` runs it: the lab host name is this machine's loopback.
  const origin = await startOrigin({ dataDir: path.join(dataDir, 'lab-escape'), port: await freePort(), log })
  const pool = createBrowserPool({ dataDir, log })
  const udp = dgram.createSocket('udp4')
  /** @type {string[]} */
  const datagrams = []
  udp.on('message', (msg, from) => datagrams.push(`${msg.length} bytes from ${from.address}:${from.port}`))
  udp.bind(0, '127.0.0.1')
  await once(udp, 'listening')
  try {
    const run = createJobRunner({ pool, lab: { spki: origin.spki, address: '127.0.0.1', port: origin.port, netns: null }, timeoutMs: 15_000, log })
    const results = await run(labEscapeJob({ id: 1, pageUrl: `${origin.baseUrl}/page-15k.html`, port: internal.port, udpPort: udp.address().port, browser: 'chromium' }), { location: { kind: 'lab' } })
    const escape = results.find((r) => r.probe === 'journey:escape')
    assert.equal(escape?.status, 'ok', `the script reached no one: ${escape?.error}`)
    assert.deepEqual(internal.connections, [], 'the service on the lab host\'s loopback was never reached')
    assert.deepEqual(datagrams, [], 'the UDP service on the lab host\'s loopback got no STUN or TURN datagram')
  } finally {
    udp.close()
    await pool.close()
    await origin.stop()
  }
})

test('a journey\'s trial on a lab page runs only on an agent with a lab: on one without, it is refused before a browser starts, and reaches nothing', async () => {
  // A lab location's agent started without the lab (`h3lens agent --location local`): it has a guard, no lab.
  const guard = await startTargetGuard({ resolver: createResolver({ servers: [dns.server] }) })
  const pool = createBrowserPool({ dataDir, log })
  try {
    const runTrial = createTrialRunner({ pool, lab: null, guard, timeoutMs: 10_000, log })
    const url = `https://${LAB_HOSTNAME}:8443/`
    const journey = checkJourney({ steps: [{ action: 'navigate', url }, { action: 'eval', script: `location = 'http://127.0.0.1:${internal.port}/admin'` }] }, { url })
    await assert.rejects(runTrial({ id: 1, url, journey: /** @type {any} */ (journey) }), /^Error: this agent has no lab origin configured, so it cannot measure https:\/\/lab\.h3lens\.test:8443\/$/)
    assert.deepEqual(internal.connections, [], 'the service on this machine\'s loopback was never reached')
  } finally {
    await pool.close()
    await guard.close()
  }
})

test('names Chromium resolves by itself and IP literals in every spelling are refused before any connection', async () => {
  const guard = await startTargetGuard({ resolver: createResolver({ servers: [dns.server] }) })
  const pool = createBrowserPool({ dataDir })
  try {
    // This machine's own /etc/hosts names for loopback or private addresses, which Chromium reads itself.
    const hostsNames = [...(await createResolver().hostsEntries())]
      .filter(([name, addresses]) => !/localhost/.test(name) && addresses.some((a) => nonPublicReason(a)))
      .map(([name]) => name).slice(0, 2)
    const cases = [
      ['localhost.', /host localhost is a loopback name/],
      ['LOCALHOST', /host localhost is a loopback name/],
      ['a.b.localhost', /host a\.b\.localhost is a loopback name/],
      ['127.1', /host 127\.0\.0\.1 is a non-public address \(loopback\)/],
      ['0x7f000001', /host 127\.0\.0\.1 is a non-public address/],
      ['[::ffff:7f00:1]', /host ::ffff:7f00:1 is a non-public address \(loopback, as IPv4-mapped 127\.0\.0\.1\)/],
      ['0.0.0.0', /host 0\.0\.0\.0 is a non-public address \(this network\)/],
      ...hostsNames.map((name) => [name, new RegExp(`host ${name.replace(/\./g, '\\.')} resolves to .* \\(`)])
    ]
    for (const [host, why] of /** @type {[string, RegExp][]} */ (cases)) {
      const r = await measurePage({ pool, url: `http://${host}:${internal.port}/`, mode: 'h2', guard, timeoutMs: 10_000 })
      assert.equal(r.status, 'error', host)
      assert.match(r.error, /^blocked by the private-target guard: /, host)
      assert.match(r.error, why, host)
    }
    assert.deepEqual(internal.connections, [])
  } finally {
    await pool.close()
    await guard.close()
  }
})

/**
 * A Firefox installation under a machine-wide policy: the installed one's
 * files, linked, and a distribution/policies.json of its own. The
 * executable is a copy, not a link: Firefox finds its installation from
 * its executable's real path.
 * @param {string} dir
 * @param {Record<string, any>} policies
 * @returns {string} its executable
 */
function firefoxUnderPolicy (dir, policies) {
  const installed = path.dirname(fs.realpathSync(FIREFOX))
  const exe = path.basename(fs.realpathSync(FIREFOX))
  fs.mkdirSync(path.join(dir, 'distribution'), { recursive: true })
  for (const name of fs.readdirSync(installed)) {
    if (name === 'distribution' || name === exe) continue
    const isExe = fs.realpathSync(path.join(installed, name)) === fs.realpathSync(FIREFOX)
    fs.symlinkSync(isExe ? exe : path.join(installed, name), path.join(dir, name))
  }
  fs.copyFileSync(path.join(installed, exe), path.join(dir, exe))
  fs.writeFileSync(path.join(dir, 'distribution', 'policies.json'), JSON.stringify({ policies }))
  return path.join(dir, exe)
}
