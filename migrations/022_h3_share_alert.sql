-- The h3_share_drop alert rule kind (issue 22): fires when the auto arm's
-- returning visits stop getting H3, either below threshold_pct or by at
-- least min_drop_points percentage points against the 7 days before
-- (lib/analysis/alert-h3-share.js).
ALTER TABLE alert_rules DROP CONSTRAINT alert_rules_kind_check;
ALTER TABLE alert_rules ADD CONSTRAINT alert_rules_kind_check
  CHECK (kind IN ('h3_regression', 'h3_failure', 'location_silent', 'error_rate', 'h3_share_drop'));
ALTER TABLE alert_rules ADD COLUMN min_drop_points double precision NULL
  CHECK (min_drop_points > 0 AND min_drop_points < 100);

-- What the rule reads each minute: per (monitor, location), the auto arm's
-- returning visits in its window and in the week before, counted by status
-- and protocol (lib/store/results.js returningVisitCounts). The series
-- index finds them but fetches each row from the heap; this partial index
-- holds only those visits and the two columns counted, so the count is an
-- index-only scan. A week of visits a minute (10,080 per location),
-- vacuumed, 2 busy cores: 22.8 ms per monitor and location and evaluation
-- without it, 2.1 ms with it (node bench/alerts-eval.js --share-days 7).
-- Building it reads results once.
CREATE INDEX results_auto_returning ON results (monitor_id, location_id, time) INCLUDE (status, observed_protocol)
  WHERE mode = 'auto' AND view = 'returning' AND probe = 'page';
