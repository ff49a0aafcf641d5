// Firing alerts as badges beside a monitor, each linking to its evidence:
// the monitor page with the window, metric and percentile that tripped it.
import { h } from '../dom.js'

const KIND = {
  h3_regression: (a) => `H3 slower at p${a.evidence?.percentile ?? '?'}`,
  h3_failure: () => 'H3 failing',
  error_rate: () => 'errors',
  location_silent: () => 'silent',
  h3_share_drop: () => 'H3 share down'
}

/** One line naming an alert: "H3 slower at p95 · cal-b". */
export function alertTitle (a) {
  return `${(KIND[a.kind] ?? (() => a.kind))(a)} · ${a.location_id}`
}

/**
 * @param {any[]} firing alerts of one monitor
 * @returns {HTMLElement | null}
 */
export function alertBadges (firing) {
  if (!firing?.length) return null
  return h('span', { class: 'alert-badges' }, firing.map((a) => h('a', {
    class: `badge alert sev-${a.severity}`,
    href: a.evidence?.link ?? '#/alerts',
    title: `${a.description ?? a.kind} — firing since ${new Date(a.fired_at ?? a.since).toLocaleString()}; open the evidence`
  }, '● ', alertTitle(a))))
}

/** Firing alerts grouped by monitor id; an empty map when alerts cannot be read (a read key, an older server). */
export async function firingByMonitor (api) {
  const out = new Map()
  try {
    const { current } = await api.alerts({ state: 'firing' })
    for (const a of current) out.set(a.monitor_id, [...(out.get(a.monitor_id) ?? []), a])
  } catch {}
  return out
}
