// The agent's HTTP(S) client for the API. Node's fetch cannot be given a CA
// (its TLS settings are fixed at process start: NODE_EXTRA_CA_CERTS), and an
// agent in another region must be able to trust a private CA that signed the
// API's certificate. node:https can, per request. Certificates are always
// verified: there is deliberately no option to skip that.
import fs from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import tls from 'node:tls'
import { uploadAllowanceMs } from '../lib/runtime/uploads.js'

/**
 * The CA list for the API's certificate: the system's roots plus, when
 * given, the PEM file H3LENS_CA_FILE names (a private CA, or the API's own
 * self-signed certificate).
 * @param {string | null | undefined} caFile
 * @returns {string[] | undefined} undefined = Node's defaults
 */
export function loadCa (caFile) {
  if (!caFile) return undefined
  let pem
  try {
    pem = fs.readFileSync(caFile, 'utf8')
  } catch (/** @type {any} */ err) {
    throw Object.assign(new Error(`H3LENS_CA_FILE=${caFile} cannot be read (${err.code ?? err.message})`), { userFacing: true })
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw Object.assign(new Error(`H3LENS_CA_FILE=${caFile} holds no PEM certificate`), { userFacing: true })
  return [...tls.rootCertificates, pem]
}

/**
 * One request; the whole answer body as text. Rejects on network and TLS
 * errors (with their code, e.g. UNABLE_TO_VERIFY_LEAF_SIGNATURE) and on
 * timeout; any HTTP status resolves. The deadline is `timeoutMs` and the
 * time the body may take to send on a slow link (lib/runtime/uploads.js).
 * @param {string} url
 * @param {{ method?: string, headers?: Record<string, string>, body?: string | Buffer, timeoutMs: number, ca?: string[] }} opts
 * @returns {Promise<{ status: number, statusText: string, text: string }>}
 */
export function request (url, { method = 'GET', headers = {}, body, timeoutMs, ca }) {
  const u = new URL(url)
  const bytes = body === undefined ? null : Buffer.byteLength(body)
  const deadlineMs = timeoutMs + (bytes === null ? 0 : uploadAllowanceMs(bytes))
  const client = u.protocol === 'https:' ? https : http
  return new Promise((resolve, reject) => {
    const req = client.request(u, {
      method,
      headers: bytes === null ? headers : { ...headers, 'content-length': String(bytes) },
      ...(u.protocol === 'https:' && ca ? { ca } : {}),
      signal: AbortSignal.timeout(deadlineMs)
    }, (res) => {
      /** @type {Buffer[]} */
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', text: Buffer.concat(chunks).toString('utf8') }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Statuses that say "not now" rather than "not this": worth sending the same request again. */
const TRANSIENT = new Set([408, 429, 502, 503, 504])
/** The waits before the second and third tries of an evidence upload. */
export const EVIDENCE_RETRY_MS = Object.freeze([1000, 3000])

/**
 * PUT a run's evidence (a net log, a filmstrip) to the API. Evidence is not
 * spooled with the round's results, so a moment when the API cannot take it
 * (unreachable, 503 while its database restarts, 429, a proxy's 502 or 504)
 * gets two more tries, a few seconds apart, before the run records that its
 * evidence was not kept. Any other answer is final.
 * @param {string} url
 * @param {{ what: string, apiUrl: string, headers: Record<string, string>, body: string | Buffer, timeoutMs: number, ca?: string[], retryMs?: readonly number[] }} opts
 * @returns {Promise<any>} the answer's JSON
 */
export async function putEvidence (url, { what, apiUrl, headers, body, timeoutMs, ca, retryMs = EVIDENCE_RETRY_MS }) {
  for (let attempt = 0; ; attempt++) {
    let res = null
    let unreachable = null
    try {
      res = await request(url, { method: 'PUT', headers, body, timeoutMs, ca })
    } catch (/** @type {any} */ err) {
      unreachable = `${what}: API unreachable at ${apiUrl}: ${err.code ?? err.message}`
    }
    if (res && res.status >= 200 && res.status < 300) return JSON.parse(res.text)
    const again = attempt < retryMs.length && (unreachable !== null || TRANSIENT.has(/** @type {{ status: number }} */ (res).status))
    if (!again) {
      if (unreachable) throw new Error(unreachable)
      const answer = /** @type {{ status: number, text: string }} */ (res)
      let message = answer.text
      try { message = JSON.parse(answer.text).message ?? answer.text } catch {}
      throw new Error(`${what} → ${answer.status}: ${message.slice(0, 300)}`)
    }
    await new Promise((resolve) => setTimeout(resolve, retryMs[attempt]))
  }
}
