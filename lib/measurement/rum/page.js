// Runs in the page of a monitored site: the snippet's own part, after
// web-vitals' (lib/measurement/rum/snippet.js puts the two together). One
// beacon per page view, sent with navigator.sendBeacon when the page is first
// hidden (visibilitychange, as web-vitals reports then); a page restored from the back/forward cache is a new view with a
// beacon of its own. No cookies, no storage, no request but the beacon, to
// the h3lens that served the script. Every field is defined once, in
// lib/measurement/rum/beacon.js.
//
// This file is served as text: its function is turned into source with
// toString() and whole-line comments and indentation are stripped, so it
// keeps to ES2020 syntax every browser of the last years runs, and it never
// writes a string or template literal across lines.

/**
 * @param {any} webVitals the web-vitals library (its standard build)
 * @param {HTMLScriptElement | null} script the <script> element that loaded the snippet
 * @param {{ maxMs: number, tag: string, protocol: string }} bounds what the server takes (./beacon.js SNIPPET_BOUNDS, given by ./snippet.js):
 *   a value past them is left out of the beacon, not sent to have the whole beacon refused
 */
export function h3lensBeacon (webVitals, script, bounds) {
  const data = script ? script.dataset : {}
  const sample = data.sample === undefined ? 1 : Number(data.sample)
  // Sampled per page view, before anything is observed.
  if (!data.key || !navigator.sendBeacon || !(Math.random() < sample)) return
  const url = new URL('beacon', /** @type {HTMLScriptElement} */ (script).src).href
  const perf = performance
  const ms = (/** @type {number} */ v) => (v >= 0 && v <= bounds.maxMs ? Math.round(v * 10) / 10 : undefined)
  const tagName = new RegExp(bounds.tag)
  const tag = (/** @type {any} */ node) => (node && node.tagName && tagName.test(node.tagName.toLowerCase()) ? node.tagName.toLowerCase() : undefined)
  const id = () => Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => (b + 256).toString(16).slice(1)).join('')

  /** @type {Record<string, any>} */
  let b = {}
  let sent = false

  /** @param {string} nav @param {number} start epoch ms of the view's start */
  const view = (nav, start) => {
    b = { key: data.key, v: 1, id: id(), t0: Math.round(start), sample, nav }
    sent = false
  }

  // The navigation: its protocol, its connection's phases, whether it came
  // from the cache, was prerendered or restored.
  const n = /** @type {any} */ (perf.getEntriesByType('navigation')[0])
  view(n && n.activationStart > 0 ? 'prerender' : /** @type {any} */ (document).wasDiscarded ? 'restore' : (n ? n.type.replace('_', '-') : 'navigate'), perf.timeOrigin)
  if (n) {
    const protocol = String(n.nextHopProtocol || '').toLowerCase()
    b.protocol = new RegExp(bounds.protocol).test(protocol) ? protocol : undefined
    b.dns_ms = ms(n.domainLookupEnd - n.domainLookupStart)
    b.connect_ms = ms(n.connectEnd - n.connectStart)
    b.tls_ms = ms(n.secureConnectionStart > 0 ? n.connectEnd - n.secureConnectionStart : 0)
    b.waiting_ms = ms(n.responseStart - n.requestStart)
    b.transfer_bytes = n.transferSize
    b.doc_cached = n.transferSize === 0 && n.decodedBodySize > 0
    b.delivery = n.deliveryType || undefined
    b.activation_ms = ms(n.activationStart)
  }

  const send = () => {
    if (sent) return
    sent = true
    if (b.nav !== 'back-forward-cache') {
      let all = 0
      let cached = 0
      for (const r of /** @type {any[]} */ (perf.getEntriesByType('resource'))) {
        if (r.name.indexOf(location.origin + '/') !== 0) continue
        all++
        if (r.transferSize === 0 && r.decodedBodySize > 0) cached++
      }
      b.resources = all
      b.cached_resources = cached
    }
    navigator.sendBeacon(url, JSON.stringify(b))
  }

  // Before web-vitals' own listener, so a restored page's metrics land in
  // the new view.
  addEventListener('pageshow', (e) => { if (e.persisted) view('back-forward-cache', perf.timeOrigin + e.timeStamp) }, true)
  // After web-vitals' own listener (on window, capturing), which reports
  // LCP, INP and CLS as the page is hidden; every browser h3lens supports
  // fires visibilitychange when a page is left, before pagehide's unload.
  document.addEventListener('visibilitychange', () => { if (document.visibilityState === 'hidden') send() })

  // Each interaction's events as they arrive (web-vitals' standard build
  // keeps only some of them, and by the time the page is hidden Chromium may
  // have let go of the element): its first input, its processing from the
  // first handler's start to the last one's end, when its frame was
  // presented, and its element.
  /** @type {Record<number, any>} */
  const acts = {}
  const seeEvents = (/** @type {any[]} */ list) => {
    for (const x of list) {
      if (!x.interactionId) continue
      const a = acts[x.interactionId] || (acts[x.interactionId] = { s: x.startTime, ps: x.processingStart, pe: 0, end: 0 })
      a.s = Math.min(a.s, x.startTime)
      a.ps = Math.min(a.ps, x.processingStart)
      a.pe = Math.max(a.pe, x.processingEnd)
      a.end = Math.max(a.end, x.startTime + x.duration)
      a.t = a.t || tag(x.target)
    }
  }
  /** @type {PerformanceObserver | undefined} */
  let events
  try {
    events = new PerformanceObserver((list) => seeEvents(list.getEntries()))
    events.observe(/** @type {any} */ ({ type: 'event', durationThreshold: 16, buffered: true }))
  } catch (x) {}

  /** @param {any} m a web-vitals metric */
  const put = (m) => {
    const e = m.entries[m.entries.length - 1]
    if (m.name === 'CLS') {
      b.cls = Math.round(m.value * 1e4) / 1e4
      const big = m.entries.reduce((/** @type {any} */ a, /** @type {any} */ x) => (a && a.value > x.value ? a : x), null)
      b.cls_target = big && big.sources && big.sources[0] ? tag(big.sources[0].node) : undefined
      return
    }
    b[m.name.toLowerCase() + '_ms'] = ms(m.value)
    if (m.name === 'LCP' && e) {
      const r = /** @type {any} */ (e.url && perf.getEntriesByName(e.url)[0])
      b.lcp_element = tag(e.element)
      b.lcp_resource_ms = r ? ms(r.responseEnd - r.startTime) : undefined
      b.lcp_render_delay_ms = ms(m.value - Math.max(r ? r.responseEnd : 0, n ? n.responseStart : 0))
    }
    if (m.name === 'INP' && e) {
      if (events) seeEvents(events.takeRecords())
      const a = acts[e.interactionId] || { s: e.startTime, ps: e.processingStart, pe: e.processingEnd, end: e.startTime + e.duration, t: tag(e.target) }
      b.inp_target = a.t
      b.inp_input_delay_ms = ms(a.ps - a.s)
      b.inp_processing_ms = ms(a.pe - a.ps)
      b.inp_presentation_ms = ms(a.end - a.pe)
    }
  }
  // INP with every change: web-vitals reads an interaction's entries when
  // the browser is next idle, and a page hidden before then gets its final
  // report first and the interaction's value after it, which without
  // reportAllChanges goes nowhere. Each change overwrites the fields, so the
  // beacon carries the last (the final) value.
  for (const on of ['onTTFB', 'onFCP', 'onLCP', 'onCLS']) webVitals[on](put)
  webVitals.onINP(put, { reportAllChanges: true })
}
