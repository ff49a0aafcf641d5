// Network profiles of the emulated lab locations: the defaults, their
// validation, and their translation into link-emulator arguments.
//
// A profile describes the path between a location and the origin:
//   rtt_ms         round-trip time; each direction gets half
//   jitter_ms      RTT jitter; each direction gets uniform ±jitter_ms/2, so the
//                  RTT stays within rtt_ms ± jitter_ms. Packet order is kept,
//                  so under load a packet often waits for a later-drawn one
//                  ahead of it and delays lean to the top of the range
//                  (lab-asia, 45 ± 2 ms one way: median 46.8 ms at 10,000
//                  packets/s; bench/lab-fidelity-net.js).
//   loss_pct       loss rate of each direction, in percent
//   loss_model     'bernoulli' | 'gilbert-elliott'; the latter needs
//   ge             { p, r, h, k }: probabilities of good→bad (p), bad→good (r),
//                  delivery in the bad state (h) and in the good state (k).
//                  Loss is 1-k in the good state and 1-h in the bad state, so
//                  the long-run loss is geLossPct(ge), which loss_pct must match.
//   down_kbps      rate toward the location, kbit/s of IP bytes
//   up_kbps        rate toward the origin
//   queue_packets  FIFO in front of each rate limiter (tail drop)
//   block_udp      optional, default false: drop every UDP packet in both
//                  directions, as networks that keep QUIC out do (IPv4
//                  protocol 17, IPv6 next header 17); TCP and ICMP pass.
//                  The drops happen ahead of the emulated link: linkem counts
//                  them as drop_udp, never as loss, and they take no draw
//                  from the seeded loss stream. With netem, a tc u32 filter
//                  on each veth end's egress (clsact) drops them before netem.
//   seed           optional; fixes the link's random loss and jitter

/**
 * @typedef {{ p: number, r: number, h: number, k: number }} GilbertElliott
 * @typedef {{
 *   name: string, region?: string,
 *   rtt_ms: number, jitter_ms: number,
 *   loss_pct: number, loss_model: 'bernoulli' | 'gilbert-elliott', ge?: GilbertElliott,
 *   down_kbps: number, up_kbps: number, queue_packets: number, block_udp?: boolean, seed?: number
 * }} Profile
 */

export const LOSS_MODELS = Object.freeze(['bernoulli', 'gilbert-elliott'])

// The regional spread follows Dropbox (2023): H3 gained most at p95 in Asia
// (−200 ms), less in Europe (−141 ms) and North America (−118 ms), because
// the gain comes from loss recovery without head-of-line blocking. So RTT
// grows 1×/2×/3× and loss grows with it:
//   na    30 ms, 0.1 % random loss: a good wired path on the same continent.
//   eu    60 ms, 0.5 % random loss: transatlantic.
//   asia  90 ms, 1.5 % bursty loss: long-haul with congested peering, where
//         losses come in bursts (GE bad state lasts 1/r = 2 packets and loses
//         every packet; p = 0.0076 gives 0.0076/0.5076 = 1.497 % overall).
// Rates of 25–50 Mbit/s down load a 1 MB page in well under the 2.3 s
// Cloudflare measured in the field, so page tests take seconds, not minutes.
// Each queue is about one bandwidth-delay product of the down link in
// 1500-byte packets (na: 50 Mbit/s × 30 ms = 125), a common buffer size
// that neither starves TCP nor adds bufferbloat of more than one RTT.
//   udp-blocked  lab-na's path behind a network that drops all UDP, as some
//         corporate and public networks do: QUIC never connects, so forced
//         H3 fails there and a browser left to itself stays on H2. Same
//         RTT, loss and rates as lab-na, so blocking is the only difference.
/** @type {readonly Readonly<Profile>[]} */
export const DEFAULT_PROFILES = Object.freeze([
  Object.freeze({
    name: 'lab-na',
    region: 'North America',
    rtt_ms: 30,
    jitter_ms: 1,
    loss_pct: 0.1,
    loss_model: 'bernoulli',
    down_kbps: 50000,
    up_kbps: 20000,
    queue_packets: 128
  }),
  Object.freeze({
    name: 'lab-eu',
    region: 'Europe',
    rtt_ms: 60,
    jitter_ms: 2,
    loss_pct: 0.5,
    loss_model: 'bernoulli',
    down_kbps: 40000,
    up_kbps: 15000,
    queue_packets: 200
  }),
  Object.freeze({
    name: 'lab-asia',
    region: 'Asia',
    rtt_ms: 90,
    jitter_ms: 4,
    loss_pct: 1.5,
    loss_model: 'gilbert-elliott',
    ge: Object.freeze({ p: 0.0076, r: 0.5, h: 0, k: 1 }),
    down_kbps: 25000,
    up_kbps: 10000,
    queue_packets: 192
  }),
  Object.freeze({
    name: 'lab-udp-blocked',
    region: 'Corporate network, UDP blocked',
    rtt_ms: 30,
    jitter_ms: 1,
    loss_pct: 0.1,
    loss_model: 'bernoulli',
    down_kbps: 50000,
    up_kbps: 20000,
    queue_packets: 128,
    block_udp: true
  })
])

// A mismatch below this is rounding in the profile, not a wrong model.
const GE_LOSS_TOLERANCE_PCT = 0.05

/**
 * Long-run loss of a Gilbert–Elliott chain, in percent.
 * @param {GilbertElliott} ge
 */
export function geLossPct ({ p, r, h, k }) {
  if (p + r === 0) return (1 - k) * 100
  const bad = p / (p + r)
  return ((1 - bad) * (1 - k) + bad * (1 - h)) * 100
}

/**
 * Throws an Error naming the first invalid field; returns the profile.
 * @template {Profile} P
 * @param {P} p
 * @returns {P}
 */
export function validateProfile (p) {
  if (p === null || typeof p !== 'object') throw new Error('profile must be an object')
  const where = typeof p.name === 'string' ? `profile "${p.name}"` : 'profile'
  /** @type {(field: string, rule: string, value: unknown) => never} */
  const fail = (field, rule, value) => {
    throw new Error(`${where}: ${field} ${rule} (got ${JSON.stringify(value) ?? String(value)})`)
  }
  /**
   * @param {keyof Profile} field
   * @param {number} min
   * @param {number} max
   */
  const number = (field, min, max, { above = false, integer = false } = {}) => {
    const v = p[field]
    if (typeof v !== 'number' || !Number.isFinite(v)) fail(field, 'must be a finite number', v)
    if (above ? v <= min : v < min) fail(field, `must be ${above ? '>' : '≥'} ${min}`, v)
    if (v > max) fail(field, `must be ≤ ${max}`, v)
    if (integer && !Number.isInteger(v)) fail(field, 'must be a whole number', v)
  }

  // The name becomes part of a network-namespace name and a file name.
  if (typeof p.name !== 'string' || !/^[a-z0-9][a-z0-9-]{0,23}$/.test(p.name)) {
    fail('name', 'must be 1–24 characters of a-z, 0-9 and "-", starting with a letter or digit', p.name)
  }
  if (p.region !== undefined && typeof p.region !== 'string') fail('region', 'must be a string', p.region)
  number('rtt_ms', 0, 60000)
  number('jitter_ms', 0, 60000)
  // Larger jitter than RTT would need delays below zero, which get clamped,
  // and the link would no longer have the stated mean RTT.
  if (p.jitter_ms > p.rtt_ms) fail('jitter_ms', `must be ≤ rtt_ms (${p.rtt_ms})`, p.jitter_ms)
  number('loss_pct', 0, 100)
  if (!LOSS_MODELS.includes(p.loss_model)) fail('loss_model', `must be one of ${LOSS_MODELS.join(', ')}`, p.loss_model)
  if (p.loss_model === 'gilbert-elliott') validateGe(p, fail)
  number('down_kbps', 0, 10_000_000, { above: true })
  number('up_kbps', 0, 10_000_000, { above: true })
  number('queue_packets', 1, 1_000_000, { integer: true })
  if (p.block_udp !== undefined && typeof p.block_udp !== 'boolean') fail('block_udp', 'must be true or false', p.block_udp)
  if (p.seed !== undefined && (!Number.isSafeInteger(p.seed) || p.seed < 0)) {
    fail('seed', 'must be a non-negative whole number', p.seed)
  }
  return p
}

/**
 * @param {Profile} p
 * @param {(field: string, rule: string, value: unknown) => never} fail
 */
function validateGe (p, fail) {
  const ge = p.ge
  if (ge === null || typeof ge !== 'object') fail('ge', 'must be an object { p, r, h, k } for gilbert-elliott loss', ge)
  for (const key of /** @type {const} */ (['p', 'r', 'h', 'k'])) {
    const v = ge[key]
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 1) fail(`ge.${key}`, 'must be a probability in [0, 1]', v)
  }
  // With r = 0 the chain never leaves the bad state once it enters it.
  if (ge.p > 0 && ge.r === 0) fail('ge.r', 'must be > 0 when ge.p > 0', ge.r)
  const expected = geLossPct(ge)
  if (Math.abs(expected - p.loss_pct) > GE_LOSS_TOLERANCE_PCT) {
    fail('loss_pct', `must match the long-run loss of ge (${expected.toFixed(3)} %)`, p.loss_pct)
  }
}

/** @param {number} x */
const fmt = (x) => String(Math.round(x * 1e6) / 1e6)

/**
 * linkem arguments for a profile; "down" is linkem's A→B direction, so the
 * origin must be device A and the location device B.
 * @param {Profile} p
 * @returns {string[]}
 */
export function profileToLinkemArgs (p) {
  validateProfile(p)
  const args = []
  for (const dir of ['down', 'up']) {
    const kbps = dir === 'down' ? p.down_kbps : p.up_kbps
    if (p.block_udp) args.push(`--${dir}-block-udp`)
    args.push(`--${dir}-delay`, fmt(p.rtt_ms / 2))
    if (p.jitter_ms > 0) args.push(`--${dir}-jitter`, fmt(p.jitter_ms / 2), `--${dir}-keep-order`)
    if (p.loss_model === 'gilbert-elliott') {
      // validateProfile: a gilbert-elliott profile has its ge.
      const { p: gp, r, h, k } = /** @type {GilbertElliott} */ (p.ge)
      args.push(`--${dir}-ge`, [gp, r, h, k].map(fmt).join(','))
    } else if (p.loss_pct > 0) {
      args.push(`--${dir}-loss`, fmt(p.loss_pct))
    }
    args.push(`--${dir}-rate`, fmt(kbps), `--${dir}-queue`, String(p.queue_packets))
  }
  if (p.seed !== undefined) args.push('--seed', String(p.seed))
  return args
}

/**
 * `tc qdisc ... netem` arguments for one direction of a profile, to be put
 * on the egress of that direction's veth end ('down': the origin's end).
 * With a rate set, netem schedules each packet after the one ahead of it,
 * so jittered packets keep their order as they do with linkem. Its GE model
 * takes percentages in the order p, r, 1-h, 1-k.
 * @param {Profile} p
 * @param {'down' | 'up'} direction
 * @returns {string[]}
 */
export function profileToNetemArgs (p, direction) {
  validateProfile(p)
  if (direction !== 'down' && direction !== 'up') throw new Error(`direction must be 'down' or 'up' (got ${direction})`)
  const pct = (/** @type {number} */ x) => `${fmt(x * 100)}%`
  const args = ['delay', `${fmt(p.rtt_ms / 2)}ms`]
  if (p.jitter_ms > 0) args.push(`${fmt(p.jitter_ms / 2)}ms`)
  if (p.loss_model === 'gilbert-elliott') {
    // validateProfile: a gilbert-elliott profile has its ge.
    const { p: gp, r, h, k } = /** @type {GilbertElliott} */ (p.ge)
    args.push('loss', 'gemodel', pct(gp), pct(r), pct(1 - h), pct(1 - k))
  } else if (p.loss_pct > 0) {
    args.push('loss', 'random', `${fmt(p.loss_pct)}%`)
  }
  const kbps = direction === 'down' ? p.down_kbps : p.up_kbps
  // netem's limit counts the packets in its delay line too, so add what
  // the link holds in flight (rate × one-way delay, 1500-byte packets).
  const inFlight = Math.ceil((kbps * 1000 / 8 / 1500) * (p.rtt_ms + p.jitter_ms) / 2 / 1000 - 1e-9)
  args.push('rate', `${fmt(kbps)}kbit`, 'limit', String(p.queue_packets + inFlight))
  return args
}

/**
 * The tc filters that make a netem-shaped veth end drop UDP for a profile
 * with block_udp, each the arguments after `tc filter add dev DEV`; none
 * otherwise. They sit on the clsact egress hook, which runs before the root
 * qdisc, so a dropped packet never enters netem, as with linkem's filter.
 * u32 reads IPv6's next header in the fixed header only: an extension
 * header ahead of UDP would let that packet pass (linkem follows the chain).
 * @param {Profile} p
 * @returns {string[][]}
 */
export function profileToTcFilterArgs (p) {
  validateProfile(p)
  if (!p.block_udp) return []
  return [
    ['egress', 'protocol', 'ip', 'u32', 'match', 'ip', 'protocol', '17', '0xff', 'action', 'drop'],
    ['egress', 'protocol', 'ipv6', 'u32', 'match', 'ip6', 'protocol', '17', '0xff', 'action', 'drop']
  ]
}
