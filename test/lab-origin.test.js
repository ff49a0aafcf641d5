import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { X509Certificate } from 'node:crypto'
import { once } from 'node:events'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import http2 from 'node:http2'
import https from 'node:https'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import pino from 'pino'
import { chooseCaddy, DEBIAN_CADDY } from '../lab/caddy.js'
import { LAB_HOSTNAME, OriginStartError, startOrigin } from '../lab/origin.js'
import { freePort } from '../dev/free-port.js'
import { eventually } from './helpers/eventually.js'

const ORIGIN_MODULE = fileURLToPath(new URL('../lab/origin.js', import.meta.url))

/** Caddy processes (Debian's `caddy` or the pinned `caddy-2.11.7`) started for `dataDir` (their config file lives under it). */
async function caddyProcesses (dataDir) {
  const pids = []
  for (const pid of (await readdir('/proc')).filter((p) => /^\d+$/.test(p))) {
    try {
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0')
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
      const zombie = stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')
      if (!zombie && /^caddy(-[\d.]+)?$/.test(path.basename(cmdline[0])) && cmdline.some((a) => a.startsWith(dataDir))) pids.push(Number(pid))
    } catch {}
  }
  return pids
}

/**
 * GET or POST over HTTPS/1.1 to the origin, checking its certificate.
 * @param {{ port: number, ca: Buffer, path: string, method?: string, body?: Buffer }} req
 * @returns {Promise<{ status: number, headers: import('node:http').IncomingHttpHeaders, body: Buffer }>}
 */
function request ({ port, ca, path: urlPath, method = 'GET', body }) {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1', port, path: urlPath, method, servername: LAB_HOSTNAME, ca, agent: false,
      headers: { host: `${LAB_HOSTNAME}:${port}`, ...(body ? { 'content-type': 'application/octet-stream' } : {}) }
    }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: /** @type {number} */ (res.statusCode), headers: res.headers, body: Buffer.concat(chunks) }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

describe('lab origin', () => {
  let dataDir
  let origin
  let ca

  before(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-origin-test-'))
    origin = await startOrigin({ dataDir, port: await freePort() })
    ca = await readFile(path.join(dataDir, 'lab', 'lab-cert.pem'))
  })

  after(async () => {
    await origin?.stop()
    await rm(dataDir, { recursive: true, force: true })
  })

  test('describes itself for the lab hostname', () => {
    assert.equal(origin.hostname, 'lab.h3lens.test')
    assert.equal(origin.baseUrl, `https://lab.h3lens.test:${origin.port}`)
    assert.match(origin.spki, /^[A-Za-z0-9+/]{43}=$/)
    assert.deepEqual(Object.keys(origin.pages).sort(), ['page-100k', 'page-15k', 'page-1m', 'page-many'])
    for (const page of Object.values(origin.pages)) assert.ok(page.description.length > 10)
  })

  test('serves every page, with its assets, at the size its name says', async () => {
    const expected = { 'page-15k': [12e3, 18e3], 'page-100k': [90e3, 110e3], 'page-1m': [0.95e6, 1.1e6], 'page-many': [50e3, 120e3] }
    for (const [name, page] of Object.entries(origin.pages)) {
      const html = await request({ port: origin.port, ca, path: page.path })
      assert.equal(html.status, 200, name)
      assert.match(String(html.headers['content-type']), /text\/html/)
      const assets = [...html.body.toString().matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1])
      let bytes = html.body.length
      for (const asset of assets) {
        const res = await request({ port: origin.port, ca, path: asset })
        assert.equal(res.status, 200, asset)
        bytes += res.body.length
      }
      assert.equal(bytes, page.bytes, `${name} bytes as described`)
      assert.equal(1 + assets.length, page.requests, `${name} requests as described`)
      const [min, max] = expected[name]
      assert.ok(bytes >= min && bytes <= max, `${name} is ${bytes} bytes`)
    }
    assert.ok(origin.pages['page-many'].requests >= 60)
  })

  test('/noop answers 204 with no body, and allows CORS', async () => {
    const res = await request({ port: origin.port, ca, path: '/noop' })
    assert.equal(res.status, 204)
    assert.equal(res.body.length, 0)
    assert.equal(res.headers['access-control-allow-origin'], '*')
  })

  test('advertises HTTP/3 on the same port with Alt-Svc', async () => {
    const res = await request({ port: origin.port, ca, path: '/page-15k.html' })
    assert.match(String(res.headers['alt-svc']), new RegExp(`h3=":${origin.port}"`))
  })

  test('serves its failure cases: a cut-short document, and a redirect to its second origin', async () => {
    const truncated = await new Promise((resolve, reject) => {
      const req = https.request({
        host: '127.0.0.1', port: origin.port, path: origin.endpoints.truncated.path, servername: LAB_HOSTNAME, ca, agent: false,
        headers: { host: `${LAB_HOSTNAME}:${origin.port}` }
      }, (res) => {
        let bytes = 0
        res.on('data', (c) => { bytes += c.length })
        res.on('close', () => resolve({ declared: Number(res.headers['content-length']), bytes, complete: res.complete }))
      })
      req.on('error', reject)
      req.end()
    })
    assert.deepEqual(truncated, { declared: 100_000, bytes: 1024, complete: false })

    const redirect = await request({ port: origin.port, ca, path: origin.endpoints.crossOriginRedirect.path })
    assert.equal(redirect.status, 302)
    assert.equal(redirect.headers.location, `${origin.altBaseUrl}/page-15k.html`)
    assert.equal(origin.altBaseUrl, `https://lab2.h3lens.test:${origin.port}`)
    const cert = new X509Certificate(ca)
    for (const name of ['lab.h3lens.test', 'lab2.h3lens.test']) assert.equal(cert.checkHost(name), name, 'the certificate covers both lab origins')
    assert.equal(origin.noH3BaseUrl, null, 'no H1/H2-only port unless asked for')
  })

  test('/upload reads a whole 1 MB body before answering, over HTTP/1.1 and HTTP/2', async () => {
    const body = Buffer.alloc(1024 * 1024, 7)
    const h1 = await request({ port: origin.port, ca, path: '/upload', method: 'POST', body })
    assert.equal(h1.status, 204)
    assert.equal(h1.headers['x-upload-bytes'], String(body.length))

    const session = http2.connect(`https://127.0.0.1:${origin.port}`, { ca, servername: LAB_HOSTNAME })
    try {
      const stream = session.request({ ':method': 'POST', ':path': '/upload', ':authority': `${LAB_HOSTNAME}:${origin.port}` })
      stream.end(body)
      const [headers] = await once(stream, 'response')
      stream.resume()
      await once(stream, 'end')
      assert.equal(headers[':status'], 204)
      assert.equal(headers['x-upload-bytes'], String(body.length))
    } finally {
      session.close()
    }
  })

  test('a port already taken fails the start with OriginStartError and leaves nothing running', async () => {
    const blocker = net.createServer().listen(0, '127.0.0.1')
    await once(blocker, 'listening')
    const { port } = /** @type {import('node:net').AddressInfo} */ (blocker.address())
    const otherDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-origin-test-'))
    try {
      await assert.rejects(startOrigin({ dataDir: otherDir, port }), (err) => {
        assert.ok(err instanceof OriginStartError)
        assert.match(err.message, new RegExp(`port ${port}`))
        return true
      })
      assert.deepEqual(await caddyProcesses(otherDir), [])
    } finally {
      blocker.close()
      await rm(otherDir, { recursive: true, force: true })
    }
  })

  test('Caddy goes away when the process that started it is killed outright', async () => {
    const otherDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-origin-test-'))
    const script = `import { startOrigin } from ${JSON.stringify(ORIGIN_MODULE)}
await startOrigin({ dataDir: ${JSON.stringify(otherDir)}, port: ${await freePort()} })
console.log('ready')
setInterval(() => {}, 1000)`
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    try {
      await once(child.stdout, 'data')
      assert.equal((await caddyProcesses(otherDir)).length, 1)
      child.kill('SIGKILL')
      let left = []
      for (let i = 0; i < 50; i++) {
        left = await caddyProcesses(otherDir)
        if (!left.length) break
        await sleep(100)
      }
      assert.deepEqual(left, [])
    } finally {
      child.kill('SIGKILL')
      await rm(otherDir, { recursive: true, force: true })
    }
  })

  test('runs the Caddy 2.11.7 that setup installed, and says it does not distort H3', { skip: !chooseCaddy().pinned && 'setup could not install Caddy 2.11.7 (see its warning)' }, () => {
    assert.deepEqual(origin.labOrigin, { server: 'caddy', version: '2.11.7', distorts_h3: false, running: true, exited_at: null })
  })

  test("on Debian's Caddy 2.6.2 it still serves, warns in the log, and reports that H3 may be distorted", async () => {
    const otherDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-origin-test-'))
    const lines = []
    const log = pino({ level: 'info' }, { write: (line) => lines.push(JSON.parse(line)) })
    const debian = await startOrigin({ dataDir: otherDir, port: await freePort(), log, caddyPath: DEBIAN_CADDY })
    try {
      assert.deepEqual(debian.labOrigin, { server: 'caddy', version: '2.6.2', distorts_h3: true, running: true, exited_at: null })
      const res = await request({ port: debian.port, ca: await readFile(debian.certPath), path: '/noop' })
      assert.equal(res.status, 204)
      const warning = lines.find((l) => l.level === 40 && /quic-go 3760/.test(l.msg))
      assert.ok(warning, 'a warn line names the problem')
      assert.match(warning.msg, /H3 connects may be distorted; run setup to install Caddy 2\.11\.7/)
    } finally {
      await debian.stop()
      await rm(otherDir, { recursive: true, force: true })
    }
  })

  test('Caddy killed while it serves: an error line says the lab origin is gone, and a stop afterwards is quiet', async () => {
    const otherDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-origin-test-'))
    const lines = []
    const log = pino({ level: 'info' }, { write: (line) => lines.push(JSON.parse(line)) })
    const killed = await startOrigin({ dataDir: otherDir, port: await freePort(), log })
    try {
      const [pid] = await caddyProcesses(otherDir)
      process.kill(pid, 'SIGKILL')
      const gone = await eventually(async () => lines.find((l) => l.level === 50), { what: 'an error line', timeoutMs: 10_000 })
      assert.equal(gone.msg, 'lab origin (Caddy) exited unexpectedly; lab rounds fail until h3lens is restarted')
      assert.equal(gone.port, killed.port)
      assert.equal(killed.labOrigin.running, false, 'what GET /api/v1/locations reports')
      assert.ok(killed.labOrigin.exited_at)
      await killed.stop()
      assert.equal(lines.filter((l) => l.level >= 50).length, 1, 'stopping it is no second error')
    } finally {
      await killed.stop()
      await rm(otherDir, { recursive: true, force: true })
    }
  })

  test('stop() leaves no Caddy running and frees the port', async () => {
    const otherDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-origin-test-'))
    const port = await freePort()
    const second = await startOrigin({ dataDir: otherDir, port })
    try {
      assert.equal((await caddyProcesses(otherDir)).length, 1)
      await second.stop()
      await second.stop() // idempotent
      assert.deepEqual(await caddyProcesses(otherDir), [])
      const probe = net.createServer().listen(port, '127.0.0.1')
      await once(probe, 'listening')
      probe.close()
    } finally {
      await second.stop()
      await rm(otherDir, { recursive: true, force: true })
    }
  })
})
