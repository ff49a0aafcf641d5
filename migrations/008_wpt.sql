-- WebPageTest agents as locations (DESIGN §9): a location of kind wpt is
-- served to stock wptagent nodes over the WPT agent protocol (/work/*.php).

ALTER TABLE locations DROP CONSTRAINT IF EXISTS locations_kind_check;
ALTER TABLE locations ADD CONSTRAINT locations_kind_check CHECK (kind IN ('lab', 'real', 'wpt'));

-- Location keys: what a wptagent sends as --key. Only the sha256 is stored;
-- the key is shown once by `h3lens agents wpt-key`.
CREATE TABLE wpt_keys (
  id           bigserial PRIMARY KEY,
  location_id  text NOT NULL REFERENCES locations (id),
  key_hash     text NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);

-- A wptagent is an agent row of kind wpt, named by its `pc`, created on its
-- first poll: it has no token of its own (the location key admits it), so
-- token_hash is null. Leases, results and net logs refer to it like to any
-- agent. last_seen_at is its last poll or ping.
ALTER TABLE agents ALTER COLUMN token_hash DROP NOT NULL;
ALTER TABLE agents
  ADD COLUMN kind text NOT NULL DEFAULT 'puppeteer' CHECK (kind IN ('puppeteer', 'wpt')),
  ADD COLUMN last_result_at timestamptz;
CREATE UNIQUE INDEX agents_wpt_pc ON agents (location_id, name) WHERE kind = 'wpt';

-- One WPT test per arm of a round: the test id the agent was given, and the
-- (job, mode) it measures. `attempt` is the job's attempt the test belongs
-- to: after a lease expires the round is run again with new tests, and
-- uploads for the old ones are refused. A test given back (requeue.php) or
-- lost (the agent asked for new work instead) is dropped, and its uploads are
-- refused too: the round runs again with new tests. The id carries random characters,
-- so knowing it is what requeue.php (which sends no key) relies on.
CREATE TABLE wpt_tests (
  test_id      text PRIMARY KEY,
  job_id       bigint NOT NULL REFERENCES jobs (id),
  attempt      integer NOT NULL,
  mode         text NOT NULL CHECK (mode IN ('h2', 'h3')),
  -- 0 or 1: the order the arms are handed out in, random per round.
  position     integer NOT NULL,
  location_id  text NOT NULL,
  agent_id     bigint NOT NULL REFERENCES agents (id),
  repeat_view  boolean NOT NULL,
  state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'done', 'dropped')),
  -- the switches sent in addCmdLine, kept as the results' flags
  add_cmd_line text,
  sent_at      timestamptz,
  done_at      timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX wpt_tests_job ON wpt_tests (job_id, attempt);
CREATE INDEX wpt_tests_agent ON wpt_tests (agent_id, state) WHERE state IN ('pending', 'sent');

-- What each upload said, per (test, run, cached), stored before the answer:
-- the agent never retries, so this row is the result until the round's other
-- arm is in and both become results rows. A second upload of the same key
-- changes nothing.
CREATE TABLE wpt_runs (
  test_id      text NOT NULL REFERENCES wpt_tests (test_id),
  run          integer NOT NULL,
  cached       boolean NOT NULL,
  -- the result row to insert, in the shape agents submit
  result       jsonb NOT NULL,
  received_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (test_id, run, cached)
);
