// Failures as data: per location and arm, the failure and fallback rates
// with their 95% intervals, and the paired test of the asymmetry (does one
// arm fail more often than the other in the same rounds?).
import { h, count, share, shareInterval, pValue, armNames } from '../dom.js'

const FAILURE = {
  h3_fails_more: { cls: 'bad', text: (n) => `${n.h3} fails or falls back more often than ${n.h2}` },
  h3_fails_less: { cls: 'good', text: (n) => `${n.h3} fails or falls back less often than ${n.h2}` },
  no_clear_difference: { cls: 'muted', text: () => 'No clear difference' },
  insufficient_data: { cls: 'muted', text: () => 'Not enough rounds to test' },
  h3_not_supported: { cls: 'unsupported', text: () => 'H3 not supported' }
}

/** "3.1% (1.2–6.0%)" with the count, highlighted when above 0. */
function rateCell (x, n, of) {
  if (!of) return h('td', { class: 'num muted' }, '—')
  if (!n) return h('td', { class: 'num muted', title: `0 of ${count(of)} rounds; 95% interval ${shareInterval(x)}` }, '0', h('span', { class: 'sub' }, ` (≤ ${share(x?.hi)})`))
  return h('td', { class: 'num bad', title: `${count(n)} of ${count(of)} rounds; rate with its Wilson 95% interval` },
    shareInterval(x), h('span', { class: 'sub' }, ` ${count(n)} of ${count(of)}`))
}

/**
 * One sentence for the paired failure test:
 * "H3 fails or falls back more often than H2: 12 vs 1 rounds, p = 0.003"
 * (a fallback, a load over another protocol than the one forced, is no
 * load of its arm).
 * @param {any} l comparison entry
 * @param {ReturnType<typeof armNames>} names
 */
export function failureSentence (l, names) {
  const f = l.failure ?? {}
  const verdict = l.h3_supported === false ? 'h3_not_supported' : (f.verdict ?? 'insufficient_data')
  const k = FAILURE[verdict] ?? FAILURE.insufficient_data
  if (verdict === 'h3_not_supported') return { cls: k.cls, verdict, text: 'H3 not supported: the origin refused QUIC and advertises no Alt-Svc h3' }
  if (verdict === 'insufficient_data') return { cls: k.cls, verdict, text: `${k.text(names)} (${count(f.rounds ?? 0)} rounds with both arms)` }
  const p = f.p_adjusted ?? f.p
  return { cls: k.cls, verdict, text: `${k.text(names)}: ${count(f.h3_only)} vs ${count(f.h2_only)} rounds, ${pValue(p)}` }
}

/**
 * @param {any} cmp response of GET /monitors/:id/comparison (all-locations entry last)
 */
export function reliabilityTable (cmp) {
  const names = armNames(cmp)
  const locations = cmp.locations
  const rows = [...locations.filter((l) => l.location_id !== null), ...locations.filter((l) => l.location_id === null)]
  const arm = (l, a) => l.arms?.[a] ?? { attempted: 0, failed: 0, unsupported: 0, fallback: 0 }
  return h('div', { class: 'table-scroll' },
    h('table', { class: 'grid rates' },
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col' }, 'Location'),
        h('th', { scope: 'col', class: 'num', title: 'Rounds in which the arm ran' }, 'Rounds'),
        h('th', { scope: 'col', class: 'num', title: 'Error, timeout or incomplete document, or an origin that refused QUIC; 95% interval in brackets' }, `${names.h2} failed`),
        h('th', { scope: 'col', class: 'num', title: 'Error, timeout or incomplete document, or an origin that refused QUIC; 95% interval in brackets' }, `${names.h3} failed`),
        h('th', { scope: 'col', class: 'num', title: 'Loaded over another protocol than the one forced; 95% interval in brackets' }, `${names.h2} fell back`),
        h('th', { scope: 'col', class: 'num', title: 'Loaded over another protocol than the one forced; 95% interval in brackets' }, `${names.h3} fell back`),
        h('th', { scope: 'col', title: 'Exact McNemar test on the rounds where exactly one arm did not load with its protocol, Benjamini–Hochberg adjusted over the locations' }, 'In the same rounds'))),
      h('tbody', {}, rows.map((l) => {
        const a = arm(l, 'h2')
        const b = arm(l, 'h3')
        const s = failureSentence(l, names)
        return h('tr', { class: l.location_id === null ? 'total' : null, 'data-location': l.location_id ?? 'all' },
          h('th', { scope: 'row' }, l.name),
          h('td', { class: 'num' }, count(Math.max(a.attempted, b.attempted))),
          rateCell(a.failure_rate, a.failed + a.unsupported, a.attempted),
          rateCell(b.failure_rate, b.failed + b.unsupported, b.attempted),
          rateCell(a.fallback_rate, a.fallback, a.attempted),
          rateCell(b.fallback_rate, b.fallback, b.attempted),
          h('td', { class: `failure-verdict ${s.cls}`, 'data-verdict': s.verdict }, s.text))
      }))))
}
