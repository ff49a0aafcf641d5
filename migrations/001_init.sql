-- Core tables: locations, agents, monitors, jobs, results (DESIGN §3).

CREATE TABLE locations (
  id          text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  name        text NOT NULL,
  region      text NOT NULL,
  kind        text NOT NULL CHECK (kind IN ('lab', 'real')),
  -- Network profile for lab locations (rtt_ms, jitter_ms, loss_pct, ...);
  -- for real locations the last measured RTT may be kept here.
  profile     jsonb NOT NULL DEFAULT '{}',
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

INSERT INTO locations (id, name, region, kind, profile)
VALUES ('local', 'Local (unshaped loopback)', 'Local', 'lab', '{"rtt_ms": 0}');

CREATE TABLE agents (
  id               bigserial PRIMARY KEY,
  location_id      text NOT NULL REFERENCES locations (id),
  name             text NOT NULL,
  -- sha256 of the bearer token; the token itself is shown once and never stored.
  token_hash       text NOT NULL UNIQUE,
  version          text,
  browser_version  text,
  last_seen_at     timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  revoked_at       timestamptz
);

CREATE TABLE monitors (
  id           bigserial PRIMARY KEY,
  url          text NOT NULL,
  label        text,
  interval_s   integer NOT NULL CHECK (interval_s >= 10),
  locations    text[] NOT NULL CHECK (cardinality(locations) > 0),
  modes        text[] NOT NULL DEFAULT '{h2,h3}',
  probes       text[] NOT NULL DEFAULT '{page}',
  repeat_view  boolean NOT NULL DEFAULT false,
  options      jsonb NOT NULL DEFAULT '{}',
  paused       boolean NOT NULL DEFAULT false,
  -- Rounds fall on anchor_at + k * interval_s: a new monitor runs at once,
  -- and monitors created at different times do not all fire together.
  anchor_at    timestamptz NOT NULL DEFAULT now(),
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  deleted_at   timestamptz
);

CREATE TABLE jobs (
  id                bigserial PRIMARY KEY,
  monitor_id        bigint NOT NULL REFERENCES monitors (id),
  location_id       text NOT NULL REFERENCES locations (id),
  due_at            timestamptz NOT NULL,
  state             text NOT NULL DEFAULT 'queued'
                    CHECK (state IN ('queued', 'leased', 'done', 'failed', 'cancelled')),
  attempts          integer NOT NULL DEFAULT 0,
  max_attempts      integer NOT NULL DEFAULT 3,
  -- Back-off: a retried job is not claimable before run_after.
  run_after         timestamptz NOT NULL DEFAULT now(),
  lease_owner       bigint REFERENCES agents (id),
  lease_expires_at  timestamptz,
  last_error        text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  finished_at       timestamptz,
  -- Several scheduler replicas may insert the same round; only one row wins.
  UNIQUE (monitor_id, location_id, due_at)
);

-- The claim query scans exactly this: queued jobs of one location by run_after.
CREATE INDEX jobs_claimable ON jobs (location_id, run_after) WHERE state = 'queued';
CREATE INDEX jobs_leased ON jobs (lease_expires_at) WHERE state = 'leased';

CREATE TABLE results (
  id                 bigserial,
  -- The round's due time, not the wall clock of the measurement: a
  -- resubmitted result then carries the same time, which keeps the unique key
  -- below valid on a TimescaleDB hypertable partitioned by time.
  time               timestamptz NOT NULL,
  measured_at        timestamptz NOT NULL DEFAULT now(),
  job_id             bigint NOT NULL,
  monitor_id         bigint NOT NULL,
  location_id        text NOT NULL,
  agent_id           bigint,
  mode               text NOT NULL CHECK (mode IN ('h2', 'h3')),
  view               text NOT NULL DEFAULT 'first' CHECK (view IN ('first', 'repeat')),
  probe              text NOT NULL DEFAULT 'page' CHECK (probe IN ('page', 'parallel', 'upload')),
  status             text NOT NULL CHECK (status IN ('ok', 'error', 'timeout', 'protocol_mismatch')),
  error              text,
  observed_protocol  text,
  protocol_ok        boolean NOT NULL,
  ttfb_ms            double precision,
  load_ms            double precision,
  dns_ms             double precision,
  connect_ms         double precision,
  tls_ms             double precision,
  fcp_ms             double precision,
  lcp_ms             double precision,
  dcl_ms             double precision,
  bytes              bigint,
  requests           integer,
  h3_request_share   real,
  h3_byte_share      real,
  rtt_ms             double precision,
  browser_version    text,
  agent_version      text,
  flags              text[],
  -- Per-request protocol list, probe samples and other evidence.
  details            jsonb NOT NULL DEFAULT '{}',
  UNIQUE (job_id, mode, view, probe, time)
);

CREATE INDEX results_monitor_time ON results (monitor_id, time DESC);
CREATE INDEX results_id ON results (id);
