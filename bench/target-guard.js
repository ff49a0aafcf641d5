// What the private-target guard costs a measured page load
// (agents/target-guard.js): the same public page loaded by the same Chromium
// with and without the guard, alternately, as many times each.
//
//   sudo node bench/target-guard.js [loads per arm, default 40]
//
// Needs root (a network namespace): the page is served from 93.184.215.14
// on the loopback of a namespace of its own, where Chromium runs, so it is a
// public address as the guard sees it while no packet leaves the machine.
// Both arms resolve pub.test through the same DNS server (on the host side
// of a veth pair, port 53): unguarded, Chromium asks it through the
// namespace's resolv.conf, as any system resolver; guarded, Chromium asks
// the guard over DNS over HTTPS and the guard asks it. The guard adds no
// step per request, so what it costs is in dns_ms (the lookup) and nowhere
// else. Prints medians and p90 per arm.
import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createBrowserPool } from '../agents/browsers/chromium.js'
import { measurePage } from '../agents/measure.js'
import { startTargetGuard } from '../agents/target-guard.js'
import { createResolver } from '../lib/measurement/targets.js'
import { startDnsServer } from '../dev/dns-server.js'
import { benchArgs } from './lib/args.js'
import { benchScratch } from './lib/scratch.js'

const { positionals: [loadsArg = '40'] } = benchArgs(import.meta.url, { allowPositionals: true })
const loads = Number(loadsArg)
const ns = `h3gb-${process.pid}`
const [hostSide, nsSide] = ['10.232.0.1', '10.232.0.2']
const ip = (/** @type {string[]} */ ...args) => execFileSync('ip', args, { stdio: 'pipe' })
// Ctrl-C or SIGTERM undoes the namespace, its link and resolv.conf as the end does.
const { dataDir, lifecycle } = benchScratch('bench-guard')
const quantile = (/** @type {number[]} */ xs, /** @type {number} */ q) => {
  const s = xs.filter((x) => typeof x === 'number').sort((a, b) => a - b)
  return s.length ? Math.round(s[Math.min(s.length - 1, Math.floor(q * s.length))] * 10) / 10 : null
}

try {
  ip('netns', 'add', ns)
  lifecycle.add('namespace', () => ip('netns', 'del', ns))
  ip('link', 'add', `${ns}-h`, 'type', 'veth', 'peer', 'name', `${ns}-n`, 'netns', ns)
  lifecycle.add('link', () => { try { ip('link', 'del', `${ns}-h`) } catch {} })
  ip('addr', 'add', `${hostSide}/30`, 'dev', `${ns}-h`)
  ip('link', 'set', `${ns}-h`, 'up')
  ip('-n', ns, 'addr', 'add', `${nsSide}/30`, 'dev', `${ns}-n`)
  ip('-n', ns, 'link', 'set', `${ns}-n`, 'up')
  ip('-n', ns, 'link', 'set', 'lo', 'up')
  ip('-n', ns, 'addr', 'add', '93.184.215.14/32', 'dev', 'lo')
  // `ip netns exec` puts /etc/netns/<ns>/resolv.conf over /etc/resolv.conf.
  const etc = path.join('/etc/netns', ns)
  fs.mkdirSync(etc, { recursive: true })
  lifecycle.add('resolv.conf', () => fs.rmSync(etc, { recursive: true, force: true }))
  fs.writeFileSync(path.join(etc, 'resolv.conf'), `nameserver ${hostSide}\n`)

  const site = spawn('ip', ['netns', 'exec', ns, process.execPath, '--input-type=module', '-e', `
    import http from 'node:http'
    const page = '<!doctype html><title>pub</title>' + '<p>public page</p>'.repeat(500)
    http.createServer((req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(page)).listen(80, '93.184.215.14', () => console.log('ready'))
  `], { stdio: ['ignore', 'pipe', 'inherit'] })
  lifecycle.add('site', () => { site.kill('SIGKILL') })
  await once(site.stdout, 'data')

  const dns = await startDnsServer({ 'pub.test': ['93.184.215.14'] }, { address: hostSide, port: 53 })
  lifecycle.add('dns', () => dns.close())
  const guard = await startTargetGuard({ resolver: createResolver({ servers: [dns.server] }), listen: hostSide })
  lifecycle.add('guard', () => guard.close())
  const pool = createBrowserPool({ dataDir })
  lifecycle.add('browsers', () => pool.close())

  /** @type {Record<string, Record<string, number[]>>} */
  const arms = { unguarded: {}, guarded: {} }
  for (let i = -1; i < loads; i++) { // one warm-up load each, not counted
    for (const arm of i % 2 ? ['unguarded', 'guarded'] : ['guarded', 'unguarded']) {
      const r = await measurePage({ pool, url: 'http://pub.test/', mode: 'h2', netns: ns, guard: arm === 'guarded' ? guard : null, timeoutMs: 15_000 })
      if (r.status === 'error') throw new Error(`${arm}: ${r.error}`)
      if (i < 0) continue
      for (const k of ['dns_ms', 'connect_ms', 'ttfb_ms', 'load_ms', 'wall_ms']) (arms[arm][k] ??= []).push(r[k])
    }
  }
  console.log(`${loads} loads per arm of http://pub.test/ (${os.cpus().length} cores, Chromium in a namespace); ` +
    `the guard's resolver answered ${guard.stats.queries} queries on ${guard.stats.connections} TLS connections`)
  console.log('metric        unguarded p50 / p90    guarded p50 / p90')
  for (const k of Object.keys(arms.guarded)) {
    const u = arms.unguarded[k]
    const g = arms.guarded[k]
    console.log(`${k.padEnd(12)}  ${String(quantile(u, 0.5)).padStart(8)} / ${String(quantile(u, 0.9)).padEnd(8)}   ${String(quantile(g, 0.5)).padStart(8)} / ${quantile(g, 0.9)}`)
  }
} finally {
  await lifecycle.stopAll('done')
}
