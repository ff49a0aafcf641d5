#!/usr/bin/env node
// Does each default lab region deliver its profile, and what do H2 and H3
// look like through it? For every default profile: the link figures of
// bench/lab-fidelity-net.js (RTT, loss, throughput), then ROUNDS page loads
// of the 15 KB page per mode from Chromium inside the region's namespace,
// with TTFB and connect in ms and in RTT units.
//
//   node bench/lab-fidelity.js [--rounds 10]      (root; about 2 minutes)
import path from 'node:path'
import { netnsSupport } from '../lab/netns.js'
import { DEFAULT_PROFILES } from '../lab/profiles.js'
import { startOrigin } from '../lab/origin.js'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { measurePage } from '../agents/measure.js'
import { labBrowserFlags } from '../lib/measurement/browsers/chromium.js'
import { LAB_HOSTNAME } from '../lib/runtime/lab-host.js'
import { measureLink } from './lab-fidelity-net.js'
import { benchArgs } from './lib/args.js'
import { benchLab, benchScratch } from './lib/scratch.js'
import { median } from './lib/median.js'

const { values } = benchArgs(import.meta.url, { options: { rounds: { type: 'string', default: '10' } } })
const rounds = Number(values.rounds)
const support = await netnsSupport()
if (!support.ok) {
  console.error(`lab-fidelity: needs root and /dev/net/tun: ${support.reason}`)
  process.exit(1)
}
// Ctrl-C or SIGTERM stops what was started, the lab's namespaces included.
const { dataDir, lifecycle } = benchScratch('fidelity')
// UDP probes and H3 loads cannot pass lab-udp-blocked, by design.
const lab = await benchLab(lifecycle, { profiles: DEFAULT_PROFILES.filter((p) => !p.block_udp), prefix: 'h3lfid', runDir: path.join(dataDir, 'run') })
const origin = await startOrigin({ dataDir, port: 9443, netns: lab.originNs })
lifecycle.add('origin', () => origin.stop())
const pool = createBrowserPool({ dataDir })
lifecycle.add('browsers', () => pool.close())
try {
  const rows = []
  for (const loc of lab.locations) {
    const link = await measureLink(lab, loc)
    const rtt = loc.profile.rtt_ms
    /** @type {{ h2: Record<string, any>[], h3: Record<string, any>[] }} */
    const runs = { h2: [], h3: [] }
    for (let i = 0; i < rounds; i++) {
      for (const mode of /** @type {const} */ (['h2', 'h3'])) {
        const r = await measurePage({
          pool,
          url: `${origin.baseUrl}/page-15k.html`,
          mode,
          netns: loc.ns,
          extraFlags: labBrowserFlags({ spki: origin.spki, hostname: LAB_HOSTNAME, address: loc.originAddress })
        })
        if (r.status === 'ok') runs[mode].push(r)
      }
    }
    const cell = (mode, k) => {
      const v = median(runs[mode].map((r) => r[k]))
      return `${v.toFixed(0)} ms = ${(v / rtt).toFixed(2)} RTT`
    }
    rows.push({
      location: loc.name,
      'rtt ms (target → measured)': link['rtt ms'],
      'loss % (link/recv)': link['loss % link/recv'],
      'link Mbit/s': link['link Mbit/s'],
      'tcp Mbit/s': link['tcp Mbit/s'],
      'H2 TTFB': cell('h2', 'ttfb_ms'),
      'H3 TTFB': cell('h3', 'ttfb_ms'),
      'H2 connect': cell('h2', 'connect_ms'),
      'H3 connect': cell('h3', 'connect_ms'),
      'ok runs h2/h3': `${runs.h2.length}/${runs.h3.length}`
    })
  }
  console.log(`lab fidelity — ${rounds} rounds per mode, 15 KB page, medians`)
  console.table(rows)
} finally {
  await lifecycle.stopAll('done')
}
