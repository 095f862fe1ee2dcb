-- Names people give topics (`PATCH /v1/models/{id}/topics/{topic}`), kept beside the
-- model rather than in its blob, so a rename never rewrites or re-decodes the model and
-- every replica reads the current name. Deleted with the model.

CREATE TABLE topic_names (
    model_id   TEXT NOT NULL REFERENCES models (id) ON DELETE CASCADE,
    topic      INTEGER NOT NULL CHECK (topic >= 0),
    name       TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (model_id, topic)
);
