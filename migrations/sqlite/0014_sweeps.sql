-- Sweeps over the number of topics (issue 58). A sweep is one request ("fit this family
-- on this corpus at K = 5, 10, 20, ...") whose fits are ordinary jobs carrying its id:
-- any replica runs them, they resume after a restart and are cancelled one by one. The
-- sweep's row keeps the request; each child's scores (held-out likelihood, coherence,
-- exclusivity, stability, residual dispersion), computed once after the child succeeds,
-- are kept in sweep_scores so a sweep is read without rescoring.
CREATE TABLE sweeps (
    id          TEXT PRIMARY KEY,
    corpus_id   TEXT NOT NULL,
    model       TEXT NOT NULL,
    request     TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    cancel_requested INTEGER NOT NULL DEFAULT 0
);
ALTER TABLE jobs ADD COLUMN sweep_id TEXT;
CREATE INDEX jobs_by_sweep ON jobs (sweep_id);
CREATE TABLE sweep_scores (
    job_id    TEXT PRIMARY KEY,
    sweep_id  TEXT NOT NULL,
    scores    TEXT NOT NULL
);
