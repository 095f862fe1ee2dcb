-- Leases: a running job is held by one worker (`lease_owner`, a replica's id) until
-- `lease_expires_ms` (milliseconds since the Unix epoch), which the worker renews by
-- heartbeat. A job whose lease expired is claimed again and resumes from its
-- checkpoint. `job_leases` is the history of who held each attempt and when it ended,
-- kept with the job so a double hold can be ruled out afterwards.
-- `models.names_generation` counts topic renames, so replicas that cache a model's
-- topic names can tell theirs are stale.

ALTER TABLE jobs ADD COLUMN lease_owner TEXT;
ALTER TABLE jobs ADD COLUMN lease_expires_ms INTEGER;
CREATE INDEX jobs_by_lease ON jobs (status, lease_expires_ms);

CREATE TABLE job_leases (
    job_id     TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt    INTEGER NOT NULL,
    owner      TEXT NOT NULL,
    claimed_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,   -- the last renewal's expiry
    ended_ms   INTEGER,            -- when the holder let go (NULL: it never did)
    outcome    TEXT,               -- what it let go with: succeeded, failed, cancelled, requeued, taken_over
    PRIMARY KEY (job_id, attempt)
);

ALTER TABLE models ADD COLUMN names_generation INTEGER NOT NULL DEFAULT 0;
