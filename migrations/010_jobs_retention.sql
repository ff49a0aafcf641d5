-- Jobs retention: finished jobs are deleted after H3LENS_JOBS_RETENTION_DAYS
-- (lib/jobs.js pruneFinishedJobs); results keep their job_id, which is all
-- they need of the job. The pruner takes the oldest finished jobs first and
-- /metrics counts the jobs finished in the last hour, both through this index,
-- so neither reads the whole table.
UPDATE jobs SET finished_at = updated_at
 WHERE state IN ('done', 'failed', 'cancelled') AND finished_at IS NULL;
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE state IN ('done', 'failed', 'cancelled');
