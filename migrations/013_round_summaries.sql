-- Round summaries (lib/store/round-summaries.js): one row per round, probe
-- and view, with each arm's state and the values the comparison reads
-- (lib/comparison.js). Written in the same transaction as the results, by
-- a trigger on results, so every insert path keeps them current: the
-- agents' single and batched routes and the WPT path (lib/results.js
-- insertRoundResults), the import (lib/import.js, which shares that
-- insert), and SQL written by hand. A 30-day comparison then reads ~216,000
-- narrow rows of one index range instead of grouping 432,000 results into
-- rounds. Reads, rebuild and retention: lib/store/round-summaries.js.
--
-- An arm's state is the one of its result, whatever the metric: ok (loaded
-- with the protocol it was forced to), fallback (loaded over another one),
-- unsupported (the origin refused QUIC), failed; NULL when the round has no
-- result of that arm (the comparison's "missing"). The comparison adds
-- no_value per metric: an ok arm whose value of that metric is NULL.
-- Values are kept whatever the state: intention to treat reads a failed or
-- fallen-back arm's value when it has one.
CREATE TABLE round_summaries (
  job_id         bigint NOT NULL,
  probe          text NOT NULL,
  view           text NOT NULL,
  -- the round's time: its results' time (the job's due time)
  time           timestamptz NOT NULL,
  monitor_id     bigint NOT NULL,
  location_id    text NOT NULL,
  h2_state       text CHECK (h2_state IN ('ok', 'failed', 'fallback', 'unsupported')),
  h3_state       text CHECK (h3_state IN ('ok', 'failed', 'fallback', 'unsupported')),
  h2_ttfb_ms     double precision,
  h3_ttfb_ms     double precision,
  h2_load_ms     double precision,
  h3_load_ms     double precision,
  h2_dns_ms      double precision,
  h3_dns_ms      double precision,
  h2_connect_ms  double precision,
  h3_connect_ms  double precision,
  h2_tls_ms      double precision,
  h3_tls_ms      double precision,
  h2_fcp_ms      double precision,
  h3_fcp_ms      double precision,
  h2_lcp_ms      double precision,
  h3_lcp_ms      double precision,
  h2_dcl_ms      double precision,
  h3_dcl_ms      double precision,
  -- the probe's samples (details.samples): parallel requests, uploads;
  -- NULL when the result has none
  h2_samples     double precision[],
  h3_samples     double precision[],
  PRIMARY KEY (job_id, probe, view, time)
);

-- The comparison's read: one series' rounds of a window, by location and
-- time, states in the index so counting them needs no heap visit.
CREATE INDEX round_summaries_series ON round_summaries (monitor_id, probe, view, location_id, time, job_id)
  INCLUDE (h2_state, h3_state);

-- Fold results into their rounds' summaries: an arm's columns come from its
-- result; the other arm's are kept (a round's arms may arrive in separate
-- inserts). A sample that is not a number (or is beyond ±1e300) is left
-- out: it could not be compared, and one such sample must not fail the
-- results' insert. This is the one definition of a summary: the triggers
-- and the backfill below use it.
-- PL/pgSQL rather than SQL: its plan is kept for the session, where a SQL
-- function's INSERT was planned again on every call (+0.6 ms a round).
CREATE FUNCTION round_summaries_fold(rs results[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
INSERT INTO round_summaries AS s (job_id, probe, view, time, monitor_id, location_id,
  h2_state, h3_state, h2_ttfb_ms, h3_ttfb_ms, h2_load_ms, h3_load_ms, h2_dns_ms, h3_dns_ms, h2_connect_ms, h3_connect_ms, h2_tls_ms, h3_tls_ms, h2_fcp_ms, h3_fcp_ms, h2_lcp_ms, h3_lcp_ms, h2_dcl_ms, h3_dcl_ms, h2_samples, h3_samples)
SELECT r.job_id, r.probe, r.view, r.time, max(r.monitor_id), max(r.location_id),
       max(a.state) FILTER (WHERE r.mode = 'h2'), max(a.state) FILTER (WHERE r.mode = 'h3'),
       max(r.ttfb_ms) FILTER (WHERE r.mode = 'h2'),
       max(r.ttfb_ms) FILTER (WHERE r.mode = 'h3'),
       max(r.load_ms) FILTER (WHERE r.mode = 'h2'),
       max(r.load_ms) FILTER (WHERE r.mode = 'h3'),
       max(r.dns_ms) FILTER (WHERE r.mode = 'h2'),
       max(r.dns_ms) FILTER (WHERE r.mode = 'h3'),
       max(r.connect_ms) FILTER (WHERE r.mode = 'h2'),
       max(r.connect_ms) FILTER (WHERE r.mode = 'h3'),
       max(r.tls_ms) FILTER (WHERE r.mode = 'h2'),
       max(r.tls_ms) FILTER (WHERE r.mode = 'h3'),
       max(r.fcp_ms) FILTER (WHERE r.mode = 'h2'),
       max(r.fcp_ms) FILTER (WHERE r.mode = 'h3'),
       max(r.lcp_ms) FILTER (WHERE r.mode = 'h2'),
       max(r.lcp_ms) FILTER (WHERE r.mode = 'h3'),
       max(r.dcl_ms) FILTER (WHERE r.mode = 'h2'),
       max(r.dcl_ms) FILTER (WHERE r.mode = 'h3'),
       max(a.samples) FILTER (WHERE r.mode = 'h2'), max(a.samples) FILTER (WHERE r.mode = 'h3')
  FROM unnest(rs) r
  CROSS JOIN LATERAL (
    SELECT CASE WHEN r.status = 'ok' AND r.protocol_ok THEN 'ok'
                WHEN r.status = 'protocol_mismatch' THEN 'fallback'
                WHEN r.details->>'failure_kind' = 'h3_unsupported' THEN 'unsupported'
                ELSE 'failed' END AS state,
           CASE WHEN jsonb_typeof(r.details->'samples') = 'array' THEN
             nullif(ARRAY(SELECT x::double precision FROM jsonb_array_elements_text(r.details->'samples') x
                           WHERE CASE WHEN x ~* '^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)(e[-+]?[0-9]{1,3})?\s*$'
                                      THEN abs(x::numeric) < 1e300 ELSE false END), '{}') END AS samples
  ) a
 GROUP BY r.job_id, r.probe, r.view, r.time
ON CONFLICT (job_id, probe, view, time) DO UPDATE SET
  h2_state = CASE WHEN excluded.h2_state IS NULL THEN s.h2_state ELSE excluded.h2_state END,
  h2_ttfb_ms = CASE WHEN excluded.h2_state IS NULL THEN s.h2_ttfb_ms ELSE excluded.h2_ttfb_ms END,
  h2_load_ms = CASE WHEN excluded.h2_state IS NULL THEN s.h2_load_ms ELSE excluded.h2_load_ms END,
  h2_dns_ms = CASE WHEN excluded.h2_state IS NULL THEN s.h2_dns_ms ELSE excluded.h2_dns_ms END,
  h2_connect_ms = CASE WHEN excluded.h2_state IS NULL THEN s.h2_connect_ms ELSE excluded.h2_connect_ms END,
  h2_tls_ms = CASE WHEN excluded.h2_state IS NULL THEN s.h2_tls_ms ELSE excluded.h2_tls_ms END,
  h2_fcp_ms = CASE WHEN excluded.h2_state IS NULL THEN s.h2_fcp_ms ELSE excluded.h2_fcp_ms END,
  h2_lcp_ms = CASE WHEN excluded.h2_state IS NULL THEN s.h2_lcp_ms ELSE excluded.h2_lcp_ms END,
  h2_dcl_ms = CASE WHEN excluded.h2_state IS NULL THEN s.h2_dcl_ms ELSE excluded.h2_dcl_ms END,
  h2_samples = CASE WHEN excluded.h2_state IS NULL THEN s.h2_samples ELSE excluded.h2_samples END,
  h3_state = CASE WHEN excluded.h3_state IS NULL THEN s.h3_state ELSE excluded.h3_state END,
  h3_ttfb_ms = CASE WHEN excluded.h3_state IS NULL THEN s.h3_ttfb_ms ELSE excluded.h3_ttfb_ms END,
  h3_load_ms = CASE WHEN excluded.h3_state IS NULL THEN s.h3_load_ms ELSE excluded.h3_load_ms END,
  h3_dns_ms = CASE WHEN excluded.h3_state IS NULL THEN s.h3_dns_ms ELSE excluded.h3_dns_ms END,
  h3_connect_ms = CASE WHEN excluded.h3_state IS NULL THEN s.h3_connect_ms ELSE excluded.h3_connect_ms END,
  h3_tls_ms = CASE WHEN excluded.h3_state IS NULL THEN s.h3_tls_ms ELSE excluded.h3_tls_ms END,
  h3_fcp_ms = CASE WHEN excluded.h3_state IS NULL THEN s.h3_fcp_ms ELSE excluded.h3_fcp_ms END,
  h3_lcp_ms = CASE WHEN excluded.h3_state IS NULL THEN s.h3_lcp_ms ELSE excluded.h3_lcp_ms END,
  h3_dcl_ms = CASE WHEN excluded.h3_state IS NULL THEN s.h3_dcl_ms ELSE excluded.h3_dcl_ms END,
  h3_samples = CASE WHEN excluded.h3_state IS NULL THEN s.h3_samples ELSE excluded.h3_samples END;
END
$$;

CREATE FUNCTION round_summaries_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM round_summaries_fold(ARRAY(SELECT i::results FROM inserted i));
  RETURN NULL;
END
$$;

CREATE FUNCTION round_summaries_after_insert_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- NEW is a row of the hypertable's chunk, a type of its own.
  PERFORM round_summaries_fold(ARRAY[jsonb_populate_record(NULL::results, to_jsonb(NEW))]);
  RETURN NULL;
END
$$;

-- One fold per INSERT statement (a batch of rounds is one set-based upsert).
-- TimescaleDB refuses transition tables on hypertables: there, one fold per
-- row. Where TimescaleDB is installed, summaries are a hypertable like
-- results, so the retention policy on results (H3LENS_RETENTION_DAYS,
-- lib/timescale.js) also drops the summaries of the rounds it drops.
DO $$
DECLARE hyper boolean := false;
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb') THEN
    EXECUTE 'SELECT EXISTS (SELECT 1 FROM timescaledb_information.hypertables WHERE hypertable_name = ''results'')' INTO hyper;
  END IF;
  IF hyper THEN
    PERFORM create_hypertable('round_summaries', 'time', chunk_time_interval => interval '1 day', migrate_data => true, if_not_exists => true);
    CREATE TRIGGER round_summaries AFTER INSERT ON results FOR EACH ROW EXECUTE FUNCTION round_summaries_after_insert_row();
  ELSE
    CREATE TRIGGER round_summaries AFTER INSERT ON results REFERENCING NEW TABLE AS inserted
      FOR EACH STATEMENT EXECUTE FUNCTION round_summaries_after_insert();
  END IF;
END
$$;

-- Rounds stored before this migration, 100,000 results at a time.
DO $$
DECLARE lo bigint; hi bigint;
BEGIN
  SELECT min(id), max(id) INTO lo, hi FROM results;
  WHILE lo <= hi LOOP
    PERFORM round_summaries_fold(ARRAY(SELECT r FROM results r WHERE r.id >= lo AND r.id < lo + 100000));
    lo := lo + 100000;
  END LOOP;
END
$$;
