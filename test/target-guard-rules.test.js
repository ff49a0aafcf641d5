// The resolver rules the agent gives Chromium must refuse exactly the IP
// literals the guard calls non-public: a literal they missed would be
// fetched, one they caught wrongly would fail a public page. Chromium
// matches them with base::MatchPattern ("*": any run, "?": zero or one
// character) against the host as the URL parser writes it; the rules are
// checked here against literalReason over every range's edges and a sweep
// of addresses. (test/target-guard-agent.test.js shows Chromium honouring
// them.)
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { literalPatterns, privateAltSvc } from '../agents/target-guard.js'
import { IPV4_RANGES, literalReason } from '../lib/measurement/addresses.js'

/** base::MatchPattern, as Chromium's host resolver rules use it. */
function matchPattern (text, pattern) {
  if (!pattern.length) return !text.length
  const [p, ...rest] = pattern
  const tail = rest.join('')
  if (p === '*') return [...Array(text.length + 1).keys()].some((i) => matchPattern(text.slice(i), tail))
  if (p === '?') return matchPattern(text, tail) || (text.length > 0 && matchPattern(text.slice(1), tail))
  return text[0] === p && matchPattern(text.slice(1), tail)
}

const patterns = literalPatterns()
/** The host Chromium matches the rules against: the URL parser's form of the address. */
const host = (a) => new URL(`http://${a.includes(':') ? `[${a}]` : a}/`).hostname.replace(/^\[|\]$/g, '')
const refusedByRules = (a) => patterns.some((p) => matchPattern(host(a), p))

const v4 = (n) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.')
const v4n = (a) => a.split('.').reduce((n, o) => n * 256 + Number(o), 0)
const hex = (g) => g.map((x) => x.toString(16)).join(':')

/** Seeded, so a failure names addresses that fail again. */
function random (seed) {
  return () => {
    seed = (seed * 1103515245 + 12345) >>> 0
    return seed
  }
}

test('the rules refuse exactly the IPv4 literals the guard calls non-public', () => {
  const edges = IPV4_RANGES.flatMap(([prefix, bits]) => {
    const first = v4n(prefix)
    const last = first + 2 ** (32 - bits) - 1
    return [first - 1, first, first + 1, last - 1, last, last + 1].filter((n) => n >= 0 && n < 2 ** 32)
  })
  const next = random(21)
  const sweep = Array.from({ length: 4000 }, () => next())
  for (const n of [...edges, ...sweep]) {
    const a = v4(n)
    assert.equal(refusedByRules(a), literalReason(a) !== null, `${a}: rules ${refusedByRules(a)}, guard ${literalReason(a)}`)
  }
})

test('the rules refuse exactly the IPv6 literals the guard calls non-public', () => {
  const named = [
    '::', '::1', '::2', '::ffff:7f00:1', '::ffff:5db8:d70e', '::7f00:1', '::5db8:d70e', '0:1::', '1::', 'ff:1::', 'fff:1::', '1000::', '1fff::1', '2000::', '1fff:ffff::',
    '64:ff9b::7f00:1', '64:ff9b::5db8:d70e', '64:ff9b:1::1', '64:ff9b:0:0:1::', '100::1', 'fc00::1', 'fd12::1', 'fe80::1', 'fec0::1', 'ff02::1',
    '2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:1::1', '2001:2::1', '2001:2:0:1::', '2001:2:1::', '2001:3::1', '2001:f::1',
    '2001:10::1', '2001:1f::1', '2001:20::1', '2001:2f::1', '2001:30::1', '2001:db8::1', '2001:db9::1', '2001:4860:4860::8888',
    '2002::1', '2002:5db8:d70e::1', '2002:a9fe:a9fe::', '2003::1', '2606:4700:4700::1111', '3ffe::1', '3fff::1', '3fff:fff::1', '3fff:1000::1', '4000::1'
  ]
  const next = random(6)
  const sweep = Array.from({ length: 4000 }, () => {
    const g = Array.from({ length: 8 }, () => next() & 0xffff)
    // Most of the space is outside 2000::/3; keep half the sample inside it, and zero runs for compression.
    if (next() & 1) g[0] = 0x2000 | (g[0] & 0x1fff)
    if (next() & 1) g[1] = next() & 0x3f
    if (next() & 1) g.fill(0, 2, 2 + (next() % 6))
    return hex(g)
  })
  for (const a of [...named, ...sweep]) {
    assert.equal(refusedByRules(a), literalReason(a) !== null, `${a} (${host(a)}): rules ${refusedByRules(a)}, guard ${literalReason(a)}`)
  }
})

test('the rules leave host names alone, but for all-numeric-looking four-label ones', () => {
  for (const name of ['example.com', '0.gravatar.com', '10.example.com', '127.0.0.1.nip.io', 'fd.example', 'fc00.example.org', 'a.b.c.d', '2002.example']) {
    assert.equal(refusedByRules(name), false, name)
  }
})

test('an alternative service at a non-public literal, a localhost name or the guard resolver\'s own name is noted; one at a public name or the same host is not', () => {
  const notes = privateAltSvc([
    { origin: 'https://pub.test', alt_svc: 'h3="resolver.h3lens.invalid:5432"; ma=60, h3=":443"; ma=60' },
    { origin: 'https://other.test', alt_svc: 'h3="localhost:6379"; ma=60, h3="cdn.example.com:443"; ma=60, h3="10.0.0.1:443"; ma=0' }
  ])
  assert.equal(notes.length, 2, JSON.stringify(notes))
  assert.match(notes[0].message, /^https:\/\/pub\.test advertised h3 at resolver\.h3lens\.invalid:5432, a non-public address \(the private-target guard's resolver, at the agent's loopback\)/)
  assert.match(notes[1].message, /^https:\/\/other\.test advertised h3 at localhost:6379, a non-public address \(a localhost name\)/)
})
