// Synthetic results at production density for benchmarks: one round per
// monitor, location and minute, both modes, over `days` days. Generated in
// SQL so 10M rows take minutes, not hours. TTFB is lognormal around a
// per-location median (NA 1×, EU 2×, Asia 3× RTT-like spread), H3 a little
// faster in the tail, as the field studies saw.

export const BENCH_LOCATIONS = [
  { id: 'bench-na', region: 'North America', median: 90 },
  { id: 'bench-eu', region: 'Europe', median: 170 },
  { id: 'bench-asia', region: 'Asia', median: 260 },
  { id: 'bench-sa', region: 'South America', median: 210 },
  { id: 'bench-oc', region: 'Oceania', median: 300 }
]

/**
 * @param {import('pg').Pool} db
 * @param {{ monitors: number, days: number, log?: (msg: string) => void }} opts
 * @returns {Promise<number[]>} monitor ids
 */
export async function generateResults (db, { monitors, days, log = () => {} }) {
  for (const l of BENCH_LOCATIONS) {
    await db.query(`INSERT INTO locations (id, name, region, kind, profile) VALUES ($1, $1, $2, 'real', $3) ON CONFLICT (id) DO NOTHING`,
      [l.id, l.region, { rtt_ms: Math.round(l.median / 3) }])
  }
  const ids = []
  const minutes = days * 24 * 60
  for (let m = 0; m < monitors; m++) {
    const { rows } = await db.query(
      `INSERT INTO monitors (url, label, interval_s, locations, paused, anchor_at) VALUES ($1, $2, 60, $3, true, now() - make_interval(days => $4)) RETURNING id`,
      [`https://bench.example/${m}`, `bench ${m}`, BENCH_LOCATIONS.map((l) => l.id), days])
    const id = rows[0].id
    ids.push(id)
    for (const [li, l] of BENCH_LOCATIONS.entries()) {
      await db.query(
        `INSERT INTO results (time, measured_at, job_id, monitor_id, location_id, mode, status, protocol_ok, observed_protocol,
                              ttfb_ms, load_ms, connect_ms, fcp_ms, lcp_ms, dcl_ms, bytes, requests)
         SELECT t, t, $1::bigint * 100000000 + $2 * 10000000 + g, $1, $3, mode,
                CASE WHEN random() < 0.004 THEN 'error' WHEN mode = 'h3' AND random() < 0.01 THEN 'protocol_mismatch' ELSE 'ok' END,
                true, mode, ttfb, ttfb * 2.2, ttfb * 0.4, ttfb * 1.3, ttfb * 1.8, ttfb * 1.5, 15360, 2
           FROM generate_series(1, $4) g
           CROSS JOIN LATERAL (SELECT now() - make_interval(mins => g) AS t) tt
           CROSS JOIN unnest('{h2,h3}'::text[]) AS mode
           CROSS JOIN LATERAL (SELECT $5 * exp(0.45 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))
                                  * CASE WHEN mode = 'h3' THEN 0.97 ELSE 1 END
                                  + CASE WHEN random() < 0.03 THEN $5 * (CASE WHEN mode = 'h3' THEN 2 ELSE 3 END) * random() ELSE 0 END
                                  -- g: a draw per round and mode (without it the planner
                                  -- may draw once per mode and repeat it for every round)
                                  + 0 * g AS ttfb) v`,
        [id, li, l.id, minutes, l.median])
    }
    log(`generated monitor ${id}: ${minutes * BENCH_LOCATIONS.length * 2} results`)
  }
  return ids
}
