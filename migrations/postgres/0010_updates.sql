-- Models that hold more than one corpus: see migrations/sqlite/0016 for the columns'
-- meaning.
ALTER TABLE models ADD COLUMN corpus_ids TEXT;
ALTER TABLE models ADD COLUMN num_documents BIGINT;
UPDATE models SET corpus_ids = '["' || corpus_id || '"]',
    num_documents = (SELECT num_documents FROM corpora WHERE corpora.id = models.corpus_id)
  WHERE corpus_id IS NOT NULL;
