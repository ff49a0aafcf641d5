-- Back-pressure (lib/jobs.js scheduleDueJobs): at most one pending (queued
-- or leased) round per monitor and location. A round that could not start
-- before the next one came due is kept as a job in state 'skipped' with the
-- reason, so the API, the Locations page and /metrics can count it; it is a
-- finished state, pruned with the others (migration 010).
ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_state_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_state_check
  CHECK (state IN ('queued', 'leased', 'done', 'failed', 'cancelled', 'skipped'));

-- When the round's current attempt was claimed: with finished_at, what a
-- round costs an agent, from which a location's capacity is estimated.
ALTER TABLE jobs ADD COLUMN started_at timestamptz;

-- The scheduler's "is a round of this monitor pending here?", one index probe.
CREATE INDEX jobs_pending ON jobs (monitor_id, location_id) WHERE state IN ('queued', 'leased');

DROP INDEX IF EXISTS jobs_finished;
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE state IN ('done', 'failed', 'cancelled', 'skipped');
