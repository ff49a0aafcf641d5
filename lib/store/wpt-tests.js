// WPT tests of h3lens rounds: handing them out (getwork), keeping their
// leases (ping), giving them back (requeue) and storing what comes back
// (workdone). A round at a wpt location is an ordinary job, claimed and
// leased like a Puppeteer agent's (lib/store/jobs.js); its two arms are two WPT
// tests handed to the same agent one after the other, so both arms of a pair
// ran on one machine, and a monitor that runs a journey has two more, each
// sent as a WPT script (lib/measurement/wpt/journey-script.js). The round is
// done when every arm is in.
import { h3Unsupported, QUIC_REFUSED } from '../measurement/h3-unsupported.js'
import { randomBytes } from 'node:crypto'
import { claimJobs, failJob, releaseJob, skipJob, JOB_STATES } from './jobs.js'
import { insertResults } from './results.js'
import { recordRoundOutcomes } from './round-backoffs.js'
import { enqueueForRollup } from './rollups.js'
import { recordCapabilities } from './monitor-origins.js'
import { measurementHints } from './claim-hints.js'
import { getLocation, recordRefusal } from './locations.js'
import { keepImplausibleAsData, IMPLAUSIBLE } from '../measurement/checks.js'
import { expectedProtocolFor, hostPort } from '../measurement/modes.js'
import { protocolReason } from '../measurement/protocol-reason.js'
import { ConflictError, ValidationError } from '../runtime/errors.js'
import { forcedOriginsOf, wptBrowserProblem, wptJob, switchesOf, WPT_TEST_TIMEOUT_S } from '../measurement/wpt/job.js'
import { wptScript } from '../measurement/wpt/journey-script.js'
import { journeyResults } from '../measurement/wpt/journey-results.js'
import { journeyTargets } from '../measurement/journey/steps.js'
import { resultFromDevtools, loadedByItsRecord } from '../measurement/wpt/devtools.js'
import { summarizeWptNetlog } from '../measurement/wpt/netlog.js'
import { replaceWptScreen } from './filmstrips.js'
import { replaceWptNetlog } from './netlogs.js'
import { FILMSTRIP_MAX_BYTES } from '../measurement/visual.js'
import { withTransaction } from './transaction.js'

// How long a test may keep wptagent busy beyond the lease: its page's time
// limit, then starting the browser, reading the trace and screenshots and
// zipping them, which on a slow page took as long again (a page that never
// answered: 154 s from getwork to workdone on a busy machine, against a
// lease of 180 s). The agent says nothing in between.
const WPT_TEST_SPAN_S = 2 * WPT_TEST_TIMEOUT_S

/**
 * How a WPT agent reaches a page: the lab's address and certificate pin for
 * a lab page, null for any other. Throws, with the reason, for a page the
 * agent may not or cannot load (a private address while those are not
 * allowed; a lab it cannot reach).
 * @typedef {(url: string) => Promise<{ spki: string, address: string } | null>} TargetCheck
 */

// Journey-only rounds skipped in one ask for work, at most (claimPageRound).
const MAX_SKIPPED_PER_CLAIM = 10

/**
 * The next test for one agent, or null. A test the agent was sent and never
 * returned means it lost it (wptagent asks for work only when idle): its
 * round fails this attempt and is retried with back-off, as when a Puppeteer
 * agent reports a failed job. So does a round whose page `target` refuses,
 * with the reason, and the agent gets no test this time.
 * @param {import('pg').Pool} db
 * @param {{ agent: { id: number, location_id: string, name?: string }, leaseSeconds: number, random?: () => number, target?: TargetCheck }} opts
 * @returns {Promise<Record<string, any> | null>} the job JSON
 */
export async function nextTest (db, { agent, leaseSeconds, random = Math.random, target = async () => null }) {
  await dropLostTests(db, agent)
  const lease = leaseSeconds + WPT_TEST_SPAN_S
  const pending = await sendPending(db, { agent, lease, target })
  if (pending) return pending
  const claimed = await claimRound(db, { agent, lease })
  if (!claimed) return null
  const { job, page, journey } = claimed
  // The page's arms, then the journey's, each probe's arms in random order.
  const arms = [...(page ? ['page'] : []), ...(journey ? ['journey'] : [])].flatMap((probe) => {
    const modes = [...job.modes]
    for (let i = modes.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1))
      ;[modes[i], modes[j]] = [modes[j], modes[i]]
    }
    return modes.map((mode) => ({ probe, mode }))
  })
  /** @type {unknown[]} */
  const values = []
  const tuples = arms.map(({ probe, mode }, position) => {
    // The auto arm is its first visit on a WPT agent: wptagent's repeat
    // view keeps the cache, which would report a revalidated page's cached
    // protocol (agents/visits.js), so it asks for none. A journey has none.
    values.push(testId(job.id, mode, probe), job.id, job.attempts, mode, position, job.location_id, agent.id,
      probe === 'page' && Boolean(job.repeat_view) && mode !== 'auto', probe, probe === 'journey' ? JSON.stringify(journey) : null)
    const n = values.length
    return `(${Array.from({ length: 10 }, (_, k) => `$${n - 9 + k}`).join(', ')})`
  })
  await db.query(`INSERT INTO wpt_tests (test_id, job_id, attempt, mode, position, location_id, agent_id, repeat_view, probe, journey)
                  VALUES ${tuples.join(', ')}`, values)
  return sendPending(db, { agent, lease, target })
}

/**
 * Why a monitor's journey is not sent to a WebPageTest location: its first
 * step without a WPT form (lib/measurement/wpt/journey-script.js).
 * @param {string} locationId
 * @param {{ step: string, reason: string }} untranslatable
 */
export function journeyNotSent (locationId, { step, reason }) {
  return `WebPageTest location ${locationId} does not run this journey, which runs on Puppeteer agents only: ${step} has no WebPageTest form: ${reason}`
}

/**
 * The next round the agent can run, with what it runs there: the page
 * loads, and the journey when it has a WPT form. A round with neither (a
 * journey-only monitor whose journey has a step WPT cannot run) is skipped
 * here, saying why (docs/JOURNEYS.md); a monitor that runs the page probe
 * too gets its page loads, and its results say why the journey is missing
 * (finishRoundIfComplete).
 * @param {import('pg').Pool} db
 * @param {{ agent: { id: number, location_id: string }, lease: number }} opts
 * @returns {Promise<{ job: Record<string, any>, page: boolean, journey: Record<string, any> | null } | null>}
 */
async function claimRound (db, { agent, lease }) {
  for (let i = 0; i < MAX_SKIPPED_PER_CLAIM; i++) {
    const [job] = await claimJobs(db, { agentId: agent.id, locationId: agent.location_id, limit: 1, leaseSeconds: lease })
    if (!job) return null
    const probes = job.probes ?? ['page']
    const page = probes.includes('page')
    const wpt = probes.includes('journey') && job.journey ? wptScript(job.journey) : null
    if (page || wpt?.script) return { job, page, journey: wpt?.script ? job.journey : null }
    const reason = wpt?.untranslatable
      ? journeyNotSent(agent.location_id, wpt.untranslatable)
      : `WebPageTest location ${agent.location_id} runs page loads and journeys, and this monitor runs neither`
    await skipJob(db, { jobId: job.id, agentId: agent.id, reason })
  }
  return null
}

/**
 * Hand out the agent's next pending arm, extending its round's lease.
 * @param {import('pg').Pool} db
 * @param {{ agent: { id: number, location_id: string, name?: string }, lease: number, target: TargetCheck }} opts
 */
async function sendPending (db, { agent, lease, target }) {
  const { rows } = await db.query(
    `WITH next AS (
       SELECT t.test_id FROM wpt_tests t JOIN jobs j ON j.id = t.job_id
        WHERE t.agent_id = $1 AND t.state = 'pending' AND j.state = 'leased' AND j.lease_owner = $1 AND j.attempts = t.attempt
        ORDER BY t.job_id, t.position LIMIT 1 FOR UPDATE OF t SKIP LOCKED)
     UPDATE wpt_tests t SET state = 'sent', sent_at = now() FROM next WHERE t.test_id = next.test_id
     RETURNING t.test_id, t.job_id, t.mode, t.probe, t.journey`, [agent.id])
  const test = rows[0]
  if (!test) return null
  const journey = test.probe === 'journey' ? test.journey : null
  const { rows: jobs } = await db.query(
    `UPDATE jobs j SET lease_expires_at = now() + make_interval(secs => $2), updated_at = now() FROM monitors m
      WHERE j.id = $1 AND m.id = j.monitor_id
     RETURNING j.id, j.monitor_id, j.location_id, j.due_at, m.url, m.modes, m.probes, m.repeat_view, m.options, m.aa_protocol`,
    // A journey may take its own budget, beyond a page's.
    [test.job_id, lease + (journey ? Math.ceil(journey.timeout_ms / 1000) : 0)])
  const job = jobs[0]
  // Every page the journey navigates to is checked as the monitor URL is,
  // all at once: each lookup may take its resolver's time limit, and the
  // agent waits 10 s for this answer.
  const journeyUrls = journey ? journeyTargets(journey).map(([u]) => u) : []
  // The server's refusal, not the agent's fault: the agent's health stays as it is.
  const refuse = async (/** @type {string} */ why) => {
    await db.query("UPDATE wpt_tests SET state = 'dropped' WHERE job_id = $1 AND state IN ('pending', 'sent')", [job.id])
    await failJob(db, { jobId: job.id, agentId: agent.id, error: `WPT location ${job.location_id} cannot measure ${job.url}: ${why}`, agentFault: false })
      .catch((e) => { if (!(e instanceof ConflictError)) throw e })
    return null
  }
  let lab
  try {
    [lab] = await Promise.all([target(job.url), ...journeyUrls.map((url) => target(url))])
  } catch (/** @type {any} */ err) {
    return refuse(err.message)
  }
  const [hints, location, landed] = await Promise.all([measurementHints(db, job), getLocation(db, job.location_id),
    expectedProtocolFor(test.mode, job) === 'h3' ? landingUrl(db, job) : null])
  // A location whose browser was set before only Chromium-based ones were taken.
  const browserProblem = location?.profile?.wpt_browser ? wptBrowserProblem(String(location.profile.wpt_browser)) : null
  if (browserProblem) return refuse(`its browser ${browserProblem}; name another with h3lens agents wpt-key --location ${job.location_id} --wpt-browser Chrome`)
  // The H3 arm of a journey forces QUIC on every origin it navigates to, as
  // a Puppeteer agent's does; the page's, on the origin it redirected to.
  const forceOrigins = [...hints.force_quic_origins, ...journeyUrls.filter((u) => u.startsWith('https:')), ...(landed ? [landed] : [])]
  const script = journey ? wptScript(journey).script : null
  const wpt = wptJob({ testId: test.test_id, mode: test.mode, job, forceOrigins, location, lab, journey: journey && script ? { script, step_timeout_ms: journey.step_timeout_ms } : null })
  await db.query('UPDATE wpt_tests SET add_cmd_line = $2 WHERE test_id = $1', [test.test_id, wpt.addCmdLine])
  return wpt
}

/**
 * Where the monitor's page ended up at this location when its H2 arm last
 * loaded it whole (the agent's final_url), where that is another https origin
 * than the page's own: a page that redirects (http to https, an apex to its
 * www). A Puppeteer agent follows the redirects before each round and
 * forces QUIC on every origin of them; a WebPageTest agent cannot, so its
 * H3 arm forces the origin the page last landed on. (The first round at a
 * location has none yet: its H3 arm loads the page's later origins over H2,
 * a protocol mismatch that says so.)
 * @param {import('pg').Pool} db
 * @param {{ monitor_id: number, location_id: string, url: string }} job
 * @returns {Promise<string | null>}
 */
async function landingUrl (db, job) {
  const { rows: [row] } = await db.query(
    `SELECT details->'wpt'->>'final_url' AS url FROM results
      WHERE monitor_id = $1 AND location_id = $2 AND browser = 'chromium' AND mode = 'h2' AND probe = 'page' AND view = 'first'
        AND status = 'ok' AND details->'wpt'->>'final_url' IS NOT NULL AND time > now() - interval '7 days'
      ORDER BY time DESC LIMIT 1`, [job.monitor_id, job.location_id])
  if (!row) return null
  let landed
  try {
    landed = new URL(row.url)
  } catch {
    return null
  }
  return landed.protocol === 'https:' && landed.origin !== new URL(job.url).origin ? landed.origin : null
}

/**
 * Tests this agent was sent but never returned: their round fails this
 * attempt (retried with back-off until attempts run out).
 * @param {import('pg').Pool} db
 * @param {{ id: number, name?: string }} agent
 */
async function dropLostTests (db, agent) {
  const { rows } = await db.query(
    `UPDATE wpt_tests t SET state = 'dropped' FROM jobs j
      WHERE t.agent_id = $1 AND t.state IN ('pending', 'sent') AND j.id = t.job_id
        AND (t.state = 'sent' OR j.attempts <> t.attempt OR j.state <> 'leased' OR j.lease_owner IS DISTINCT FROM $1)
     RETURNING t.test_id, t.job_id, t.state, t.attempt, j.attempts, j.state AS job_state, j.lease_owner`, [agent.id])
  for (const t of rows) {
    if (t.job_state !== JOB_STATES.leased || t.lease_owner !== agent.id || t.attempts !== t.attempt) continue
    await db.query("UPDATE wpt_tests SET state = 'dropped' WHERE job_id = $1 AND attempt = $2 AND state = 'pending'", [t.job_id, t.attempt])
    await failJob(db, { jobId: t.job_id, agentId: agent.id, error: `WPT agent ${agent.name ?? agent.id} asked for new work without returning test ${t.test_id}` })
      .catch((err) => { if (!(err instanceof ConflictError)) throw err })
  }
}

/**
 * The agent is still on this test (ping.php with test=): extend its round's lease.
 * @param {import('pg').Pool} db
 * @param {{ agent: { id: number }, testId: string, leaseSeconds: number }} q
 */
export async function keepTestLeased (db, { agent, testId, leaseSeconds }) {
  await db.query(
    `UPDATE jobs j SET lease_expires_at = now() + make_interval(secs => $3), updated_at = now() FROM wpt_tests t
      WHERE t.test_id = $1 AND t.agent_id = $2 AND j.id = t.job_id AND j.state = 'leased' AND j.lease_owner = $2 AND j.attempts = t.attempt`,
    [testId, agent.id, leaseSeconds + WPT_TEST_SPAN_S])
}

/**
 * requeue.php: the agent was told to stop mid-test. Its round goes back to
 * the queue without using up an attempt, to be run again with new tests,
 * in every arm: an arm already done is dropped too. The new tests carry the
 * same attempt number, so a done arm kept would be paired with the new
 * run's arms (two of its mode, one of them picked at random), an H2 and an
 * H3 load from different times.
 * @param {import('pg').Pool} db
 * @param {{ testId: string, location: string }} q
 * @returns {Promise<boolean>} whether a round was given back
 */
export async function requeueTest (db, { testId, location }) {
  const test = await getTest(db, testId)
  if (!test || test.location_id !== location) return false
  const { rows: [job] } = await db.query('SELECT attempts, state, lease_owner FROM jobs WHERE id = $1', [test.job_id])
  if (job?.attempts !== test.attempt || job.state !== JOB_STATES.leased || job.lease_owner !== test.agent_id) return false
  await db.query("UPDATE wpt_tests SET state = 'dropped' WHERE job_id = $1 AND attempt = $2 AND state IN ('pending', 'sent', 'done')", [test.job_id, test.attempt])
  return releaseJob(db, { jobId: test.job_id, agentId: test.agent_id })
}

/**
 * @param {import('pg').Pool | import('pg').PoolClient} db
 * @param {string} testId
 */
export async function getTest (db, testId) {
  const { rows } = await db.query('SELECT * FROM wpt_tests WHERE test_id = $1', [testId])
  return rows[0] ?? null
}

/**
 * What an upload says of itself before its zip is read: a test this
 * location gave this agent, of the one run h3lens asks for, and a repeat
 * view (cached=1) only where the test asked for one. Checked before the zip is
 * read, so that an upload for no test costs no decompression, and a repeat
 * view the test never had cannot stand in for the first view it did.
 * @param {import('pg').Pool} db
 * @param {{ agent: { id: number, location_id: string, name?: string }, testId: string, run?: number | null, cached?: boolean | null }} upload
 * @returns {Promise<any>} the test (its wpt_tests row)
 * @throws {ValidationError} naming id, pc, run or cached
 */
export async function checkUpload (db, { agent, testId, run = null, cached = null }) {
  const test = await getTest(db, testId)
  if (!test || test.location_id !== agent.location_id) throw new ValidationError(`id: no test "${String(testId).slice(0, 100)}" was given to location ${agent.location_id}`, 'id')
  // Only the agent the test was given to uploads it: the location's other
  // agents hold the same key, and their upload would be filed under it.
  if (String(test.agent_id) !== String(agent.id)) throw new ValidationError(`pc: test ${testId} was given to another agent of location ${agent.location_id}, not to ${agent.name ?? agent.id}`, 'pc')
  if (run !== null && run !== 1) throw new ValidationError(`run: ${run}; h3lens asks for one run per test`, 'run')
  if (cached && !test.repeat_view) throw new ValidationError(`cached: test ${testId} asked for no repeat view; cached=1 names one`, 'cached')
  return test
}

/**
 * @typedef {{ run: number, cached: boolean, step?: number, devtools: Record<string, any> | null, trace?: import('../measurement/wpt/trace.js').TraceTimes | null,
 *   netlog: Buffer | null, screen?: Buffer | null, netlogSummary?: ReturnType<typeof summarizeWptNetlog> }} UploadedView
 *   step: a script's recorded step (1 when absent); trace: what its trace says of its navigations (lib/measurement/wpt/trace.js);
 *   netlogSummary: the net log summarised where the zip was read (lib/measurement/wpt/zip-thread.js), else here
 */

/**
 * workdone.php: turn the uploaded views into result rows, check them as any
 * submitted result, and store them with their net logs before answering. A
 * view already received (same test, run, cached) is not stored again. When
 * the upload completes its test (`done`), and the round's other arm is in
 * too, both become results and the round is done.
 * @param {import('pg').Pool} db
 * @param {{ agent: { id: number, location_id: string, name?: string }, test: any, views: UploadedView[], agentError?: string | null,
 *   done: boolean, run?: number | null, cached?: boolean | null }} upload
 *   test: the upload's test as checkUpload found it, before the zip was read
 * @returns {Promise<{ stored: number, duplicates: number, round_done: boolean, implausible: { view: string, reason: string }[] }>}
 *   implausible: the views stored as error results because their values could not be true
 */
export async function receiveWorkdone (db, { agent, test, views, agentError = null, done, run = null, cached = null }) {
  const testId = test.test_id
  for (const v of views) {
    const zipTestId = v.devtools?.pageData?.testID
    if (zipTestId !== undefined && zipTestId !== testId) throw new ValidationError(`result.zip is for test "${String(zipTestId).slice(0, 100)}", not ${testId}`, 'file')
    if (v.run !== 1) throw new ValidationError(`result.zip has run ${v.run}; h3lens asks for one run per test`, 'file')
    if (v.cached && !test.repeat_view) throw new ValidationError('result.zip has a repeat view, which this test did not ask for', 'file')
  }
  const { rows: monitors } = await db.query('SELECT m.aa_protocol, m.url FROM jobs j JOIN monitors m ON m.id = j.monitor_id WHERE j.id = $1', [test.job_id])
  const expected = expectedProtocolFor(test.mode, monitors[0])

  // Which views this upload stands for: a sharded upload names its own
  // (run, cached); a whole one holds every view of the test.
  const receivedAt = new Date().toISOString()
  const wanted = run !== null ? [{ run, cached: Boolean(cached) }] : [{ run: 1, cached: false }, ...(test.repeat_view ? [{ run: 1, cached: true }] : [])]
  const rows = test.probe === 'journey'
    ? [journeyRun(test, views, { expected, agentError, url: monitors[0].url, measuredAt: receivedAt, armProtocol: monitors[0]?.aa_protocol ?? null })]
    : wanted.map(({ run: r, cached: c }) => {
        const v = views.find((x) => x.run === r && x.cached === c && (x.step ?? 1) === 1) ?? null
        if (!v?.devtools && !agentError && !(c && views.some((x) => !x.cached))) {
          throw new ValidationError(`result.zip has no ${r}${c ? '_Cached' : ''}_devtools_requests.json.gz`, 'file')
        }
        // A whole upload's error= is the test's: the agent keeps the error
        // of any view it ran and sends it once with every view. A view of
        // several whose own record says it loaded is not failed by it.
        const othersError = agentError !== null && wanted.length > 1 && loadedByItsRecord(v?.devtools ?? null)
        const result = resultFromDevtools(v?.devtools ?? null, { mode: test.mode, view: c ? 'repeat' : 'first', expected, agentError: othersError ? null : agentError, trace: v?.trace ?? null })
        if (othersError) result.notes = [...(result.notes ?? []), { code: 'wpt_other_view_error', message: `the agent reported "${String(agentError).slice(0, 500)}" for this test; this view's own record says it loaded, so the error is another view's` }]
        result.measured_at = receivedAt
        result.flags = test.add_cmd_line ? switchesOf(test.add_cmd_line) : []
        // An A/A arm says which protocol it was forced to, as a Puppeteer agent's does.
        if (monitors[0]?.aa_protocol) result.details.arm_protocol = monitors[0].aa_protocol
        // Why its page came over its protocol, as for a Puppeteer agent's run
        // (wptagent records no alternateProtocolUsage: the reason rests on the
        // protocol and the Alt-Svc the agent saw).
        result.details.protocol_reason = protocolReason({ ...result, arm_protocol: result.details.arm_protocol, requests_detail: result.details.requests, origins: result.details.origins })
        // Summarised where the zip was read (./zip-thread.js), off the API's thread.
        const summary = v?.netlogSummary ?? (v?.netlog ? summarizeWptNetlog(v.netlog) : null)
        const netlog = summary ? { gzip: summary.kept, info: summary.info, rawBytes: summary.rawBytes, notes: summary.notes } : null
        if (netlog) {
          result.details.netlog = netlog.info
          if (netlog.notes.length) result.notes = [...(result.notes ?? []), ...netlog.notes]
        }
        // The screenshot at the end of the load: a one-frame filmstrip (docs/FILMSTRIPS.md).
        const screen = v?.screen && v.screen.length <= FILMSTRIP_MAX_BYTES ? v.screen : null
        if (screen) result.details.filmstrip = { kind: 'wpt_screen', frames: 1, bytes: screen.length, step_ms: 100, progress: [], uploaded: true, error: null }
        return { run: r, cached: c, results: [result], netlog, screen }
      })
  // As for a Puppeteer agent's round, a run is data: values that cannot be
  // true make that arm an error result with the reason, and the round is
  // done, rather than refused and run again until it is skipped.
  /** @type {{ view: string, reason: string }[]} */
  const implausible = []
  for (const result of rows.flatMap((r) => r.results)) {
    keepImplausibleAsData(result, { expectedProtocol: () => expected })
    // Those checks, or the reading of the upload (a first byte before its navigation).
    if (result.error?.startsWith(`${IMPLAUSIBLE}: `)) implausible.push({ view: result.view, reason: result.error.slice(IMPLAUSIBLE.length + 2) })
  }

  return withTransaction(db, async (client) => {
    const { rows: jobs } = await client.query('SELECT id, monitor_id, location_id, due_at, state, attempts, lease_owner FROM jobs WHERE id = $1 FOR UPDATE', [test.job_id])
    const job = jobs[0]
    // As for Puppeteer agents: the lease holder's results count even after
    // its lease ran out, unless the round was run again or cancelled.
    const { rows: [now] } = await client.query('SELECT state FROM wpt_tests WHERE test_id = $1', [testId])
    if (now.state === 'dropped' || job.attempts !== test.attempt || job.lease_owner !== test.agent_id || job.state === JOB_STATES.cancelled) {
      throw new ConflictError(`test ${testId} was given back, lost or cancelled, and its round runs again with new tests; its results were not stored`, 'lease_lost')
    }
    let fresh = 0
    for (const r of rows) {
      // A page's view is one result; a journey's run is its results, the whole journey's and each named step's.
      const { rowCount } = await client.query(
        'INSERT INTO wpt_runs (test_id, run, cached, result) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
        [testId, r.run, r.cached, JSON.stringify(test.probe === 'journey' ? r.results : r.results[0])])
      fresh += rowCount ?? 0
      const [result] = r.results
      // A view stored now is the round's current attempt's: what an earlier
      // attempt left for this arm (a net log, a screenshot) gives way to this
      // run's, or goes when this run has none. A journey's test keeps none.
      if (rowCount && test.probe !== 'journey') {
        const arm = { jobId: job.id, mode: test.mode, view: result.view, monitorId: job.monitor_id, locationId: job.location_id }
        await replaceWptNetlog(client, { ...arm, agentId: test.agent_id, netlog: r.netlog })
        await replaceWptScreen(client, { ...arm, tMs: result.load_ms ?? 0, jpeg: r.screen ?? null })
      }
    }
    const browser = rows.flatMap((r) => r.results).find((r) => r.browser_version)?.browser_version ?? null
    await client.query('UPDATE agents SET last_result_at = now(), browser_version = coalesce($2, browser_version) WHERE id = $1', [test.agent_id, browser])
    if (done) await client.query("UPDATE wpt_tests SET state = 'done', done_at = coalesce(done_at, now()) WHERE test_id = $1 AND state <> 'dropped'", [testId])
    if (fresh && implausible.length) {
      await recordRefusal(client, job.location_id, { agent: agent.name ?? null, test_id: testId, status: 200, reason: `stored as an error: ${IMPLAUSIBLE}: ${implausible[0].reason}` })
    }
    const roundDone = done && await finishRoundIfComplete(client, job, test)
    return { stored: fresh, duplicates: rows.length - fresh, round_done: roundDone, implausible: fresh ? implausible : [] }
  })
}

/**
 * workdone answered 4xx: nothing of the upload was stored. The refusal is
 * kept as the location's last one; and when the test's round is still this
 * agent's attempt, the round fails that attempt with the reason (retried
 * with back-off, as when a Puppeteer agent reports a failed job) instead of
 * waiting for the agent to ask for new work, which it does without a word
 * about the refusal (it ignores the status). A lease lost (409) leaves the
 * round alone: it already runs again.
 * @param {import('pg').Pool} db
 * @param {{ agent: { id: number, location_id: string, name?: string }, testId: string | null, status: number, reason: string }} refusal
 * @returns {Promise<{ round_failed: boolean }>}
 */
export async function refuseUpload (db, { agent, testId, status, reason }) {
  await recordRefusal(db, agent.location_id, { agent: agent.name ?? null, test_id: testId, status, reason })
  const test = testId ? await getTest(db, testId) : null
  if (!test || status === 409 || test.location_id !== agent.location_id || test.agent_id !== agent.id || !['pending', 'sent'].includes(test.state)) return { round_failed: false }
  const { rowCount } = await db.query(
    `UPDATE wpt_tests t SET state = 'dropped' FROM jobs j
      WHERE t.job_id = $1 AND t.attempt = $2 AND t.state IN ('pending', 'sent') AND j.id = t.job_id
        AND j.state = 'leased' AND j.lease_owner = $3 AND j.attempts = t.attempt`,
    [test.job_id, test.attempt, agent.id])
  if (!rowCount) return { round_failed: false }
  await failJob(db, { jobId: test.job_id, agentId: agent.id, error: `WPT agent ${agent.name ?? agent.id}: the upload of test ${testId} was refused (${status}): ${reason}` })
    .catch((err) => { if (!(err instanceof ConflictError)) throw err })
  return { round_failed: true }
}

/**
 * An H3 test whose page's origin refused QUIC is "H3 not supported" where
 * the origin advertises no h3, as a Puppeteer agent judges it from the
 * Alt-Svc its redirect discovery saw in the same round (agents/measure.js
 * judgeFailure): here, what the round's own H2 arm saw of the origin, or
 * where that arm did not reach it, what the monitor's runs at the location
 * saw last (monitor_origins). Where neither saw it, it stays a failure.
 * @param {import('pg').PoolClient} client
 * @param {{ monitor_id: number, location_id: string, url: string }} job url: the monitor's
 * @param {Record<string, any>[]} results the round's, edited in place
 */
async function judgeH3Unsupported (client, job, results) {
  const armProtocol = (/** @type {Record<string, any>} */ r) => r.details?.arm_protocol ?? r.mode
  const refused = results.filter((r) => armProtocol(r) === 'h3' && r.status === 'error' && !r.observed_protocol && QUIC_REFUSED.test(r.error ?? ''))
  /** @type {(r: Record<string, any>, origin: string) => { h3_advertised: boolean } | undefined} */
  const seenBy = (r, origin) => (Array.isArray(r.details?.origins) ? r.details.origins : []).find((/** @type {any} */ o) => o?.origin === origin)
  for (const r of refused) {
    // The origin that refused QUIC: where the run's document went last (its
    // last document request, or the agent's final URL), else the page's;
    // one the test forced, as a Puppeteer agent requires.
    const documents = (Array.isArray(r.details?.requests) ? r.details.requests : []).filter((/** @type {any} */ q) => q?.type === 'Document')
    const url = documents.at(-1)?.url ?? r.details?.wpt?.final_url ?? job.url
    let origin
    try {
      origin = new URL(url)
    } catch {
      continue
    }
    if (origin.protocol !== 'https:' || !forcedOriginsOf(r.flags ?? []).includes(hostPort(origin.href))) continue
    const sameRound = results.filter((x) => armProtocol(x) === 'h2' && x.observed_protocol).map((x) => seenBy(x, origin.origin)).find(Boolean)
    const advertised = sameRound
      ? Boolean(sameRound.h3_advertised)
      : (await client.query('SELECT h3_advertised FROM monitor_origins WHERE monitor_id = $1 AND location_id = $2 AND origin = $3',
          [job.monitor_id, job.location_id, origin.origin])).rows[0]?.h3_advertised ?? true
    if (advertised) continue
    const { error, failure_kind: kind } = h3Unsupported(origin.origin, r.error)
    r.error = error
    r.details = { ...r.details, failure_kind: kind }
  }
}

/**
 * When every arm of the round's attempt is done, store their results and
 * mark the round done (lib/store/jobs.js submitJobResults does the same for
 * Puppeteer agents).
 * @param {import('pg').PoolClient} client
 * @param {{ id: number, monitor_id: number, location_id: string, due_at: Date, state: string }} job
 * @param {{ attempt: number, agent_id: number }} test
 */
async function finishRoundIfComplete (client, job, test) {
  const { rows: arms } = await client.query("SELECT test_id, state, probe FROM wpt_tests WHERE job_id = $1 AND attempt = $2 AND state <> 'dropped'", [job.id, test.attempt])
  if (arms.some((a) => a.state !== 'done')) return false
  const { rows: runs } = await client.query(
    'SELECT result FROM wpt_runs WHERE test_id = ANY($1) ORDER BY test_id, run, cached', [arms.map((a) => a.test_id)])
  const results = runs.flatMap((r) => (Array.isArray(r.result) ? r.result : [r.result]))
  const { rows: [monitor] } = await client.query('SELECT url, probes, journey FROM monitors WHERE id = $1', [job.monitor_id])
  // A monitor whose journey has no WPT form gets its page loads here, each saying why the journey is not among them.
  if (!arms.some((a) => a.probe === 'journey')) {
    const untranslatable = monitor?.probes?.includes('journey') && monitor.journey ? wptScript(monitor.journey).untranslatable : null
    if (untranslatable) for (const r of results) r.notes = [...(r.notes ?? []), { code: 'journey_not_sent', message: journeyNotSent(job.location_id, untranslatable) }]
  }
  if (monitor) await judgeH3Unsupported(client, { ...job, url: monitor.url }, results)
  const { rows: agents } = await client.query('SELECT version FROM agents WHERE id = $1', [test.agent_id])
  const agentVersion = agents[0]?.version ? `wptagent ${agents[0].version}` : 'wptagent'
  const inserted = await insertResults(client, { job, agentId: test.agent_id, agentVersion, results })
  await recordCapabilities(client, { monitorId: job.monitor_id, locationId: job.location_id, rows: inserted })
  await enqueueForRollup(client, inserted.map((r) => r.id))
  if (job.state !== JOB_STATES.done) await recordRoundOutcomes(client, [{ job, results }])
  await client.query(
    `UPDATE jobs SET state = 'done', finished_at = coalesce(finished_at, now()), lease_expires_at = NULL, updated_at = now()
      WHERE id = $1`, [job.id])
  return true
}

/**
 * A journey test's upload → its results (lib/measurement/wpt/journey-results.js),
 * read against the journey as it was sent, with what every WPT result
 * carries: flags, the A/A arm's protocol, the protocol's reason.
 * @param {Record<string, any>} test the wpt_tests row
 * @param {UploadedView[]} views
 * @param {{ expected: string | null, agentError: string | null, url: string, measuredAt: string, armProtocol: string | null }} ctx
 */
function journeyRun (test, views, { expected, agentError, url, measuredAt, armProtocol }) {
  const steps = views.filter((v) => v.run === 1 && !v.cached)
  const devtools = new Map(steps.map((v) => [v.step ?? 1, v.devtools]))
  if (![...devtools.values()].some(Boolean) && !agentError) throw new ValidationError('result.zip has no 1_devtools_requests.json.gz (the journey\'s first recorded step)', 'file')
  const { recorded, labels } = wptScript(test.journey)
  // The test was sent with this script, so it has one.
  if (!recorded) throw new Error(`test ${test.test_id}: its journey has no WebPageTest script`)
  const flags = test.add_cmd_line ? switchesOf(test.add_cmd_line) : []
  const forced = forcedOriginsOf(flags)
  const traces = new Map(steps.map((v) => [v.step ?? 1, v.trace ?? null]))
  const results = journeyResults(test.journey, recorded, devtools, { mode: test.mode, expected, agentError, url, forcedOrigins: forced.map((hp) => `https://${hp}`), labels, traces })
  for (const result of results) {
    result.measured_at = measuredAt
    result.flags = flags
    result.details.forced_origins = forced
    if (armProtocol) result.details.arm_protocol = armProtocol
    result.details.protocol_reason = protocolReason({ ...result, arm_protocol: result.details.arm_protocol, requests_detail: result.details.requests, origins: result.details.origins })
  }
  return { run: 1, cached: false, results, netlog: null, screen: null }
}

/**
 * A test id: the round's job id, the arm, the journey's mark, and random
 * characters (requeue.php carries no key, so the id itself is what proves
 * the caller was given it). Letters, digits and underscores only: the agent
 * names files after it.
 * @param {number} jobId
 * @param {string} mode
 * @param {string} probe
 */
function testId (jobId, mode, probe) {
  return `h3l_${jobId}_${mode}${probe === 'journey' ? '_journey' : ''}_${randomBytes(6).toString('hex')}`
}
