-- Models made from other models: see migrations/sqlite/0015 for the columns' meaning.
ALTER TABLE jobs ADD COLUMN start TEXT;
ALTER TABLE models ADD COLUMN parent_model_id TEXT;
ALTER TABLE models ADD COLUMN derivation TEXT;
CREATE INDEX models_by_parent ON models (parent_model_id);
