-- Alerts (issue 15): rules, webhook channels, the state of each
-- (rule, monitor, location) with its history, and an outbox of deliveries.

CREATE TABLE alert_channels (
  id          bigserial PRIMARY KEY,
  kind        text NOT NULL CHECK (kind IN ('webhook')),
  name        text NOT NULL,
  url         text NOT NULL,
  -- HMAC key of the X-H3lens-Signature header; never returned by the API.
  secret      text NOT NULL,
  format      text NOT NULL DEFAULT 'json' CHECK (format IN ('json', 'slack')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE alert_rules (
  id              bigserial PRIMARY KEY,
  kind            text NOT NULL CHECK (kind IN ('h3_regression', 'h3_failure', 'location_silent', 'error_rate')),
  -- NULL: every monitor.
  monitor_id      bigint NULL REFERENCES monitors (id) ON DELETE CASCADE,
  -- NULL: every location of the monitor.
  locations       text[] NULL,
  metric          text NOT NULL DEFAULT 'ttfb',
  percentile      double precision NULL CHECK (percentile > 0 AND percentile < 100),
  min_effect_pct  double precision NULL CHECK (min_effect_pct >= 0),
  min_effect_ms   double precision NULL CHECK (min_effect_ms >= 0),
  threshold_pct   double precision NULL CHECK (threshold_pct >= 0 AND threshold_pct <= 100),
  window_s        integer NOT NULL CHECK (window_s >= 60),
  evaluations     integer NOT NULL DEFAULT 1 CHECK (evaluations >= 1),
  severity        text NOT NULL DEFAULT 'warning' CHECK (severity IN ('info', 'warning', 'critical')),
  description     text NULL,
  channels        bigint[] NOT NULL DEFAULT '{}',
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);

-- One row per (rule, monitor, location) ever evaluated. breaches / clears
-- count consecutive evaluations that met / did not meet the condition: a
-- rule fires after `evaluations` breaches and resolves after as many clears.
CREATE TABLE alert_states (
  rule_id      bigint NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
  monitor_id   bigint NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
  location_id  text NOT NULL,
  state        text NOT NULL CHECK (state IN ('ok', 'pending', 'firing', 'resolved')),
  breaches     integer NOT NULL DEFAULT 0,
  clears       integer NOT NULL DEFAULT 0,
  since        timestamptz NOT NULL,
  fired_at     timestamptz NULL,
  resolved_at  timestamptz NULL,
  evaluated_at timestamptz NOT NULL,
  evidence     jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (rule_id, monitor_id, location_id)
);
CREATE INDEX alert_states_firing ON alert_states (state) WHERE state = 'firing';

-- Every change of state, oldest first per key.
CREATE TABLE alert_events (
  id           bigserial PRIMARY KEY,
  rule_id      bigint NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
  monitor_id   bigint NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
  location_id  text NOT NULL,
  state        text NOT NULL CHECK (state IN ('ok', 'pending', 'firing', 'resolved')),
  previous     text NOT NULL,
  at           timestamptz NOT NULL,
  evidence     jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX alert_events_at ON alert_events (at DESC, id DESC);

-- The outbox: a row per (event, channel), written in the transaction that
-- changed the state, sent by whichever scheduler replica locks it first.
CREATE TABLE alert_deliveries (
  id               bigserial PRIMARY KEY,
  channel_id       bigint NOT NULL REFERENCES alert_channels (id) ON DELETE CASCADE,
  event_id         bigint NULL REFERENCES alert_events (id) ON DELETE SET NULL,
  kind             text NOT NULL CHECK (kind IN ('firing', 'resolved', 'test')),
  body             jsonb NOT NULL,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL,
  created_at       timestamptz NOT NULL,
  delivered_at     timestamptz NULL,
  last_error       text NULL,
  UNIQUE (event_id, channel_id)
);
CREATE INDEX alert_deliveries_due ON alert_deliveries (next_attempt_at) WHERE status = 'pending';

CREATE TABLE alert_delivery_attempts (
  id           bigserial PRIMARY KEY,
  delivery_id  bigint NOT NULL REFERENCES alert_deliveries (id) ON DELETE CASCADE,
  at           timestamptz NOT NULL,
  status_code  integer NULL,
  error        text NULL,
  duration_ms  double precision NOT NULL
);

-- The evaluator's clock: one row, locked by the replica that evaluates.
CREATE TABLE alert_evaluator (
  id              integer PRIMARY KEY CHECK (id = 1),
  last_run_at     timestamptz NULL
);
INSERT INTO alert_evaluator (id) VALUES (1);

-- The rules a new installation starts with, for every monitor.
INSERT INTO alert_rules (kind, percentile, min_effect_pct, window_s, evaluations, severity, description) VALUES
  ('h3_regression', 95, 10, 3600, 3, 'warning', 'HTTP/3 is at least 10% slower than HTTP/2 at p95 over the last hour');
INSERT INTO alert_rules (kind, threshold_pct, window_s, evaluations, severity, description) VALUES
  ('h3_failure', 5, 3600, 3, 'warning', 'HTTP/3 fails or falls back in more than 5% of rounds, significantly more than HTTP/2');
INSERT INTO alert_rules (kind, window_s, evaluations, severity, description) VALUES
  ('location_silent', 900, 1, 'critical', 'No result from a location for 15 minutes while it has due rounds');
