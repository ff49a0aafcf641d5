-- Journeys at WebPageTest locations (docs/WPT.md): a round's journey is a
-- WPT test per arm beside its page tests, sent as a WPT script.
--
-- probe: what the test measures, 'page' (a page load) or 'journey'.
-- journey: the journey as it was sent, so that its upload is read against
-- the script the agent ran even if the monitor's journey changed since
-- (lib/measurement/wpt/journey-results.js). It has no secrets: a journey
-- with one is never sent to a WPT agent.
ALTER TABLE wpt_tests
  ADD COLUMN probe text NOT NULL DEFAULT 'page' CHECK (probe IN ('page', 'journey')),
  ADD COLUMN journey jsonb;
