-- Claims an agent never heard the answer to (docs/OPERATIONS.md, "A claim
-- answered into the void"). An agent process names itself when it claims
-- (its instance, new at each start) and says which of its rounds it holds.
-- A round leased to that instance which it does not hold was leased in an
-- answer the agent never got (lost on the way, or given up on by its
-- timeout); the next claim hands it back in the same attempt, instead of
-- leaving it leased to no one until its lease runs out
-- (lib/store/jobs.js claimJobs).
ALTER TABLE jobs ADD COLUMN lease_instance text;
