import { execFile } from 'node:child_process'
import { createHash, X509Certificate } from 'node:crypto'
import { mkdir, readFile, rename, rm } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { LAB_HOSTNAME, LAB_HOSTNAMES } from '../lib/runtime/lab-host.js'

export { LAB_HOSTNAME }

const execFileAsync = promisify(execFile)

// Short enough to stay inside what browsers accept for leaf certificates
// (398 days), regenerated automatically when it gets close to expiring.
const VALID_DAYS = 365
const RENEW_BEFORE_MS = 24 * 3600 * 1000

/**
 * base64(sha256(DER SubjectPublicKeyInfo)): the value Chromium's
 * --ignore-certificate-errors-spki-list expects.
 * @param {string | Buffer} pem
 */
export function spkiHash (pem) {
  const cert = new X509Certificate(pem)
  const der = cert.publicKey.export({ type: 'spki', format: 'der' })
  return createHash('sha256').update(der).digest('base64')
}

/**
 * Reuse the certificate in `dir` when it is there, covers every lab host name and
 * is not about to expire; otherwise generate a fresh ECDSA P-256 one.
 * @param {string} dir
 * @returns {Promise<{ certPath: string, keyPath: string, spki: string }>}
 */
export async function ensureLabCert (dir) {
  await mkdir(dir, { recursive: true })
  const certPath = path.join(dir, 'lab-cert.pem')
  const keyPath = path.join(dir, 'lab-key.pem')
  const existing = await readUsableCert(certPath, keyPath)
  if (existing) return { certPath, keyPath, spki: spkiHash(existing) }

  // Write under temporary names and rename, so a crash midway never leaves a
  // key that does not match its certificate.
  const tmpCert = `${certPath}.${process.pid}.tmp`
  const tmpKey = `${keyPath}.${process.pid}.tmp`
  try {
    await execFileAsync('openssl', [
      'req', '-x509', '-nodes',
      '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
      '-keyout', tmpKey, '-out', tmpCert,
      '-days', String(VALID_DAYS),
      '-subj', `/CN=${LAB_HOSTNAME}`,
      '-addext', `subjectAltName=${LAB_HOSTNAMES.map((h) => `DNS:${h}`).join(',')}`,
      '-addext', 'extendedKeyUsage=serverAuth'
    ], { timeout: 30_000 })
    await rename(tmpKey, keyPath)
    await rename(tmpCert, certPath)
  } finally {
    await rm(tmpCert, { force: true })
    await rm(tmpKey, { force: true })
  }
  return { certPath, keyPath, spki: spkiHash(await readFile(certPath)) }
}

/**
 * @param {string} certPath
 * @param {string} keyPath
 * @returns {Promise<Buffer | null>}
 */
async function readUsableCert (certPath, keyPath) {
  let pem
  try {
    pem = await readFile(certPath)
    await readFile(keyPath)
  } catch {
    return null
  }
  try {
    const cert = new X509Certificate(pem)
    const coversHost = LAB_HOSTNAMES.every((h) => cert.checkHost(h) === h)
    const fresh = Date.parse(cert.validTo) - Date.now() > RENEW_BEFORE_MS
    return coversHost && fresh ? pem : null
  } catch {
    return null
  }
}
