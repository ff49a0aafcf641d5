-- The last upload a location's WebPageTest agents had refused, or stored as
-- an error because its timings could not be true: when, which agent and
-- test, the HTTP status answered and why. wptagent ignores the status and
-- logs nothing of the answer, so this is where a user sees why a location's
-- rounds are missing. One row per location, overwritten: the API's log has
-- every refusal.
ALTER TABLE locations ADD COLUMN last_refusal jsonb;
