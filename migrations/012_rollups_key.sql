-- 002 was edited after it landed (89ef876): the rollups primary key went from
-- (monitor_id, tier, probe, view, location_id, mode, bucket) to
-- (monitor_id, tier, probe, view, bucket, location_id, mode), so that a time
-- range of every location and mode is one contiguous index range per tier.
-- Databases created before that edit still have the old key, which answers
-- the same but scans each (location, mode) separately. This brings them to
-- the current key and does nothing on databases created after the edit.
-- Rebuilding the key locks rollups for as long as the index build takes: a
-- few seconds per million rows (one row per series and bucket).
DO $$
DECLARE
  pkey name;
  cols text[];
BEGIN
  SELECT c.conname, array_agg(a.attname::text ORDER BY k.ord)
    INTO pkey, cols
    FROM pg_constraint c
    CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
    JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
   WHERE c.conrelid = 'rollups'::regclass AND c.contype = 'p'
   GROUP BY c.conname;
  IF cols = ARRAY['monitor_id', 'tier', 'probe', 'view', 'bucket', 'location_id', 'mode'] THEN
    RETURN;
  END IF;
  IF cols IS DISTINCT FROM ARRAY['monitor_id', 'tier', 'probe', 'view', 'location_id', 'mode', 'bucket'] THEN
    RAISE EXCEPTION 'rollups has primary key (%), neither the key 002 created before 89ef876 nor the current one; fix it by hand',
      coalesce(array_to_string(cols, ', '), 'none');
  END IF;
  EXECUTE format('ALTER TABLE rollups DROP CONSTRAINT %I', pkey);
  ALTER TABLE rollups ADD PRIMARY KEY (monitor_id, tier, probe, view, bucket, location_id, mode);
END
$$;
