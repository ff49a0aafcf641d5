// RTT to a real location's target, for the round-trip accounting of
// lib/measurement/rtt.js when no lab profile says what the RTT is.
import net from 'node:net'
import { round } from '../lib/measurement/units.js'

/**
 * RTT to a host by timing TCP connects (SYN → SYN-ACK is one round trip),
 * for real locations, where no profile says what the RTT is. The median of
 * `count` connects, so one slow SYN does not set the scale for a round.
 * `lookup` resolves the host (the private-target guard's, which refuses
 * non-public addresses).
 * @param {{ host: string, port: number, count?: number, timeoutMs?: number, lookup?: import('node:net').LookupFunction }} opts
 * @returns {Promise<number | null>} ms, or null when no connect succeeded
 */
export async function tcpPing ({ host, port, count = 3, timeoutMs = 2000, lookup }) {
  const times = []
  for (let i = 0; i < count; i++) {
    const ms = await connectOnce(host, port, timeoutMs, lookup)
    if (ms !== null) times.push(ms)
  }
  if (!times.length) return null
  times.sort((a, b) => a - b)
  return round(times[Math.floor((times.length - 1) / 2)], 2)
}

/**
 * @param {string} host
 * @param {number} port
 * @param {number} timeoutMs
 * @param {import('node:net').LookupFunction} [lookup]
 * @returns {Promise<number | null>}
 */
function connectOnce (host, port, timeoutMs, lookup) {
  return new Promise((resolve) => {
    let start = performance.now()
    const socket = net.connect({ host, port, timeout: timeoutMs, lookup })
    // Time from the SYN, not from the name lookup before it (an IP literal has none).
    socket.once('lookup', () => { start = performance.now() })
    socket.once('connect', () => {
      const ms = performance.now() - start
      socket.destroy()
      resolve(ms)
    })
    socket.once('timeout', () => { socket.destroy(); resolve(null) })
    socket.once('error', () => { socket.destroy(); resolve(null) })
  })
}
