-- Graphs (relational models): uploads are validated and numbered by the graph layer and
-- stored as a postcard blob beside their summary columns, like corpora. A fit job on a
-- graph names it in `graph_id` (and has no corpus); a model fitted on a graph has a
-- `graph_id`, no corpus and no lexicon, so the models table is rebuilt with those
-- columns nullable.

CREATE TABLE graphs (
    id                      TEXT PRIMARY KEY,
    name                    TEXT NOT NULL,
    created_at              TEXT NOT NULL,
    num_nodes               INTEGER NOT NULL,
    num_edges               INTEGER NOT NULL,
    directed                INTEGER NOT NULL,
    self_loops_dropped      INTEGER NOT NULL,
    duplicate_edges_dropped INTEGER NOT NULL,
    data                    BLOB NOT NULL    -- the validated graph
);

ALTER TABLE jobs ADD COLUMN graph_id TEXT;
CREATE INDEX jobs_by_graph ON jobs (graph_id, status);

CREATE TABLE models_v3 (
    id          TEXT PRIMARY KEY,
    job_id      TEXT NOT NULL,
    corpus_id   TEXT,                   -- topic models
    graph_id    TEXT,                   -- relational models
    family      TEXT NOT NULL,
    params      TEXT NOT NULL,
    seed        INTEGER NOT NULL,
    created_at  TEXT NOT NULL,
    num_topics  INTEGER NOT NULL,       -- topics, or communities
    diagnostics TEXT NOT NULL,
    lexicon     BLOB,                   -- vocabulary + preprocessing (topic models)
    data        BLOB NOT NULL,
    CHECK ((corpus_id IS NULL) <> (graph_id IS NULL))
);
INSERT INTO models_v3 (id, job_id, corpus_id, graph_id, family, params, seed, created_at, num_topics, diagnostics, lexicon, data)
    SELECT id, job_id, corpus_id, NULL, family, params, seed, created_at, num_topics, diagnostics, lexicon, data FROM models;
DROP TABLE models;
ALTER TABLE models_v3 RENAME TO models;
