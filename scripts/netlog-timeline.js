#!/usr/bin/env node
// Prints the handshake of every QUIC and TCP+TLS connection in a Chromium
// net log as a timeline of packets, then what h3lens concludes from it.
// Reads plain JSON or the gzip the API serves (GET /api/v1/results/:id/netlog).
//
//   node scripts/netlog-timeline.js FILE[.gz] [--rtt 60] [--events 40]
import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { gunzipSync } from 'node:zlib'
import { namedEvents, parseNetlog, summarizeNetlog } from '../lib/measurement/netlog.js'

const { values, positionals } = parseArgs({ allowPositionals: true, options: { rtt: { type: 'string' }, events: { type: 'string', default: '40' } } })
if (positionals.length !== 1) {
  console.error('usage: node scripts/netlog-timeline.js FILE[.gz] [--rtt MS] [--events N]')
  process.exit(2)
}
const raw = await readFile(positionals[0])
const log = parseNetlog((raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw) : raw).toString('utf8'))
const rttMs = values.rtt ? Number(values.rtt) : null
const max = Number(values.events)

const SHOWN = /^(QUIC_SESSION_(PACKET_SENT|PACKET_LOST|ACK_FRAME_RECEIVED|UNAUTHENTICATED_PACKET_HEADER_RECEIVED|CRYPTO_HANDSHAKE_COMPLETE|HANDSHAKE_DONE_FRAME_RECEIVED|ZERO_RTT_STATE)|HTTP3_HEADERS_(SENT|RECEIVED)|TCP_CONNECT|SSL_CONNECT|SSL_HANDSHAKE_MESSAGE_(SENT|RECEIVED)|SOCKET_BYTES_(SENT|RECEIVED))$/
/** @type {Record<number, string>} */
const TLS_MESSAGES = { 1: 'ClientHello', 2: 'ServerHello', 4: 'NewSessionTicket', 8: 'EncryptedExtensions', 11: 'Certificate', 15: 'CertificateVerify', 20: 'Finished' }

const events = namedEvents(log)
/** @type {Map<number, typeof events>} source id → its events */
const sources = new Map()
for (const e of events) {
  const list = sources.get(e.source)
  if (list) list.push(e)
  else sources.set(e.source, [e])
}
for (const list of sources.values()) {
  const quic = list[0].sourceType === 'QUIC_SESSION'
  if (!quic && !list.some((e) => e.name === 'SSL_CONNECT')) continue
  const begin = list.find((e) => e.name === 'QUIC_SESSION' || e.name === 'TCP_CONNECT')
  console.log(`\n${quic ? 'QUIC session' : 'TCP+TLS socket'} ${begin?.params.host ? `${begin.params.host}:${begin.params.port}` : begin?.params.address_list?.[0] ?? ''}`)
  const t0 = list[0].time
  let shown = 0
  for (const e of list) {
    if (!SHOWN.test(e.name) || shown >= max) continue
    shown++
    console.log(`  ${String(e.time - t0).padStart(6)} ms  ${e.phase === 1 ? 'begin ' : e.phase === 2 ? 'end   ' : ''}${describe(e)}`)
  }
}
const summary = summarizeNetlog(log, { rttMs })
console.log('\nFindings')
for (const f of summary.findings) console.log(`  - ${f.message}`)
if (!summary.findings.length) console.log('  none: every handshake went as its floor says')

/** @param {import('../lib/measurement/netlog.js').NetlogEvent} e */
function describe (e) {
  const p = e.params
  const level = (p.encryption_level ?? '').replace('ENCRYPTION_', '').replace('FORWARD_SECURE', '1-RTT').toLowerCase()
  switch (e.name) {
    case 'QUIC_SESSION_PACKET_SENT': return `→ sent     #${p.packet_number} ${level} ${p.size} B${p.transmission_type === 'NOT_RETRANSMISSION' ? '' : ` (${p.transmission_type})`}`
    case 'QUIC_SESSION_UNAUTHENTICATED_PACKET_HEADER_RECEIVED': return `← received #${p.packet_number} ${(p.long_header_type ?? '1-rtt').toLowerCase()}`
    case 'QUIC_SESSION_ACK_FRAME_RECEIVED': return `  ack up to #${p.largest_observed}${p.missing_packets?.length ? ` missing ${p.missing_packets.join(',')}` : ''}`
    case 'QUIC_SESSION_PACKET_LOST': return `  declared lost #${p.packet_number}`
    case 'SSL_HANDSHAKE_MESSAGE_SENT': return `→ ${TLS_MESSAGES[p.type] ?? `TLS message ${p.type}`}`
    case 'SSL_HANDSHAKE_MESSAGE_RECEIVED': return `← ${TLS_MESSAGES[p.type] ?? `TLS message ${p.type}`}`
    case 'SOCKET_BYTES_SENT': return `→ ${p.byte_count} B`
    case 'SOCKET_BYTES_RECEIVED': return `← ${p.byte_count} B`
    case 'QUIC_SESSION_ZERO_RTT_STATE': return `0-RTT: ${p.state}`
    default: return e.name.replace(/^QUIC_SESSION_/, '').toLowerCase().replaceAll('_', ' ')
  }
}
