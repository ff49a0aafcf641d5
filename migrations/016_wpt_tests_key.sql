-- Migration 008 was edited after it landed: wpt_tests lost its
-- UNIQUE (job_id, attempt, mode) (a round given back runs again with new
-- tests of the same attempt and mode) and gained the index wpt_tests_job.
-- Databases migrated with the first version still have the constraint,
-- which refuses the new tests of a given-back round; this brings them to
-- the current schema and changes nothing on the others.
ALTER TABLE wpt_tests DROP CONSTRAINT IF EXISTS wpt_tests_job_id_attempt_mode_key;
CREATE INDEX IF NOT EXISTS wpt_tests_job ON wpt_tests (job_id, attempt);
