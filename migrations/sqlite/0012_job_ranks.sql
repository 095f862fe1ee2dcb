-- Jobs over MPI ranks (issue 43). `ranks` is the world a fit job runs over (its options'
-- `ranks`; 1 for one process, and for every job queued before this migration): a worker
-- claims a job only when it starts worlds that large (`--mpi-launch`), so a replica
-- without a launcher never takes one.
ALTER TABLE jobs ADD COLUMN ranks INTEGER NOT NULL DEFAULT 1;
