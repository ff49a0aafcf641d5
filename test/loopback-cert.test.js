// The agent's in-memory certificate for its DNS-over-HTTPS resolver: DER
// that OpenSSL parses whatever its random serials are, for the address
// given, a public-key hash that matches the leaf, and the authority that
// issued it.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { derPositiveInteger, loopbackCertificate } from '../agents/loopback-cert.js'

test('a positive INTEGER has one encoding: no padding zero, and a zero before a set top bit', () => {
  const hex = (/** @type {number[]} */ bytes) => derPositiveInteger(Buffer.from(bytes)).toString('hex')
  assert.equal(hex([0x00, 0x1f, 0x02]), '02021f02', 'a leading zero byte before a clear top bit is dropped')
  assert.equal(hex([0x00, 0x00, 0x9f]), '0202009f', 'zeros dropped down to the one a set top bit needs')
  assert.equal(hex([0x9f, 0x01]), '0203009f01')
  assert.equal(hex([0x00]), '020100', 'zero is one byte')
  assert.equal(hex([0x7f]), '02017f')
})

test('every certificate parses, names its address, matches its key and SPKI hash, and is issued by its authority', () => {
  for (let i = 0; i < 300; i++) {
    const address = `127.0.${i % 256}.1`
    const { cert, key, spki, ca } = loopbackCertificate(address)
    const x509 = new crypto.X509Certificate(cert)
    const authority = new crypto.X509Certificate(ca)
    assert.equal(x509.subjectAltName, `IP Address:${address}`)
    assert.ok(x509.checkPrivateKey(crypto.createPrivateKey(key)))
    assert.equal(crypto.createHash('sha256').update(x509.publicKey.export({ type: 'spki', format: 'der' })).digest('base64'), spki)
    assert.ok(x509.checkIssued(authority) && x509.verify(authority.publicKey), 'issued and signed by its authority')
    assert.ok(authority.ca && authority.verify(authority.publicKey), 'the authority is a self-signed CA')
  }
})
