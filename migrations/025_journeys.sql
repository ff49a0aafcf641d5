-- Journeys (docs/JOURNEYS.md): a monitor's multi-step user flow, its
-- secrets, the rollups of its steps' durations, alert rules on a step, and
-- the "try it" runs an agent makes on demand.
--
-- A journey's results need no new key: the step is in the probe
-- ('journey' for the whole journey, 'journey:<name>' for a named step,
-- lib/measurement/probes/journey.js), so results, round summaries, rollups
-- and net logs keep their keys, and each (job, mode, view, probe) is still
-- one result.

-- The steps as the API shows them: a secret appears only as { "stored": ref }.
ALTER TABLE monitors ADD COLUMN journey jsonb;
-- ref → the secret sealed with the deployment's key (AES-256-GCM,
-- lib/runtime/secret-box.js). Never selected with the monitor: only the
-- claim of a round opens them, for the agent that runs it.
ALTER TABLE monitors ADD COLUMN journey_secrets jsonb NOT NULL DEFAULT '{}';

-- A sketch of step_ms (a step's, or the whole journey's, duration) per bucket.
ALTER TABLE rollups ADD COLUMN step_ms bytea;

-- Which probe an h3_regression rule compares: NULL is the metric's own
-- probe (page for page timings); 'journey' or 'journey:<step>' for a journey.
ALTER TABLE alert_rules ADD COLUMN probe text;

-- "Try it": a journey run once by an agent of one location in the H2 arm,
-- for the editor. Its outcome (each step's, a screenshot of the last frame)
-- is kept until expires_at and never becomes a result.
CREATE TABLE journey_trials (
  id               bigserial PRIMARY KEY,
  location_id      text NOT NULL,
  monitor_id       bigint,
  url              text NOT NULL,
  journey          jsonb NOT NULL,
  journey_secrets  jsonb NOT NULL DEFAULT '{}',
  state            text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done')),
  agent_id         bigint,
  outcome          jsonb,
  screenshot       bytea,
  created_at       timestamptz NOT NULL DEFAULT now(),
  claimed_at       timestamptz,
  finished_at      timestamptz,
  expires_at       timestamptz NOT NULL
);
CREATE INDEX journey_trials_queued ON journey_trials (location_id, created_at) WHERE state = 'queued';
CREATE INDEX journey_trials_expiry ON journey_trials (expires_at);
