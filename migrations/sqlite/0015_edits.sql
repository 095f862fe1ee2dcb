-- Models made from other models (issue 59's edits; issue 60's updates will follow the
-- same path). A fit job that starts from a stored model names it in source_model_id
-- (as evaluation jobs do, so the model cannot be deleted while the job may read it)
-- and keeps in `start` how it starts: the checked edit plan and the seed of the
-- parent's split. The model it makes records its parent and that derivation, so a
-- model's lineage is read from the models table alone.
ALTER TABLE jobs ADD COLUMN start TEXT;
ALTER TABLE models ADD COLUMN parent_model_id TEXT;
ALTER TABLE models ADD COLUMN derivation TEXT;
CREATE INDEX models_by_parent ON models (parent_model_id);
