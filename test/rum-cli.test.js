// `h3lens rum` as a user runs it against DATABASE_URL, and the scheduler's
// retention of beacons.
// run-tests: concurrent — its processes are one-shot h3lens commands against its own database
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createTestDatabase } from './helpers/db.js'
import { insertBeacons } from '../lib/store/rum-beacons.js'
import { storedBeacon } from '../lib/measurement/rum/beacon.js'
import { createBeaconPruner } from '../scheduler/scheduler.js'
import { upsertLocation } from '../lib/store/locations.js'

const run = (args, env) => spawnSync(process.execPath, ['bin/h3lens.js', ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60000 })

test('rum sites create prints the install tag; list, tag, update, revoke and countries work; mistakes are named', async () => {
  const db = await createTestDatabase()
  try {
    const env = { DATABASE_URL: db.url, LOG_LEVEL: 'warn', H3LENS_PUBLIC_URL: 'https://h3lens.example.com' }
    const created = run(['rum', 'sites', 'create', '--name', 'shop', '--origin', 'https://www.example.com', '--origin', 'https://example.com/', '--sample', '0.25'], env)
    assert.equal(created.status, 0, created.stderr)
    assert.match(created.stdout.trim(), /^<script async src="https:\/\/h3lens\.example\.com\/rum\/v1\/h3lens\.js\?v=[0-9a-f]{12}" integrity="sha384-[^"]+" crossorigin="anonymous" data-key="h3s_[\w-]{32}" data-sample="0\.25"><\/script>$/)
    assert.match(created.stderr, /site 1 \(shop\) created for https:\/\/www\.example\.com, https:\/\/example\.com/)
    assert.equal(run(['rum', 'sites', 'tag', '1'], env).stdout, created.stdout)
    const updated = run(['rum', 'sites', 'update', '1', '--sample', '1'], env)
    assert.match(updated.stdout, /data-sample="1"/)
    assert.match(run(['rum', 'sites', 'list'], env).stdout, /^1\tshop\thttps:\/\/www\.example\.com,https:\/\/example\.com\tsample 1\th3s_[\w-]+\tactive$/m)
    const markup = run(['rum', 'sites', 'tag', '1', '--base-url', 'x"><img src=y>'], env)
    assert.notEqual(markup.status, 0)
    assert.match(markup.stderr, /--base-url "x"><img src=y>" is not the address browsers reach h3lens at/)
    assert.doesNotMatch(markup.stdout, /<script/)
    // Checked before anything is created: no site without its tag.
    const noSite = run(['rum', 'sites', 'create', '--name', 'never', '--origin', 'https://never.example', '--base-url', 'x"><img src=y>'], env)
    assert.notEqual(noSite.status, 0)
    assert.doesNotMatch(noSite.stderr, /created/)
    assert.doesNotMatch(run(['rum', 'sites', 'list'], env).stdout, /never/)
    const bad = run(['rum', 'sites', 'create', '--name', 'x', '--origin', 'www.example.com'], env)
    assert.notEqual(bad.status, 0)
    assert.match(bad.stderr, /origins\.0: "www\.example\.com" is not an origin/)
    assert.match(run(['rum', 'sites', 'revoke', '1'], env).stdout, /site 1 \(shop\) revoked/)
    assert.match(run(['rum', 'sites', 'revoke', '1'], env).stderr, /already revoked/)
    assert.match(run(['rum', 'sites', 'revoke', '99999999999999'], env).stderr, /needs the id of a site \(see "h3lens rum sites list"\), not "99999999999999"/)
    assert.match(run(['rum', 'sites', 'revoke', '0x1'], env).stderr, /needs the id of a site \(see "h3lens rum sites list"\), not "0x1"/)
    await upsertLocation(db.pool, { id: 'lab-eu', name: 'Lab Europe', region: 'Europe', kind: 'lab' })
    const countries = run(['rum', 'countries', '--location', 'lab-eu', 'gb,de'], env)
    assert.equal(countries.stdout.trim(), 'lab-eu\tGB,DE')
    assert.match(run(['rum', 'countries', '--location', 'lab-eu', 'GBR'], env).stderr, /"GBR" is not a two-letter country code/)
    assert.match(run(['rum', 'countries', '--location', 'lab-eu', 'DE,XX'], env).stderr, /countries\.1: "XX" is no country's code/)
    // An empty place is a mistake, not a request to clear the list.
    assert.match(run(['rum', 'countries', '--location', 'lab-eu', ','], env).stderr, /place 1 of "," is empty; give codes such as GB,DE, or "" to clear the list/)
    assert.match(run(['rum', 'sites', 'update', '1', '--sample', '0x1'], env).stderr, /--sample must be a share from 0 to 1 written in decimal, such as 0\.25, not "0x1"/)
    // Without a list it shows them and changes nothing; an empty list clears them.
    assert.equal(run(['rum', 'countries', '--location', 'lab-eu'], env).stdout.trim(), 'lab-eu\tGB,DE')
    assert.equal(run(['rum', 'countries', '--location', 'lab-eu'], env).stdout.trim(), 'lab-eu\tGB,DE')
    const none = run(['rum', 'countries', '--location', 'mars'], env)
    assert.equal(none.status, 1)
    assert.match(none.stderr, /there is no location mars/)
    assert.match(run(['rum', '--help'], env).stdout, /^Usage: h3lens rum sites create/)
  } finally {
    await db.drop()
  }
})

test('the scheduler deletes beacons past their retention and keeps the rest', async () => {
  const db = await createTestDatabase()
  try {
    const { rows: [site] } = await db.pool.query("INSERT INTO rum_sites (key, name, origins) VALUES ('h3s_test', 's', '{https://s.example}') RETURNING id")
    const beacon = (daysAgo) => storedBeacon({ key: 'x', v: 1, id: randomBytes(16).toString('hex'), t0: Date.now() - daysAgo * 86400e3, nav: 'navigate', protocol: 'h2' },
      { siteId: site.id, origin: 'https://s.example', country: null, browser: { family: 'other', major: null } })
    await insertBeacons(db.pool, [beacon(100), beacon(95), beacon(10), beacon(0.1)])
    assert.equal(await createBeaconPruner({ db: db.pool, config: { rumRetentionDays: 90 } })(), 2)
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM rum_beacons')
    assert.equal(rows[0].n, 2)
    assert.equal(await createBeaconPruner({ db: db.pool, config: { rumRetentionDays: 0 } })(), 0, '0 keeps them')
  } finally {
    await db.drop()
  }
})
