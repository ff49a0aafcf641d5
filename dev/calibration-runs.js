// Runs calibration scenarios (dev/calibration-scenarios.js) through the real
// import and comparison endpoints: a monitor per run, its rounds imported as
// NDJSON, the comparison read back in both analyses, or for a monitor with
// the auto arm its answer (GET /monitors/{id}/auto). Shared by
// bench/calibration.js (over HTTP) and test/verdicts.test.js (app.inject).

export const CALIBRATION_PERCENTILES = [25, 50, 75, 90, 95, 99]
const DAY = 86400e3

/**
 * @typedef {(req: { method: string, url: string, body?: string, type?: string }) => Promise<{ status: number, json: () => any, text: string }>} Client
 */

/**
 * @param {Client} client
 * @param {import('./calibration-scenarios.js').Scenario} s
 * @param {{ seed: number | string, analyses?: string[], windowDays?: number, monitor?: Record<string, any> }} o
 * @returns {Promise<{ monitorId: number, comparisons: Record<string, any> }>}
 */
export async function runScenario (client, s, { seed, analyses = ['matched', 'itt'], windowDays = 6, monitor = {} }) {
  const { monitorId, from, to } = await importScenario(client, s, { seed, windowDays, monitor: { probes: [s.probe ?? 'page'], ...monitor } })
  const metric = s.probe === 'parallel' ? 'request' : 'ttfb'
  /** @type {Record<string, any>} */
  const comparisons = {}
  for (const analysis of analyses) {
    const q = `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}&metric=${metric}&percentiles=${CALIBRATION_PERCENTILES.join(',')}&analysis=${analysis}`
    const res = await client({ method: 'GET', url: `/api/v1/monitors/${monitorId}/comparison?${q}` })
    if (res.status !== 200) throw new Error(`comparison: ${res.status} ${res.text.slice(0, 500)}`)
    comparisons[analysis] = res.json()
  }
  return { monitorId, comparisons }
}

/**
 * A browser scenario (dev/calibration-scenarios.js browserCalibrationScenarios):
 * one monitor in both browsers, each browser's rounds imported with its
 * browser at the same times, each browser's comparison (matched) read back,
 * and the cross-browser view.
 * @param {Client} client
 * @param {{ name: string, rounds: number, browsers: Record<string, import('./calibration-scenarios.js').Scenario> }} s
 * @param {{ seed: number | string, windowDays?: number }} o
 * @returns {Promise<{ monitorId: number, comparisons: Record<string, any>, cross: any }>}
 */
export async function runBrowserScenario (client, s, { seed, windowDays = 6 }) {
  const [first] = Object.values(s.browsers)
  const both = {
    name: s.name,
    locations: first.locations,
    rounds: s.rounds,
    * rows (/** @type {number | string} */ seed, /** @type {number} */ startMs, /** @type {number} */ stepMs) {
      for (const [browser, b] of Object.entries(s.browsers)) {
        for (const row of b.rows(`${seed}|${browser}`, startMs, stepMs)) yield { ...row, browser }
      }
    }
  }
  const { monitorId, from, to } = await importScenario(client, both, { seed, windowDays, monitor: { probes: ['page'], browsers: Object.keys(s.browsers) } })
  const window = `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}&metric=ttfb`
  /** @type {Record<string, any>} */
  const comparisons = {}
  for (const browser of Object.keys(s.browsers)) {
    const res = await client({ method: 'GET', url: `/api/v1/monitors/${monitorId}/comparison?${window}&percentiles=${CALIBRATION_PERCENTILES.join(',')}&browser=${browser}` })
    if (res.status !== 200) throw new Error(`comparison (${browser}): ${res.status} ${res.text.slice(0, 500)}`)
    comparisons[browser] = res.json()
  }
  const res = await client({ method: 'GET', url: `/api/v1/monitors/${monitorId}/browsers?${window}&percentile=50` })
  if (res.status !== 200) throw new Error(`browsers: ${res.status} ${res.text.slice(0, 500)}`)
  return { monitorId, comparisons, cross: res.json() }
}

/**
 * A journey monitor whose named steps s0, s1, … each have their rounds
 * drawn from a scenario of their own (probe journey:s<k>), imported
 * together; each step's comparison (step_ms, matched) read back, as the
 * steps table reads them.
 * @param {Client} client
 * @param {{ name: string, rounds: number, steps: import('./calibration-scenarios.js').Scenario[] }} s
 * @param {{ seed: number | string, windowDays?: number, percentiles?: number[] }} o
 * @returns {Promise<{ monitorId: number, steps: any[] }>}
 */
export async function runJourneyScenario (client, s, { seed, windowDays = 6, percentiles = [50] }) {
  const all = {
    name: s.name,
    locations: s.steps[0].locations,
    rounds: s.rounds,
    * rows (/** @type {number | string} */ seed, /** @type {number} */ startMs, /** @type {number} */ stepMs) {
      for (const [k, step] of s.steps.entries()) yield* step.rows(`${seed}|${k}`, startMs, stepMs)
    }
  }
  const journey = { steps: s.steps.map((_, k) => ({ action: 'navigate', url: `/step-${k}`, name: `s${k}` })) }
  const { monitorId, from, to } = await importScenario(client, all, { seed, windowDays, monitor: { probes: ['journey'], journey } })
  const window = `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}&metric=step_ms&percentiles=${percentiles.join(',')}`
  const steps = []
  for (let k = 0; k < s.steps.length; k++) {
    const res = await client({ method: 'GET', url: `/api/v1/monitors/${monitorId}/comparison?${window}&probe=journey:s${k}` })
    if (res.status !== 200) throw new Error(`comparison (step s${k}): ${res.status} ${res.text.slice(0, 500)}`)
    steps.push(res.json())
  }
  return { monitorId, steps }
}

/**
 * An auto-arm scenario (dev/calibration-scenarios.js autoScenario) through the
 * import and GET /monitors/{id}/auto: the answer a user's monitor with the
 * three arms would give.
 * @param {Client} client
 * @param {import('./calibration-scenarios.js').AutoScenario} s
 * @param {{ seed: number | string, windowDays?: number }} o
 * @returns {Promise<{ monitorId: number, auto: any }>}
 */
export async function runAutoScenario (client, s, { seed, windowDays = 6 }) {
  const { monitorId, from, to } = await importScenario(client, s, { seed, windowDays, monitor: { probes: ['page'], modes: ['h2', 'h3', 'auto'] } })
  const q = `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}&metric=ttfb&percentiles=${CALIBRATION_PERCENTILES.join(',')}`
  const res = await client({ method: 'GET', url: `/api/v1/monitors/${monitorId}/auto?${q}` })
  if (res.status !== 200) throw new Error(`auto: ${res.status} ${res.text.slice(0, 500)}`)
  return { monitorId, auto: res.json() }
}

/**
 * A monitor for one run of a scenario, with its rounds imported as NDJSON
 * in a window that ends a minute ago.
 * @param {Client} client
 * @param {{ name: string, locations: string[], rounds: number, rows: (seed: number | string, startMs: number, stepMs: number) => Iterable<Record<string, any>> }} s
 * @param {{ seed: number | string, windowDays: number, monitor: Record<string, any> }} o
 */
async function importScenario (client, s, { seed, windowDays, monitor }) {
  const created = await client({
    method: 'POST',
    url: '/api/v1/monitors',
    body: JSON.stringify({ url: 'https://calibration.h3lens.test/', label: `calibration: ${s.name} #${seed}`, locations: s.locations, interval_s: 60, paused: true, ...monitor }),
    type: 'application/json'
  })
  if (created.status !== 201) throw new Error(`creating the monitor: ${created.status} ${created.text}`)
  const m = created.json()
  // The window ends a minute ago: nothing is in the future.
  const to = Math.floor((Date.now() - 60e3) / 300e3) * 300e3
  const from = to - windowDays * DAY
  const step = Math.floor((to - from - 60e3) / s.rounds)
  /** @type {string[]} */
  let lines = []
  const flush = async () => {
    if (!lines.length) return
    const res = await client({ method: 'POST', url: `/api/v1/monitors/${m.id}/results/import`, body: lines.join('\n') + '\n', type: 'application/x-ndjson' })
    if (res.status !== 200) throw new Error(`import: ${res.status} ${res.text.slice(0, 500)}`)
    lines = []
  }
  for (const row of s.rows(seed, from + 30e3, step)) {
    lines.push(JSON.stringify(row))
    if (lines.length >= 100000) await flush()
  }
  await flush()
  return { monitorId: m.id, from, to }
}

/**
 * Cells of a comparison that claim a difference, with where they are.
 * @param {any} cmp GET /monitors/{id}/comparison
 * @returns {{ location: string, percentile: number, verdict: string, delta_pct: number }[]}
 */
export function flaggedCells (cmp) {
  return cmp.locations.flatMap((/** @type {any} */ l) => l.rows
    .filter((/** @type {any} */ r) => r.verdict === 'h3_faster' || r.verdict === 'h3_slower')
    .map((/** @type {any} */ r) => ({ location: l.location_id ?? 'all', percentile: r.percentile, verdict: r.verdict, delta_pct: r.delta_pct })))
}

/**
 * Every contrast cell of an auto answer, with where it is.
 * @param {any} answer GET /monitors/{id}/auto
 */
export function autoCells (answer) {
  return answer.locations.flatMap((/** @type {any} */ l) => Object.entries(l.visits).flatMap(([visit, v]) => /** @type {any} */ (v).rows.flatMap((/** @type {any} */ r) =>
    Object.entries(r.contrasts).map(([contrast, c]) => ({ location: l.location_id, visit, percentile: r.percentile, contrast, ...(/** @type {any} */ (c)), received_gain: r.received_gain })))))
}
