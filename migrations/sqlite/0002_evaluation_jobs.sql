-- Evaluation jobs (held-out likelihood, test-split evaluation) run against a stored
-- model rather than fitting one. `kind` says which; `source_model_id` names the model;
-- documents submitted with the request are kept in `job_inputs` so a queued job
-- survives a restart. Results go to `jobs.result` (JSON).

ALTER TABLE jobs ADD COLUMN source_model_id TEXT;
CREATE INDEX jobs_by_source_model ON jobs (source_model_id, status);

CREATE TABLE job_inputs (
    job_id TEXT PRIMARY KEY,
    data   BLOB NOT NULL          -- postcard encoding owned by the jobs layer
);
