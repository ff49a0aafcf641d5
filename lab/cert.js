import { execFile } from 'node:child_process'
import { createHash, X509Certificate } from 'node:crypto'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { LAB_HOSTNAME, LAB_HOSTNAMES } from '../lib/runtime/lab-host.js'

export { LAB_HOSTNAME }

const execFileAsync = promisify(execFile)

// Short enough to stay inside what browsers accept for leaf certificates
// (398 days), regenerated automatically when it gets close to expiring.
const VALID_DAYS = 365
// The lab's own certificate authority outlives its leaves; a leaf is issued
// again whenever it is renewed, the authority when it nears its own end.
const CA_VALID_DAYS = 3650
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
 * The lab origin's certificate: a leaf for every lab host name, issued by
 * a certificate authority of the lab's own (lab-ca.pem). Chromium trusts the
 * leaf by its public key (--ignore-certificate-errors-spki-list); Firefox
 * will not take a self-signed leaf as a trust anchor
 * (MOZILLA_PKIX_ERROR_SELF_SIGNED_CERT, or CA_CERT_USED_AS_END_ENTITY with
 * CA:TRUE), so its run's profile trusts the authority instead
 * (lib/measurement/browsers/firefox.js). lab-cert.pem holds the leaf and
 * then the authority (the chain Caddy serves; a Node client given it as
 * `ca` trusts the lab). Reused when present, issued by the authority in
 * `dir`, covering every lab host name and not about to expire; otherwise
 * made afresh (ECDSA P-256).
 * @param {string} dir
 * @returns {Promise<{ certPath: string, keyPath: string, caPath: string, spki: string }>}
 */
export async function ensureLabCert (dir) {
  await mkdir(dir, { recursive: true })
  const certPath = path.join(dir, 'lab-cert.pem')
  const keyPath = path.join(dir, 'lab-key.pem')
  const caPath = path.join(dir, 'lab-ca.pem')
  const caKeyPath = path.join(dir, 'lab-ca-key.pem')
  const existing = await readUsableCert(certPath, keyPath, caPath)
  if (existing) return { certPath, keyPath, caPath, spki: spkiHash(existing) }

  // Write under temporary names and rename, so a crash midway never leaves a
  // key that does not match its certificate.
  const tmp = (/** @type {string} */ p) => `${p}.${process.pid}.tmp`
  const made = [certPath, keyPath, caPath, caKeyPath].map(tmp)
  const csr = tmp(path.join(dir, 'lab.csr'))
  const ext = tmp(path.join(dir, 'lab-ext.cnf'))
  const run = (/** @type {string[]} */ args) => execFileAsync('openssl', args, { timeout: 30_000 })
  try {
    const caUsable = await readUsableCa(caPath, caKeyPath)
    if (!caUsable) {
      await run([
        'req', '-x509', '-nodes', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
        '-keyout', tmp(caKeyPath), '-out', tmp(caPath), '-days', String(CA_VALID_DAYS),
        '-subj', '/CN=h3lens lab CA',
        '-addext', 'basicConstraints=critical,CA:TRUE,pathlen:0',
        '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
        // The authority may only vouch for the lab's own names.
        '-addext', `nameConstraints=critical,${LAB_HOSTNAMES.map((h) => `permitted;DNS:${h}`).join(',')}`
      ])
    }
    const ca = caUsable ? caPath : tmp(caPath)
    const caKey = caUsable ? caKeyPath : tmp(caKeyPath)
    await run(['req', '-new', '-nodes', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
      '-keyout', tmp(keyPath), '-out', csr, '-subj', `/CN=${LAB_HOSTNAME}`])
    await writeFile(ext, [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=serverAuth',
      `subjectAltName=${LAB_HOSTNAMES.map((h) => `DNS:${h}`).join(',')}`
    ].join('\n') + '\n')
    await run(['x509', '-req', '-in', csr, '-CA', ca, '-CAkey', caKey, '-CAcreateserial', '-CAserial', tmp(path.join(dir, 'lab-ca.srl')),
      '-days', String(VALID_DAYS), '-sha256', '-extfile', ext, '-out', tmp(certPath)])
    // The served chain: the leaf, then the authority.
    await writeFile(tmp(certPath), Buffer.concat([await readFile(tmp(certPath)), await readFile(ca)]))
    if (!caUsable) {
      await rename(tmp(caKeyPath), caKeyPath)
      await rename(tmp(caPath), caPath)
    }
    await rename(tmp(keyPath), keyPath)
    await rename(tmp(certPath), certPath)
  } finally {
    await Promise.all([...made, csr, ext, tmp(path.join(dir, 'lab-ca.srl'))].map((p) => rm(p, { force: true })))
  }
  return { certPath, keyPath, caPath, spki: spkiHash(await readFile(certPath)) }
}

/**
 * The leaf, when it is usable: issued by the lab's authority, covering
 * every lab host name, not about to expire.
 * @param {string} certPath
 * @param {string} keyPath
 * @param {string} caPath
 * @returns {Promise<Buffer | null>}
 */
async function readUsableCert (certPath, keyPath, caPath) {
  let pem, caPem
  try {
    pem = await readFile(certPath)
    caPem = await readFile(caPath)
    await readFile(keyPath)
  } catch {
    return null
  }
  try {
    const cert = new X509Certificate(pem)
    const ca = new X509Certificate(caPem)
    const coversHost = LAB_HOSTNAMES.every((h) => cert.checkHost(h) === h)
    const fresh = Date.parse(cert.validTo) - Date.now() > RENEW_BEFORE_MS && Date.parse(ca.validTo) - Date.now() > RENEW_BEFORE_MS
    const issued = !cert.ca && cert.checkIssued(ca) && cert.verify(ca.publicKey)
    return coversHost && fresh && issued ? pem : null
  } catch {
    return null
  }
}

/**
 * Whether the lab's authority in `dir` can issue a new leaf.
 * @param {string} caPath
 * @param {string} caKeyPath
 */
async function readUsableCa (caPath, caKeyPath) {
  try {
    const ca = new X509Certificate(await readFile(caPath))
    await readFile(caKeyPath)
    return ca.ca && Date.parse(ca.validTo) - Date.now() > VALID_DAYS * 24 * 3600 * 1000
  } catch {
    return false
  }
}
