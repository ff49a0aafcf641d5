-- Browser as a dimension (docs/BROWSERS.md): a monitor chooses its
-- browsers beside its arms, a location says which browsers its agents have,
-- and a round is one (monitor, location, browser), so H2 and H3 stay paired
-- within one browser. Rows from before this migration are Chromium's, the
-- only browser there was.

-- What a monitor runs in, and what a location's agents can run (each agent
-- says so when it claims, lib/store/jobs.js claimJobs).
ALTER TABLE monitors ADD COLUMN browsers text[] NOT NULL DEFAULT '{chromium}' CHECK (cardinality(browsers) > 0);
ALTER TABLE locations ADD COLUMN browsers text[] NOT NULL DEFAULT '{chromium}';
ALTER TABLE agents ADD COLUMN browsers text[] NOT NULL DEFAULT '{chromium}';

-- A round per browser: one insert of each still wins among scheduler replicas.
ALTER TABLE jobs ADD COLUMN browser text NOT NULL DEFAULT 'chromium';
ALTER TABLE jobs DROP CONSTRAINT jobs_monitor_id_location_id_due_at_key;
ALTER TABLE jobs ADD CONSTRAINT jobs_round_key UNIQUE (monitor_id, location_id, browser, due_at);

-- Results, their round summaries and their rollups carry the browser; each
-- series (and its capped raw samples, its rollup rows) is one browser's.
ALTER TABLE results ADD COLUMN browser text NOT NULL DEFAULT 'chromium';
DROP INDEX results_series_time;
CREATE INDEX results_series_time ON results (monitor_id, location_id, browser, mode, probe, view, time DESC);
-- The auto arm's returning visits of one browser (the h3_share_drop rule
-- reads Chromium's, migration 022), still an index-only range scan.
DROP INDEX results_auto_returning;
CREATE INDEX results_auto_returning ON results (monitor_id, location_id, browser, time) INCLUDE (status, observed_protocol)
  WHERE mode = 'auto' AND view = 'returning' AND probe = 'page';

ALTER TABLE round_summaries ADD COLUMN browser text NOT NULL DEFAULT 'chromium';
DROP INDEX round_summaries_series;
CREATE INDEX round_summaries_series ON round_summaries (monitor_id, probe, view, browser, location_id, time, job_id)
  INCLUDE (h2_state, h3_state);

ALTER TABLE rollups ADD COLUMN browser text NOT NULL DEFAULT 'chromium';
ALTER TABLE rollups DROP CONSTRAINT rollups_pkey;
ALTER TABLE rollups ADD PRIMARY KEY (monitor_id, tier, probe, view, browser, bucket, location_id, mode);

-- The fold (021) with the round's browser: a round is one job, so one browser.
CREATE OR REPLACE FUNCTION round_summaries_define_fold() RETURNS void LANGUAGE plpgsql AS $define$
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
INSERT INTO round_summaries AS s (job_id, probe, view, time, monitor_id, location_id, browser%1$s)
SELECT r.job_id, r.probe, r.view, r.time, max(r.monitor_id), max(r.location_id), max(r.browser)%2$s
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
