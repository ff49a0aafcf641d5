-- Metric names carry their unit in the API, as the results columns do
-- (ttfb -> ttfb_ms; lib/measurement/metrics.js). Alert rules store the id;
-- the old names are still accepted on input, as deprecated aliases.
UPDATE alert_rules SET metric = metric || '_ms'
 WHERE metric IN ('ttfb', 'load', 'fcp', 'lcp', 'connect', 'dcl', 'dns', 'tls', 'request', 'upload');
ALTER TABLE alert_rules ALTER COLUMN metric SET DEFAULT 'ttfb_ms';
