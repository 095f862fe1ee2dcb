-- Blobs are stored out of line without compression (STORAGE EXTERNAL). PostgreSQL's
-- default (EXTENDED) runs pglz over every value above 2 kB before storing it: postcard
-- encodings of floats and counts barely compress, and pglz over a 144 MB model cost
-- seconds per write (bench/README.md, *Past one machine*). Uncompressed TOAST also
-- lets a substring be read without decompressing the whole value. SQLite stores blobs
-- as they are.

ALTER TABLE corpora ALTER COLUMN data SET STORAGE EXTERNAL;
ALTER TABLE graphs ALTER COLUMN data SET STORAGE EXTERNAL;
ALTER TABLE models ALTER COLUMN data SET STORAGE EXTERNAL;
ALTER TABLE models ALTER COLUMN lexicon SET STORAGE EXTERNAL;
ALTER TABLE checkpoints ALTER COLUMN data SET STORAGE EXTERNAL;
ALTER TABLE checkpoint_parts ALTER COLUMN data SET STORAGE EXTERNAL;
ALTER TABLE job_samples ALTER COLUMN data SET STORAGE EXTERNAL;
ALTER TABLE job_inputs ALTER COLUMN data SET STORAGE EXTERNAL;
