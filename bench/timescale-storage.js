#!/usr/bin/env node
// Storage per million results: a plain table against a TimescaleDB
// hypertable, uncompressed and compressed with the settings h3lens applies
// (segment by monitor, location and mode; newest first). Runs real
// TimescaleDB 2.23 in WebAssembly (PGlite, the dev dependency the tests use),
// so it needs no server; the on-disk format is PostgreSQL 17's.
//
//   node bench/timescale-storage.js [--days 7] [--evidence-copies 100]
//
// Two kinds of rows: "lean" rows as bench/lib/generate.js makes them (the
// timings only, one round per minute and location for --days days), and
// "with evidence" rows as agents store them (per-request details, flags,
// notes), from the dashboard's seeded data copied --evidence-copies times.
import { createPool } from '../lib/runtime/db.js'
import { migrate } from '../lib/runtime/migrate.js'
import { applyStoragePolicies } from '../lib/store/timescale.js'
import { createLogger } from '../lib/runtime/log.js'
import { generateResults } from './lib/generate.js'
import { seedDemo } from '../dev/demo-data.js'
import { startTimescale } from '../dev/timescale.js'
import { freePort } from '../dev/free-port.js'
import { benchArgs } from './lib/args.js'

const { values } = benchArgs(import.meta.url, { options: { days: { type: 'string', default: '7' }, 'evidence-copies': { type: 'string', default: '100' } } })
const say = (msg) => console.log(`# ${msg}`)
const log = createLogger({ logLevel: 'warn' })

const timescale = await startTimescale({ port: await freePort() })
const db = createPool(timescale.url, { max: 1 })
try {
  await migrate(db)
  await applyStoragePolicies(db, { compressAfterDays: 7, retentionDays: 0, log })
  console.log('| rows | results | plain table | hypertable | compressed | per 1M: plain / compressed |')
  console.log('|---|---|---|---|---|---|')

  say(`lean rows: 1 monitor × 5 locations × 2 modes × ${values.days} days of minutes`)
  await generateResults(db, { monitors: 1, days: Number(values.days), log: say })
  console.log(await measure('lean (timings only)'))

  await db.query('TRUNCATE results, rollups, rollup_pending')
  say('rows with evidence: the dashboard\'s seeded results, copied')
  await seedDemo(db, { hours: 24, stepMinutes: 60, seed: 3 })
  // Each copy is the same day shifted back by whole days, with its own job ids.
  await db.query(
    `INSERT INTO results (time, measured_at, job_id, monitor_id, location_id, agent_id, mode, view, probe, status, error,
                          observed_protocol, protocol_ok, ttfb_ms, load_ms, dns_ms, connect_ms, tls_ms, fcp_ms, lcp_ms, dcl_ms,
                          bytes, requests, h3_request_share, h3_byte_share, rtt_ms, connect_rtt, ttfb_rtt, upload_mbps, notes,
                          browser_version, agent_version, flags, details)
     SELECT time - make_interval(days => k), measured_at - make_interval(days => k), job_id + k * 1000000, monitor_id, location_id,
            agent_id, mode, view, probe, status, error, observed_protocol, protocol_ok, ttfb_ms, load_ms, dns_ms, connect_ms, tls_ms,
            fcp_ms, lcp_ms, dcl_ms, bytes, requests, h3_request_share, h3_byte_share, rtt_ms, connect_rtt, ttfb_rtt, upload_mbps,
            notes, browser_version, agent_version, flags, details
       FROM results CROSS JOIN generate_series(1, $1) k`, [Number(values['evidence-copies']) - 1])
  console.log(await measure('with evidence (details, flags, notes)'))
} finally {
  await db.end()
  await timescale.stop()
}

/** Sizes of the same rows as a plain table, a hypertable and compressed. */
async function measure (label) {
  const { rows: [{ n }] } = await db.query('SELECT count(*)::int AS n FROM results')
  await db.query('DROP TABLE IF EXISTS results_plain')
  await db.query('CREATE TABLE results_plain (LIKE results INCLUDING ALL)')
  await db.query('INSERT INTO results_plain SELECT * FROM results')
  await db.query('VACUUM ANALYZE results_plain')
  const size = async (sql) => Number((await db.query(sql)).rows[0].size)
  const plain = await size("SELECT pg_total_relation_size('results_plain') AS size")
  const hyper = await size("SELECT hypertable_size('results') AS size")
  await db.query("SELECT count(compress_chunk(c, if_not_compressed => true)) FROM show_chunks('results') c")
  const compressed = await size("SELECT hypertable_size('results') AS size")
  await db.query('DROP TABLE results_plain')
  const mb = (bytes) => `${(bytes / 1048576).toFixed(1)} MB`
  const perMillion = (bytes) => `${(bytes / n * 1e6 / 1048576).toFixed(0)} MB`
  return `| ${label} | ${n.toLocaleString('en')} | ${mb(plain)} | ${mb(hyper)} | ${mb(compressed)} | ${perMillion(plain)} / ${perMillion(compressed)} (${(plain / compressed).toFixed(1)}×) |`
}
