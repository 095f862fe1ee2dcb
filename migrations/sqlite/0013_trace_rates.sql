-- Acceptance rates with the trace (issue 57): a trace point keeps the acceptance rates
-- the sampler reported at its iteration (a JSON object of numbers, null when none), so a
-- job's page draws them again after a reload, not only while someone watches the job.
ALTER TABLE job_trace ADD COLUMN rates TEXT;
