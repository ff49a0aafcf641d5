// The auto arm: the page as a user's browser loads it, nothing forced, as a
// sequence of visits on one browser profile of the round's own:
//   first      a cold visit: a new profile, nothing known about the origin;
//   returning  the browser started again on that profile, as for a user who
//              comes back later: it knows what the first visit learnt about
//              the origin (its Alt-Svc, whether H3 failed and was marked
//              broken), but has no live connection and no cached response;
//   repeat     with repeat_view, a second navigation right after the
//              returning visit, on its live connections.
//
// Why a restart on a kept profile: Chromium writes what it learnt about
// servers (Alt-Svc, broken alternatives) to the profile's "Network
// Persistent State" when it shuts down and reads it when it starts, and a
// restart closes every connection, as time away does. An incognito context
// forgets all of it. Firefox keeps the Alt-Svc it learnt in the profile's
// AlternateServices.bin (seen after a first visit to the lab origin: the
// returning visit's document then comes over H3 with the cache removed,
// test/firefox-lab.test.js); every run of Firefox has a profile of its own
// anyway (agents/browsers/firefox.js).
//
// Why the HTTP cache is removed between the visits, from disk while the
// browser is stopped:
//   - a revalidated response reports the protocol of the cached one: a
//     returning visit whose document came over H3 with a 304 showed "h2"
//     in DevTools and in Navigation Timing (seen in a net log, Chromium
//     156), so the cache would hide the very protocol the arm measures;
//   - the forced arms the visit is compared with load cold, so a cached
//     visit would measure the cache, not the protocol;
//   - DevTools' Network.clearBrowserCache cannot be used: it also forgets
//     the origin's Alt-Svc (measured: the returning visit's document then
//     went over H2, "unspecifiedReason").
// Each pool removes its own browser's cache (forgetCache).
// The restart costs one more browser launch per round (about 0.25 s of
// wall time on the 2-core test machine; docs/BENCHMARKS.md has the figure).
import { emptyResult, measurePageViews } from './measure.js'
import { MIN_LOAD_MS } from './round-budget.js'
import { monotonicNow } from './clock.js'

/**
 * The auto arm's visits of the page, each a result with its view.
 * @param {import('./measure.js').MeasureOptions & { repeatView?: boolean, allowEmpty?: boolean }} opts
 * @returns {Promise<Record<string, any>[]>} first, returning, then repeat when asked for
 */
export async function measureVisits ({ repeatView = false, ...opts }) {
  const { pool } = opts
  if (!pool.newProfile || !pool.removeProfile || !pool.forgetCache) throw new Error('this browser pool cannot keep a profile between launches, which the auto arm needs')
  const profile = await pool.newProfile()
  try {
    const first = await measurePageViews({ ...opts, profile, repeatView: false })
    await pool.forgetCache(profile)
    const timeoutMs = Math.min(opts.timeoutMs ?? 30_000, (opts.deadline ?? Infinity) - monotonicNow())
    if (!(timeoutMs >= MIN_LOAD_MS)) return [...first, ...notRun(opts.mode, first[0], repeatView)]
    const returning = await measurePageViews({ ...opts, timeoutMs, profile, view: 'returning', repeatView })
    // What the browser could have learnt on the first visit: the origins
    // that announced H3 by Alt-Svc then. A browser that does not say why it
    // chose a protocol (Firefox) is read against it (protocol-reason.js).
    const learnt = (first[0].origins ?? []).filter((/** @type {{ h3_advertised?: boolean }} */ o) => o.h3_advertised).map((/** @type {{ origin: string }} */ o) => o.origin)
    for (const r of returning) r.learnt_alt_svc = learnt
    return [...first, ...returning]
  } finally {
    await pool.removeProfile(profile)
  }
}

/**
 * The visits the auto arm's time budget left no room for, as timed-out
 * results, so the arm's series show every round that asked for them.
 * @param {string} mode
 * @param {Record<string, any>} first
 * @param {boolean} repeatView
 */
function notRun (mode, first, repeatView) {
  return (repeatView ? ['returning', 'repeat'] : ['returning']).map((view) => ({
    ...emptyResult(mode, first.flags, { probe: 'page', view }),
    status: 'timeout',
    browser_version: first.browser_version,
    error: 'not run: the auto arm\'s time budget was spent'
  }))
}
