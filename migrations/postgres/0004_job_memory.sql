-- Fits admitted by memory: see migrations/sqlite/0010 for the columns' meaning.
ALTER TABLE jobs ADD COLUMN memory_bytes BIGINT;
ALTER TABLE jobs ADD COLUMN waiting TEXT;
