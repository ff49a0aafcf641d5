// Why a run's page came over the protocol it did, in words, from what the
// browser reported per request: its protocol and Chromium's
// alternateProtocolUsage (why the alternative, QUIC, job was or was not
// used; Firefox reports none), and the Alt-Svc the origin sent. The forced arms' reason is their
// switch; the auto arm's is the browser's own choice, which is what it
// measures.
import { normalizeProtocol } from './protocol.js'
import { originOf } from './origin.js'
import { hostPort } from './modes.js'

/**
 * Chromium's alternateProtocolUsage values (DevTools Network.Response), what
 * they mean, and the reason each gives for the navigation's protocol.
 * @type {Readonly<Record<string, string>>}
 */
export const ALTERNATE_PROTOCOL_USAGE = Object.freeze({
  alternativeJobWonWithoutRace: 'QUIC was used without a race (known to work)',
  alternativeJobWonRace: 'QUIC won the race against TCP',
  mainJobWonRace: 'TCP won the race against QUIC',
  mappingMissing: 'no Alt-Svc known for the origin',
  broken: 'QUIC marked broken for the origin after failures',
  dnsAlpnH3JobWonWithoutRace: 'QUIC announced by an HTTPS DNS record, used without a race',
  dnsAlpnH3JobWonRace: 'QUIC announced by an HTTPS DNS record, won the race',
  unspecifiedReason: 'no alternative considered'
})

/**
 * A few words for each alternateProtocolUsage value, where a table has room
 * for no more (the run detail's waterfall); ALTERNATE_PROTOCOL_USAGE says it
 * in full.
 * @type {Readonly<Record<string, string>>}
 */
export const ALTERNATE_PROTOCOL_USAGE_LABELS = Object.freeze({
  alternativeJobWonWithoutRace: 'QUIC, no race',
  alternativeJobWonRace: 'QUIC won',
  mainJobWonRace: 'TCP won',
  mappingMissing: 'no Alt-Svc',
  broken: 'QUIC broken',
  dnsAlpnH3JobWonWithoutRace: 'DNS: QUIC, no race',
  dnsAlpnH3JobWonRace: 'DNS: QUIC won',
  unspecifiedReason: 'unspecified'
})

/**
 * The reasons a run can give, by code.
 * @type {Readonly<Record<string, string>>}
 */
export const PROTOCOL_REASONS = Object.freeze({
  forced_h3: 'H3: forced by the arm',
  quic_off: 'H2: QUIC switched off by the arm',
  fell_back: 'Not H3: the forced QUIC connection was not used',
  not_forced: 'Not H3: the page ended on an origin the arm did not force (a script sent it there, or a redirect not found before the round), so the browser chose its protocol',
  plain_http: 'HTTP/1.1: the page is plain http://, and browsers speak H2 and H3 over https:// only',
  https_record: 'H3: announced by an HTTPS DNS record',
  alt_svc: 'H3: learnt from Alt-Svc',
  h3: 'H3',
  broken: 'Not H3: H3 marked broken after failures',
  tcp_won: 'Not H3: TCP won the race',
  not_announced: 'Not H3: the origin does not announce H3',
  not_known: 'Not H3: the origin was not yet known to speak H3',
  learnt_unused: 'Not H3: the first visit learnt H3 from Alt-Svc, but this visit did not use it (QUIC failed, or was not tried)',
  h1: 'HTTP/1.1: the origin answered without H2 or H3',
  reused: 'The connection the view before it opened, reused: no new choice of protocol',
  failed: 'No protocol: the load failed'
})

/**
 * @typedef {{ code: string, text: string, alternate_protocol_usage: string | null, h3_announced: 'alt-svc' | 'https-record' | null }} ProtocolReason
 */

/**
 * Why the page's document came over its protocol.
 * @param {Record<string, any>} run a measurement: mode, view, observed_protocol, arm_protocol (A/A), forced_origins (host:port the arm forced),
 *   requests_detail (type, url, status, alternate_protocol_usage per request), origins (origin, h3_advertised),
 *   learnt_alt_svc (a returning visit: the origins that announced H3 on the first visit, agents/visits.js),
 *   protocol_usage_unreported (a browser that never reports alternateProtocolUsage: Firefox)
 * @returns {ProtocolReason}
 */
export function protocolReason (run) {
  const protocol = normalizeProtocol(run.observed_protocol)
  const doc = documentRequest(run.requests_detail ?? [])
  const usage = doc?.alternate_protocol_usage ?? null
  const origin = doc ? originOf(doc.url) : null
  const advertised = Boolean(origin && ((run.origins ?? []).some((/** @type {{ origin: string, h3_advertised?: boolean }} */ o) => o.origin === origin && o.h3_advertised) ||
    (run.learnt_alt_svc ?? []).includes(origin)))
  const announced = usage?.startsWith('dnsAlpnH3') ? 'https-record' : (advertised || usage?.startsWith('alternativeJob') ? 'alt-svc' : null)
  const forced = run.arm_protocol ?? (run.mode === 'auto' ? null : run.mode)
  const reason = (/** @type {string} */ code) => ({ code, text: PROTOCOL_REASONS[code], alternate_protocol_usage: usage, h3_announced: /** @type {ProtocolReason['h3_announced']} */ (announced) })
  if (protocol === null) return reason('failed')
  // Neither arm can do anything for a page without TLS: it says so, not that QUIC was not used.
  if (doc && /^http:/i.test(doc.url) && protocol !== 'h2' && protocol !== 'h3') return reason('plain_http')
  if (forced === 'h3') {
    if (protocol === 'h3') return reason('forced_h3')
    // The arm forces the origins it knew of before the load (the page's and
    // its redirects'); a page that went on to another was not forced there.
    const forcedHere = Array.isArray(run.forced_origins) && run.forced_origins.length && doc && /^https:/i.test(doc.url) ? run.forced_origins.includes(hostPort(doc.url)) : true
    return reason(forcedHere ? 'fell_back' : 'not_forced')
  }
  if (forced === 'h2') return reason('quic_off')
  // A repeat view's document rides the connection its first view opened:
  // the browser chose no protocol for it (Chromium reports no race).
  if (run.view === 'repeat' && doc?.connection_reused) return reason('reused')
  // A browser that never says why (Firefox: no alternateProtocolUsage) came
  // over H3 unforced to an origin that announces it by Alt-Svc. Chromium
  // without a usage (a WebPageTest upload) stays unexplained: 'h3'.
  if (protocol === 'h3') return reason(announced === 'https-record' ? 'https_record' : usage?.startsWith('alternativeJob') || (run.protocol_usage_unreported && advertised) ? 'alt_svc' : 'h3')
  if (usage === 'broken') return reason('broken')
  if (usage === 'mainJobWonRace') return reason('tcp_won')
  // A returning visit to an origin whose Alt-Svc the first visit saw knew
  // of H3, whatever the browser reports (Firefox reports nothing).
  if (run.view === 'returning' && origin && (run.learnt_alt_svc ?? []).includes(origin)) return reason('learnt_unused')
  if (protocol !== 'h2' && !advertised) return reason('h1')
  return reason(advertised ? 'not_known' : 'not_announced')
}

/**
 * The page's document request: the first document that answered with a
 * page (2xx or 304), past any redirects; else the first document.
 * @param {Record<string, any>[]} requests
 * @returns {Record<string, any> | null}
 */
function documentRequest (requests) {
  const docs = requests.filter(isPageDocument)
  return docs.find((r) => r.status !== null && r.status !== undefined && ((r.status >= 200 && r.status < 300) || r.status === 304)) ?? docs[0] ?? null
}

/**
 * A request for one of the page's own documents (its navigations and their
 * redirects), not an iframe's (agents/network.js marks those `subframe`).
 * @param {{ type?: string | null, subframe?: true }} request
 */
export function isPageDocument (request) {
  return request.type === 'Document' && !request.subframe
}
