-- Where the TimescaleDB extension is installed, results become a hypertable
-- on time (existing rows migrated). On plain PostgreSQL this does nothing and
-- every query returns the same answers: rollups are maintained by h3lens
-- itself either way. Compression and retention policies are set at start-up
-- from H3LENS_COMPRESS_AFTER_DAYS / H3LENS_RETENTION_DAYS (lib/timescale.js),
-- since they are settings, not schema.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'timescaledb') THEN
    CREATE EXTENSION IF NOT EXISTS timescaledb;
    PERFORM create_hypertable('results', 'time', chunk_time_interval => interval '1 day', migrate_data => true, if_not_exists => true);
  END IF;
END
$$;
