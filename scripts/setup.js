#!/usr/bin/env node
// Installs what h3lens needs, idempotently, before `npm start` and `npm test`:
// Debian packages through apt-get (as root), npm packages through `npm ci`
// when node_modules is missing or older than package-lock.json, and the lab's
// link emulator compiled from source. Uses only Node built-ins: it runs before
// node_modules exists.
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const quiet = process.argv.includes('--quiet')
const say = (msg) => { if (!quiet) console.log(`setup: ${msg}`) }

// command → Debian package that provides it
const NEEDS = [
  { command: 'chromium', pkg: 'chromium', why: 'the browser that measures pages' },
  { command: 'caddy', pkg: 'caddy', why: 'the HTTP/3 lab origin' },
  { command: 'openssl', pkg: 'openssl', why: 'the lab certificate' },
  { command: 'cc', pkg: 'gcc', why: 'compiling the lab link emulator' },
  { command: 'ip', pkg: 'iproute2', why: 'lab network namespaces' }
]
const EXTRA_PACKAGES = ['libc6-dev', 'fonts-liberation', 'ca-certificates']

function has (command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0
}

function installDebianPackages () {
  const missing = NEEDS.filter((n) => !has(n.command))
  if (!missing.length) return
  const pkgs = [...new Set([...missing.map((n) => n.pkg), ...EXTRA_PACKAGES])]
  const isRoot = process.getuid?.() === 0
  if (!isRoot || !has('apt-get')) {
    console.error('h3lens needs these programs, which are not installed:')
    for (const n of missing) console.error(`  ${n.command.padEnd(9)} (Debian package "${n.pkg}") for ${n.why}`)
    console.error(`\nInstall them with:\n  sudo apt-get update && sudo apt-get install -y ${pkgs.join(' ')}\nthen run this command again.`)
    process.exit(1)
  }
  say(`installing Debian packages: ${pkgs.join(' ')}`)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env })
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...pkgs], { stdio: 'inherit', env })
  const still = NEEDS.filter((n) => !has(n.command))
  if (still.length) {
    console.error(`setup: apt-get finished but these are still missing: ${still.map((n) => n.command).join(', ')}`)
    process.exit(1)
  }
}

function installNpmPackages () {
  const lock = fs.readFileSync(path.join(ROOT, 'package-lock.json'))
  const digest = createHash('sha256').update(lock).digest('hex')
  const stamp = path.join(ROOT, 'node_modules', '.h3lens-lock-sha256')
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === digest) return
  say('installing npm packages (npm ci)')
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  const res = spawnSync(npm, ['ci', '--no-audit', '--no-fund'], { cwd: ROOT, stdio: 'inherit' })
  if (res.status !== 0) {
    console.error('setup: npm ci failed (see above)')
    process.exit(1)
  }
  fs.writeFileSync(stamp, digest)
}

function buildLinkem () {
  const src = path.join(ROOT, 'lab', 'linkem', 'linkem.c')
  const bin = path.join(ROOT, 'lab', 'linkem', 'linkem')
  if (!fs.existsSync(src)) return
  if (fs.existsSync(bin) && fs.statSync(bin).mtimeMs >= fs.statSync(src).mtimeMs) return
  say('compiling lab/linkem')
  execFileSync('cc', ['-O2', '-Wall', '-o', bin, src, '-lm'], { stdio: 'inherit' })
}

installDebianPackages()
installNpmPackages()
buildLinkem()
say('ready')
