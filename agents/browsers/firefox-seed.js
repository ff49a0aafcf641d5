// What a fresh Firefox profile is given so that it does not start cold as a
// program, while every run stays cold on the network.
//
// On the first start of a profile Firefox compiles its own interface's
// scripts into a startup cache and registers its built-in add-ons. On this
// machine that is most of a start: to a blank page, 5.4 s of CPU and 4.0 s
// on an empty profile, 3.0 s and 2.2 s on an empty profile given the four
// files below from an earlier run's (Firefox ESR 153, headless). They hold
// Firefox's own code and add-on list, nothing a page or a network left: no
// HTTP cache, cookies, Alt-Svc, HSTS, DNS or TLS session. So each profile
// gets them from the first run of this Firefox build that ended cleanly, and
// what an arm measures is unchanged (docs/BENCHMARKS.md, "Firefox starts").
// They are kept where Firefox keeps such files itself, in the user's cache
// folder (~/.cache/h3lens, or $XDG_CACHE_HOME/h3lens), so every agent and
// test of this user shares them; where that folder cannot be written, in
// the pool's own folder.
import { existsSync, readFileSync, realpathSync } from 'node:fs'
import { cp, mkdir, mkdtemp, rename, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

/** The profile's files a start reuses: Firefox checks each against its build and rebuilds what does not match. */
export const SEED_FILES = Object.freeze(['startupCache', 'addonStartup.json.lz4', 'extensions.json', 'compatibility.ini'])

/**
 * @param {{ root: string, executablePath: string }} opts root: where the pool keeps its profiles
 */
export function profileSeed ({ root, executablePath }) {
  const build = firefoxBuild(executablePath)
  const cache = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'h3lens')
  const places = build ? [cache, root].map((d) => path.join(d, `firefox-seed-${build}`)) : []
  /** Where the seed is, or goes: the cache's unless only the pool's folder has one. */
  let dir = places.find((d) => existsSync(d)) ?? places[0] ?? null
  return {
    /**
     * Give a new profile the seed's files, when there is a seed.
     * @param {string} profile
     */
    async plant (profile) {
      if (!dir || !existsSync(dir)) return
      for (const f of SEED_FILES) await cp(path.join(dir, f), path.join(profile, f), { recursive: true })
    },
    /**
     * Keep a closed profile's files as the seed, when there is none yet and
     * Firefox left them all (it writes its startup cache as it exits).
     * Several runs may end at once: the first to rename its copy wins.
     * @param {string} profile
     */
    async harvest (profile) {
      if (!dir || existsSync(dir) || !SEED_FILES.every((f) => existsSync(path.join(profile, f)))) return
      for (const place of places) {
        const copy = await mkdir(path.dirname(place), { recursive: true }).then(() => mkdtemp(`${place}.tmp-`), () => null)
        if (!copy) continue // not writable: the next place
        try {
          for (const f of SEED_FILES) await cp(path.join(profile, f), path.join(copy, f), { recursive: true })
          await rename(copy, place)
        } catch {
          // Another run's copy got there first, or the copy failed: this one is not needed.
          await rm(copy, { recursive: true, force: true })
        }
        if (existsSync(place)) dir = place
        return
      }
    }
  }
}

/**
 * The Firefox build the executable starts (application.ini beside it), as a
 * folder name; null when it cannot be read, and then nothing is seeded.
 * @param {string} executablePath
 */
function firefoxBuild (executablePath) {
  try {
    const ini = readFileSync(path.join(path.dirname(realpathSync(executablePath)), 'application.ini'), 'utf8')
    const field = (/** @type {string} */ name) => new RegExp(`^${name}=(.+)$`, 'm').exec(ini)?.[1]?.trim()
    const version = field('Version')
    const buildId = field('BuildID')
    return version && buildId ? `${version}_${buildId}`.replace(/[^\w.-]/g, '_') : null
  } catch {
    return null
  }
}
