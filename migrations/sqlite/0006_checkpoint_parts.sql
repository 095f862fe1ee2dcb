-- A checkpoint larger than one SQLite value: SQLite refuses a blob over
-- SQLITE_MAX_LENGTH (10^9 bytes by default), and HPC's state on a 30 000-document
-- corpus is already more than half of that. `checkpoints.data` holds the first part,
-- this table the rest in order; `parts` counts all of them. The checksum covers the
-- parts concatenated. Parts go with their checkpoint.

ALTER TABLE checkpoints ADD COLUMN parts INTEGER NOT NULL DEFAULT 1 CHECK (parts >= 1);

CREATE TABLE checkpoint_parts (
    job_id TEXT NOT NULL REFERENCES checkpoints (job_id) ON DELETE CASCADE,
    part   INTEGER NOT NULL CHECK (part >= 1),
    data   BLOB NOT NULL,
    PRIMARY KEY (job_id, part)
);
