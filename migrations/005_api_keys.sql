-- API keys for people and scripts (DESIGN §3): a role, and only the sha256
-- of the key. The key itself is shown once, when it is created.

CREATE TABLE api_keys (
  id            bigserial PRIMARY KEY,
  name          text NOT NULL,
  role          text NOT NULL CHECK (role IN ('read', 'write')),
  key_hash      text NOT NULL UNIQUE,
  -- The first characters of the key, so a person can tell keys apart in
  -- `h3lens keys list` without the list revealing anything usable.
  key_prefix    text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz,
  revoked_at    timestamptz
);
