// Agents that enrol themselves: a one-shot step (compose's `init` service,
// or `h3lens agents enrol` by hand) makes sure each location exists and
// that a token file for it holds a valid agent token; agents read their
// token from that file (H3LENS_AGENT_TOKEN_FILE). Nobody copies a token by
// hand, and running the step again keeps the tokens that still work, so a
// restarted stack does not register a new agent each time.
import fs from 'node:fs/promises'
import path from 'node:path'
import { authenticateAgent, createAgentToken } from '../lib/store/agents.js'
import { getLocation, upsertLocation } from '../lib/store/locations.js'
import { isSlug } from '../lib/runtime/config.js'
import { ValidationError } from '../lib/runtime/errors.js'

/**
 * "us-east=North America" → { id: 'us-east', region: 'North America' }.
 * @param {string} spec
 */
export function parseLocationSpec (spec) {
  const [id, ...rest] = spec.split('=')
  const region = rest.join('=').trim()
  if (!isSlug(id)) throw new ValidationError(`--location "${spec}": the id before "=" must be lowercase letters, digits and dashes`, 'location')
  return { id, region: region || null }
}

/**
 * @param {import('pg').Pool} db
 * @param {{ location: string, region: string | null, tokenDir: string }} opts
 * @returns {Promise<{ file: string, created: boolean, agentId: number }>}
 */
export async function enrolLocation (db, { location, region, tokenDir }) {
  // Before anything is created: a folder that cannot hold the token would
  // leave an agent registered with nobody holding its token.
  await prepareTokenDir(tokenDir)
  if (!(await getLocation(db, location))) {
    if (!region) throw new ValidationError(`unknown location "${location}"; give its region as --location ${location}=REGION to create it`, 'location')
    await upsertLocation(db, { id: location, name: location, region, kind: 'real' })
  }
  const file = path.join(tokenDir, `${location}.token`)
  const existing = (await fs.readFile(file, 'utf8').catch(() => '')).trim()
  const agent = existing ? await authenticateAgent(db, existing) : null
  if (agent?.location_id === location) return { file, created: false, agentId: agent.id }
  const { agent: created, token } = await createAgentToken(db, { location, name: `${location}-agent` })
  // Written whole under another name, then renamed: an agent starting now
  // never reads half a token.
  const partial = `${file}.${process.pid}.tmp`
  await fs.writeFile(partial, token + '\n', { mode: 0o600 })
  await fs.rename(partial, file)
  return { file, created: true, agentId: /** @type {any} */ (created).id }
}

/**
 * Makes sure `dir` is a folder this process can write token files into,
 * making it and its missing parents one level at a time (a recursive
 * mkdir under /proc never returns); a clear error naming --token-dir
 * otherwise.
 * @param {string} dir
 */
export async function prepareTokenDir (dir) {
  const refuse = (/** @type {string} */ why) => new ValidationError(`--token-dir ${dir} cannot hold the token files: ${why}`, 'token-dir')
  const missing = []
  let at = path.resolve(dir)
  for (;;) {
    const found = await fs.stat(at).catch((/** @type {any} */ err) => ['ENOENT', 'ENOTDIR'].includes(err.code) ? null : Promise.reject(refuse(err.code ?? err.message)))
    if (found) {
      if (!found.isDirectory()) throw refuse(`${at} is not a folder`)
      break
    }
    missing.unshift(at)
    if (path.dirname(at) === at) break
    at = path.dirname(at)
  }
  for (const d of missing) await fs.mkdir(d).catch((/** @type {any} */ err) => { if (err.code !== 'EEXIST') throw refuse(`${d} cannot be made (${err.code ?? err.message})`) })
  await fs.access(dir, fs.constants.W_OK).catch((/** @type {any} */ err) => { throw refuse(`it is not writable (${err.code ?? err.message})`) })
}

/**
 * The agent's token: H3LENS_AGENT_TOKEN, else the file H3LENS_AGENT_TOKEN_FILE names.
 * @param {{ agentToken?: string | null, agentTokenFile?: string | null }} config
 * @returns {Promise<string | null>}
 */
export async function readAgentToken (config) {
  if (config.agentToken) return config.agentToken
  if (!config.agentTokenFile) return null
  try {
    return (await fs.readFile(config.agentTokenFile, 'utf8')).trim() || null
  } catch (/** @type {any} */ err) {
    throw Object.assign(new Error(`H3LENS_AGENT_TOKEN_FILE=${config.agentTokenFile} cannot be read (${err.code ?? err.message}); "h3lens agents enrol" writes it`), { userFacing: true })
  }
}
