-- Infrastructure faults (lib/store/jobs.js failJob, expireLeases): a round
-- an agent could not run (its browser crashed or went away, a lease it let
-- expire) is run again as a new attempt, never stored as the page's error.
-- Each agent keeps a count of them and the last one, for its health on the
-- agents API and the Locations page.
ALTER TABLE agents ADD COLUMN faults integer NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN last_fault_at timestamptz;
ALTER TABLE agents ADD COLUMN last_fault text;

-- Back-off (lib/store/round-backoffs.js): a monitor whose rounds at a
-- location keep timing out costs its location's agents a whole round
-- budget each time, and the other monitors there wait behind it. After
-- BACKOFF_AFTER_TIMEOUTS such rounds in a row its interval there is
-- stretched (doubling, capped); rounds due before `until` are recorded as
-- skipped with the reason (lib/store/jobs.js scheduleDueJobs). The first
-- round that does not time out sets the count back to 0 (the row stays, so
-- a timed-out round that arrives late from a spool is seen to be older).
-- `until` is null while the monitor is not backed off.
CREATE TABLE round_backoffs (
  monitor_id   bigint NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
  location_id  text NOT NULL REFERENCES locations (id) ON DELETE CASCADE,
  -- Rounds in a row, by due time, in which every load timed out.
  timeouts     integer NOT NULL CHECK (timeouts >= 0),
  -- The due time of the last round counted (timed out or not): results
  -- that arrive late (an agent's spool) never move the count backwards.
  last_due_at  timestamptz NOT NULL,
  until        timestamptz,
  PRIMARY KEY (monitor_id, location_id)
);

-- Missed rounds (scheduleDueJobs): next_due_at is also the first round the
-- scheduler still owes. A change to what or when a monitor runs now sets it
-- to now() rather than to the earlier of the two, so rounds that fell due
-- before the change (while the monitor was paused, on its old interval)
-- are never taken for rounds a stopped scheduler missed. It is still "look
-- at it at once", as before.
CREATE OR REPLACE FUNCTION monitors_reschedule () RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.next_due_at := now();
  RETURN NEW;
END
$$;
