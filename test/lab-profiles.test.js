import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  DEFAULT_PROFILES, geLossPct, profileToLinkemArgs, profileToNetemArgs, profileToTcFilterArgs, validateProfile
} from '../lab/profiles.js'

const byName = Object.fromEntries(DEFAULT_PROFILES.map((p) => [p.name, p]))
/** @type {import('../lab/profiles.js').Profile} */
const good = { name: 'x', rtt_ms: 40, jitter_ms: 2, loss_pct: 1, loss_model: 'bernoulli', down_kbps: 20000, up_kbps: 5000, queue_packets: 100 }

test('the defaults are valid and follow the Dropbox spread: RTT 1×, 2×, 3×, loss rising', () => {
  for (const p of DEFAULT_PROFILES) validateProfile(p)
  const { 'lab-na': na, 'lab-eu': eu, 'lab-asia': asia } = byName
  assert.deepEqual([na.region, eu.region, asia.region], ['North America', 'Europe', 'Asia'])
  assert.equal(eu.rtt_ms, 2 * na.rtt_ms)
  assert.equal(asia.rtt_ms, 3 * na.rtt_ms)
  assert.ok(na.loss_pct < eu.loss_pct && eu.loss_pct < asia.loss_pct)
  assert.equal(asia.loss_model, 'gilbert-elliott')
})

test('one default location blocks UDP on lab-na\'s path, and only it does', () => {
  assert.deepEqual(DEFAULT_PROFILES.filter((p) => p.block_udp).map((p) => p.name), ['lab-udp-blocked'])
  const blocked = byName['lab-udp-blocked']
  assert.match(blocked.region ?? '', /UDP blocked/)
  assert.equal(blocked.block_udp, true)
  const path = (/** @type {Record<string, unknown>} */ p) => Object.fromEntries(Object.entries(p).filter(([k]) => !['name', 'region', 'block_udp'].includes(k)))
  assert.deepEqual(path(blocked), path(byName['lab-na']), 'the same RTT, loss and rates as lab-na')
})

test('a 1 MB page fits in well under a second of each default down link', () => {
  for (const p of DEFAULT_PROFILES) {
    const seconds = 8e6 / (p.down_kbps * 1000)
    assert.ok(seconds < 0.5, `${p.name}: ${seconds.toFixed(2)} s`)
  }
})

for (const [change, field] of /** @type {[object, string][]} */ ([
  [{ rtt_ms: -1 }, 'rtt_ms'],
  [{ rtt_ms: Number.NaN }, 'rtt_ms'],
  [{ rtt_ms: '40' }, 'rtt_ms'],
  [{ jitter_ms: -0.5 }, 'jitter_ms'],
  [{ jitter_ms: 50 }, 'jitter_ms'],
  [{ loss_pct: 101 }, 'loss_pct'],
  [{ loss_pct: Infinity }, 'loss_pct'],
  [{ loss_model: 'random' }, 'loss_model'],
  [{ down_kbps: 0 }, 'down_kbps'],
  [{ up_kbps: -10 }, 'up_kbps'],
  [{ queue_packets: 0 }, 'queue_packets'],
  [{ queue_packets: 10.5 }, 'queue_packets'],
  [{ name: 'Has Spaces' }, 'name'],
  [{ seed: -3 }, 'seed'],
  [{ block_udp: 'yes' }, 'block_udp'],
  [{ block_udp: 1 }, 'block_udp'],
  [{ block_udp: null }, 'block_udp'],
  [{ loss_model: 'gilbert-elliott' }, 'ge'],
  [{ loss_model: 'gilbert-elliott', ge: { p: 0.1, r: 1.5, h: 0, k: 1 } }, 'ge.r'],
  [{ loss_model: 'gilbert-elliott', ge: { p: 0.1, r: 0, h: 0, k: 1 } }, 'ge.r'],
  [{ loss_model: 'gilbert-elliott', ge: { p: 0.01, r: 0.5, h: 0, k: 1 } }, 'loss_pct']
])) {
  const shown = Object.entries(change).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`).join(' ')
  test(`validateProfile names ${field} for ${shown}`, () => {
    assert.throws(() => validateProfile({ ...good, ...change }), (err) => {
      assert.ok(err instanceof Error)
      assert.match(err.message, new RegExp(`\\b${field.replace('.', '\\.')}\\b`))
      return true
    })
  })
}

test('Gilbert–Elliott long-run loss', () => {
  assert.equal(geLossPct({ p: 0, r: 1, h: 0, k: 1 }), 0)
  assert.ok(Math.abs(geLossPct({ p: 0.01, r: 0.25, h: 0, k: 1 }) - 100 / 26) < 1e-9)
  // Half the time bad, losing half there, nothing in the good state: 25 %.
  assert.equal(geLossPct({ p: 0.5, r: 0.5, h: 0.5, k: 1 }), 25)
})

test('linkem arguments split the RTT and jitter per direction and keep order', () => {
  const args = profileToLinkemArgs({ ...good, seed: 9 })
  const value = (opt) => args[args.indexOf(opt) + 1]
  assert.equal(value('--down-delay'), '20')
  assert.equal(value('--up-delay'), '20')
  assert.equal(value('--down-jitter'), '1')
  assert.ok(args.includes('--down-keep-order') && args.includes('--up-keep-order'))
  assert.equal(value('--down-loss'), '1')
  assert.equal(value('--down-rate'), '20000')
  assert.equal(value('--up-rate'), '5000')
  assert.equal(value('--up-queue'), '100')
  assert.equal(value('--seed'), '9')
  assert.ok(!args.includes('--down-ge'))
  const ge = profileToLinkemArgs(byName['lab-asia'])
  assert.equal(ge[ge.indexOf('--down-ge') + 1], '0.0076,0.5,0,1')
  assert.ok(!ge.includes('--down-loss'))
})

test('netem arguments use netem units and count the delay line in the limit', () => {
  // 20 Mbit/s of 1500-byte packets for 21 ms of one-way delay: 35 in flight.
  assert.deepEqual(profileToNetemArgs(good, 'down'),
    ['delay', '20ms', '1ms', 'loss', 'random', '1%', 'rate', '20000kbit', 'limit', '135'])
  const asia = profileToNetemArgs(byName['lab-asia'], 'up')
  assert.deepEqual(asia.slice(asia.indexOf('loss'), asia.indexOf('rate')), ['loss', 'gemodel', '0.76%', '50%', '100%', '0%'])
  assert.throws(() => profileToNetemArgs(good, /** @type {any} */ ('sideways')), /direction/)
})

test('block_udp drops UDP in both directions: a linkem flag per direction, a tc filter per IP version', () => {
  assert.ok(!profileToLinkemArgs(good).some((a) => a.includes('block-udp')), 'off by default')
  assert.deepEqual(profileToTcFilterArgs(good), [])
  assert.deepEqual(profileToLinkemArgs({ ...good, block_udp: false }), profileToLinkemArgs(good))
  const args = profileToLinkemArgs({ ...good, block_udp: true })
  assert.deepEqual(args.filter((a) => a.includes('block-udp')), ['--down-block-udp', '--up-block-udp'])
  // The rest of the link is the same path.
  assert.deepEqual(args.filter((a) => !a.includes('block-udp')), profileToLinkemArgs(good))
  assert.deepEqual(profileToTcFilterArgs({ ...good, block_udp: true }), [
    ['egress', 'protocol', 'ip', 'u32', 'match', 'ip', 'protocol', '17', '0xff', 'action', 'drop'],
    ['egress', 'protocol', 'ipv6', 'u32', 'match', 'ip6', 'protocol', '17', '0xff', 'action', 'drop']
  ])
  assert.deepEqual(profileToNetemArgs({ ...good, block_udp: true }, 'down'), profileToNetemArgs(good, 'down'))
})
