// The DNS wire format (RFC 1035), as much of it as the agent's resolver for
// Chromium needs (agents/target-guard.js): read a one-question query, answer
// it with A or AAAA records, no data, or an error code.
import net from 'node:net'
import { parseIPv6 } from '../lib/measurement/addresses.js'

export const TYPE_A = 1
export const TYPE_AAAA = 28
export const RCODE = Object.freeze({ NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3 })

/**
 * @typedef {{ id: number, name: string, type: number, question: Buffer }} Query
 * name: lower case, without the trailing dot; question: its bytes, echoed in the answer
 */

/**
 * @param {Buffer} msg
 * @returns {Query} throws on anything but a well-formed query with one question
 */
export function parseQuery (msg) {
  if (msg.length < 12) throw new Error('DNS message shorter than its header')
  if (msg[2] & 0x80) throw new Error('not a query')
  if (msg.readUInt16BE(4) !== 1) throw new Error('not one question')
  const labels = []
  let at = 12
  while (true) {
    const len = msg[at]
    if (len === undefined) throw new Error('question runs past the message')
    if (len === 0) break
    if (len > 63) throw new Error('compressed or oversized label in the question')
    labels.push(msg.subarray(at + 1, at + 1 + len).toString('latin1'))
    at += 1 + len
  }
  const end = at + 5
  if (end > msg.length) throw new Error('question runs past the message')
  return { id: msg.readUInt16BE(0), name: labels.join('.').toLowerCase(), type: msg.readUInt16BE(at + 1), question: msg.subarray(12, end) }
}

/**
 * The answer to `query`: `addresses` of the query's type as records with
 * `ttl`, none (NOERROR, no data) or an error code.
 * @param {Query} query
 * @param {{ rcode?: number, addresses?: string[], ttl?: number }} answer
 * @returns {Buffer}
 */
export function buildAnswer (query, { rcode = RCODE.NOERROR, addresses = [], ttl = 30 }) {
  const records = addresses.map((a) => {
    const data = net.isIPv4(a) ? Buffer.from(a.split('.').map(Number)) : ipv6Bytes(a)
    const rr = Buffer.alloc(12 + data.length)
    rr.writeUInt16BE(0xc00c, 0) // the name: a pointer to the question's
    rr.writeUInt16BE(net.isIPv4(a) ? TYPE_A : TYPE_AAAA, 2)
    rr.writeUInt16BE(1, 4) // class IN
    rr.writeUInt32BE(ttl, 6)
    rr.writeUInt16BE(data.length, 10)
    data.copy(rr, 12)
    return rr
  })
  const header = Buffer.alloc(12)
  header.writeUInt16BE(query.id, 0)
  header.writeUInt16BE(0x8180 | rcode, 2) // response, recursion desired and available
  header.writeUInt16BE(1, 4)
  header.writeUInt16BE(records.length, 6)
  return Buffer.concat([header, query.question, ...records])
}

/**
 * A query for `name` and `type`, as a stub resolver sends it.
 * @param {string} name
 * @param {number} type
 * @param {number} [id]
 */
export function buildQuery (name, type, id = 0) {
  const labels = name.split('.').filter(Boolean).map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')]))
  const header = Buffer.alloc(12)
  header.writeUInt16BE(id, 0)
  header.writeUInt16BE(0x0100, 2) // recursion desired
  header.writeUInt16BE(1, 4)
  const tail = Buffer.alloc(5)
  tail.writeUInt16BE(type, 1)
  tail.writeUInt16BE(1, 3)
  return Buffer.concat([header, ...labels, tail])
}

/**
 * The addresses and code of an answer buildAnswer made (or any answer whose
 * records name the question by pointer).
 * @param {Buffer} msg
 * @returns {{ id: number, rcode: number, addresses: string[] }}
 */
export function parseAnswer (msg) {
  const { question } = parseQuery(Buffer.concat([msg.subarray(0, 2), Buffer.from([0, 0]), msg.subarray(4)]))
  let at = 12 + question.length
  const addresses = []
  for (let i = 0; i < msg.readUInt16BE(6); i++) {
    const type = msg.readUInt16BE(at + 2)
    const len = msg.readUInt16BE(at + 10)
    const data = msg.subarray(at + 12, at + 12 + len)
    if (type === TYPE_A) addresses.push([...data].join('.'))
    if (type === TYPE_AAAA) addresses.push(Array.from({ length: 8 }, (_, k) => data.readUInt16BE(2 * k).toString(16)).join(':'))
    at += 12 + len
  }
  return { id: msg.readUInt16BE(0), rcode: msg.readUInt16BE(2) & 0xf, addresses }
}

/** @param {string} address */
function ipv6Bytes (address) {
  const bytes = Buffer.alloc(16)
  for (const [i, g] of /** @type {number[]} */ (parseIPv6(address)).entries()) bytes.writeUInt16BE(g, 2 * i)
  return bytes
}
