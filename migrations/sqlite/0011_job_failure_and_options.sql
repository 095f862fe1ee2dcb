-- Typed fit failures and the runner's options (issue 41).
--
-- `failure` classes a failed job for its caller: 'invalid-input' (the user's to fix),
-- 'store-fault' (retrying may succeed), 'interrupted' (its worker stopped too often),
-- 'numerical' (the sampler reached a non-finite value) or 'internal' (a bug or a
-- corrupt blob). NULL unless `status` is 'failed'; jobs failed before this migration
-- keep NULL.
--
-- `options` is the runner's own options for a fit job as JSON (`threads`,
-- `checkpoint_every_s`), taken out of the params at submit so that they are never a
-- model parameter. NULL for evaluation jobs and for jobs queued before this migration,
-- whose params still carry them (the runner reads them there).
ALTER TABLE jobs ADD COLUMN failure TEXT;
ALTER TABLE jobs ADD COLUMN options TEXT;
