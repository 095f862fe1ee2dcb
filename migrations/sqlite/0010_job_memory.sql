-- Fits admitted by memory (issue 40). `memory_bytes` is the family's estimate of the
-- fit's peak resident memory, computed at submission from the corpus summary and the
-- effective params; a replica claims a job only while its running fits' estimates and
-- this one's fit its budget (--fit-memory-mb). NULL (evaluation jobs, jobs queued
-- before this migration) is claimed as needing nothing. `waiting` says why a queued
-- job was passed over at the last claim (cleared when it is claimed).
ALTER TABLE jobs ADD COLUMN memory_bytes INTEGER;
ALTER TABLE jobs ADD COLUMN waiting TEXT;
