// How this agent measures each probe of the catalogue
// (lib/measurement/probes/), with the job's effective options applied: the
// probe's `run` in agents/probes/<id>.js, found by the probe's id, so the
// catalogue's list is the only one. A catalogue probe without its file
// stops the agent at start, naming the file, rather than failing its runs
// later.
import { PROBE_IDS } from '../../lib/measurement/probes/index.js'

/**
 * @typedef {(o: any, ctx: { job: { repeat_view?: boolean }, options: Record<string, any> }) => Promise<Record<string, any>[]>} ProbeRunner
 */

/** @type {Readonly<Record<string, ProbeRunner>>} */
export const PROBE_RUNNERS = Object.freeze(Object.fromEntries(await Promise.all(PROBE_IDS.map(async (id) => {
  const file = new URL(`./${id}.js`, import.meta.url)
  const { run } = await import(file.href).catch((err) => {
    throw new Error(`the catalogue's probe ${id} is measured by agents/probes/${id}.js, which does not load: ${err.message}`, { cause: err })
  })
  if (typeof run !== 'function') throw new Error(`agents/probes/${id}.js must export run, the function that measures the probe`)
  return [id, run]
}))))
