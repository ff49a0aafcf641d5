// The agent's only way to the outside: a small client for the agent
// protocol (docs/DESIGN.md §4).
import { request } from './http.js'

export class ApiError extends Error {
  /** @param {string} message @param {number} status @param {string} [code] */
  constructor (message, status, code) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.code = code
  }

  /**
   * The API refused this request for good (lease lost, job gone, implausible
   * values): sending it again fails the same way. 401 and 403 are not: they
   * are about the agent's token, not the request, and a fixed token makes
   * the same request succeed. 408, 429 and every 5xx (503 while the database
   * is down) are worth retrying later.
   */
  get permanent () {
    return this.status >= 400 && this.status < 500 && ![401, 403, 408, 429].includes(this.status)
  }
}

/**
 * @param {{ apiUrl: string, token: string, timeoutMs?: number, ca?: string[] }} opts
 *   ca: CAs to verify an https API with (agents/http.js loadCa)
 */
export function createApiClient ({ apiUrl, token, timeoutMs = 15000, ca }) {
  /**
   * @param {string} method
   * @param {string} path under /api/v1/agent
   * @param {object} [body] sent as JSON
   * @returns {Promise<any>} the response's JSON
   */
  async function call (method, path, body) {
    let res
    try {
      res = await request(`${apiUrl}/api/v1/agent${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        timeoutMs,
        ca
      })
    } catch (/** @type {any} */ err) {
      throw new ApiError(`API unreachable at ${apiUrl}: ${err.code ?? err.message}`, 0)
    }
    let data = null
    try { data = res.text ? JSON.parse(res.text) : null } catch { data = { message: res.text.slice(0, 200) } }
    if (res.status < 200 || res.status >= 300) throw new ApiError(`${method} ${path} → ${res.status}: ${data?.message ?? res.statusText}`, res.status, data?.code)
    return data
  }
  return {
    claim: (/** @type {{ limit: number, version: string, browser_version?: string, trials?: number, browsers?: string[], instance?: string, holding?: number[] }} */ body) => call('POST', '/claim', body),
    /** A journey trial's outcome and last frame ("try it"). */
    trialDone: (/** @type {number} */ trialId, /** @type {{ outcome: object, screenshot: string | null }} */ body) => call('POST', `/trials/${trialId}`, body),
    heartbeat: (/** @type {number} */ jobId) => call('POST', `/jobs/${jobId}/heartbeat`),
    submit: (/** @type {number} */ jobId, /** @type {object} */ body) => call('POST', `/jobs/${jobId}/results`, body),
    /** Many rounds at once: { agent_version, rounds: [{ job_id, results }] } → { rounds: [answer per round] } */
    submitRounds: (/** @type {{ agent_version: string, rounds: { job_id: number, results: object[] }[] }} */ body) => call('POST', '/results', body),
    fail: (/** @type {number} */ jobId, /** @type {string} */ error) => call('POST', `/jobs/${jobId}/fail`, { error }),
    release: (/** @type {number} */ jobId) => call('POST', `/jobs/${jobId}/release`)
  }
}
