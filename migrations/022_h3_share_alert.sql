-- The h3_share_drop alert rule kind (issue 22): fires when the auto arm's
-- returning visits stop getting H3, either below threshold_pct or by at
-- least min_drop_points percentage points against the 7 days before
-- (lib/analysis/alert-h3-share.js).
ALTER TABLE alert_rules DROP CONSTRAINT alert_rules_kind_check;
ALTER TABLE alert_rules ADD CONSTRAINT alert_rules_kind_check
  CHECK (kind IN ('h3_regression', 'h3_failure', 'location_silent', 'error_rate', 'h3_share_drop'));
ALTER TABLE alert_rules ADD COLUMN min_drop_points double precision NULL
  CHECK (min_drop_points > 0 AND min_drop_points < 100);
