// The load generator of bench/rum-ingest.js, in a worker thread of its own:
// in the API's thread it would take turns with the API on one event loop,
// and a single Node.js thread cannot use more than one core. Keep-alive
// clients post beacons (made before the clock starts) as browsers would,
// each waiting for its answer before the next.
import { randomBytes } from 'node:crypto'
import { Agent, request } from 'node:http'
import { parentPort, workerData } from 'node:worker_threads'

const UAS = [
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:140.0) Gecko/20100101 Firefox/140.0',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.4 Safari/605.1.15'
]

/** A beacon as the snippet sends it (about 600 bytes). @param {string} key @param {number} i */
function beacon (key, i) {
  const h3 = i % 3 !== 0
  const reused = i % 4 === 0
  const ttfb = 60 + (i % 90)
  return JSON.stringify({
    key, v: 1, id: randomBytes(16).toString('hex'), t0: Date.now() - 3000, sample: 1, nav: 'navigate', protocol: h3 ? 'h3' : 'h2',
    dns_ms: reused ? 0 : 4.2, connect_ms: reused ? 0 : 22.5, tls_ms: reused ? 0 : 11.3, waiting_ms: 30.1, ttfb_ms: ttfb, fcp_ms: ttfb + 80, lcp_ms: ttfb + 160,
    inp_ms: 48, cls: 0.02, transfer_bytes: 14800, doc_cached: false, resources: 12, cached_resources: i % 5 === 0 ? 4 : 0,
    lcp_element: 'img', lcp_resource_ms: 40.2, lcp_render_delay_ms: 12.5, inp_target: 'button', inp_input_delay_ms: 2, inp_processing_ms: 30, inp_presentation_ms: 16, cls_target: 'div'
  })
}

const { url, sites, seconds, concurrency, maxBeacons } = /** @type {{ url: string, sites: { key: string, origin: string }[], seconds: number, concurrency: number, maxBeacons: number }} */ (workerData)
const bodies = Array.from({ length: maxBeacons }, (_, i) => beacon(sites[i % sites.length].key, i))
const keepAlive = new Agent({ keepAlive: true, maxSockets: concurrency })
/** @type {number[]} */
const latencies = []
/** @type {Record<number, number>} */
const statuses = {}
let firstError = ''
let sent = 0
const post = (/** @type {number} */ i) => new Promise((resolve) => {
  const site = sites[i % sites.length]
  const body = bodies[i]
  const t0 = performance.now()
  const req = request(`${url}/rum/v1/beacon`, {
    method: 'POST',
    agent: keepAlive,
    headers: { 'content-type': 'text/plain;charset=UTF-8', 'content-length': Buffer.byteLength(body), origin: site.origin, 'user-agent': UAS[i % UAS.length] }
  }, (res) => {
    let text = ''
    res.on('data', (d) => { text += d })
    res.on('end', () => {
      latencies.push(performance.now() - t0)
      const code = res.statusCode ?? 0
      statuses[code] = (statuses[code] ?? 0) + 1
      if (code !== 204 && !firstError) firstError = `${code} ${text.slice(0, 300)}`
      resolve(undefined)
    })
  })
  req.on('error', (err) => { statuses[0] = (statuses[0] ?? 0) + 1; firstError ||= err.message; resolve(undefined) })
  req.end(body)
})
parentPort?.postMessage({ ready: true })
parentPort?.once('message', async () => {
  const started = performance.now()
  const deadline = started + seconds * 1000
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < deadline && sent < bodies.length) await post(sent++)
  }))
  const elapsed = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  const p = (/** @type {number} */ q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0
  keepAlive.destroy()
  parentPort?.postMessage({ elapsed, statuses, firstError, p50: p(0.5), p99: p(0.99) })
})
