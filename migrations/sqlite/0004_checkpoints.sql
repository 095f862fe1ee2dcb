-- Checkpoints of running fits: one row per job, replaced in one statement each time the
-- fit hands over a new one, deleted when the job succeeds, fails or is cancelled (and
-- with the job). `data` is the model layer's encoding of everything the fit needs to
-- continue; `checksum` is its CRC-64/XZ (stored as the i64 bit pattern), checked before
-- a resume. `attempt` is the job's `attempts` when the checkpoint was written: a job
-- interrupted after writing one in its current attempt made progress, which start-up
-- recovery does not count against `--max-attempts`.

CREATE TABLE checkpoints (
    job_id     TEXT PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    attempt    INTEGER NOT NULL,
    iteration  INTEGER NOT NULL,
    checksum   INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    data       BLOB NOT NULL
);
