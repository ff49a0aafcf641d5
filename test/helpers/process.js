// Helpers for tests that run h3lens as a user would: as a child process.
import { spawn, execFileSync } from 'node:child_process'
import fs from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort } from '../../dev/free-port.js'
import { eventually } from './eventually.js'

// eventually() lives in a module of its own, so that a test file that only
// waits on a condition does not import child_process and stay serial
// (scripts/test-plan.js); it is re-exported here for the files that start h3lens.
export { eventually }

/**
 * Run `node bin/h3lens.js ...args`, collecting output.
 * @param {string[]} args
 * @param {Record<string, string>} env
 */
export function runH3lens (args, env) {
  const child = spawn(process.execPath, ['bin/h3lens.js', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (d) => { output += d })
  child.stderr.on('data', (d) => { output += d })
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  return {
    child,
    exited,
    get output () { return output },
    /**
     * Wait until the output matches, or fail with the output so far.
     * @param {RegExp} re
     * @param {number} [timeoutMs]
     */
    async waitFor (re, timeoutMs = 60000) {
      const until = Date.now() + timeoutMs
      while (Date.now() < until) {
        if (re.test(output)) return
        if (child.exitCode !== null) throw new Error(`h3lens exited (${child.exitCode}) before ${re}:\n${output.slice(-3000)}`)
        await sleep(100)
      }
      throw new Error(`timed out waiting for ${re}:\n${output.slice(-3000)}`)
    }
  }
}

/**
 * `h3lens start` with the local lab on free ports and a fresh data dir, as
 * the end-to-end tests run it; resolves once the banner is printed.
 * @param {string[]} [extraArgs] e.g. ['--no-seed']
 * @param {string} [prefix] of the temporary data dir
 */
export async function startLocalH3lens (extraArgs = [], prefix = 'h3lens-e2e-') {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  const [port, labPort, pgPort] = [await freePort(), await freePort(), await freePort()]
  const h3lens = runH3lens(['start', '--lab', 'local', ...extraArgs], {
    PORT: String(port),
    H3LENS_LAB_PORT: String(labPort),
    H3LENS_EMBEDDED_PG_PORT: String(pgPort),
    H3LENS_DATA_DIR: dataDir,
    DATABASE_URL: '',
    LOG_LEVEL: 'info'
  })
  return { h3lens, dataDir, labPort, api: `http://127.0.0.1:${port}` }
}

/**
 * Processes whose command line mentions `needle` (chromium, caddy, postgres under a data dir).
 * @param {string} needle
 */
export function processesMatching (needle) {
  try {
    return execFileSync('pgrep', ['-af', needle], { encoding: 'utf8' }).split('\n')
      .filter((l) => l && !l.includes('pgrep'))
  } catch {
    return []
  }
}

/**
 * Live (non-zombie) processes whose command line mentions `needle`, by pid:
 * a browser that outlived its run, but not one that died and awaits its
 * parent's wait().
 * @param {string} needle
 */
export async function processesMentioning (needle) {
  const found = []
  for (const pid of (await readdir('/proc')).filter((p) => /^\d+$/.test(p))) {
    try {
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8')
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
      if (cmdline.includes(needle) && !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) found.push(Number(pid))
    } catch {}
  }
  return found
}
