import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { shop } from './shop.js'

// Socket paths are limited to 107 bytes; data folders are not.
const MAX_SOCKET_PATH = 100

/** What /truncated declares, and what it sends before closing the connection. */
export const TRUNCATED_DECLARED_BYTES = 100_000
export const TRUNCATED_SENT_BYTES = 1024
const TRUNCATED_CLOSE_AFTER_MS = 250
/** How long /slow waits before it answers, unless its ms= parameter says otherwise (at most SLOW_MAX_MS). */
export const SLOW_DEFAULT_MS = 3000
const SLOW_MAX_MS = 60_000

/**
 * A Unix-socket HTTP server behind /upload that reads every byte of the body
 * before answering, and says how many it read. A Unix socket is reachable
 * from inside a network namespace, so the same sink serves both cases.
 * It also serves /truncated: an HTML document that declares
 * TRUNCATED_DECLARED_BYTES and ends after TRUNCATED_SENT_BYTES, the way a
 * crashing backend behind a proxy ends one. And /hang, which never answers:
 * a page that hangs until the client gives up. /slow answers a small page
 * after a delay (?ms=, default SLOW_DEFAULT_MS): a load that is surely in
 * flight for that long. /empty is a 200 HTML document with no body. The lab
 * shop's login, account and search pages answer here too (./shop.js).
 * @param {string} dir where the socket goes when its path is short enough
 * @param {string} name socket file name, unique per origin
 */
export async function startUploadSink (dir, name) {
  let tmpDir = null
  let socketPath = path.join(dir, name)
  if (socketPath.length > MAX_SOCKET_PATH) {
    tmpDir = await mkdtemp(path.join(os.tmpdir(), 'h3lens-sink-'))
    socketPath = path.join(tmpDir, name)
  }
  const server = http.createServer({ requestTimeout: 0 }, (req, res) => {
    if (req.url?.startsWith('/truncated')) return truncated(res)
    // Never answered: a page that hangs (the request is dropped when the sink closes).
    if (req.url?.startsWith('/hang')) return
    if (req.url?.startsWith('/slow')) return slow(req, res)
    if (req.url?.startsWith('/empty')) return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': '0', 'cache-control': 'no-store' }).end()
    if (req.url?.startsWith('/shop/')) return shop(req, res)
    let bytes = 0
    req.on('data', (chunk) => { bytes += chunk.length })
    req.on('end', () => res.writeHead(204, { 'x-upload-bytes': String(bytes) }).end())
    req.on('error', () => res.destroy())
  })
  try {
    await listen(server, socketPath)
  } catch (/** @type {any} */ err) {
    // A socket file left by a killed process refuses connections: replace it.
    // One that answers belongs to a running origin, so this start fails.
    if (err.code !== 'EADDRINUSE' || await answers(socketPath)) {
      if (tmpDir) await rm(tmpDir, { recursive: true, force: true })
      throw err
    }
    await rm(socketPath, { force: true })
    await listen(server, socketPath)
  }
  return {
    socketPath,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      if (tmpDir) await rm(tmpDir, { recursive: true, force: true })
    }
  }
}

/** @param {import('node:http').ServerResponse} res */
function truncated (res) {
  const head = '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Truncated</title></head><body>\n'
  const body = head + '<p>quic stream frame packet</p>\n'.repeat(Math.ceil(TRUNCATED_SENT_BYTES / 30))
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': String(TRUNCATED_DECLARED_BYTES), 'cache-control': 'no-store' })
  // The connection goes a moment after the bytes, as when a backend dies
  // mid-body: the browser has begun to read the body by then and reports
  // what it got (closed at once, Chromium's HTTP/2 often failed the
  // navigation before it reported any of it).
  res.write(body.slice(0, TRUNCATED_SENT_BYTES), () => setTimeout(() => res.socket?.destroy(), TRUNCATED_CLOSE_AFTER_MS))
}

/**
 * @param {import('node:http').IncomingMessage} req
 * @param {import('node:http').ServerResponse} res
 */
function slow (req, res) {
  const asked = Number(new URL(req.url ?? '/', 'http://sink').searchParams.get('ms') ?? SLOW_DEFAULT_MS)
  const ms = Number.isFinite(asked) ? Math.min(Math.max(0, asked), SLOW_MAX_MS) : SLOW_DEFAULT_MS
  const timer = setTimeout(() => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
    res.end(`<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Slow</title></head><body><p>answered after ${ms} ms</p></body></html>\n`)
  }, ms)
  res.on('close', () => clearTimeout(timer))
}

/**
 * @param {import('node:http').Server} server
 * @param {string} socketPath
 */
async function listen (server, socketPath) {
  server.listen(socketPath)
  await Promise.race([once(server, 'listening'), once(server, 'error').then(([err]) => { throw err })])
}

/** @param {string} socketPath */
function answers (socketPath) {
  return new Promise((resolve) => {
    const socket = net.connect(socketPath)
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => resolve(false))
  })
}
