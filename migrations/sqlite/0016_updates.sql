-- Models that hold more than one corpus (issue 60's updates). An update fits the
-- parent's documents and new ones as one stored corpus (models.corpus_id); corpus_ids
-- lists the corpora the model's documents came from, in order (a JSON array), and
-- num_documents how many documents it holds. Models stored before hold one corpus.
ALTER TABLE models ADD COLUMN corpus_ids TEXT;
ALTER TABLE models ADD COLUMN num_documents INTEGER;
UPDATE models SET corpus_ids = '["' || corpus_id || '"]',
    num_documents = (SELECT num_documents FROM corpora WHERE corpora.id = models.corpus_id)
  WHERE corpus_id IS NOT NULL;
