-- Checkpoints written in chunks, each chunk its own short transaction, then published
-- by one small update of the `checkpoints` row: see migrations/sqlite/0009 for why and
-- for the generations. Existing checkpoints become generation 0.

CREATE TABLE checkpoint_chunks (
    job_id     TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    generation BIGINT NOT NULL,
    part       BIGINT NOT NULL CHECK (part >= 0),
    data       BYTEA NOT NULL,
    PRIMARY KEY (job_id, generation, part)
);
ALTER TABLE checkpoint_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

ALTER TABLE checkpoints ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;

INSERT INTO checkpoint_chunks (job_id, generation, part, data) SELECT job_id, 0, 0, data FROM checkpoints;
INSERT INTO checkpoint_chunks (job_id, generation, part, data) SELECT job_id, 0, part, data FROM checkpoint_parts;

DROP TABLE checkpoint_parts;
ALTER TABLE checkpoints DROP COLUMN data;
