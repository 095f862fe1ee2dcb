-- Jobs over MPI ranks: see migrations/sqlite/0012 for the column's meaning.
ALTER TABLE jobs ADD COLUMN ranks BIGINT NOT NULL DEFAULT 1;
