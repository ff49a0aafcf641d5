-- When results of a monitor were last written out of the agents' flow:
-- an import (lib/store/results-import.js) sets it in its own transaction.
-- The API keeps computed comparisons for a short while
-- (H3LENS_COMPARISON_MAX_AGE_S, lib/analysis/comparison-cache.js); this
-- stamp is part of a cached answer's key, so every replica answers with the
-- imported rounds as soon as the import returns. Rounds from agents arrive
-- at the window's end all the time and are covered by the maximum age.
ALTER TABLE monitors ADD COLUMN results_changed_at timestamptz;
