// Schemathesis fuzzes every operation of the served OpenAPI document against
// the real API and PostgreSQL, with a write key and an agent token: valid and
// invalid requests generated from the schemas, then sequences that follow
// the responses (create, read, change, delete). It fails on any 5xx, any
// status or content type the document does not list for the operation, and
// any response that does not match its documented schema (a 400 without
// `field` among them). Bounded by the examples per operation, not by time:
// about 120 s of CPU, and 5–9 minutes of wall time in the suite's concurrent
// lane, whose lower priority leaves its requests waiting behind the
// browsers. H3LENS_FUZZ_SEED replays a run; a failing run prints its seed
// and a curl line per failure.
// run-tests: concurrent — its one process is Schemathesis against this file's own API on a port of its own; it measures no time
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { createTestApp } from './helpers/app.js'
import { FUZZ_DIR, hasSchemathesis, schemathesisBin, schemathesisVersion } from '../dev/schemathesis.js'
import { createMonitor } from '../lib/store/monitors.js'
import { upsertLocation } from '../lib/store/locations.js'
import { createWptKey } from '../lib/store/wpt-keys.js'
import { createChannel } from '../lib/store/alert-channels.js'
import { createRule } from '../lib/store/alert-rules.js'
import { createSite } from '../lib/store/rum-sites.js'

// Test cases per operation in the fuzzing phase; the coverage phase adds a
// fixed set of boundary cases per parameter. H3LENS_FUZZ_EXAMPLES raises it
// for a longer hunt.
const EXAMPLES = Number(process.env.H3LENS_FUZZ_EXAMPLES ?? 15)
const CHECKS = ['not_a_server_error', 'status_code_conformance', 'content_type_conformance', 'response_schema_conformance']
// A hard stop far above a normal run, inside the runner's limit for the file
// (scripts/run-tests.js, H3LENS_TEST_TIMEOUT_S), so a stuck run fails with
// its output rather than being cut off.
const RUN_LIMIT_MS = (Number(process.env.H3LENS_TEST_TIMEOUT_S ?? 900) - 45) * 1000

const installed = hasSchemathesis()

test('Schemathesis finds no server error and no undocumented answer on any operation', {
  skip: !installed && 'Schemathesis is not installed: `npm test` installs it (node scripts/setup.js --test); setup printed why it could not',
  timeout: RUN_LIMIT_MS + 30_000
}, async () => {
  const t = await createTestApp({ H3LENS_AGENT_REQUESTS_PER_MIN: '0' })
  try {
    // Something behind every kind of id, so generated requests reach past the 404s.
    await upsertLocation(t.db, { id: 'wpt-fuzz', name: 'WPT fuzz', region: 'Europe', kind: 'wpt' })
    const wptKey = (await createWptKey(t.db, { location: 'wpt-fuzz' })).key
    const agentToken = await t.agentToken('local')
    const monitor = await createMonitor(t.db, { url: 'https://lab.h3lens.test:8443/page-15k.html', interval_s: 60, locations: ['local', 'wpt-fuzz'] }, { allowPrivateTargets: true })
    await t.db.query("INSERT INTO jobs (monitor_id, location_id, due_at) SELECT $1, l, now() - make_interval(mins => g) FROM unnest(ARRAY['local', 'wpt-fuzz']) l, generate_series(1, 5) g", [monitor.id])
    const rows = ['h2', 'h3'].map((mode) => JSON.stringify({ time: new Date(Date.now() - 3600e3).toISOString(), location_id: 'local', mode, ttfb_ms: 20, load_ms: 60 }))
    const imported = await t.app.inject({ method: 'POST', url: `/api/v1/monitors/${monitor.id}/results/import`, headers: { 'content-type': 'application/x-ndjson' }, payload: rows.join('\n') })
    assert.equal(imported.statusCode, 200, imported.body)
    const { rows: [result] } = await t.db.query('SELECT id FROM results WHERE monitor_id = $1 LIMIT 1', [monitor.id])
    const claimed = await t.app.inject({ method: 'POST', url: '/api/v1/agent/claim', headers: { authorization: `Bearer ${agentToken}` }, payload: { limit: 3 } })
    const job = claimed.json().jobs[0]
    // A webhook on a closed loopback port: a test send fails at once and goes nowhere else.
    const channel = await createChannel(t.db, { kind: 'webhook', name: 'fuzz', url: 'http://127.0.0.1:9/hook', secret: 'x'.repeat(16) }, { allowPrivateTargets: true })
    const rule = await createRule(t.db, { kind: 'location_silent', window_s: 600 })
    const site = await createSite(t.db, { name: 'fuzz', origins: ['https://example.com'] })
    const queued = await t.app.inject({ method: 'POST', url: '/api/v1/journeys/trials', payload: { location_id: 'local', url: 'https://example.com/', journey: { steps: [{ action: 'navigate', url: '/login' }] } } })
    assert.equal(queued.statusCode, 202, queued.body)
    const trial = queued.json()
    const ids = {
      '/api/v1/monitors/': monitor.id,
      '/api/v1/results/': result.id,
      '/api/v1/agent/jobs/': job.id,
      '/api/v1/channels/': channel.id,
      '/api/v1/alert-rules/': rule.id,
      '/api/v1/rum/sites/': site.id,
      '/api/v1/journeys/trials/': trial.id,
      '/api/v1/agent/trials/': trial.id
    }

    await t.app.listen({ host: '127.0.0.1', port: 0 })
    const base = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (t.app.server.address()).port}`
    const operations = Object.values((await t.app.inject({ url: '/api/openapi.json' })).json().paths).flatMap((ops) => Object.keys(ops)).length

    const seed = process.env.H3LENS_FUZZ_SEED ?? String(Math.floor(Math.random() * 2 ** 31))
    const run = await schemathesis([
      '--config-file', path.join(FUZZ_DIR, 'schemathesis.toml'),
      'run', `${base}/api/openapi.json`,
      '--checks', CHECKS.join(','),
      '--max-examples', String(EXAMPLES),
      '--seed', seed,
      // One worker: with two threads, Hypothesis describing its filters in
      // both at once (ast.parse) hits CPython 3.11's thread-unsafe AST
      // recursion counter ("AST constructor recursion depth mismatch"), a
      // crash of the tool that is no finding about the API.
      '--workers', '1',
      '--request-timeout', '30',
      '--no-shrink',
      // Hypothesis's "data generation is too slow" is about the machine
      // the generator runs on, not the API: it failed a run on two cores
      // shared with the rest of the suite.
      '--suppress-health-check', 'too_slow',
      '--output-truncate', 'true'
    ], {
      H3LENS_FUZZ_API_KEY: t.writeKey,
      H3LENS_FUZZ_AGENT_TOKEN: agentToken,
      H3LENS_FUZZ_IDS: JSON.stringify(ids),
      H3LENS_FUZZ_WPT: JSON.stringify({ location: 'wpt-fuzz', key: wptKey })
    })
    assert.equal(run.signal, null, `Schemathesis did not finish within ${RUN_LIMIT_MS / 1000} s (H3LENS_TEST_TIMEOUT_S gives it longer):\n${run.output.slice(-3000)}`)
    const report = run.output.slice(run.output.indexOf('=== FAILURES') >= 0 ? run.output.indexOf('=== FAILURES') - 40 : -6000)
    assert.equal(run.code, 0, `Schemathesis ${schemathesisVersion()} found problems (seed ${seed}; H3LENS_FUZZ_SEED=${seed} replays it):\n${report}`)
    assert.match(run.output, new RegExp(`Tested: ${operations}\\b`), `not every one of the ${operations} operations was tested:\n${report}`)
  } finally {
    await t.close()
  }
})

/**
 * @param {string[]} args
 * @param {Record<string, string>} env
 * @returns {Promise<{ code: number | null, signal: string | null, output: string }>}
 */
function schemathesis (args, env) {
  // Schemathesis keeps the failures it found under its working directory
  // and tries them first next time: .h3lens/ keeps them out of the repository.
  const cwd = path.join(FUZZ_DIR, '..', '..', '.h3lens', 'fuzz')
  fs.mkdirSync(cwd, { recursive: true })
  const child = spawn(schemathesisBin(), args, {
    cwd,
    env: { ...process.env, ...env, SCHEMATHESIS_HOOKS: 'hooks', PYTHONPATH: FUZZ_DIR, PYTHONDONTWRITEBYTECODE: '1', NO_COLOR: '1', COLUMNS: '120' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  child.stdout.on('data', (d) => { output += d })
  child.stderr.on('data', (d) => { output += d })
  const timer = setTimeout(() => child.kill('SIGKILL'), RUN_LIMIT_MS)
  return new Promise((resolve) => child.on('exit', (code, signal) => {
    clearTimeout(timer)
    resolve({ code, signal, output })
  }))
}
