// A self-signed certificate for one IPv4 address (the agent's loopback), made in memory: Chromium speaks
// DNS over HTTPS only, and the agent's resolver (agents/target-guard.js)
// needs a certificate that Chromium is told to trust by its public key
// (--ignore-certificate-errors-spki-list). Agent machines need nothing but
// Node and Chromium, so it is built here (X.509 in DER, RFC 5280) rather
// than with openssl. A fresh key per agent process; it never leaves it.
import crypto from 'node:crypto'

const OID = {
  ecdsaWithSHA256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  subjectAltName: '2.5.29.17',
  extendedKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1'
}

/**
 * @param {string} [address] the IPv4 address it is for
 * @returns {{ cert: string, key: string, spki: string }} PEM certificate and key, and the
 *   base64 SHA-256 of the public key as --ignore-certificate-errors-spki-list wants it
 */
export function loopbackCertificate (address = '127.0.0.1') {
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const spkiDer = publicKey.export({ type: 'spki', format: 'der' })
  const name = seq(set(seq(oid(OID.commonName), utf8('h3lens agent resolver'))))
  const now = Date.now()
  const signature = seq(oid(OID.ecdsaWithSHA256))
  const tbs = seq(
    tlv(0xa0, int(Buffer.from([2]))), // v3
    int(crypto.randomBytes(16)),
    signature,
    name,
    seq(time(new Date(now - 3600_000)), time(new Date(now + 397 * 86400_000))),
    name,
    spkiDer,
    tlv(0xa3, seq(
      seq(oid(OID.subjectAltName), tlv(0x04, seq(tlv(0x87, Buffer.from(address.split('.').map(Number)))))), // iPAddress
      seq(oid(OID.extendedKeyUsage), tlv(0x04, seq(oid(OID.serverAuth))))
    ))
  )
  const der = seq(tbs, signature, tlv(0x03, Buffer.concat([Buffer.from([0]), crypto.sign('sha256', tbs, privateKey)])))
  return {
    cert: `-----BEGIN CERTIFICATE-----\n${der.toString('base64').match(/.{1,64}/g)?.join('\n')}\n-----END CERTIFICATE-----\n`,
    key: /** @type {string} */ (privateKey.export({ type: 'pkcs8', format: 'pem' })),
    spki: crypto.createHash('sha256').update(spkiDer).digest('base64')
  }
}

/** @param {number} tag @param {Buffer} body */
function tlv (tag, body) {
  const n = body.length
  const len = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff])
  return Buffer.concat([Buffer.from([tag]), len, body])
}
const seq = (/** @type {Buffer[]} */ ...parts) => tlv(0x30, Buffer.concat(parts))
const set = (/** @type {Buffer[]} */ ...parts) => tlv(0x31, Buffer.concat(parts))
const utf8 = (/** @type {string} */ s) => tlv(0x0c, Buffer.from(s, 'utf8'))
/**
 * A positive INTEGER from big-endian bytes, in DER's one encoding: no
 * leading zero byte unless the next byte's top bit is set, and one when it
 * is (a random serial starting 0x00 0x1f is otherwise refused as padded).
 * @param {Buffer} bytes
 */
export function derPositiveInteger (bytes) {
  let start = 0
  while (start < bytes.length - 1 && bytes[start] === 0) start++
  const b = bytes.subarray(start)
  return tlv(0x02, b[0] & 0x80 ? Buffer.concat([Buffer.from([0]), b]) : b)
}
const int = derPositiveInteger
/** UTCTime, YYMMDDHHMMSSZ (dates before 2050). */
const time = (/** @type {Date} */ d) => tlv(0x17, Buffer.from(d.toISOString().replace(/[-:T]/g, '').slice(2, 14) + 'Z'))

/** @param {string} dotted */
function oid (dotted) {
  const [a, b, ...rest] = dotted.split('.').map(Number)
  const bytes = [40 * a + b]
  for (const n of rest) {
    const chunk = [n & 0x7f]
    for (let v = n >> 7; v > 0; v >>= 7) chunk.unshift((v & 0x7f) | 0x80)
    bytes.push(...chunk)
  }
  return tlv(0x06, Buffer.from(bytes))
}
