// The private-target guard where a user meets it first: saving a monitor or
// a webhook through the API. Every known way of writing a private address
// (the bypasses found in a black-box pass and the usual SSRF payload lists)
// gets a 400 naming the field, at real and lab locations alike, on POST and
// PATCH; names resolve through a DNS server the test controls (this machine
// has no outside DNS), so a name that answers with a loopback or metadata
// address is one the test set up, not one the Internet happens to serve.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { once } from 'node:events'
import { createTestApp } from './helpers/app.js'
import { PUBLIC_ZONE, startDnsServer } from '../dev/dns-server.js'
import { upsertLocation } from '../lib/store/locations.js'
import { deliverDue } from '../lib/store/alert-deliveries.js'
import { targetPolicy } from '../lib/measurement/targets.js'

const SECRET = 'guard-test-secret-0123456789'
let t, dns

before(async () => {
  dns = await startDnsServer({
    ...PUBLIC_ZONE,
    'public.test': ['93.184.215.14'],
    'v6public.test': ['2606:4700:4700::1111'],
    'dns64.test': ['64:ff9b::5db8:d70e'], // what DNS64 answers for 93.184.215.14 on an IPv6-only network
    'xn--e1afmkfd.xn--p1ai': ['93.184.215.14'], // пример.рф
    // Names like localtest.me and nip.io, which public DNS answers with the address they spell:
    'localtest.me': ['127.0.0.1'],
    'customer1.app.localhost.my.company.127.0.0.1.nip.io': ['127.0.0.1'],
    '169.254.169.254.nip.io': ['169.254.169.254'],
    'metadata.google.internal': ['169.254.169.254'],
    'instance-data.ec2.internal': ['169.254.169.254'],
    'v6loopback.test': ['::1'],
    'v6mapped.test': ['::ffff:127.0.0.1'],
    'mixed.test': ['93.184.215.14', '10.0.0.5'],
    'rebind.test': ['93.184.215.14']
  })
  t = await createTestApp({ H3LENS_DNS_SERVERS: dns.server })
  await upsertLocation(t.db, { id: 'eu-west', name: 'Europe', region: 'Europe', kind: 'real' })
})

after(async () => {
  await t?.close()
  await dns?.close()
})

/** Every form of a non-public target, with what the refusal must say about it. */
const REFUSED = /** @type {[string, RegExp][]} */ ([
  // The bypasses found: a trailing dot, 6to4 and IPv4-compatible forms.
  ['http://localhost.:54329/', /localhost, a loopback name/],
  ['http://LOCALHOST./', /localhost, a loopback name/],
  ['http://a.b.localhost./', /a\.b\.localhost, a loopback name/],
  ['http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/', /localhost, a loopback name/],
  ['http://[2002:a9fe:a9fe::]/latest/meta-data/', /non-public address 2002:a9fe:a9fe:: \(link-local \(cloud metadata\), as 6to4 169\.254\.169\.254\)/],
  ['http://[2002:7f00:1::]/', /as 6to4 127\.0\.0\.1/],
  ['http://[::7f00:1]/', /non-public address ::7f00:1 \(loopback, as IPv4-compatible 127\.0\.0\.1\)/],
  ['http://[::127.0.0.1]/', /as IPv4-compatible 127\.0\.0\.1/],
  // Loopback in every spelling the URL parser reads.
  ['http://127.0.0.1:8080/', /non-public address 127\.0\.0\.1 \(loopback\)/],
  ['http://127.1/', /127\.0\.0\.1 \(loopback\)/],
  ['http://0177.0.0.1/', /127\.0\.0\.1 \(loopback\)/],
  ['http://0x7f000001/', /127\.0\.0\.1 \(loopback\)/],
  ['http://0x7f.0x0.0x0.0x1/', /127\.0\.0\.1 \(loopback\)/],
  ['http://2130706433/', /127\.0\.0\.1 \(loopback\)/],
  ['http://127.000.000.001/', /127\.0\.0\.1 \(loopback\)/],
  ['http://127.0.0.1./', /127\.0\.0\.1 \(loopback\)/],
  ['http://127.0.0.1../', /127\.0\.0\.1 \(loopback\)/],
  ['http://①②⑦.⓪.⓪.①/', /127\.0\.0\.1 \(loopback\)/],
  ['http://127。0。0。1/', /127\.0\.0\.1 \(loopback\)/],
  ['http://0/', /0\.0\.0\.0 \(this network\)/],
  ['http://0.0.0.0:5432/', /0\.0\.0\.0 \(this network\)/],
  ['http://[::]/', /non-public address :: \(unspecified\)/],
  ['http://[::1]/', /::1 \(loopback\)/],
  ['http://[0:0:0:0:0:0:0:1]/', /::1 \(loopback\)/],
  ['http://[0:0:0:0:0:ffff:127.0.0.1]/', /::ffff:7f00:1 \(loopback, as IPv4-mapped 127\.0\.0\.1\)/],
  ['http://[::ffff:169.254.169.254]/', /as IPv4-mapped 169\.254\.169\.254/],
  ['http://[64:ff9b::a9fe:a9fe]/', /as NAT64 169\.254\.169\.254/],
  ['http://[64:ff9b:1::a9fe:a9fe]/', /local-use NAT64/],
  ['http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/', /as Teredo 127\.0\.0\.1/],
  // Public IPv4 addresses in IPv6 clothing: deprecated forms, or a NAT64 literal that says what the IPv4 address says.
  ['http://[::ffff:93.184.215.14]/', /IPv4-mapped 93\.184\.215\.14; write the IPv4 address instead/],
  ['http://[2002:5db8:d70e::]/', /6to4 of 93\.184\.215\.14 \(deprecated\)/],
  ['http://[64:ff9b::5db8:d70e]/', /NAT64 of 93\.184\.215\.14; write the IPv4 address instead/],
  // The cloud metadata service.
  ['http://169.254.169.254/latest/meta-data/', /169\.254\.169\.254 \(link-local \(cloud metadata\)\)/],
  ['http://0251.0376.0251.0376/', /169\.254\.169\.254/],
  ['http://0xa9fea9fe/', /169\.254\.169\.254/],
  ['http://2852039166/', /169\.254\.169\.254/],
  ['http://[fd00:ec2::254]/latest/meta-data/', /fd00:ec2::254 \(unique local\)/],
  ['http://metadata.google.internal/computeMetadata/v1/', /metadata\.google\.internal, which resolves to the non-public address 169\.254\.169\.254/],
  ['http://instance-data.ec2.internal/', /resolves to the non-public address 169\.254\.169\.254/],
  ['http://169.254.169.254.nip.io/', /resolves to the non-public address 169\.254\.169\.254/],
  // Private, shared, link-local and multicast ranges.
  ['http://10.0.0.1/', /10\.0\.0\.1 \(private\)/],
  ['http://172.16.0.1/', /\(private\)/],
  ['http://172.31.255.254/', /\(private\)/],
  ['http://192.168.1.1/', /\(private\)/],
  ['http://100.64.0.1/', /carrier-grade NAT/],
  ['http://198.18.0.1/', /benchmarking/],
  ['http://224.0.0.1/', /multicast/],
  ['http://255.255.255.255/', /reserved/],
  ['http://[fc00::1]/', /unique local/],
  ['http://[fe80::1]/', /link-local/],
  ['http://[ff02::1]/', /multicast/],
  ['http://[2001:db8::1]/', /documentation/],
  // Names that resolve to loopback or private addresses.
  ['http://localtest.me/', /localtest\.me, which resolves to the non-public address 127\.0\.0\.1 \(loopback\)/],
  ['http://customer1.app.localhost.my.company.127.0.0.1.nip.io/', /resolves to the non-public address 127\.0\.0\.1/],
  ['http://v6loopback.test/', /resolves to the non-public address ::1 \(loopback\)/],
  ['http://v6mapped.test/', /resolves to the non-public address ::ffff:127\.0\.0\.1/],
  ['http://mixed.test/', /mixed\.test, which resolves to the non-public address 10\.0\.0\.5 \(private\)/],
  // Names that do not resolve (here, now): the agent could not be sure of them either.
  ['http://metadata/computeMetadata/v1/', /host metadata does not resolve \(ENOTFOUND\)/],
  ['https://nowhere.invalid/', /host nowhere\.invalid does not resolve/]
])

const ACCEPTED = [
  'http://93.184.215.14/',
  'https://public.test/',
  'https://public.test./',
  'https://PUBLIC.test/',
  'https://v6public.test/',
  'https://пример.рф/',
  'http://[2606:4700:4700::1111]/',
  'https://dns64.test/'
]

const post = (/** @type {object} */ payload) => t.app.inject({ method: 'POST', url: '/api/v1/monitors', payload })
const patch = (/** @type {number} */ id, /** @type {object} */ payload) => t.app.inject({ method: 'PATCH', url: `/api/v1/monitors/${id}`, payload })

test('every form of a private, loopback or metadata target is refused for monitors at real and lab locations, on POST and PATCH', async (s) => {
  const real = (await post({ url: 'https://public.test/', locations: ['eu-west'] })).json()
  const lab = (await post({ url: 'https://public.test/', locations: ['local'] })).json()
  assert.ok(real.id && lab.id)
  for (const [url, why] of REFUSED) {
    await s.test(url, async () => {
      for (const locations of [['eu-west'], ['local']]) {
        const res = await post({ url, locations })
        assert.equal(res.statusCode, 400, `${url} at ${locations}: ${res.body}`)
        assert.equal(res.json().field, 'url')
        assert.match(res.json().message, why)
        assert.match(res.json().message, /H3LENS_ALLOW_PRIVATE_TARGETS=true/)
      }
      for (const m of [real, lab]) {
        const res = await patch(m.id, { url })
        assert.equal(res.statusCode, 400, `PATCH ${url}: ${res.body}`)
        assert.equal(res.json().field, 'url')
        assert.match(res.json().message, why)
      }
    })
  }
  // Nothing refused was stored: the two monitors still point where they did.
  for (const m of [real, lab]) assert.equal((await t.app.inject({ url: `/api/v1/monitors/${m.id}` })).json().url, 'https://public.test/')
})

test('public addresses and names that resolve only to public addresses are accepted, in any spelling', async () => {
  for (const url of ACCEPTED) {
    const res = await post({ url, locations: ['eu-west', 'local'], paused: true })
    assert.equal(res.statusCode, 201, `${url}: ${res.body}`)
  }
})

test('probe URLs on other hosts pass the same guard, naming their own field', async () => {
  const options = { allow_cross_origin: true, upload_url: 'http://localhost.:8080/upload' }
  const res = await post({ url: 'https://public.test/', locations: ['eu-west'], probes: ['page', 'upload'], options })
  assert.equal(res.statusCode, 400, res.body)
  assert.equal(res.json().field, 'options.upload_url')
  assert.match(res.json().message, /options\.upload_url points at localhost, a loopback name/)
  const parallel = await post({ url: 'https://public.test/', locations: ['local'], probes: ['parallel'], options: { allow_cross_origin: true, parallel_url: 'http://[::ffff:a9fe:a9fe]/' } })
  assert.equal(parallel.statusCode, 400, parallel.body)
  assert.equal(parallel.json().field, 'options.parallel_url')
})

test('the lab origin is for lab locations only; its host name on another port or scheme is no lab origin', async () => {
  // H3LENS_LAB_PORT is 8443 in this app (the default).
  const ok = await post({ url: 'https://lab.h3lens.test:8443/page-15k.html', locations: ['local'], interval_s: 10 })
  assert.equal(ok.statusCode, 201, ok.body)
  const real = await post({ url: 'https://lab.h3lens.test:8443/page-15k.html', locations: ['local', 'eu-west'] })
  assert.equal(real.statusCode, 400)
  assert.equal(real.json().field, 'url')
  assert.match(real.json().message, /url is on the lab origin \(https:\/\/lab\.h3lens\.test:8443\), which only lab locations reach, not eu-west/)
  const moved = await patch(ok.json().id, { locations: ['eu-west'] })
  assert.equal(moved.statusCode, 400)
  assert.equal(moved.json().field, 'locations', 'a change of locations is what is refused')
  // In local mode lab.h3lens.test is 127.0.0.1: any other port would be this machine's database or API.
  for (const url of ['https://lab.h3lens.test:54329/', 'http://lab.h3lens.test:8080/api/v1/monitors', 'https://lab2.h3lens.test:5432/']) {
    const res = await post({ url, locations: ['local'] })
    assert.equal(res.statusCode, 400, url)
    assert.equal(res.json().field, 'url')
    assert.match(res.json().message, /is not the lab origin https:\/\/lab2?\.h3lens\.test:8443; lab host names reach nothing else/)
  }
})

test('the lab is no loophole: lab locations refuse the metadata service and this machine\'s database', async () => {
  for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://127.0.0.1:54329/']) {
    for (const location of ['local', 'lab-eu']) {
      await upsertLocation(t.db, { id: 'lab-eu', name: 'Europe (emulated)', region: 'Europe', kind: 'lab' })
      const res = await post({ url, locations: [location] })
      assert.equal(res.statusCode, 400, `${url} at ${location}`)
      assert.equal(res.json().field, 'url')
      assert.match(res.json().message, /non-public address .*H3LENS_ALLOW_PRIVATE_TARGETS/)
    }
  }
})

test('webhooks: every refused form gets a 400 on POST and PATCH; a public receiver is accepted', async () => {
  const ok = await t.app.inject({ method: 'POST', url: '/api/v1/channels', payload: { kind: 'webhook', name: 'ok', url: 'https://hooks.example.com/h3lens', secret: SECRET } })
  assert.equal(ok.statusCode, 201, ok.body)
  for (const [url, why] of REFUSED) {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/channels', payload: { kind: 'webhook', name: 'x', url, secret: SECRET } })
    assert.equal(res.statusCode, 400, `${url}: ${res.body}`)
    assert.equal(res.json().field, 'url')
    assert.match(res.json().message, why)
    assert.match(res.json().message, /webhooks may (not|only) target/)
    const changed = await t.app.inject({ method: 'PATCH', url: `/api/v1/channels/${ok.json().id}`, payload: { url } })
    assert.equal(changed.statusCode, 400, `PATCH ${url}`)
    assert.equal(changed.json().field, 'url')
  }
})

test('a webhook whose name resolves to loopback after it was saved is refused when it connects, and the receiver gets nothing', async () => {
  const hits = []
  const receiver = http.createServer((req, res) => { hits.push(req.url); res.end() })
  receiver.listen(0, '127.0.0.1')
  await once(receiver, 'listening')
  const { port } = /** @type {import('node:net').AddressInfo} */ (receiver.address())
  try {
    dns.set('rebind.test', ['93.184.215.14'])
    const saved = await t.app.inject({ method: 'POST', url: '/api/v1/channels', payload: { kind: 'webhook', name: 'rebinding', url: `http://rebind.test:${port}/hook`, secret: SECRET } })
    assert.equal(saved.statusCode, 201, saved.body)
    dns.set('rebind.test', ['127.0.0.1'])

    const sent = await t.app.inject({ method: 'POST', url: `/api/v1/channels/${saved.json().id}/test` })
    assert.equal(sent.statusCode, 200, sent.body)
    assert.equal(sent.json().ok, false)
    assert.equal(sent.json().status_code, null)
    assert.equal(sent.json().error, 'blocked by the private-target guard: host rebind.test resolves to 127.0.0.1 (loopback)')

    // The scheduler's deliveries take the same path. Due a second ago: deliverDue's
    // clock is the process's, in whole milliseconds, and now() may be later within one.
    await t.db.query(`INSERT INTO alert_deliveries (channel_id, kind, body, next_attempt_at, created_at)
      VALUES ($1, 'test', '{"version":1,"event":"test"}', now() - interval '1 second', now())`, [saved.json().id])
    const { delivered, failed } = await deliverDue(t.db, { policy: targetPolicy(t.config) })
    assert.deepEqual({ delivered, failed }, { delivered: 0, failed: 1 })
    const { rows: [attempt] } = await t.db.query(`SELECT a.error FROM alert_delivery_attempts a JOIN alert_deliveries d ON d.id = a.delivery_id
      WHERE d.channel_id = $1 AND d.kind = 'test' ORDER BY a.id DESC LIMIT 1`, [saved.json().id])
    assert.match(attempt.error, /blocked by the private-target guard: host rebind\.test resolves to 127\.0\.0\.1/)
    assert.deepEqual(hits, [], 'the internal receiver was never reached')
  } finally {
    receiver.close()
  }
})

test('with H3LENS_ALLOW_PRIVATE_TARGETS=true private and unresolvable targets are accepted, and webhooks reach them', async () => {
  const open = await createTestApp({ H3LENS_DNS_SERVERS: dns.server, H3LENS_ALLOW_PRIVATE_TARGETS: 'true' })
  try {
    for (const url of ['http://127.0.0.1:8080/', 'http://localhost.:8080/', 'http://[2002:a9fe:a9fe::]/', 'http://metadata/']) {
      const res = await open.app.inject({ method: 'POST', url: '/api/v1/monitors', payload: { url, locations: ['local'], paused: true } })
      assert.equal(res.statusCode, 201, `${url}: ${res.body}`)
    }
    const hits = []
    const receiver = http.createServer((req, res) => { hits.push(req.url); res.end() })
    receiver.listen(0, '127.0.0.1')
    await once(receiver, 'listening')
    const { port } = /** @type {import('node:net').AddressInfo} */ (receiver.address())
    try {
      const ch = await open.app.inject({ method: 'POST', url: '/api/v1/channels', payload: { kind: 'webhook', name: 'local', url: `http://127.0.0.1:${port}/hook`, secret: SECRET } })
      assert.equal(ch.statusCode, 201, ch.body)
      const sent = await open.app.inject({ method: 'POST', url: `/api/v1/channels/${ch.json().id}/test` })
      assert.equal(sent.json().ok, true, sent.body)
      assert.deepEqual(hits, ['/hook'])
    } finally {
      receiver.close()
    }
  } finally {
    await open.close()
  }
})
