-- Checkpoints written in chunks, each chunk its own short transaction, then published
-- by one small update of the `checkpoints` row. Storing a checkpoint of several
-- gigabytes as one transaction held SQLite's write lock (and PostgreSQL's lock on the
-- job's row) for a minute, so the job's own lease could not be renewed meanwhile and
-- ran out (bench/README.md, "Checkpoints that outlast the lease").
--
-- A checkpoint is the chunks of its `generation` (parts 0 to parts - 1, in order);
-- `checkpoints.generation` names the published one. Chunks of an older generation, of
-- a write that never got published, or of an ended job are garbage, purged chunk by
-- chunk (store::checkpoints). Generations grow: attempt · 2^32 + the attempt's count of
-- checkpoints, so a new holder's chunks never sort below a former holder's.
--
-- Existing checkpoints become generation 0: their first part (the row's `data`) is
-- chunk 0 and `checkpoint_parts` rows 1.. keep their numbers.

CREATE TABLE checkpoint_chunks (
    job_id     TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    generation INTEGER NOT NULL,
    part       INTEGER NOT NULL CHECK (part >= 0),
    data       BLOB NOT NULL,
    PRIMARY KEY (job_id, generation, part)
);

ALTER TABLE checkpoints ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;

INSERT INTO checkpoint_chunks (job_id, generation, part, data) SELECT job_id, 0, 0, data FROM checkpoints;
INSERT INTO checkpoint_chunks (job_id, generation, part, data) SELECT job_id, 0, part, data FROM checkpoint_parts;

DROP TABLE checkpoint_parts;
ALTER TABLE checkpoints DROP COLUMN data;
