// Browser profiles a killed agent left behind: the next pool on the same data
// dir removes them, and only them. No browser is started: making a profile
// is what sweeps the folder.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createBrowserPool } from '../agents/browsers/chromium.js'

test('a new pool removes the profiles a killed pool left, and keeps those in use or just made', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-profiles-'))
  const dir = path.join(dataDir, 'chromium')
  const hourAgo = new Date(Date.now() - 3600e3)
  /** @param {string} name @param {{ old?: boolean, holder?: number }} opts */
  const profile = (name, { old = true, holder } = {}) => {
    const folder = path.join(dir, name)
    fs.mkdirSync(path.join(folder, 'Default'), { recursive: true })
    if (holder) fs.symlinkSync(`${os.hostname()}-${holder}`, path.join(folder, 'SingletonLock'))
    if (old) fs.utimesSync(folder, hourAgo, hourAgo)
  }
  profile('h3lens-chromium-killed')
  profile('h3lens-chromium-dead-holder', { holder: 2 ** 22 + 7 })
  profile('h3lens-chromium-running', { holder: process.pid })
  profile('h3lens-chromium-fresh', { old: false })
  profile('not-ours')
  const pool = createBrowserPool({ dataDir })
  try {
    const made = await pool.newProfile()
    assert.deepEqual(fs.readdirSync(dir).sort(), ['h3lens-chromium-fresh', 'h3lens-chromium-running', path.basename(made), 'not-ours'].sort())
  } finally {
    await pool.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
})
