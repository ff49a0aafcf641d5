// The command line as a user meets it: help, config errors, one-shot commands.
// run-tests: concurrent — its processes are one-shot h3lens commands against its own database; none starts a server, a lab or a browser
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createHash } from 'node:crypto'
import { createTestDatabase } from './helpers/db.js'
import { VARIABLES, loadConfig } from '../lib/runtime/config.js'
import { authenticateAgent } from '../lib/store/agents.js'
import { wptAgent, wptKeyValid } from '../lib/store/wpt-keys.js'

const run = (args, env = {}) => spawnSync(process.execPath, ['bin/h3lens.js', ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60000 })

test('every subcommand has --help, and h3lens --help lists commands and variables', () => {
  const top = run(['--help'])
  assert.equal(top.status, 0)
  for (const c of ['start', 'api', 'scheduler', 'agent', 'migrate', 'lab', 'agents', 'rollups']) {
    assert.match(top.stdout, new RegExp(`^  ${c} `, 'm'))
    const help = run([c, '--help'])
    assert.equal(help.status, 0, c)
    assert.match(help.stdout, new RegExp(`^Usage: h3lens ${c}`), c)
  }
  for (const v of ['PORT', 'H3LENS_DATA_DIR', 'DATABASE_URL', 'H3LENS_API_URL', 'H3LENS_AGENT_TOKEN', 'H3LENS_LOCATION']) assert.match(top.stdout, new RegExp(v))
  // "h3lens help agents" is the command's help; an unknown one is named.
  assert.equal(run(['help', 'agents']).stdout, run(['agents', '--help']).stdout)
  const unknown = run(['help', 'agnets'])
  assert.equal(unknown.status, 2)
  assert.match(unknown.stderr, /unknown command "agnets"/)
  // The variables' descriptions start in one column, however long a name.
  const lines = top.stdout.split('\n')
  const columns = new Set(VARIABLES.map((v) => lines.find((l) => l.startsWith(`  ${v.name} `))?.indexOf(v.description) ?? -1))
  assert.equal(columns.size, 1, top.stdout)
  assert.ok([...columns][0] > 0, 'every variable is listed with its description')
})

test('without its npm packages, h3lens --help says to run npm ci instead of crashing', () => {
  // A copy of the program without node_modules anywhere above it, as a
  // fresh clone is before `npm ci`.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-no-deps-'))
  try {
    for (const d of ['bin', 'lib', 'api', 'agents', 'scheduler', 'lab', 'web']) fs.cpSync(d, path.join(dir, d), { recursive: true })
    fs.copyFileSync('package.json', path.join(dir, 'package.json'))
    const env = { ...process.env }
    delete env.NODE_PATH
    const bare = (/** @type {string[]} */ args) => spawnSync(process.execPath, [path.join(dir, 'bin', 'h3lens.js'), ...args], { encoding: 'utf8', env, cwd: dir, timeout: 60000 })
    for (const args of [['--help'], ['start', '--help'], ['keys', 'list']]) {
      const r = bare(args)
      assert.equal(r.status, 1, `${args.join(' ')}: ${r.stdout}${r.stderr}`)
      assert.equal(r.stderr.replace(/there is no "[^"]+"/, 'there is no "X"'), `h3lens: the npm packages h3lens needs are not installed (there is no "X"): run "npm ci" in ${dir} first (npm start and npm test run it for you)\n`)
    }
    const version = bare(['--version'])
    assert.equal(version.status, 0)
    assert.match(version.stdout, /^\d+\.\d+\.\d+/)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('an invalid value exits non-zero with a message naming the variable', () => {
  const port = run(['migrate'], { PORT: 'eighty' })
  assert.notEqual(port.status, 0)
  assert.match(port.stderr, /PORT="eighty" must be a port number/)
  const url = run(['migrate'], { DATABASE_URL: 'mysql://x' })
  assert.notEqual(url.status, 0)
  assert.match(url.stderr, /DATABASE_URL=.* must start with postgres:\/\//)
  const flag = run(['api', '--port', '0'])
  assert.match(flag.stderr, /--port \(PORT\)="0"/)
  const unknown = run(['api', '--colour', 'red'])
  assert.equal(unknown.status, 2)
  assert.match(unknown.stderr, /Unknown option '--colour'/)
  assert.match(run(['frobnicate']).stderr, /unknown command "frobnicate"/)
  // A password is never echoed, in a URL that is refused or one that cannot be reached.
  const secretUrl = run(['migrate'], { DATABASE_URL: 'mysql://admin:S3cretPw@db/x' })
  assert.match(secretUrl.stderr, /DATABASE_URL="mysql:\/\/admin:\*\*\*@db\/x" must start with postgres/)
  const withUser = run(['agent', '--api-url', 'http://u:S3cretPw@127.0.0.1:1', '--token', 't', '--location', 'x'])
  assert.notEqual(withUser.status, 0)
  assert.match(withUser.stderr, /--api-url \(H3LENS_API_URL\)="http:\/\/u:\*\*\*@127.0.0.1:1" must not carry a user name or password/)
  // A base address carries no query or fragment: paths are added to it (the RUM install tag's, alert links).
  const withQuery = run(['keys', 'list'], { H3LENS_PUBLIC_URL: 'https://h3lens.example.com/?x=1' })
  assert.notEqual(withQuery.status, 0)
  assert.match(withQuery.stderr, /H3LENS_PUBLIC_URL="https:\/\/h3lens.example.com\/\?x=1" must not carry a query \(\?…\) or fragment \(#…\)/)
  const unreachable = run(['keys', 'list'], { DATABASE_URL: 'postgres://admin:S3cretPw@127.0.0.1:1/h3lens' })
  assert.equal(unreachable.status, 1)
  assert.match(unreachable.stderr, /^h3lens: cannot use the database at postgres:\/\/admin:\*\*\*@127.0.0.1:1\/h3lens: connect ECONNREFUSED .*\(check DATABASE_URL/m)
  assert.doesNotMatch(unreachable.stderr, /\n\s+at /, 'a sentence, not a stack')
  for (const r of [secretUrl, withUser, unreachable]) assert.doesNotMatch(r.stdout + r.stderr, /S3cretPw/)
  assert.match(run(['rollups', 'rebuild', '--monitor', '99999999999999999999']).stderr, /--monitor must be a monitor id, not "99999999999999999999"/)
  // Numbers are decimal digits: Number() alone reads "0x50" as 80, "1e3" as 1000, "0x2" as key 2.
  assert.match(run(['migrate'], { PORT: '0x50' }).stderr, /PORT="0x50" must be a port number/)
  assert.match(run(['migrate'], { H3LENS_PAGE_TIMEOUT_MS: '3e4' }).stderr, /H3LENS_PAGE_TIMEOUT_MS="3e4" must be a whole number/)
  assert.match(run(['rollups', 'rebuild', '--monitor', '0x3']).stderr, /--monitor must be a monitor id, not "0x3"/)
  for (const id of ['0x2', '1e3', '02', ' 2']) assert.match(run(['keys', 'revoke', id]).stderr, new RegExp(`keys revoke needs the id of a key .*, not "${id}"`))
  // A word more than the command takes is refused, not ignored ("keys revoke 1 2" revoked key 1 alone).
  /** @type {[string[], string][]} */
  const extras = [[['keys', 'revoke', '1', '2'], '2'], [['keys', 'list', 'all'], 'all'], [['rollups', 'rebuild', 'now'], 'now'], [['rum', 'sites', 'list', 'x'], 'x'], [['lab', 'down', 'now'], 'now']]
  for (const [args, extra] of extras) {
    const r = run(args)
    assert.equal(r.status, 2, args.join(' '))
    assert.match(r.stderr, new RegExp(`^h3lens ${args[0]}: unexpected argument "${extra}"\\n\\nUsage`, 'm'))
  }
})

test('an empty H3LENS_FIREFOX turns Firefox off, as documented; unset, it is Debian\'s firefox-esr', () => {
  assert.equal(loadConfig({ H3LENS_FIREFOX: '' }).firefoxPath, null)
  assert.equal(loadConfig({}).firefoxPath, '/usr/bin/firefox-esr')
  // An empty value elsewhere is still the default (an env file's NAME= line).
  assert.equal(loadConfig({ PORT: '' }).port, 8080)
})

test('agent without token or location says what it needs', () => {
  const r = run(['agent'], { H3LENS_AGENT_TOKEN: '', H3LENS_LOCATION: '' })
  assert.notEqual(r.status, 0)
  assert.match(r.stderr, /needs H3LENS_AGENT_TOKEN \(--token\) or H3LENS_AGENT_TOKEN_FILE \(--token-file\) and H3LENS_LOCATION \(--location\)/)
})

test('h3lens lab with the lab off says so instead of starting one', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-lab-off-'))
  try {
    for (const { args, env } of [{ args: ['lab', '--lab', 'off'], env: {} }, { args: ['lab'], env: { H3LENS_LAB: 'off' } }]) {
      const r = run([...args, '--data-dir', dataDir], env)
      assert.equal(r.status, 1, r.stderr)
      assert.match(r.stderr, /"h3lens lab" starts a lab, and H3LENS_LAB \(--lab\) is off: give auto, regions or local/)
      assert.ok(!fs.existsSync(path.join(dataDir, 'lab')), 'no lab was started')
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
})

test('migrate, agents token and rollups rebuild work against DATABASE_URL', async () => {
  const db = await createTestDatabase()
  try {
    const env = { DATABASE_URL: db.url, LOG_LEVEL: 'warn' }
    const m = run(['migrate'], env)
    assert.equal(m.status, 0, m.stderr)
    assert.match(m.stdout, /database is up to date/)
    assert.match(m.stdout, /storage: (plain PostgreSQL|TimescaleDB)/)
    const tok = run(['agents', 'token', '--location', 'eu-west', '--region', 'Europe'], env)
    assert.equal(tok.status, 0, tok.stderr)
    assert.match(tok.stdout.trim(), /^h3a_[\w-]{20,}$/)
    const { rows } = await db.pool.query("SELECT kind, region FROM locations WHERE id = 'eu-west'")
    assert.deepEqual(rows[0], { kind: 'real', region: 'Europe' })
    // An empty --name is no name: the default one.
    const unnamed = run(['agents', 'token', '--location', 'eu-west', '--name', ''], env)
    assert.equal(unnamed.status, 0, unnamed.stderr)
    assert.match(unnamed.stderr, /agent \d+ \(eu-west-agent\) registered/)
    const longRegion = run(['agents', 'token', '--location', 'far-away', '--region', 'x'.repeat(3000)], env)
    assert.equal(longRegion.status, 1)
    assert.match(longRegion.stderr, /region is 1 to 100 characters/)
    const tabbed = run(['keys', 'create', '--name', 'a\tb\nc'], env)
    assert.equal(tabbed.status, 1)
    assert.match(tabbed.stderr, /may not hold control characters/)
    // `agents list` prints one agent a line too.
    const tabbedAgent = run(['agents', 'token', '--location', 'eu-west', '--name', 'a\tb'], env)
    assert.equal(tabbedAgent.status, 1)
    assert.match(tabbedAgent.stderr, /an agent's name may not hold control characters/)
    const bad = run(['agents', 'token', '--location', 'nowhere'], env)
    assert.notEqual(bad.status, 0)
    assert.match(bad.stderr, /unknown location "nowhere"/)
    // A location that cannot be one is told by its form, not looked up.
    const empty = run(['agents', 'token', '--location', ''], env)
    assert.equal(empty.status, 1)
    assert.match(empty.stderr, /--location "" must be lowercase letters, digits and dashes/)
    // One location given twice with two regions: neither is taken quietly, and nothing is enrolled.
    const tokenDir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-enrol-twice-'))
    try {
      const twice = run(['agents', 'enrol', '--token-dir', tokenDir, '--location', 'twice=Europe', '--location', 'twice=Asia'], env)
      assert.equal(twice.status, 1, twice.stderr)
      assert.match(twice.stderr, /--location twice is given more than once/)
      assert.equal((await db.pool.query("SELECT count(*)::int AS n FROM locations WHERE id = 'twice'")).rows[0].n, 0)
    } finally {
      fs.rmSync(tokenDir, { recursive: true, force: true })
    }
    // A mistyped setting is named, with the one it was likely meant to be;
    // the command still answers on stdout alone.
    const typo = run(['rollups', 'rebuild'], { ...env, H3LENS_PAGE_TIMOUT_MS: '5000', H3LENS_TEST_ANYTHING: '1' })
    assert.equal(typo.status, 0, typo.stderr)
    assert.match(typo.stdout, /^rebuilt rollups from 0 results/)
    const warnings = typo.stderr.trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.level === 40).map((l) => l.msg)
    assert.deepEqual(warnings, ['H3LENS_PAGE_TIMOUT_MS is not a setting of h3lens and is ignored; did you mean H3LENS_PAGE_TIMEOUT_MS? (docs/CONFIGURATION.md lists them)'])
    const rb = run(['rollups', 'rebuild'], env)
    assert.equal(rb.status, 0, rb.stderr)
    assert.match(rb.stdout, /rebuilt rollups from 0 results/)
    const none = run(['rollups', 'rebuild', '--monitor', '999'], env)
    assert.equal(none.status, 1)
    assert.match(none.stderr, /monitor 999 does not exist/)
    // Revoking the last write key says what that leaves; revoking one of two does not.
    const keyId = (/** @type {string} */ name) => Number(/API key (\d+)/.exec(run(['keys', 'create', '--role', 'write', '--name', name], env).stderr)?.[1])
    const [first, second] = [keyId('one'), keyId('two')]
    const one = run(['keys', 'revoke', String(first)], env)
    assert.equal(one.status, 0, one.stderr)
    assert.doesNotMatch(one.stderr, /no write key is left/)
    const last = run(['keys', 'revoke', String(second)], env)
    assert.equal(last.status, 0, last.stderr)
    assert.match(last.stderr, /^warning: no write key is left, so nothing can be changed through the dashboard or the API: create one with "h3lens keys create --role write --name NAME"/m)
  } finally {
    await db.drop()
  }
})

test('agents wpt-key creates a wpt location and prints its key alone, stored hashed', async () => {
  const db = await createTestDatabase()
  try {
    const env = { DATABASE_URL: db.url, LOG_LEVEL: 'warn' }
    const res = run(['agents', 'wpt-key', '--location', 'wpt-fra', '--region', 'Europe'], env)
    assert.equal(res.status, 0, res.stderr)
    const key = res.stdout
    assert.match(key, /^[0-9a-f]{48}\n$/, 'the key alone on stdout, so KEY=$(h3lens agents wpt-key ...) works')
    const empty = run(['agents', 'wpt-key', '--location', ''], env)
    assert.equal(empty.status, 1)
    assert.match(empty.stderr, /--location "" must be lowercase letters, digits and dashes/)
    const { rows: [loc] } = await db.pool.query("SELECT kind, region FROM locations WHERE id = 'wpt-fra'")
    assert.deepEqual(loc, { kind: 'wpt', region: 'Europe' })
    const { rows: keys } = await db.pool.query("SELECT key_hash FROM wpt_keys WHERE location_id = 'wpt-fra'")
    assert.deepEqual(keys.map((k) => k.key_hash), [createHash('sha256').update(key.trim()).digest('hex')])
    assert.equal(run(['agents', 'token', '--location', 'eu-west', '--region', 'Europe'], env).status, 0)
    const wrongKind = run(['agents', 'wpt-key', '--location', 'eu-west'], env)
    assert.notEqual(wrongKind.status, 0)
    assert.match(wrongKind.stderr, /of kind real; WebPageTest agents need a location of kind wpt/)
    assert.equal(wrongKind.stdout, '')
    // The location's WebPageTest settings, kept in its profile, which each test sent to its agents reads.
    const shaped = run(['agents', 'wpt-key', '--location', 'wpt-fra', '--wpt-shaping', 'on', '--wpt-browser', 'Chrome Beta'], env)
    assert.equal(shaped.status, 0, shaped.stderr)
    assert.match(shaped.stderr, /location wpt-fra: traffic shaping on, browser Chrome Beta/)
    const { rows: [profiled] } = await db.pool.query("SELECT profile FROM locations WHERE id = 'wpt-fra'")
    assert.deepEqual([profiled.profile.wpt_shaping, profiled.profile.wpt_browser], [true, 'Chrome Beta'])
    // A browser that reads no Chromium command line would run neither arm as it says.
    const firefox = run(['agents', 'wpt-key', '--location', 'wpt-fra', '--wpt-browser', 'Firefox'], env)
    assert.equal(firefox.status, 1)
    assert.match(firefox.stderr, /--wpt-browser "Firefox" is not a Chromium-based browser as wptagent names it \(Chrome, .*\): each test forces or turns off QUIC with Chromium's command line/)
    assert.equal((await db.pool.query("SELECT profile->>'wpt_browser' AS b FROM locations WHERE id = 'wpt-fra'")).rows[0].b, 'Chrome Beta')
    const badShaping = run(['agents', 'wpt-key', '--location', 'wpt-fra', '--wpt-shaping', 'yes'], env)
    assert.notEqual(badShaping.status, 0)
    assert.match(badShaping.stderr, /--wpt-shaping must be on or off, not "yes"/)
    // A WebPageTest location's agents hold a key, not an h3lens agent's token.
    const tokenThere = run(['agents', 'token', '--location', 'wpt-fra'], env)
    assert.equal(tokenThere.status, 1)
    assert.match(tokenThere.stderr, /location "wpt-fra" is of kind wpt: its agents are WebPageTest agents, which use a key/)
    // A flag refused creates nothing: no location, no key.
    const badBrowser = run(['agents', 'wpt-key', '--location', 'wpt-new', '--region', 'Asia', '--wpt-browser', 'bad;name'], env)
    assert.notEqual(badBrowser.status, 0)
    assert.match(badBrowser.stderr, /--wpt-browser "bad;name" must be a browser name/)
    assert.equal((await db.pool.query("SELECT 1 FROM locations WHERE id = 'wpt-new'")).rowCount, 0)
  } finally {
    await db.drop()
  }
})

test('agents revoke stops an agent\'s token at once; wpt-key --revoke stops a WebPageTest location\'s keys', async () => {
  const db = await createTestDatabase()
  try {
    const env = { DATABASE_URL: db.url, LOG_LEVEL: 'warn' }
    const made = run(['agents', 'token', '--location', 'eu-west', '--region', 'Europe', '--name', 'old-box'], env)
    assert.equal(made.status, 0, made.stderr)
    const token = made.stdout.trim()
    const kept = run(['agents', 'token', '--location', 'eu-west'], env).stdout.trim()
    const id = Number(/agent (\d+) \(old-box\)/.exec(made.stderr)?.[1])
    assert.ok((await authenticateAgent(db.pool, token)) !== null, 'the token works before')

    const revoked = run(['agents', 'revoke', String(id)], env)
    assert.equal(revoked.status, 0, revoked.stderr)
    assert.match(revoked.stdout, new RegExp(`^agent ${id} \\(old-box, location eu-west\\) revoked: its token is refused from now on`))
    assert.equal(await authenticateAgent(db.pool, token), null, 'the revoked token signs in no more')
    assert.ok((await authenticateAgent(db.pool, kept)) !== null, 'the location\'s other agent goes on')
    const listed = run(['agents', 'list'], env).stdout.split('\n').find((l) => l.startsWith(`${id}\t`))
    assert.match(listed ?? '', /\trevoked\t/)

    const again = run(['agents', 'revoke', String(id)], env)
    assert.equal(again.status, 1)
    assert.match(again.stderr, new RegExp(`agent ${id} was already revoked on \\d{4}-`))
    const missing = run(['agents', 'revoke', '999999'], env)
    assert.equal(missing.status, 1)
    assert.match(missing.stderr, /agent 999999 does not exist; see h3lens agents list/)
    for (const arg of [[], ['abc'], ['1e3']]) {
      const bad = run(['agents', 'revoke', ...arg], env)
      assert.equal(bad.status, 1, arg.join(' '))
      assert.match(bad.stderr, /agents revoke needs the id of an agent \(see "h3lens agents list"\)/)
    }

    // A WebPageTest agent signs in with its location's key: revoking it is revoking the key.
    const key = run(['agents', 'wpt-key', '--location', 'wpt-fra', '--region', 'Europe'], env).stdout.trim()
    const node = await wptAgent(db.pool, { location: 'wpt-fra', pc: 'fra-1' })
    const notAToken = run(['agents', 'revoke', String(node.id)], env)
    assert.equal(notAToken.status, 1)
    assert.match(notAToken.stderr, /is a WebPageTest agent \(fra-1 at wpt-fra\): it signs in with its location's key.*"h3lens agents wpt-key --location wpt-fra --revoke"/)
    assert.equal(await wptKeyValid(db.pool, { location: 'wpt-fra', key }), true)
    const keys = run(['agents', 'wpt-key', '--location', 'wpt-fra', '--revoke'], env)
    assert.equal(keys.status, 0, keys.stderr)
    assert.match(keys.stdout, /^1 key of location wpt-fra revoked; its WebPageTest agents are refused until they have a new key/)
    assert.equal(await wptKeyValid(db.pool, { location: 'wpt-fra', key }), false, 'the key admits no agent')
    assert.match(run(['agents', 'wpt-key', '--location', 'wpt-fra', '--revoke'], env).stdout, /location wpt-fra has no key to revoke/)
    const fresh = run(['agents', 'wpt-key', '--location', 'wpt-fra'], env).stdout.trim()
    assert.equal(await wptKeyValid(db.pool, { location: 'wpt-fra', key: fresh }), true, 'a new key works')
    const wrongKind = run(['agents', 'wpt-key', '--location', 'eu-west', '--revoke'], env)
    assert.equal(wrongKind.status, 1)
    assert.match(wrongKind.stderr, /location "eu-west" is of kind real, not wpt: it has no WebPageTest keys/)
  } finally {
    await db.drop()
  }
})
