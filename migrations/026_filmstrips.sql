-- Filmstrips and visual metrics (docs/FILMSTRIPS.md).
--
-- The five visual metrics are catalogue metrics (lib/measurement/metrics.js):
-- a results column each, the round summaries' column for every arm, and a
-- rollup sketch each.
ALTER TABLE results
  ADD COLUMN first_visual_change_ms double precision,
  ADD COLUMN speed_index_ms double precision,
  ADD COLUMN visually_complete_85_ms double precision,
  ADD COLUMN visually_complete_ms double precision,
  ADD COLUMN last_visual_change_ms double precision;

ALTER TABLE round_summaries
  ADD COLUMN h2_first_visual_change_ms double precision,
  ADD COLUMN h2_speed_index_ms double precision,
  ADD COLUMN h2_visually_complete_85_ms double precision,
  ADD COLUMN h2_visually_complete_ms double precision,
  ADD COLUMN h2_last_visual_change_ms double precision,
  ADD COLUMN h3_first_visual_change_ms double precision,
  ADD COLUMN h3_speed_index_ms double precision,
  ADD COLUMN h3_visually_complete_85_ms double precision,
  ADD COLUMN h3_visually_complete_ms double precision,
  ADD COLUMN h3_last_visual_change_ms double precision,
  ADD COLUMN auto_first_visual_change_ms double precision,
  ADD COLUMN auto_speed_index_ms double precision,
  ADD COLUMN auto_visually_complete_85_ms double precision,
  ADD COLUMN auto_visually_complete_ms double precision,
  ADD COLUMN auto_last_visual_change_ms double precision;

ALTER TABLE rollups
  ADD COLUMN first_visual_change_ms bytea,
  ADD COLUMN speed_index_ms bytea,
  ADD COLUMN visually_complete_85_ms bytea,
  ADD COLUMN visually_complete_ms bytea,
  ADD COLUMN last_visual_change_ms bytea;

-- A run's frames, one row each, keyed like its result (job, mode, view,
-- probe), so they are stored before the result arrives and found from it.
-- In PostgreSQL rather than files: every API replica serves them without a
-- shared disk, and a backup holds them with their results. Bounded per run
-- (the API refuses more than 1 MiB or 300 frames) and kept for
-- H3LENS_FILMSTRIP_RETENTION_DAYS, apart from the results' retention: the
-- scheduler deletes them by created_at.
CREATE TABLE filmstrip_frames (
  job_id       bigint NOT NULL,
  mode         text NOT NULL,
  view         text NOT NULL,
  probe        text NOT NULL,
  seq          integer NOT NULL CHECK (seq >= 0),
  t_ms         double precision NOT NULL CHECK (t_ms >= 0),
  jpeg         bytea NOT NULL,
  monitor_id   bigint NOT NULL,
  location_id  text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, mode, view, probe, seq)
);
CREATE INDEX filmstrip_frames_created ON filmstrip_frames (created_at);

SELECT round_summaries_define_fold();
