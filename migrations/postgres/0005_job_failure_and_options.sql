-- Typed fit failures and the runner's options: see migrations/sqlite/0011 for the
-- columns' meaning.
ALTER TABLE jobs ADD COLUMN failure TEXT;
ALTER TABLE jobs ADD COLUMN options TEXT;
