-- Acceptance rates with the trace: see migrations/sqlite/0013 for the column's meaning.
ALTER TABLE job_trace ADD COLUMN rates TEXT;
