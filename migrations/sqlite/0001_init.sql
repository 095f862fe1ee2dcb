-- topicd's schema. Blobs are postcard encodings owned by the corpus and model layers;
-- everything a list endpoint shows is a plain column so listing never decodes a blob.

CREATE TABLE corpora (
    id                TEXT PRIMARY KEY,
    name              TEXT NOT NULL,
    created_at        TEXT NOT NULL,
    num_documents     INTEGER NOT NULL,
    num_terms         INTEGER NOT NULL,
    num_tokens        INTEGER NOT NULL,
    num_labels        INTEGER NOT NULL,
    tree_depth        INTEGER NOT NULL,
    num_dropped_empty INTEGER NOT NULL,
    summary           TEXT NOT NULL,   -- JSON: stats and preprocessing options
    data              BLOB NOT NULL    -- the processed corpus
);

CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    kind             TEXT NOT NULL DEFAULT 'fit',
    corpus_id        TEXT,
    model            TEXT NOT NULL,
    params           TEXT NOT NULL,    -- JSON object as submitted
    seed             INTEGER NOT NULL, -- u64 stored as its i64 bit pattern
    status           TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    created_at       TEXT NOT NULL,
    started_at       TEXT,
    finished_at      TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    progress         TEXT,             -- JSON, latest progress
    model_id         TEXT,
    error            TEXT,
    result           TEXT              -- JSON, for evaluation jobs
);
CREATE INDEX jobs_by_status ON jobs (status, created_at);
CREATE INDEX jobs_by_corpus ON jobs (corpus_id, status);

CREATE TABLE job_trace (
    job_id           TEXT NOT NULL,
    iteration        INTEGER NOT NULL,
    elapsed_s        REAL NOT NULL,
    loglik_per_token REAL,
    PRIMARY KEY (job_id, iteration)
);

CREATE TABLE models (
    id          TEXT PRIMARY KEY,
    job_id      TEXT NOT NULL,
    corpus_id   TEXT NOT NULL,
    family      TEXT NOT NULL,
    params      TEXT NOT NULL,
    seed        INTEGER NOT NULL,
    created_at  TEXT NOT NULL,
    num_topics  INTEGER NOT NULL,
    diagnostics TEXT NOT NULL,
    lexicon     BLOB NOT NULL,          -- vocabulary + preprocessing, for prediction
    data        BLOB NOT NULL
);

-- Thinned posterior samples, written while a fit runs (keyed by job).
CREATE TABLE job_samples (
    job_id    TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    data      BLOB NOT NULL,
    PRIMARY KEY (job_id, iteration)
);
