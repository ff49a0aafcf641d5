-- Verdicts (DESIGN §6): per-monitor settings of the verdict rule and of A/A
-- calibration.

-- An A/A monitor loads both arms of a round with this one protocol. The arms
-- are still stored as mode h2 (arm A) and h3 (arm B) and compared like any
-- monitor's, so its comparison shows the location's noise floor: every
-- difference it reports is a false one. NULL: an ordinary H2-vs-H3 monitor.
-- The practical minimum effect a verdict needs: a cell says faster or slower
-- only when the difference is at least min_effect_pct percent and at least
-- min_effect_ms milliseconds (default: max(2%, 1 ms)).
-- Constant defaults, so adding the columns is a catalogue change only.
ALTER TABLE monitors
  ADD COLUMN aa_protocol text NULL CHECK (aa_protocol IN ('h2', 'h3')),
  ADD COLUMN min_effect_pct double precision NOT NULL DEFAULT 2 CHECK (min_effect_pct >= 0 AND min_effect_pct <= 100),
  ADD COLUMN min_effect_ms double precision NOT NULL DEFAULT 1 CHECK (min_effect_ms >= 0);
