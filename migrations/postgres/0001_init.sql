-- topicd's schema on PostgreSQL: the same tables and columns as the SQLite migrations
-- (migrations/sqlite, 0001 to 0008) reach, in one step. Queries are shared between the
-- dialects, so a column added there is added here in a new migration with the same
-- meaning. Integers are BIGINT (SQLite's INTEGER is 64-bit), reals DOUBLE PRECISION,
-- blobs BYTEA (at most 1 GB a value; checkpoints are split below that, see
-- checkpoint_parts).

CREATE TABLE corpora (
    id                TEXT PRIMARY KEY,
    name              TEXT NOT NULL,
    created_at        TEXT NOT NULL,
    num_documents     BIGINT NOT NULL,
    num_terms         BIGINT NOT NULL,
    num_tokens        BIGINT NOT NULL,
    num_labels        BIGINT NOT NULL,
    tree_depth        BIGINT NOT NULL,
    num_dropped_empty BIGINT NOT NULL,
    summary           TEXT NOT NULL,
    data              BYTEA NOT NULL
);

CREATE TABLE graphs (
    id                      TEXT PRIMARY KEY,
    name                    TEXT NOT NULL,
    created_at              TEXT NOT NULL,
    num_nodes               BIGINT NOT NULL,
    num_edges               BIGINT NOT NULL,
    directed                BIGINT NOT NULL,
    self_loops_dropped      BIGINT NOT NULL,
    duplicate_edges_dropped BIGINT NOT NULL,
    data                    BYTEA NOT NULL
);

CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    kind             TEXT NOT NULL DEFAULT 'fit',
    corpus_id        TEXT,
    model            TEXT NOT NULL,
    params           TEXT NOT NULL,
    seed             BIGINT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    created_at       TEXT NOT NULL,
    started_at       TEXT,
    finished_at      TEXT,
    attempts         BIGINT NOT NULL DEFAULT 0,
    cancel_requested BIGINT NOT NULL DEFAULT 0,
    progress         TEXT,
    model_id         TEXT,
    error            TEXT,
    result           TEXT,
    source_model_id  TEXT,
    graph_id         TEXT,
    token_key        TEXT,
    lease_owner      TEXT,
    lease_expires_ms BIGINT
);
CREATE INDEX jobs_by_status ON jobs (status, created_at);
CREATE INDEX jobs_by_corpus ON jobs (corpus_id, status);
CREATE INDEX jobs_by_source_model ON jobs (source_model_id, status);
CREATE INDEX jobs_by_graph ON jobs (graph_id, status);
CREATE INDEX jobs_by_lease ON jobs (status, lease_expires_ms);

CREATE TABLE job_trace (
    job_id           TEXT NOT NULL,
    iteration        BIGINT NOT NULL,
    elapsed_s        DOUBLE PRECISION NOT NULL,
    loglik_per_token DOUBLE PRECISION,
    PRIMARY KEY (job_id, iteration)
);

CREATE TABLE job_samples (
    job_id    TEXT NOT NULL,
    iteration BIGINT NOT NULL,
    data      BYTEA NOT NULL,
    PRIMARY KEY (job_id, iteration)
);

CREATE TABLE job_inputs (
    job_id TEXT PRIMARY KEY,
    data   BYTEA NOT NULL
);

CREATE TABLE job_leases (
    job_id     TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt    BIGINT NOT NULL,
    owner      TEXT NOT NULL,
    claimed_ms BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL,
    ended_ms   BIGINT,
    outcome    TEXT,
    PRIMARY KEY (job_id, attempt)
);

CREATE TABLE models (
    id               TEXT PRIMARY KEY,
    job_id           TEXT NOT NULL,
    corpus_id        TEXT,
    graph_id         TEXT,
    family           TEXT NOT NULL,
    params           TEXT NOT NULL,
    seed             BIGINT NOT NULL,
    created_at       TEXT NOT NULL,
    num_topics       BIGINT NOT NULL,
    diagnostics      TEXT NOT NULL,
    lexicon          BYTEA,
    data             BYTEA NOT NULL,
    names_generation BIGINT NOT NULL DEFAULT 0,
    CHECK ((corpus_id IS NULL) <> (graph_id IS NULL))
);

CREATE TABLE checkpoints (
    job_id     TEXT PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    attempt    BIGINT NOT NULL,
    iteration  BIGINT NOT NULL,
    checksum   BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    data       BYTEA NOT NULL,
    parts      BIGINT NOT NULL DEFAULT 1 CHECK (parts >= 1)
);

CREATE TABLE checkpoint_parts (
    job_id TEXT NOT NULL REFERENCES checkpoints (job_id) ON DELETE CASCADE,
    part   BIGINT NOT NULL CHECK (part >= 1),
    data   BYTEA NOT NULL,
    PRIMARY KEY (job_id, part)
);

CREATE TABLE topic_names (
    model_id   TEXT NOT NULL REFERENCES models (id) ON DELETE CASCADE,
    topic      BIGINT NOT NULL CHECK (topic >= 0),
    name       TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (model_id, topic)
);

CREATE TABLE api_tokens (
    key         TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('read', 'write', 'admin')),
    secret_hash BYTEA NOT NULL CHECK (length(secret_hash) = 32),
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);
CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;
