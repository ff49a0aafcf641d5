-- The auto arm: the browser as a user runs it, nothing forced
-- (lib/measurement/modes.js), with its returning visit as a view of its own
-- (lib/measurement/result.js).
--
-- Which modes, views and probes a result may have is the catalogue's to
-- say (lib/measurement/), checked by the API's schemas, the import and the
-- WPT path before anything is stored; the CHECK constraints that repeated
-- those lists here go, so a new arm, view or probe needs no migration of
-- its own. (TimescaleDB also refuses new constraints on a compressed
-- hypertable, which results are where compression is on.)
ALTER TABLE results DROP CONSTRAINT IF EXISTS results_mode_check;
ALTER TABLE results DROP CONSTRAINT IF EXISTS results_view_check;
ALTER TABLE results DROP CONSTRAINT IF EXISTS results_probe_check;
ALTER TABLE wpt_tests DROP CONSTRAINT IF EXISTS wpt_tests_mode_check;

-- The auto arm's state and values in the round summaries, beside h2 and h3.
ALTER TABLE round_summaries
  ADD COLUMN auto_state text CHECK (auto_state IN ('ok', 'failed', 'fallback', 'unsupported')),
  ADD COLUMN auto_ttfb_ms double precision,
  ADD COLUMN auto_load_ms double precision,
  ADD COLUMN auto_dns_ms double precision,
  ADD COLUMN auto_connect_ms double precision,
  ADD COLUMN auto_tls_ms double precision,
  ADD COLUMN auto_fcp_ms double precision,
  ADD COLUMN auto_lcp_ms double precision,
  ADD COLUMN auto_dcl_ms double precision,
  ADD COLUMN auto_samples double precision[];

-- The fold (013) written out from the table's own columns, so an arm or a
-- metric is a migration that adds columns and then calls this:
--   an arm is every round_summaries column <arm>_state;
--   a value is every results column that round_summaries carries as
--   <arm>_<column>, which every arm must have (an arm missing one is an
--   error here, not a silently empty column);
--   <arm>_samples holds the probe's samples (details.samples).
-- What a summary is stays as 013 defines it: an arm's state is its
-- result's (ok, fallback, unsupported, failed); an arm's columns come from
-- its result, and the other arms' are kept (a round's arms may arrive in
-- separate inserts); a sample that is not a number, or beyond ±1e300, is
-- left out. The generated function is static PL/pgSQL, so its plan is kept
-- for the session as before (013 says why that matters).
CREATE FUNCTION round_summaries_define_fold() RETURNS void LANGUAGE plpgsql AS $define$
DECLARE
  arms text[];
  cols text[];
  missing text;
  arm text;
  col text;
  ins text := '';
  sel text := '';
  upd text := '';
BEGIN
  SELECT array_agg(substring(column_name FROM '^(.*)_state$') ORDER BY ordinal_position) INTO arms
    FROM information_schema.columns
   WHERE table_schema = current_schema() AND table_name = 'round_summaries' AND column_name LIKE '%\_state';
  SELECT array_agg(r.column_name::text ORDER BY r.ordinal_position) INTO cols
    FROM information_schema.columns r
   WHERE r.table_schema = current_schema() AND r.table_name = 'results'
     AND EXISTS (SELECT 1 FROM information_schema.columns s
                  WHERE s.table_schema = current_schema() AND s.table_name = 'round_summaries'
                    AND s.column_name = ANY (SELECT a || '_' || r.column_name FROM unnest(arms) a));
  SELECT string_agg(a || '_' || c, ', ') INTO missing
    FROM unnest(arms) a CROSS JOIN unnest(cols || ARRAY['samples']) c
   WHERE NOT EXISTS (SELECT 1 FROM information_schema.columns s
                      WHERE s.table_schema = current_schema() AND s.table_name = 'round_summaries' AND s.column_name = a || '_' || c);
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'round_summaries lacks % (every arm needs every summarised column)', missing;
  END IF;

  FOREACH arm IN ARRAY arms LOOP
    ins := ins || format(', %I', arm || '_state');
    sel := sel || format(', max(x.state) FILTER (WHERE r.mode = %L)', arm);
    upd := upd || format(', %1$I = CASE WHEN excluded.%2$I IS NULL THEN s.%1$I ELSE excluded.%1$I END', arm || '_state', arm || '_state');
    FOREACH col IN ARRAY cols LOOP
      ins := ins || format(', %I', arm || '_' || col);
      sel := sel || format(', max(r.%I) FILTER (WHERE r.mode = %L)', col, arm);
      upd := upd || format(', %1$I = CASE WHEN excluded.%2$I IS NULL THEN s.%1$I ELSE excluded.%1$I END', arm || '_' || col, arm || '_state');
    END LOOP;
    ins := ins || format(', %I', arm || '_samples');
    sel := sel || format(', max(x.samples) FILTER (WHERE r.mode = %L)', arm);
    upd := upd || format(', %1$I = CASE WHEN excluded.%2$I IS NULL THEN s.%1$I ELSE excluded.%1$I END', arm || '_samples', arm || '_state');
  END LOOP;

  EXECUTE format($fold$
CREATE OR REPLACE FUNCTION round_summaries_fold(rs results[]) RETURNS void LANGUAGE plpgsql AS $body$
BEGIN
INSERT INTO round_summaries AS s (job_id, probe, view, time, monitor_id, location_id%1$s)
SELECT r.job_id, r.probe, r.view, r.time, max(r.monitor_id), max(r.location_id)%2$s
  FROM unnest(rs) r
  CROSS JOIN LATERAL (
    SELECT CASE WHEN r.status = 'ok' AND r.protocol_ok THEN 'ok'
                WHEN r.status = 'protocol_mismatch' THEN 'fallback'
                WHEN r.details->>'failure_kind' = 'h3_unsupported' THEN 'unsupported'
                ELSE 'failed' END AS state,
           CASE WHEN jsonb_typeof(r.details->'samples') = 'array' THEN
             nullif(ARRAY(SELECT v::double precision FROM jsonb_array_elements_text(r.details->'samples') v
                           WHERE CASE WHEN v ~* '^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)(e[-+]?[0-9]{1,3})?\s*$'
                                      THEN abs(v::numeric) < 1e300 ELSE false END), '{}') END AS samples
  ) x
 GROUP BY r.job_id, r.probe, r.view, r.time
ON CONFLICT (job_id, probe, view, time) DO UPDATE SET %3$s;
END
$body$
$fold$, ins, sel, substr(upd, 3));
END
$define$;

SELECT round_summaries_define_fold();
