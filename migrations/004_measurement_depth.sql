-- Measurement depth: the evidence that explains a result, not only its time.

-- Connect and TTFB in round trips of the location's RTT (lab profile, or a
-- TCP connect ping for real locations), upload throughput for display, and
-- structured notes such as "QUIC handshake took 3.9 RTT (floor 1)".
-- Nullable without defaults, so adding them is a catalogue change only, also
-- on a TimescaleDB hypertable with compressed chunks.
ALTER TABLE results
  ADD COLUMN connect_rtt double precision,
  ADD COLUMN ttfb_rtt double precision,
  ADD COLUMN upload_mbps double precision,
  ADD COLUMN notes jsonb;

-- Alt-Svc discovery: which origins a monitored page uses, whether they
-- advertise HTTP/3 and over which protocol they were actually served, per
-- location (CDNs answer differently per region). Updated when results are
-- stored, from the response headers the agent saw.
CREATE TABLE monitor_origins (
  monitor_id          bigint NOT NULL,
  location_id         text NOT NULL,
  origin              text NOT NULL,
  -- The last Alt-Svc header value the origin sent (any protocol listed), or null.
  alt_svc             text,
  h3_advertised       boolean NOT NULL DEFAULT false,
  first_advertised_at timestamptz,
  last_advertised_at  timestamptz,
  h3_requests         bigint NOT NULL DEFAULT 0,
  h2_requests         bigint NOT NULL DEFAULT 0,
  other_requests      bigint NOT NULL DEFAULT 0,
  last_h3_at          timestamptz,
  first_seen_at       timestamptz NOT NULL DEFAULT now(),
  last_seen_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (monitor_id, location_id, origin)
);

-- Chromium net logs, gzip-compressed, one per result at most. Keyed like the
-- result (job, mode, view, probe), because the agent uploads a net log while
-- it still holds the job, before the result rows exist.
CREATE TABLE netlogs (
  job_id       bigint NOT NULL,
  mode         text NOT NULL,
  view         text NOT NULL,
  probe        text NOT NULL,
  monitor_id   bigint NOT NULL,
  location_id  text NOT NULL,
  agent_id     bigint,
  -- 'run': the result's own run was captured; 'rerun': the result was an
  -- outlier and the same probe and mode ran again at once with capture on.
  kind         text NOT NULL CHECK (kind IN ('run', 'rerun')),
  raw_bytes    bigint,
  gzip         bytea NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, mode, view, probe)
);
CREATE INDEX netlogs_monitor ON netlogs (monitor_id, created_at);
