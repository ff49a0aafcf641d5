-- What each round's claim asked its agent to measure, from the monitor as
-- it was at the lease: the arms, the probes, whether a repeat view, and the
-- names of the journey's steps. A round's first submission is checked
-- against it: a result of an arm, probe, step or view the round did not ask
-- for is refused (422 not_asked), not stored as a measurement the monitor
-- never ran (lib/measurement/checks.js checkAsked). NULL for a round never
-- leased, or leased before this column: such a round is checked by the
-- schema alone.
ALTER TABLE jobs ADD COLUMN asked jsonb;
