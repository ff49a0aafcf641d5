#!/usr/bin/env node
// Why the lab's QUIC connect takes more than 1 RTT: loads the lab's 15 KB
// page through an emulated link (no loss, no jitter) in both modes, each run
// in a fresh Chromium with a net log, and tallies what the net logs say.
//
//   node bench/quic-handshake.js [--rtt 60] [--runs 12] [--variants default,debian] [--keep DIR]
//
// Variants, each changing only the origin's Caddy or how soon it gets a CPU:
//   default     the lab as it runs: the Caddy 2.11.7 setup installs
//               (lab/caddy.js), or Debian's when setup could not.
//   debian      Debian's Caddy 2.6.2 (/usr/bin/caddy), the lab's fallback.
//   caddy-rt    the lab's Caddy at real-time priority (chrt -f 10): if a
//               symptom vanishes, it was the server waiting for a CPU.
//   caddy-nice  the lab's Caddy at nice 19: the same on a busier machine.
// (A ClientHello small enough for one Initial packet would isolate the other
// precondition, but Chromium 156 has no switch for its post-quantum key
// share; only the PostQuantumKeyAgreementEnabled enterprise policy.)
// Prints per variant and mode: connect (Navigation Timing), the handshake as
// the net log's packets show it, and TTFB, in RTT (median, p90), how
// often the server acknowledged only part of a two-packet ClientHello, how
// often it was late to confirm the handshake, and packets the link dropped
// (zero: any "lost" packet was lost at an endpoint). --keep DIR saves each
// variant's first h3 net log that shows a finding, for the netlog viewer.
import { copyFile, mkdir, rm, writeFile, chmod, readFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { labBrowserFlags } from '../lib/measurement/browsers/chromium.js'
import { measurePage } from '../agents/measure.js'
import { parseNetlog, summarizeNetlog } from '../lib/measurement/netlog.js'
import { rttAccounting } from '../lib/measurement/rtt.js'
import { chooseCaddy, DEBIAN_CADDY } from '../lab/caddy.js'
import { startOrigin } from '../lab/origin.js'
import { benchArgs, countOption } from './lib/args.js'
import { benchLab, benchScratch } from './lib/scratch.js'

const { values } = benchArgs(import.meta.url, {
  options: {
    rtt: { type: 'string', default: '60' },
    runs: { type: 'string', default: '12' },
    variants: { type: 'string', default: 'default,debian' },
    keep: { type: 'string' }
  }
})
const rttMs = Number(values.rtt)
const runs = countOption(import.meta.url, values, 'runs', { min: 1, max: 50 })
const variants = values.variants.split(',')
// Ctrl-C or SIGTERM stops what was started, the lab's namespaces included.
const { dataDir, log, lifecycle } = benchScratch('handshake')
const profile = { name: 'hs', rtt_ms: rttMs, jitter_ms: 0, loss_pct: 0, loss_model: /** @type {const} */ ('bernoulli'), down_kbps: 40_000, up_kbps: 15_000, queue_packets: 200 }
const topology = await benchLab(lifecycle, { profiles: [profile], prefix: 'h3t6h', runDir: path.join(dataDir, 'run') })
const pool = createBrowserPool({ dataDir, log })
lifecycle.add('browsers', () => pool.close())
const [loc] = topology.locations
const rows = []
const loadAtStart = os.loadavg()[0]
/** @type {Map<string, Awaited<ReturnType<typeof startOrigin>>>} */
const origins = new Map()
/** @type {Map<string, string>} variant → "Caddy 2.11.7" */
const caddyOf = new Map()
try {
  // Every variant has its own Caddy (one port each) and the runs take turns,
  // so a busier or quieter minute of the machine falls on all variants alike.
  const labCaddy = chooseCaddy().path
  const wrappers = { 'caddy-rt': `exec chrt -f 10 ${labCaddy} "$@"`, 'caddy-nice': `exec nice -n 19 ${labCaddy} "$@"` }
  for (const [i, variant] of variants.entries()) {
    let caddyPath = labCaddy
    if (variant === 'debian') {
      caddyPath = DEBIAN_CADDY
    } else if (wrappers[variant]) {
      caddyPath = path.join(dataDir, `${variant}.sh`)
      await writeFile(caddyPath, `#!/bin/sh\n${wrappers[variant]}\n`)
      await chmod(caddyPath, 0o755)
    } else if (variant !== 'default') {
      throw new Error(`unknown variant ${variant}; variants are default, debian, ${Object.keys(wrappers).join(', ')}`)
    }
    const origin = await startOrigin({ dataDir, port: 8443 + i, netns: topology.originNs, log, caddyPath })
    origins.set(variant, origin)
    caddyOf.set(variant, `Caddy ${origin.labOrigin.version}`)
  }
  // A freshly started Caddy is slower on its first connections (lazy set-up);
  // the lab's origin is long-lived, so each one is warmed before counting.
  for (const origin of origins.values()) {
    const extraFlags = labBrowserFlags({ spki: origin.spki, hostname: origin.hostname, address: loc.originAddress })
    for (const mode of /** @type {const} */ (['h3', 'h2'])) await measurePage({ pool, url: `${origin.baseUrl}/page-15k.html`, mode, extraFlags, netns: loc.ns, log })
  }
  const kept = new Set()
  for (let i = 0; i < runs; i++) {
    for (const [variant, origin] of origins) {
      const extraFlags = labBrowserFlags({ spki: origin.spki, hostname: origin.hostname, address: loc.originAddress })
      for (const mode of /** @type {const} */ (['h3', 'h2'])) {
        const netlogFile = path.join(dataDir, `${variant}-${mode}-${i}.json`)
        const before = await loc.readStats?.()
        const r = await measurePage({ pool, url: `${origin.baseUrl}/page-15k.html`, mode, extraFlags, netns: loc.ns, netlogFile, log })
        const after = await loc.readStats?.()
        const summary = summarizeNetlog(parseNetlog(await readFile(netlogFile, 'utf8')), { rttMs })
        const units = rttAccounting({ protocol: r.observed_protocol, connect_ms: r.connect_ms, ttfb_ms: r.ttfb_ms }, rttMs)
        const drops = (s) => (s ? s.down.drop_loss + s.down.drop_queue + s.up.drop_loss + s.up.drop_queue : 0)
        // The split-ClientHello finding in two kinds: the rest of the
        // ClientHello never acknowledged (declared lost), or only late.
        const codes = summary.findings.map((f) => (f.code === 'client_hello_split_partly_acked' ? (/declared lost/.test(f.message) ? 'ch_lost' : 'ch_late') : f.code))
        const quic = summary.quic_sessions.find((s) => s.host === origin.hostname)
        const tls = summary.tls_sessions.find((s) => s.next_proto)
        // The handshake as the packets saw it: from the first packet sent to
        // handshake complete (QUIC), or TCP connect + TLS handshake.
        const wireMs = mode === 'h3' ? quic?.handshake_complete_ms : (tls && tls.tcp_connect_ms !== null && tls.tls_handshake_ms !== null ? tls.tcp_connect_ms + tls.tls_handshake_ms : null)
        rows.push({
          variant, mode, status: r.status, connect: units.connect_rtt, ttfb: units.ttfb_rtt, codes, drops: drops(after) - drops(before),
          wire: wireMs === null || wireMs === undefined ? null : wireMs / rttMs,
          helloBytes: quic?.client_hello_bytes ?? tls?.client_hello_bytes ?? null, helloPackets: quic?.first_flight_initial_packets ?? null
        })
        if (values.keep && !kept.has(variant) && mode === 'h3' && codes.length) {
          await mkdir(values.keep, { recursive: true })
          await copyFile(netlogFile, path.join(values.keep, `${variant}-h3-rtt${rttMs}.netlog.json`))
          kept.add(variant)
        }
        await rm(netlogFile, { force: true })
      }
    }
  }
} finally {
  for (const origin of origins.values()) await origin.stop()
  await lifecycle.stopAll('done')
}

const q = (xs, p) => {
  const s = xs.filter((x) => x !== null).sort((a, b) => a - b)
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))] : NaN
}
const pct = (n, d) => (d ? `${Math.round((100 * n) / d)}%` : '–')
console.log(`QUIC and TCP+TLS handshakes through an emulated ${rttMs} ms RTT link (no loss), ${runs} runs per mode and variant, interleaved; ` +
  `${os.cpus().length} cores, load average ${loadAtStart.toFixed(1)} at start, ${os.loadavg()[0].toFixed(1)} at the end`)
console.log('| variant | origin | mode | ok | connect RTT p50 / p90 | handshake on the wire RTT p50 / p90 | TTFB RTT p50 / p90 | ClientHello bytes (Initial packets) | CH part lost | CH part late | slow to confirm | link drops |')
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|')
for (const variant of variants) {
  for (const mode of ['h3', 'h2']) {
    const set = rows.filter((r) => r.variant === variant && r.mode === mode)
    const ok = set.filter((r) => r.status === 'ok')
    const f = (k, p) => q(ok.map((r) => r[k]), p).toFixed(2)
    const has = (code) => set.filter((r) => r.codes.includes(code)).length
    const hello = set.find((r) => r.helloBytes)
    console.log(`| ${variant} | ${caddyOf.get(variant) ?? '–'} | ${mode} | ${ok.length}/${set.length} | ${f('connect', 0.5)} / ${f('connect', 0.9)} | ${f('wire', 0.5)} / ${f('wire', 0.9)} | ${f('ttfb', 0.5)} / ${f('ttfb', 0.9)} | ` +
      `${hello ? `${hello.helloBytes}${hello.helloPackets ? ` (${hello.helloPackets})` : ''}` : '–'} | ` +
      `${mode === 'h3' ? pct(has('ch_lost'), set.length) : '–'} | ${mode === 'h3' ? pct(has('ch_late'), set.length) : '–'} | ${mode === 'h3' ? pct(has('server_slow_to_confirm'), set.length) : '–'} | ${set.reduce((n, r) => n + r.drops, 0)} |`)
  }
}
