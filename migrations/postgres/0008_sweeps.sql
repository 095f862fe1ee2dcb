-- Sweeps over the number of topics: see migrations/sqlite/0014 for the tables' meaning.
CREATE TABLE sweeps (
    id          TEXT PRIMARY KEY,
    corpus_id   TEXT NOT NULL,
    model       TEXT NOT NULL,
    request     TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    cancel_requested BIGINT NOT NULL DEFAULT 0
);
ALTER TABLE jobs ADD COLUMN sweep_id TEXT;
CREATE INDEX jobs_by_sweep ON jobs (sweep_id);
CREATE TABLE sweep_scores (
    job_id    TEXT PRIMARY KEY,
    sweep_id  TEXT NOT NULL,
    scores    TEXT NOT NULL
);
