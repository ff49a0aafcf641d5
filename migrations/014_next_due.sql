-- The scheduler's index of what is due (lib/jobs.js scheduleDueJobs): each
-- monitor's next_due_at is the time by which the scheduler must look at it
-- again, so a tick reads only the monitors that have a round coming due
-- instead of computing the current round of every monitor at every location
-- (bench/scheduler.js: ~140 ms of PostgreSQL per tick at 10,000 monitors ×
-- 5 locations, the whole of the replicas' database time).
--
-- now() is "look at it at once": a new monitor, and every monitor when this
-- migration runs (the backfill: the first tick evaluates each monitor once,
-- as every tick did before, finds the rounds that exist and moves
-- next_due_at to the next round; a round that fell due while no scheduler
-- ran is created then, as before).
ALTER TABLE monitors ADD COLUMN next_due_at timestamptz NOT NULL DEFAULT now();

CREATE INDEX monitors_next_due ON monitors (next_due_at) WHERE deleted_at IS NULL AND NOT paused;

-- A change to what or when a monitor runs (a new interval or anchor, a
-- location added, unpaused) is looked at on the next tick, whichever code
-- or statement made it: the scheduler then creates the current round where
-- it is missing, as it did when it evaluated every monitor every tick.
CREATE FUNCTION monitors_reschedule () RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.next_due_at := least(NEW.next_due_at, now());
  RETURN NEW;
END
$$;

CREATE TRIGGER monitors_reschedule
  BEFORE UPDATE OF interval_s, locations, anchor_at, paused, deleted_at ON monitors
  FOR EACH ROW
  WHEN (OLD.interval_s IS DISTINCT FROM NEW.interval_s OR OLD.locations IS DISTINCT FROM NEW.locations
        OR OLD.anchor_at IS DISTINCT FROM NEW.anchor_at OR OLD.paused IS DISTINCT FROM NEW.paused
        OR OLD.deleted_at IS DISTINCT FROM NEW.deleted_at)
  EXECUTE FUNCTION monitors_reschedule();
