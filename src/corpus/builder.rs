//! Streaming construction of a [`Corpus`] from uploaded documents.
//!
//! Why it exists: uploads can be large NDJSON streams, so documents are validated and
//! tokenized one at a time, their tokens interned into a provisional vocabulary and
//! kept only as sparse rows (memory ∝ distinct types + non-zeros, never raw text).
//! Vocabulary pruning (min_df, max_df, top_n, top_fraction) needs corpus-wide counts,
//! so it happens once in [`CorpusBuilder::finish`], which also renumbers terms by
//! frequency and drops documents left empty.
//!
//! Every error names the offending field (`documents[3].counts.foo`), and carries
//! `line` (the 1-based NDJSON line when streaming, else the 0-based document index).

use std::collections::{BTreeMap, HashMap};

use super::input::{parse_count, RawDocument, TreeEntry};
use super::labels::LabelTreeBuilder;
use super::lexicon::Lexicon;
use super::preprocess::PreprocessOptions;
use super::sparse::DocTermMatrix;
use super::tokenize::TextPipeline;
use super::{Corpus, CorpusError, CorpusStats, FeatureMatrix};

/// Marks a cached piece that preprocessing drops (stop word, too short, …).
const DROPPED: u32 = u32::MAX;

/// How many dropped document ids are reported in [`CorpusStats::dropped_ids`].
const MAX_DROPPED_IDS: usize = 100;

/// Accumulates documents, then builds the [`Corpus`] with [`Self::finish`].
#[derive(Debug)]
pub struct CorpusBuilder {
    options: PreprocessOptions,
    pipeline: TextPipeline,
    labels: LabelTreeBuilder,
    /// Provisional vocabulary: term → provisional id (order of first appearance).
    vocab: HashMap<String, u32>,
    words: Vec<String>,
    /// Raw text piece → provisional id or [`DROPPED`], so repeated words skip
    /// lowercasing, stop-word lookup and stemming.
    piece_cache: HashMap<String, u32>,
    /// Rows over provisional ids, one per accepted document.
    rows: DocTermMatrix,
    doc_ids: Vec<String>,
    /// Document id → index of the document that uses it.
    id_index: HashMap<String, usize>,
    doc_labels: Vec<Vec<u32>>,
    feature_index: HashMap<String, u32>,
    feature_names: Vec<String>,
    /// Per document `(feature id, value)`; empty when the document had none.
    features: Vec<Vec<(u32, f64)>>,
    splits: Vec<Option<String>>,
    any_split: bool,
    /// Scratch per-document counter over provisional ids (all zero between documents).
    counter: Vec<u32>,
    touched: Vec<u32>,
    row: Vec<(u32, u32)>,
}

fn intern(vocab: &mut HashMap<String, u32>, words: &mut Vec<String>, term: &str) -> u32 {
    if let Some(&id) = vocab.get(term) {
        return id;
    }
    let id = words.len() as u32;
    words.push(term.to_owned());
    vocab.insert(term.to_owned(), id);
    id
}

impl CorpusBuilder {
    /// Validates `options` and the explicit label `tree` (empty = none) and starts an
    /// empty corpus.
    pub fn new(options: PreprocessOptions, tree: &[TreeEntry]) -> Result<Self, CorpusError> {
        options.validate()?;
        let labels = LabelTreeBuilder::new(tree, options.label_separator.as_deref())?;
        Ok(CorpusBuilder {
            pipeline: TextPipeline::new(&options),
            options,
            labels,
            vocab: HashMap::new(),
            words: Vec::new(),
            piece_cache: HashMap::new(),
            rows: DocTermMatrix::new(),
            doc_ids: Vec::new(),
            id_index: HashMap::new(),
            doc_labels: Vec::new(),
            feature_index: HashMap::new(),
            feature_names: Vec::new(),
            features: Vec::new(),
            splits: Vec::new(),
            any_split: false,
            counter: Vec::new(),
            touched: Vec::new(),
            row: Vec::new(),
        })
    }

    /// Number of documents accepted so far.
    pub fn num_documents(&self) -> usize {
        self.doc_ids.len()
    }

    /// Number of distinct terms seen so far (before pruning).
    pub fn num_types(&self) -> usize {
        self.words.len()
    }

    /// Validates and adds one document. `index` is its 0-based position in the upload
    /// (used in field paths and as the default id), `line` its 1-based NDJSON line
    /// when streaming. On error the builder is unchanged.
    ///
    /// Rules: exactly one of `text`/`counts`; counts finite non-negative integers;
    /// ids unique and non-empty (a missing id becomes `index` as a string); feature
    /// values finite; labels consistent with the label tree.
    pub fn add_document(
        &mut self,
        doc: RawDocument,
        index: usize,
        line: Option<usize>,
    ) -> Result<(), CorpusError> {
        self.add_inner(doc, index).map_err(|e| e.with_line(line.unwrap_or(index)))
    }

    fn add_inner(&mut self, doc: RawDocument, index: usize) -> Result<(), CorpusError> {
        let at = |suffix: &str| format!("documents[{index}]{suffix}");

        // 1. Validate everything that does not change the builder.
        let id = match doc.id {
            Some(id) if id.is_empty() => {
                return Err(CorpusError::field(at(".id"), "document id must not be empty"))
            }
            Some(id) => id,
            None => index.to_string(),
        };
        if let Some(&other) = self.id_index.get(&id) {
            return Err(CorpusError::field(
                at(".id"),
                format!(
                    "duplicate document id '{id}' (also used by documents[{other}]; a missing \
                     id defaults to the document's index)"
                ),
            ));
        }
        let content = match (doc.text, doc.counts) {
            (Some(_), Some(_)) => {
                return Err(CorpusError::field(
                    at(""),
                    "a document must have either text or counts, not both",
                ))
            }
            (None, None) => {
                return Err(CorpusError::field(
                    at(""),
                    "a document needs either text or counts (a bag of words)",
                ))
            }
            (Some(text), None) => Content::Text(text),
            (None, Some(counts)) => {
                let mut checked = Vec::with_capacity(counts.len());
                for (word, value) in counts {
                    match parse_count(value) {
                        Ok(c) => checked.push((word, c)),
                        Err(why) => {
                            return Err(CorpusError::field(
                                at(&format!(".counts.{word}")),
                                format!("{why} (got {value} for '{word}')"),
                            ))
                        }
                    }
                }
                Content::Counts(checked)
            }
        };
        let features = doc.features.unwrap_or_default();
        if let Some((name, value)) = features.iter().find(|(_, v)| !v.is_finite()) {
            return Err(CorpusError::field(
                at(&format!(".features.{name}")),
                format!("feature values must be finite numbers, got {value}"),
            ));
        }

        // 2. Labels (the label builder rolls itself back on error).
        let labels = self.labels.add_document_labels(
            doc.labels.as_deref().unwrap_or(&[]),
            doc.paths.as_deref().unwrap_or(&[]),
            index,
        )?;

        // 3. Nothing can fail from here on: tokenize and record.
        match content {
            Content::Text(text) => self.count_text(&text),
            Content::Counts(counts) => self.count_bow(&counts),
        }
        self.flush_row();
        self.id_index.insert(id.clone(), index);
        self.doc_ids.push(id);
        self.doc_labels.push(labels);
        let features = self.intern_features(features);
        self.features.push(features);
        self.any_split |= doc.split.is_some();
        self.splits.push(doc.split);
        Ok(())
    }

    fn bump(&mut self, id: u32, by: u32) {
        let i = id as usize;
        if i >= self.counter.len() {
            self.counter.resize(self.words.len().max(i + 1), 0);
        }
        if self.counter[i] == 0 {
            self.touched.push(id);
        }
        self.counter[i] = self.counter[i].saturating_add(by);
    }

    fn count_text(&mut self, text: &str) {
        for piece in TextPipeline::pieces(text) {
            let id = match self.piece_cache.get(piece) {
                Some(&id) => id,
                None => {
                    let id = match self.pipeline.normalize_piece(piece) {
                        Some(term) => intern(&mut self.vocab, &mut self.words, &term),
                        None => DROPPED,
                    };
                    self.piece_cache.insert(piece.to_owned(), id);
                    id
                }
            };
            if id != DROPPED {
                self.bump(id, 1);
            }
        }
    }

    fn count_bow(&mut self, counts: &[(String, u32)]) {
        for (word, c) in counts {
            if *c == 0 {
                continue;
            }
            if let Some(term) = self.pipeline.normalize_term(word) {
                let id = intern(&mut self.vocab, &mut self.words, &term);
                self.bump(id, *c);
            }
        }
    }

    /// Moves the scratch counter into a new row and resets it.
    fn flush_row(&mut self) {
        self.touched.sort_unstable();
        self.row.clear();
        for &t in &self.touched {
            self.row.push((t, self.counter[t as usize]));
            self.counter[t as usize] = 0;
        }
        self.touched.clear();
        self.rows.push_sorted_row(&self.row);
    }

    fn intern_features(&mut self, features: BTreeMap<String, f64>) -> Vec<(u32, f64)> {
        features
            .into_iter()
            .map(|(name, v)| {
                let id = match self.feature_index.get(&name) {
                    Some(&id) => id,
                    None => {
                        let id = self.feature_names.len() as u32;
                        self.feature_names.push(name.clone());
                        self.feature_index.insert(name, id);
                        id
                    }
                };
                (id, v)
            })
            .collect()
    }

    /// Prunes the vocabulary, renumbers terms (descending total frequency, then word),
    /// drops documents left empty and assembles the [`Corpus`].
    ///
    /// Errors (field `documents`): no documents at all, or every document empty after
    /// preprocessing and pruning.
    pub fn finish(self) -> Result<Corpus, CorpusError> {
        let num_uploaded = self.doc_ids.len();
        if num_uploaded == 0 {
            return Err(CorpusError::field("documents", "corpus has no documents"));
        }
        let opts = &self.options;
        let num_types = self.words.len();
        let df = self.rows.column_document_frequencies(num_types);
        let tf = self.rows.column_totals(num_types);

        // Document-frequency filters. The epsilon keeps e.g. 0.29 × 100 at 29.
        let max_count = (opts.max_df * num_uploaded as f64 + 1e-9).floor() as u64;
        let mut kept: Vec<u32> = (0..num_types as u32)
            .filter(|&t| {
                let d = df[t as usize] as u64;
                d >= opts.min_df as u64 && d <= max_count
            })
            .collect();
        let after_df = kept.len();

        // Most frequent first, ties by word; this order is also the final numbering.
        let words = &self.words;
        kept.sort_unstable_by(|&a, &b| {
            tf[b as usize]
                .cmp(&tf[a as usize])
                .then_with(|| words[a as usize].cmp(&words[b as usize]))
        });
        let mut limit = after_df;
        if let Some(n) = opts.top_n {
            limit = limit.min(n);
        }
        if let Some(f) = opts.top_fraction {
            // ceil, tolerant of float noise (0.1 × 30 = 3.0000000000000004 → 3).
            let by_fraction = ((f * after_df as f64) - 1e-9).ceil().max(1.0) as usize;
            limit = limit.min(by_fraction);
        }
        kept.truncate(limit);

        let mut new_id = vec![u32::MAX; num_types];
        for (new, &old) in kept.iter().enumerate() {
            new_id[old as usize] = new as u32;
        }

        // Remap rows, dropping documents left empty.
        let mut counts = DocTermMatrix::new();
        let mut kept_docs = Vec::with_capacity(num_uploaded);
        let mut dropped_ids = Vec::new();
        let mut num_dropped = 0usize;
        let mut row = Vec::new();
        for (d, (terms, cs)) in self.rows.rows().enumerate() {
            row.clear();
            row.extend(terms.iter().zip(cs).filter_map(|(&t, &c)| {
                let n = new_id[t as usize];
                (n != u32::MAX).then_some((n, c))
            }));
            if row.is_empty() {
                num_dropped += 1;
                if dropped_ids.len() < MAX_DROPPED_IDS {
                    dropped_ids.push(self.doc_ids[d].clone());
                }
                continue;
            }
            row.sort_unstable_by_key(|&(t, _)| t);
            counts.push_sorted_row(&row);
            kept_docs.push(d);
        }

        if kept_docs.is_empty() {
            let message = if num_types == 0 {
                format!(
                    "all {num_uploaded} documents are empty after preprocessing: no token \
                     survived tokenizing, stop-word removal, preprocess.min_token_length and \
                     preprocess.keep_numbers; check that the documents have text or counts \
                     and consider relaxing those options"
                )
            } else {
                format!(
                    "all {num_uploaded} documents are empty after vocabulary pruning: \
                     {num_types} distinct terms were found, {after_df} passed \
                     preprocess.min_df = {} and preprocess.max_df = {}, {} kept after \
                     top_n/top_fraction; lower min_df or raise max_df (with few documents, \
                     max_df < 1 can exclude every term)",
                    opts.min_df,
                    opts.max_df,
                    kept.len()
                )
            };
            return Err(CorpusError::field("documents", message));
        }

        let final_words: Vec<String> =
            kept.iter().map(|&t| self.words[t as usize].clone()).collect();
        let lexicon = Lexicon::new(final_words, self.options.clone());
        let labels = self.labels.finish();

        let doc_ids: Vec<String> = kept_docs.iter().map(|&d| self.doc_ids[d].clone()).collect();
        let doc_labels: Vec<Vec<u32>> =
            kept_docs.iter().map(|&d| self.doc_labels[d].clone()).collect();

        let features = (!self.feature_names.is_empty()).then(|| {
            // Sorted names; `col[old feature id]` = column in the sorted order.
            let mut order: Vec<u32> = (0..self.feature_names.len() as u32).collect();
            order.sort_unstable_by(|&a, &b| {
                self.feature_names[a as usize].cmp(&self.feature_names[b as usize])
            });
            let mut col = vec![0usize; order.len()];
            for (c, &f) in order.iter().enumerate() {
                col[f as usize] = c;
            }
            let width = order.len();
            let mut values = vec![0.0; kept_docs.len() * width];
            for (r, &d) in kept_docs.iter().enumerate() {
                for &(f, v) in &self.features[d] {
                    values[r * width + col[f as usize]] = v;
                }
            }
            let names = order.iter().map(|&f| self.feature_names[f as usize].clone()).collect();
            FeatureMatrix { names, values }
        });

        let splits =
            self.any_split.then(|| kept_docs.iter().map(|&d| self.splits[d].clone()).collect());

        let stats = CorpusStats {
            num_documents: doc_ids.len(),
            num_terms: lexicon.len(),
            num_tokens: counts.total_tokens(),
            num_labels: labels.len(),
            tree_depth: labels.depth(),
            num_dropped_empty: num_dropped,
            dropped_ids,
            num_types_before_pruning: num_types,
        };

        Ok(Corpus { lexicon, counts, doc_ids, labels, doc_labels, features, splits, stats })
    }
}

/// A document's validated content, before tokenizing.
enum Content {
    Text(String),
    Counts(Vec<(String, u32)>),
}

/// Builds a corpus from in-memory documents (document `i` has index `i`, no line).
pub fn build_corpus(
    options: PreprocessOptions,
    tree: &[TreeEntry],
    docs: impl IntoIterator<Item = RawDocument>,
) -> Result<Corpus, CorpusError> {
    let mut builder = CorpusBuilder::new(options, tree)?;
    for (i, doc) in docs.into_iter().enumerate() {
        builder.add_document(doc, i, None)?;
    }
    builder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::preprocess::StopWords;

    fn text(id: &str, t: &str) -> RawDocument {
        RawDocument { id: Some(id.into()), text: Some(t.into()), ..Default::default() }
    }

    fn bow(id: &str, pairs: &[(&str, f64)]) -> RawDocument {
        RawDocument {
            id: Some(id.into()),
            counts: Some(pairs.iter().map(|(w, c)| (w.to_string(), *c)).collect()),
            ..Default::default()
        }
    }

    fn no_stop() -> PreprocessOptions {
        PreprocessOptions { stopwords: StopWords::None, ..Default::default() }
    }

    fn words(c: &Corpus) -> Vec<&str> {
        c.lexicon.words.iter().map(String::as_str).collect()
    }

    /// df: aa 4, bb 3, cc 2, dd 1, ee 1; tf: aa 4, bb 6, cc 2, dd 5, ee 1.
    fn prune_docs() -> Vec<RawDocument> {
        vec![
            text("0", "aa bb bb cc"),
            text("1", "aa bb bb dd dd dd dd dd"),
            text("2", "aa bb bb cc"),
            text("3", "aa ee"),
        ]
    }

    fn build(opts: PreprocessOptions, docs: Vec<RawDocument>) -> Result<Corpus, CorpusError> {
        build_corpus(opts, &[], docs)
    }

    #[test]
    fn basic_corpus() {
        let c = build(
            PreprocessOptions::default(),
            vec![text("a", "The cat sat on the mat. The cat!"), text("b", "A dog and a cat")],
        )
        .unwrap();
        // tf: cat 3, dog 1, mat 1, sat 1 → frequency then word order.
        assert_eq!(words(&c), vec!["cat", "dog", "mat", "sat"]);
        assert_eq!(c.doc_ids, vec!["a", "b"]);
        assert_eq!(c.counts.row(0), (&[0u32, 2, 3][..], &[2u32, 1, 1][..]));
        assert_eq!(c.counts.row(1), (&[0u32, 1][..], &[1u32, 1][..]));
        assert_eq!(c.stats.num_documents, 2);
        assert_eq!(c.stats.num_terms, 4);
        assert_eq!(c.stats.num_tokens, 6);
        assert_eq!(c.stats.num_types_before_pruning, 4);
        assert_eq!(c.stats.num_labels, 0);
        assert_eq!(c.stats.tree_depth, 0);
        assert!(c.features.is_none() && c.splits.is_none());
        assert_eq!(c.doc_labels, vec![Vec::<u32>::new(), vec![]]);
        assert_eq!(c.num_documents(), 2);
        assert_eq!(c.num_terms(), 4);
        assert!(c.counts.check(Some(c.num_terms())).is_ok());
    }

    #[test]
    fn ordering_by_frequency_then_word() {
        let c = build(no_stop(), prune_docs()).unwrap();
        assert_eq!(words(&c), vec!["bb", "dd", "aa", "cc", "ee"]);
    }

    #[test]
    fn min_df_pruning() {
        let c = build(PreprocessOptions { min_df: 2, ..no_stop() }, prune_docs()).unwrap();
        assert_eq!(words(&c), vec!["bb", "aa", "cc"]);
        assert_eq!(c.stats.num_types_before_pruning, 5);
        let c = build(PreprocessOptions { min_df: 4, ..no_stop() }, prune_docs()).unwrap();
        assert_eq!(words(&c), vec!["aa"]);
    }

    #[test]
    fn max_df_pruning() {
        // max 0.75 × 4 = 3 documents: aa (df 4) goes.
        let c = build(PreprocessOptions { max_df: 0.75, ..no_stop() }, prune_docs()).unwrap();
        assert_eq!(words(&c), vec!["bb", "dd", "cc", "ee"]);
        // max 0.5 × 4 = 2: bb (3) goes too; doc 3 keeps ee.
        let c = build(PreprocessOptions { max_df: 0.5, ..no_stop() }, prune_docs()).unwrap();
        assert_eq!(words(&c), vec!["dd", "cc", "ee"]);
        assert_eq!(c.stats.num_documents, 4);
    }

    #[test]
    fn top_n_and_top_fraction() {
        let c = build(PreprocessOptions { top_n: Some(2), ..no_stop() }, prune_docs()).unwrap();
        assert_eq!(words(&c), vec!["bb", "dd"]);
        // Doc 3 ("aa ee") is left empty and dropped.
        assert_eq!(c.doc_ids, vec!["0", "1", "2"]);
        assert_eq!(c.stats.num_dropped_empty, 1);
        assert_eq!(c.stats.dropped_ids, vec!["3"]);

        // ceil(0.5 × 5) = 3.
        let c = build(PreprocessOptions { top_fraction: Some(0.5), ..no_stop() }, prune_docs())
            .unwrap();
        assert_eq!(words(&c), vec!["bb", "dd", "aa"]);
        // Both: the smaller limit (top_n 4 vs ceil(0.5 × 5) = 3).
        let c = build(
            PreprocessOptions { top_n: Some(4), top_fraction: Some(0.5), ..no_stop() },
            prune_docs(),
        )
        .unwrap();
        assert_eq!(words(&c), vec!["bb", "dd", "aa"]);
        // Applied after the df filters: min_df 2 leaves {aa, bb, cc}; ceil(0.4 × 3) = 2.
        let c = build(
            PreprocessOptions { min_df: 2, top_fraction: Some(0.4), ..no_stop() },
            prune_docs(),
        )
        .unwrap();
        assert_eq!(words(&c), vec!["bb", "aa"]);
        // top_n larger than the vocabulary keeps everything.
        let c = build(PreprocessOptions { top_n: Some(100), ..no_stop() }, prune_docs()).unwrap();
        assert_eq!(c.num_terms(), 5);
    }

    #[test]
    fn top_fraction_float_noise() {
        // 30 distinct terms each once; 0.1 × 30 must keep exactly 3.
        let t: Vec<String> = (0..30).map(|i| format!("w{i:02}x")).collect();
        let c = build(
            PreprocessOptions { top_fraction: Some(0.1), ..no_stop() },
            vec![text("d", &t.join(" "))],
        )
        .unwrap();
        assert_eq!(words(&c), vec!["w00x", "w01x", "w02x"]);
    }

    #[test]
    fn rows_remapped_correctly() {
        let c = build(PreprocessOptions { min_df: 2, ..no_stop() }, prune_docs()).unwrap();
        // words: bb=0, aa=1, cc=2.
        assert_eq!(c.counts.row(0), (&[0u32, 1, 2][..], &[2u32, 1, 1][..]));
        assert_eq!(c.counts.row(1), (&[0u32, 1][..], &[2u32, 1][..]));
        assert_eq!(c.counts.row(3), (&[1u32][..], &[1u32][..]));
        assert_eq!(c.stats.num_tokens, 4 + 3 + 4 + 1);
    }

    #[test]
    fn bag_of_words_documents() {
        let c = build(
            PreprocessOptions { stem: true, ..Default::default() },
            vec![
                bow("x", &[("Running", 2.0), ("runs", 1.0), ("the", 9.0), ("zero", 0.0)]),
                text("y", "connections run"),
            ],
        )
        .unwrap();
        assert_eq!(words(&c), vec!["run", "connect"]);
        assert_eq!(c.counts.row(0), (&[0u32][..], &[3u32][..]));
        assert_eq!(c.counts.row(1), (&[0u32, 1][..], &[1u32, 1][..]));
    }

    #[test]
    fn empty_documents_dropped() {
        let c = build(
            PreprocessOptions::default(),
            vec![text("a", "the and of"), text("b", "real words here"), text("c", "")],
        )
        .unwrap();
        assert_eq!(c.doc_ids, vec!["b"]);
        assert_eq!(c.stats.num_dropped_empty, 2);
        assert_eq!(c.stats.dropped_ids, vec!["a", "c"]);
        assert_eq!(c.counts.num_rows(), 1);
    }

    #[test]
    fn dropped_ids_capped() {
        let mut docs: Vec<RawDocument> = (0..150).map(|i| text(&format!("e{i}"), "the")).collect();
        docs.push(text("keep", "word"));
        let c = build(PreprocessOptions::default(), docs).unwrap();
        assert_eq!(c.stats.num_dropped_empty, 150);
        assert_eq!(c.stats.dropped_ids.len(), 100);
        assert_eq!(c.stats.dropped_ids[99], "e99");
    }

    #[test]
    fn empty_corpus_errors() {
        let e = build(PreprocessOptions::default(), vec![]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents"));
        assert_eq!(e.message, "corpus has no documents");

        let e = build(PreprocessOptions::default(), vec![text("a", "the of"), text("b", "")])
            .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents"));
        assert!(e.message.contains("empty after preprocessing"), "{}", e.message);

        // Terms exist but pruning removes them all.
        let e = build(
            PreprocessOptions { min_df: 2, ..Default::default() },
            vec![text("a", "apple"), text("b", "banana")],
        )
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents"));
        assert!(e.message.contains("min_df"), "{}", e.message);
    }

    #[test]
    fn default_ids_and_duplicates() {
        let mut b = CorpusBuilder::new(PreprocessOptions::default(), &[]).unwrap();
        b.add_document(RawDocument { text: Some("hello".into()), ..Default::default() }, 0, None)
            .unwrap();
        b.add_document(text("x", "world"), 1, None).unwrap();
        let e = b.add_document(text("x", "again"), 2, Some(3)).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents[2].id"));
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("'x'"));
        // A missing id becomes the index, which collides with an explicit "0".
        let e = b.add_document(text("0", "again"), 3, None).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents[3].id"));
        assert_eq!(e.line, Some(3));
        let e = b.add_document(text("", "again"), 4, None).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents[4].id"));
        let c = b.finish().unwrap();
        assert_eq!(c.doc_ids, vec!["0", "x"]);
    }

    #[test]
    fn text_and_counts_exclusive() {
        let mut b = CorpusBuilder::new(PreprocessOptions::default(), &[]).unwrap();
        let e = b.add_document(RawDocument::default(), 5, Some(6)).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents[5]"));
        assert_eq!(e.line, Some(6));
        let mut both = bow("a", &[("x", 1.0)]);
        both.text = Some("x".into());
        let e = b.add_document(both, 0, None).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents[0]"));
        assert!(e.message.contains("not both"));
        assert_eq!(b.num_documents(), 0);
    }

    #[test]
    fn bad_counts() {
        let mut b = CorpusBuilder::new(PreprocessOptions::default(), &[]).unwrap();
        for (v, why) in [(-1.0, "negative"), (1.5, "integer"), (f64::NAN, "finite")] {
            let e = b.add_document(bow("a", &[("fine", 1.0), ("word", v)]), 2, None).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("documents[2].counts.word"));
            assert!(e.message.contains(why), "{}", e.message);
        }
        // Failed documents leave no trace (no vocabulary, no id).
        assert_eq!(b.num_types(), 0);
        b.add_document(bow("a", &[("fine", 1.0)]), 0, None).unwrap();
        assert_eq!(b.num_documents(), 1);
    }

    #[test]
    fn bad_features() {
        let mut b = CorpusBuilder::new(PreprocessOptions::default(), &[]).unwrap();
        let mut d = text("a", "hello");
        d.features = Some([("year".to_string(), f64::INFINITY)].into_iter().collect());
        let e = b.add_document(d, 1, None).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents[1].features.year"));
    }

    #[test]
    fn features_and_splits() {
        let mut d0 = text("a", "alpha");
        d0.features = Some([("z".to_string(), 1.0), ("b".to_string(), 2.0)].into_iter().collect());
        d0.split = Some("train".into());
        let d1 = text("b", "the");
        let mut d2 = text("c", "gamma");
        d2.features = Some([("m".to_string(), 3.0)].into_iter().collect());
        let d3 = text("d", "delta");
        let c = build(PreprocessOptions::default(), vec![d0, d1, d2, d3]).unwrap();
        // d1 dropped as empty.
        assert_eq!(c.doc_ids, vec!["a", "c", "d"]);
        let f = c.features.unwrap();
        assert_eq!(f.names, vec!["b", "m", "z"]);
        assert_eq!(f.values, vec![2.0, 0.0, 1.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(c.splits.unwrap(), vec![Some("train".to_string()), None, None]);
    }

    #[test]
    fn labels_aligned_to_kept_docs() {
        let mut d0 = text("a", "alpha");
        d0.labels = Some(vec!["x/y".into()]);
        let mut d1 = text("b", "the");
        d1.labels = Some(vec!["dropped".into()]);
        let mut d2 = text("c", "beta");
        d2.paths = Some(vec![vec!["x".into()], vec!["x".into(), "z".into()]]);
        let c = build(PreprocessOptions::default(), vec![d0, d1, d2]).unwrap();
        assert_eq!(c.labels.names, vec!["x", "y", "dropped", "z"]);
        assert_eq!(c.doc_labels, vec![vec![1], vec![0, 3]]);
        assert_eq!(c.stats.num_labels, 4);
        assert_eq!(c.stats.tree_depth, 2);
    }

    #[test]
    fn label_errors_carry_line() {
        let tree = [TreeEntry { label: "known".into(), parent: None }];
        let mut b = CorpusBuilder::new(PreprocessOptions::default(), &tree).unwrap();
        let mut d = text("a", "alpha");
        d.labels = Some(vec!["unknown".into()]);
        let e = b.add_document(d, 4, Some(5)).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("documents[4].labels"));
        assert_eq!(e.label.as_deref(), Some("unknown"));
        assert_eq!(e.line, Some(5));
        assert_eq!(b.num_documents(), 0);
        assert_eq!(b.num_types(), 0);
    }

    #[test]
    fn explicit_tree_and_options_validated() {
        let bad_tree = [TreeEntry { label: "a".into(), parent: Some("b".into()) }];
        let e = CorpusBuilder::new(PreprocessOptions::default(), &bad_tree).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("tree[0].parent"));
        let e = CorpusBuilder::new(PreprocessOptions { max_df: 0.0, ..Default::default() }, &[])
            .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("preprocess.max_df"));
        // The explicit tree's labels count even if no document uses them.
        let tree = [
            TreeEntry { label: "r".into(), parent: None },
            TreeEntry { label: "s".into(), parent: Some("r".into()) },
        ];
        let mut d = text("a", "alpha");
        d.labels = Some(vec!["s".into()]);
        let c = build_corpus(PreprocessOptions::default(), &tree, vec![d]).unwrap();
        assert_eq!(c.stats.num_labels, 2);
        assert_eq!(c.stats.tree_depth, 2);
        assert_eq!(c.doc_labels, vec![vec![1]]);
    }

    #[test]
    fn serde_roundtrip_of_corpus() {
        let mut d0 = text("a", "Cats chase mice. Cats sleep.");
        d0.labels = Some(vec!["pets/cats".into()]);
        d0.features = Some([("len".to_string(), 5.0)].into_iter().collect());
        let mut d1 = text("b", "Dogs chase cats");
        d1.labels = Some(vec!["pets/dogs".into()]);
        d1.split = Some("test".into());
        let c =
            build(PreprocessOptions { stem: true, ..Default::default() }, vec![d0, d1]).unwrap();
        let json = serde_json::to_string(&c).unwrap();
        let back: Corpus = serde_json::from_str(&json).unwrap();
        assert_eq!(back.lexicon, c.lexicon);
        assert_eq!(back.counts, c.counts);
        assert_eq!(back.labels, c.labels);
        assert_eq!(back.doc_ids, c.doc_ids);
        assert_eq!(back.doc_labels, c.doc_labels);
        assert_eq!(back.features, c.features);
        assert_eq!(back.splits, c.splits);
        assert_eq!(back.stats, c.stats);
        // Indexes are rebuilt and usable.
        assert_eq!(back.lexicon.id("cat"), Some(0));
        assert_eq!(back.labels.id("dogs"), c.labels.id("dogs"));
        assert!(back.labels.id("dogs").is_some());
        let p = back.lexicon.pipeline();
        let e = back.lexicon.encode_text(&p, "A cat chasing birds");
        assert_eq!(
            e.terms,
            vec![back.lexicon.id("cat").unwrap(), back.lexicon.id("chase").unwrap()]
        );
        assert_eq!(e.oov_tokens, 1);
    }

    #[test]
    fn prediction_encoding_matches_corpus() {
        let docs = vec![
            text("a", "Running dogs and running cats; the dog's ball."),
            bow("b", &[("Dogs", 2.0), ("BALLS", 1.0)]),
        ];
        let opts = PreprocessOptions { stem: true, ..Default::default() };
        let c = build(opts, docs.clone()).unwrap();
        let lex = &c.lexicon;
        let p = lex.pipeline();
        for (d, raw) in docs.iter().enumerate() {
            let e = match (&raw.text, &raw.counts) {
                (Some(t), None) => lex.encode_text(&p, t),
                (None, Some(b)) => lex.encode_counts(&p, b).unwrap(),
                _ => unreachable!(),
            };
            assert_eq!(e.oov_tokens, 0);
            let (terms, counts) = c.counts.row(d);
            assert_eq!((&e.terms[..], &e.counts[..]), (terms, counts), "doc {d}");
        }
    }

    /// A synthetic corpus of ~600k tokens; checks the shape and a loose time bound.
    #[test]
    fn larger_corpus_builds_quickly() {
        let vocab: Vec<String> = (0..5000).map(|i| format!("word{i}x")).collect();
        let mut state = 12345u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as usize
        };
        let docs: Vec<RawDocument> = (0..1000)
            .map(|d| {
                let t: Vec<&str> = (0..600).map(|_| vocab[next() % 5000].as_str()).collect();
                text(&format!("d{d}"), &t.join(" "))
            })
            .collect();
        let start = std::time::Instant::now();
        let c =
            build(PreprocessOptions { stem: true, min_df: 2, ..Default::default() }, docs).unwrap();
        let elapsed = start.elapsed();
        assert_eq!(c.stats.num_tokens, 600_000);
        assert_eq!(c.num_documents(), 1000);
        assert!(c.num_terms() > 4000 && c.num_terms() <= 5000);
        assert!(c.counts.check(Some(c.num_terms())).is_ok());
        assert!(elapsed.as_secs() < 20, "took {elapsed:?}");
    }
}
