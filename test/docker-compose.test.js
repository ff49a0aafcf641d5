// docker-compose.yml is for users' machines (no Docker engine runs here), so
// it is checked by reading it: it loads with no variables set, the services
// run real subcommands with flags the CLI accepts, set only variables the
// code reads and the docs document (docs/CONFIGURATION.md, docs/DEPLOY.md),
// agents enrol themselves and wait for
// a healthy API, and the image's process is node (npm does not forward
// SIGTERM). `agents enrol`, which the init service runs, is run for real.
// run-tests: side — it reads the compose file and runs one-shot h3lens commands against its own database; it times nothing
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parse } from 'yaml'
import { VARIABLES, loadConfig } from '../lib/runtime/config.js'
import { COMMANDS } from '../bin/commands.js'
import { EXTRA_PACKAGES, NEEDS } from '../scripts/debian-packages.js'
import { authenticateAgent } from '../lib/store/agents.js'
import { createTestDatabase } from './helpers/db.js'

const text = fs.readFileSync(new URL('../docker-compose.yml', import.meta.url), 'utf8')
const compose = parse(text, { merge: true })
// Where the variables are documented: every setting, and the Docker deployment's own.
const documented = ['../docs/CONFIGURATION.md', '../docs/DEPLOY.md'].map((f) => fs.readFileSync(new URL(f, import.meta.url), 'utf8')).join('\n')
const dockerfile = fs.readFileSync(new URL('../Dockerfile', import.meta.url), 'utf8')
/** @type {Set<string>} */
const known = new Set(VARIABLES.map((v) => v.name))
const h3lensServices = Object.entries(compose.services).filter(([, svc]) => svc.image?.startsWith('h3lens'))
const agents = h3lensServices.filter(([, svc]) => svc.command?.[2] === 'agent')
const run = (args, env = {}) => spawnSync(process.execPath, ['bin/h3lens.js', ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60000 })

test('compose loads with no variables set: every ${…} has a default, none is required', () => {
  const uses = [...text.matchAll(/\$\{([^}]*)\}/g)].map((m) => m[1])
  assert.ok(uses.length > 0)
  for (const use of uses) {
    assert.doesNotMatch(use, /:?\?/, `\${${use}} is required, so "docker compose config" fails without it`)
    assert.match(use, /^[A-Z_][A-Z0-9_]*:?-/, `\${${use}} needs a default`)
  }
})

test('compose has TimescaleDB, one-shot migrate and init, api, scheduler and three agents', () => {
  const s = compose.services
  assert.match(s.db.image, /^timescale\/timescaledb:/)
  assert.deepEqual(s.migrate.command, ['node', 'bin/h3lens.js', 'migrate'])
  for (const once of ['migrate', 'init']) assert.equal(s[once].restart, 'no', once)
  assert.deepEqual(s.init.command.slice(0, 4), ['node', 'bin/h3lens.js', 'agents', 'enrol'])
  assert.equal(s.api.command[2], 'api')
  assert.equal(s.scheduler.command[2], 'scheduler')
  assert.equal(agents.length, 3)
  assert.equal(new Set(agents.map(([, svc]) => svc.environment.H3LENS_LOCATION)).size, 3, 'agents are in different locations')
})

test('every h3lens service runs a subcommand whose flags the CLI accepts', () => {
  for (const [name, svc] of h3lensServices) {
    assert.deepEqual(svc.command.slice(0, 2), ['node', 'bin/h3lens.js'], name)
    assert.ok(COMMANDS[svc.command[2]], `${name} runs unknown subcommand ${svc.command[2]}`)
    // --help after the service's own arguments: the CLI parses (and so
    // checks) every flag before it answers the help.
    const r = run([...svc.command.slice(2), '--help'])
    assert.equal(r.status, 0, `${name}: ${r.stderr}`)
  }
})

test('every variable the services set or interpolate is one the code reads and the docs document', () => {
  const imageVars = new Set(['POSTGRES_USER', 'POSTGRES_PASSWORD', 'POSTGRES_DB'])
  for (const [name, svc] of Object.entries(compose.services)) {
    for (const v of Object.keys(svc.environment ?? {})) {
      if (name === 'db') assert.ok(imageVars.has(v), `db sets ${v}`)
      else assert.ok(known.has(v), `${name} sets ${v}, which h3lens does not read`)
      if (name !== 'db' || v === 'POSTGRES_PASSWORD') assert.ok(documented.includes(`\`${v}\``), `${name} uses ${v}, which docs/CONFIGURATION.md and docs/DEPLOY.md do not document`)
    }
  }
  for (const [, v] of text.matchAll(/\$\{([A-Z_][A-Z0-9_]*)/g)) assert.ok(documented.includes(`\`${v}\``), `\${${v}} is documented in neither docs/CONFIGURATION.md nor docs/DEPLOY.md`)
})

test('the API has a healthcheck against /healthz; agents wait for it and for their enrolment', () => {
  const { api, init } = compose.services
  assert.ok(api.healthcheck.test.join(' ').includes('/healthz'))
  assert.equal(api.environment.HOST, '0.0.0.0', 'api must listen beyond the container loopback')
  assert.equal(new URL(api.environment.DATABASE_URL.replace(/\$\{[^}]+\}/g, 'x')).hostname, 'db')
  const initVolume = init.volumes.map((v) => v.split(':')).find(([, dir]) => dir === init.command[init.command.indexOf('--token-dir') + 1])
  assert.ok(initVolume, 'init writes the tokens into a volume')
  const enrolled = init.command.filter((_, i) => init.command[i - 1] === '--location').map((l) => l.split('=')[0])
  for (const [name, svc] of agents) {
    assert.deepEqual(svc.depends_on.api, { condition: 'service_healthy' }, name)
    assert.deepEqual(svc.depends_on.init, { condition: 'service_completed_successfully' }, name)
    assert.equal(new URL(svc.environment.H3LENS_API_URL).hostname, 'api', name)
    assert.equal(svc.environment.DATABASE_URL, undefined, `${name}: agents have no database access`)
    assert.ok(enrolled.includes(svc.environment.H3LENS_LOCATION), `${name}: init enrols its location`)
    const mount = svc.volumes.map((v) => v.split(':')).find(([vol]) => vol === initVolume[0])
    assert.ok(mount, `${name} mounts the enrolment volume`)
    assert.equal(svc.environment.H3LENS_AGENT_TOKEN_FILE, `${mount[1]}/${svc.environment.H3LENS_LOCATION}.token`, name)
  }
})

test('the image installs every Debian package setup installs, Firefox and certutil included, so its agents run Firefox rounds too', () => {
  const installed = [...dockerfile.matchAll(/apt-get install ([^&\n]+)/g)].flatMap((m) => m[1].split(/\s+/)).filter((w) => w && !w.startsWith('-'))
  const missing = [...NEEDS.map((n) => n.pkg), ...EXTRA_PACKAGES].filter((pkg) => !installed.includes(pkg))
  assert.deepEqual(missing, [], 'packages the image does not install')
  // The compose agents share a network with the database: Firefox stays off there unless asked (docs/SECURITY.md).
  for (const [name, svc] of agents) assert.equal(svc.environment.H3LENS_FIREFOX, '${H3LENS_COMPOSE_FIREFOX:-}', name)
})

test('the image runs node itself, which gets SIGTERM, not npm', () => {
  const last = (instruction) => [...dockerfile.matchAll(new RegExp(`^${instruction}\\s+(.+)$`, 'gm'))].at(-1)?.[1]
  const cmd = JSON.parse(last('CMD') ?? 'null')
  const entrypoint = last('ENTRYPOINT')
  const argv = entrypoint ? [...JSON.parse(entrypoint), ...cmd] : cmd
  assert.equal(argv[0], 'node', `the image starts ${argv.join(' ')}`)
  for (const [name, svc] of h3lensServices) assert.equal(svc.command[0], 'node', name)
  // After SIGTERM an agent's round may run H3LENS_STOP_TIMEOUT_S; Docker kills what has not ended by stop_grace_period (10 s unless set).
  const stopTimeoutS = loadConfig({}).stopTimeoutS
  for (const [name, svc] of agents) {
    const grace = /^(\d+)s$/.exec(svc.stop_grace_period ?? '10s')
    assert.ok(grace && Number(grace[1]) >= stopTimeoutS + 5, `${name}: stop_grace_period ${svc.stop_grace_period ?? '(Docker\'s 10s)'} leaves no time after the ${stopTimeoutS} s a round may finish in`)
  }
})

test('agents enrol creates locations and token files once, keeps working tokens, and agents read them', async () => {
  const db = await createTestDatabase()
  const tokenDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-enrol-'))
  try {
    const env = { DATABASE_URL: db.url, LOG_LEVEL: 'warn' }
    const args = ['agents', 'enrol', '--token-dir', tokenDir, '--location', 'us-east=North America', '--location', 'ap-south=Asia Pacific']
    const first = run(args, env)
    assert.equal(first.status, 0, first.stderr)
    assert.match(first.stdout, /^us-east\t.*us-east\.token\tnew agent enrolled$/m)
    const token = fs.readFileSync(path.join(tokenDir, 'us-east.token'), 'utf8').trim()
    assert.ok(!first.stdout.includes(token), 'the token is never printed')
    assert.equal(fs.statSync(path.join(tokenDir, 'us-east.token')).mode & 0o777, 0o600)
    assert.equal((await authenticateAgent(db.pool, token))?.location_id, 'us-east')
    const { rows } = await db.pool.query("SELECT region, kind FROM locations WHERE id = 'ap-south'")
    assert.deepEqual(rows, [{ region: 'Asia Pacific', kind: 'real' }])

    const again = run(args, env)
    assert.equal(again.status, 0, again.stderr)
    assert.match(again.stdout, /^us-east\t.*\texisting token kept$/m)
    assert.equal(fs.readFileSync(path.join(tokenDir, 'us-east.token'), 'utf8').trim(), token)
    // A revoked token is replaced on the next run.
    await db.pool.query("UPDATE agents SET revoked_at = now() WHERE location_id = 'us-east'")
    assert.match(run(args, env).stdout, /^us-east\t.*\tnew agent enrolled$/m)

    // A folder that cannot hold the tokens is named, and nothing is created
    // for a token nobody would hold: a file, and a folder that cannot be made.
    const file = path.join(tokenDir, 'us-east.token')
    for (const { dir, why } of [{ dir: file, why: /is not a folder/ }, { dir: path.join(file, 'sub'), why: /is not a folder/ }, { dir: '/proc/h3lens-nope', why: /cannot be made \(ENOENT\)/ }]) {
      const refused = run(['agents', 'enrol', '--token-dir', dir, '--location', 'eu-north=Europe'], env)
      assert.equal(refused.status, 1, refused.stderr)
      assert.match(refused.stderr, /--token-dir .* cannot hold the token files: /)
      assert.match(refused.stderr, why)
      assert.doesNotMatch(refused.stderr, /\n\s+at /, 'no stack trace')
    }
    assert.equal((await db.pool.query("SELECT 1 FROM locations WHERE id = 'eu-north'")).rowCount, 0)
    // A bad --location after a good one: refused before the good one is enrolled.
    const bad = run(['agents', 'enrol', '--token-dir', tokenDir, '--location', 'eu-north=Europe', '--location', 'bad/id=x'], env)
    assert.equal(bad.status, 1, bad.stderr)
    assert.match(bad.stderr, /--location "bad\/id=x": the id before "=" must be lowercase letters, digits and dashes/)
    assert.equal((await db.pool.query("SELECT 1 FROM locations WHERE id = 'eu-north'")).rowCount, 0, 'nothing half done')
    assert.equal(fs.existsSync(path.join(tokenDir, 'eu-north.token')), false)

    const missing = run(['agent', '--location', 'us-east', '--token-file', path.join(tokenDir, 'nope.token')], { H3LENS_AGENT_TOKEN: '' })
    assert.equal(missing.status, 1)
    assert.match(missing.stderr, /H3LENS_AGENT_TOKEN_FILE=.*nope\.token cannot be read \(ENOENT\); "h3lens agents enrol" writes it/)
  } finally {
    fs.rmSync(tokenDir, { recursive: true, force: true })
    await db.drop()
  }
})
