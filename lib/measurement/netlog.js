// Reads a Chromium net log (the JSON --log-net-log writes), whoever captured
// it (the Puppeteer agent, a WebPageTest agent's upload) and tells what the
// connections of a run did during their handshakes: how the ClientHello was
// packed, what the server acknowledged, which probe timeouts fired, when the
// handshake completed and was confirmed, whether 0-RTT or TLS resumption
// happened. Pure functions over the parsed JSON; no I/O.
//
// Why it exists: Navigation Timing only says "connect took 3.9 RTT". The net
// log says why, e.g. for the lab origin (docs/QUIC-HANDSHAKE.md): the
// ClientHello of Chromium 156 (post-quantum key share, ~1.9 KB) needs two
// Initial packets; Caddy 2.6.2's quic-go often acknowledges only the first,
// and the client resends the rest when its probe timer fires.

/**
 * @typedef {{ time: number, name: string, phase: number, source: number, sourceType: string, params: Record<string, any> }} NetlogEvent
 * @typedef {{ code: string, message: string, extra_ms: number | null, extra_rtt: number | null }} Finding
 */

/** A packet the server answers within this many ms over the RTT counts as answered at once. */
const SLACK_MS = 15

/**
 * Events as plain records with names instead of numeric ids, in log order.
 * @param {{ constants: Record<string, any>, events: any[] }} log
 * @returns {NetlogEvent[]}
 */
export function namedEvents (log) {
  if (!log?.constants?.logEventTypes || !Array.isArray(log.events)) throw new TypeError('not a Chromium net log: constants.logEventTypes or events missing')
  const eventNames = invert(log.constants.logEventTypes)
  const sourceNames = invert(log.constants.logSourceType ?? {})
  return log.events.map((e) => ({
    time: Number(e.time),
    name: eventNames[e.type] ?? String(e.type),
    phase: e.phase ?? 0,
    source: e.source?.id,
    sourceType: sourceNames[e.source?.type] ?? String(e.source?.type),
    params: e.params ?? {}
  }))
}

/**
 * @param {{ constants: Record<string, any>, events: any[] }} log parsed net log
 * @param {{ rttMs?: number | null }} [opts] the path's RTT, to express delays in round trips
 */
export function summarizeNetlog (log, { rttMs = null } = {}) {
  const events = namedEvents(log)
  /** @type {Map<number, NetlogEvent[]>} */
  const bySource = new Map()
  for (const e of events) {
    if (!bySource.has(e.source)) bySource.set(e.source, [])
    const list = /** @type {NetlogEvent[]} set just above */ (bySource.get(e.source))
    list.push(e)
  }
  const quic = []
  const tls = []
  for (const list of bySource.values()) {
    if (list[0].sourceType === 'QUIC_SESSION') quic.push(quicSession(list, rttMs))
    else if (list.some((e) => e.name === 'SSL_CONNECT')) tls.push(tlsSession(list))
  }
  return {
    chromium_version: log.constants.clientInfo?.version ?? null,
    event_count: events.length,
    quic_sessions: quic,
    tls_sessions: tls,
    findings: [...quic.flatMap((s) => s.findings), ...tls.flatMap((s) => s.findings)]
  }
}

/**
 * @param {NetlogEvent[]} list every event of one QUIC_SESSION source
 * @param {number | null} rttMs
 */
function quicSession (list, rttMs) {
  const begin = list.find((e) => e.name === 'QUIC_SESSION' && e.phase === 1)
  const sent = list.filter((e) => e.name === 'QUIC_SESSION_PACKET_SENT')
  const t0 = sent[0]?.time ?? begin?.time ?? list[0].time
  const since = (/** @type {NetlogEvent | undefined} */ e) => (e ? e.time - t0 : null)
  const firstReceived = list.find((e) => e.name === 'QUIC_SESSION_PACKET_RECEIVED')
  const firstFlight = sent.filter((e) => e.params.encryption_level === 'ENCRYPTION_INITIAL' &&
    e.params.transmission_type === 'NOT_RETRANSMISSION' && (!firstReceived || e.time <= firstReceived.time))
  const clientHelloBytes = Math.max(0, ...list.filter((e) => e.name === 'QUIC_SESSION_CRYPTO_FRAME_SENT' && e.params.encryption_level === 'ENCRYPTION_INITIAL')
    .map((e) => (e.params.offset ?? 0) + (e.params.data_length ?? 0)))
  const acks = list.filter((e) => e.name === 'QUIC_SESSION_ACK_FRAME_RECEIVED')
  const firstAck = acks[0]
  const acked = (/** @type {NetlogEvent} */ ack, /** @type {number} */ pn) => ack.params.largest_observed >= pn && !(ack.params.missing_packets ?? []).includes(pn)
  const complete = list.find((e) => e.name === 'QUIC_SESSION_CRYPTO_HANDSHAKE_COMPLETE')
  const initialResend = sent.find((e) => e.params.encryption_level === 'ENCRYPTION_INITIAL' && e.params.transmission_type !== 'NOT_RETRANSMISSION' &&
    (!complete || e.time <= complete.time))
  // What the server acknowledged of the first flight before the client had
  // to send any of it again (or, without a resend, before the handshake completed).
  const ackedBefore = acks.filter((a) => a.time <= (initialResend ?? complete ?? a).time)
  const firstFlightAcked = firstFlight.filter((p) => ackedBefore.some((a) => acked(a, p.params.packet_number))).length
  // Of the rest: declared lost (never acknowledged: dropped on the link or
  // by the server), or acknowledged later (the server had it, answered late).
  // An ACK event lists gaps only above its smallest acknowledged packet, so
  // the loss events are what tell the two apart.
  const lost = new Set(list.filter((e) => e.name === 'QUIC_SESSION_PACKET_LOST').map((e) => e.params.packet_number))
  const firstFlightNeverAcked = firstFlight.filter((p) => lost.has(p.params.packet_number)).length
  const confirmed = list.find((e) => e.name === 'QUIC_SESSION_HANDSHAKE_DONE_FRAME_RECEIVED')
  const headers = list.find((e) => e.name === 'HTTP3_HEADERS_RECEIVED')
  const ptoBefore = (/** @type {string} */ level, /** @type {NetlogEvent | undefined} */ until) => sent.filter((e) => e.params.transmission_type === 'PTO_RETRANSMISSION' &&
    e.params.encryption_level === level && (!until || e.time <= until.time)).length
  // The client's Finished is its first Handshake-level packet; the time to
  // its acknowledgement is one RTT when the server reads it at once.
  const finished = sent.find((e) => e.params.encryption_level === 'ENCRYPTION_HANDSHAKE' && e.params.transmission_type === 'NOT_RETRANSMISSION')
  const finishedAck = finished && acks.find((a) => a.time >= finished.time && acked(a, finished.params.packet_number))
  const session = {
    host: begin?.params.host ?? null,
    port: begin?.params.port ?? null,
    version: list.find((e) => e.name === 'QUIC_SESSION_VERSION_NEGOTIATED')?.params.version ?? null,
    congestion_control: list.find((e) => e.name === 'QUIC_CONGESTION_CONTROL_CONFIGURED')?.params.congestion_control_type ?? null,
    client_hello_bytes: clientHelloBytes || null,
    first_flight_initial_packets: firstFlight.length,
    first_ack_ms: since(firstAck),
    first_flight_acked_packets: firstAck ? firstFlightAcked : null,
    first_flight_never_acked_packets: firstAck ? firstFlightNeverAcked : null,
    initial_pto_retransmissions: ptoBefore('ENCRYPTION_INITIAL', complete),
    handshake_pto_retransmissions: ptoBefore('ENCRYPTION_HANDSHAKE', confirmed),
    handshake_complete_ms: since(complete),
    handshake_confirmed_ms: since(confirmed),
    finished_ack_ms: finished && finishedAck ? finishedAck.time - finished.time : null,
    first_response_headers_ms: since(headers),
    packets_lost: list.filter((e) => e.name === 'QUIC_SESSION_PACKET_LOST').length,
    zero_rtt: list.find((e) => e.name === 'QUIC_SESSION_ZERO_RTT_STATE')?.params.state ?? null,
    close: closeOf(list),
    /** @type {Finding[]} */
    findings: []
  }
  session.findings = quicFindings(session, { firstAck, firstFlight, initialResend, complete, rttMs })
  return session
}

/**
 * @param {Record<string, any>} s the session so far (quicSession)
 * @param {{ firstAck?: NetlogEvent, firstFlight: NetlogEvent[], initialResend?: NetlogEvent, complete?: NetlogEvent, rttMs: any }} o
 *   rttMs: a number or null (comparisons with null are false)
 * @returns {Finding[]}
 */
function quicFindings (s, { firstAck, firstFlight, initialResend, complete, rttMs }) {
  const findings = []
  const inRtt = (/** @type {number | null} */ ms) => (rttMs > 0 && ms !== null ? Math.round((ms / rttMs) * 10) / 10 : null)
  const where = s.host ? ` (${s.host}:${s.port})` : ''
  if (firstAck && initialResend && firstFlight.length > 1 && s.first_flight_acked_packets > 0 && s.first_flight_acked_packets < firstFlight.length) {
    // Had the server answered the whole first flight, the handshake would
    // have completed about when that first acknowledgement arrived.
    const extra = complete ? complete.time - firstAck.time : null
    const rest = firstFlight.length - s.first_flight_acked_packets
    const fate = s.first_flight_never_acked_packets === rest ? 'never acknowledged the rest (declared lost)' : 'acknowledged the rest only later'
    findings.push({
      code: 'client_hello_split_partly_acked',
      message: `the ClientHello (${s.client_hello_bytes} bytes) went out in ${firstFlight.length} Initial packets; the server acknowledged ${s.first_flight_acked_packets} at once, sent no ServerHello and ${fate}, so the client resent it after a probe timeout` +
        `${extra !== null ? `: the handshake completed ${Math.round(extra)} ms${inRtt(extra) !== null ? ` (${inRtt(extra)} RTT)` : ''} after that first acknowledgement instead of with it` : ''}${where}`,
      extra_ms: extra,
      extra_rtt: inRtt(extra)
    })
  }
  if (s.finished_ack_ms !== null && rttMs > 0 && s.finished_ack_ms > rttMs + SLACK_MS) {
    const extra = s.finished_ack_ms - rttMs
    findings.push({
      code: 'server_slow_to_confirm',
      message: `the server acknowledged the client's handshake Finished ${s.finished_ack_ms} ms after it was sent (${inRtt(s.finished_ack_ms)} RTT; 1 RTT expected)${s.handshake_pto_retransmissions ? `, after ${s.handshake_pto_retransmissions} probe retransmission(s)` : ''}${where}`,
      extra_ms: extra,
      extra_rtt: inRtt(extra)
    })
  }
  if (s.packets_lost > 0 && !findings.length) {
    findings.push({ code: 'quic_packets_lost', message: `${s.packets_lost} QUIC packet(s) declared lost${where}`, extra_ms: null, extra_rtt: null })
  }
  return findings
}

/** @param {NetlogEvent[]} list events of one socket */
function tlsSession (list) {
  const tcp = span(list, 'TCP_CONNECT')
  const ssl = span(list, 'SSL_CONNECT')
  const end = ssl.end?.params ?? {}
  const begin = list.find((e) => e.name === 'TCP_CONNECT' && e.phase === 1)
  const session = {
    remote_address: list.find((e) => e.name === 'TCP_CONNECT' && e.phase === 2)?.params.remote_address ?? begin?.params.address_list?.[0] ?? null,
    tcp_connect_ms: tcp.ms,
    tls_handshake_ms: ssl.ms,
    tls_version: end.version ?? null,
    next_proto: end.next_proto ?? null,
    is_resumed: end.is_resumed ?? null,
    key_exchange_group: end.key_exchange_group ?? null,
    client_hello_bytes: list.find((e) => e.name === 'SOCKET_BYTES_SENT' && (!ssl.begin || e.time >= ssl.begin.time))?.params.byte_count ?? null,
    net_error: ssl.end?.params.net_error ?? tcp.end?.params.net_error ?? null,
    /** @type {Finding[]} */
    findings: []
  }
  return session
}

/**
 * @param {NetlogEvent[]} list
 * @param {string} name
 */
function span (list, name) {
  const begin = list.find((e) => e.name === name && e.phase === 1)
  const end = begin && list.find((e) => e.name === name && e.phase === 2 && e.time >= begin.time)
  return { begin, end, ms: begin && end ? end.time - begin.time : null }
}

/** @param {NetlogEvent[]} list */
function closeOf (list) {
  const closed = list.find((e) => e.name === 'QUIC_SESSION_CLOSED')
  return closed ? { quic_error: closed.params.quic_error ?? null, from_peer: closed.params.from_peer ?? null, details: closed.params.details ?? null } : null
}

/**
 * @param {Record<string, number>} obj name → numeric id
 * @returns {Record<number, string>}
 */
function invert (obj) {
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => [v, k]))
}

/**
 * Parse a net log file. A browser killed before it exited leaves the events
 * array open; everything up to the last complete event is kept.
 * @param {string} text
 */
export function parseNetlog (text) {
  try {
    return JSON.parse(text)
  } catch {
    const cut = text.lastIndexOf('},')
    const end = text.lastIndexOf('}')
    for (const at of [end, cut]) {
      if (at < 0) continue
      try { return JSON.parse(text.slice(0, at + 1) + ']}') } catch {}
    }
    throw new Error('the net log is not valid JSON, even when cut at its last complete event')
  }
}

/**
 * The part of a summary stored with the result (details.netlog.summary):
 * small, and what the notes refer to.
 * @param {ReturnType<typeof summarizeNetlog>} summary
 */
export function compactSummary (summary) {
  return {
    quic_sessions: summary.quic_sessions.map(({ findings, ...s }) => s),
    tls_sessions: summary.tls_sessions.map(({ findings, ...s }) => s),
    findings: summary.findings
  }
}
