//! Streaming construction of a [`Corpus`] from uploaded documents.
//!
//! Why it exists: uploads can be large NDJSON streams, so documents are validated and
//! tokenized one at a time, their tokens interned into a provisional vocabulary and
//! kept only as sparse rows (memory ∝ distinct types + non-zeros, never raw text).
//! Vocabulary pruning (min_df, max_df, top_n, top_fraction) needs corpus-wide counts,
//! so it happens once in [`CorpusBuilder::finish`], which also renumbers terms by
//! frequency and drops documents left empty.
//!
//! Text uploads also keep each document's token sequence (provisional ids, 4 bytes a
//! token) for sliding-window coherence (see [`super::order`]); the first bag-of-words
//! document drops them, since such a corpus has no order as a whole.
//!
//! Every error names the offending field (`documents[3].counts.foo`), and carries
//! `line` (the 1-based NDJSON line when streaming, else the 0-based document index).

use std::collections::{BTreeMap, HashMap};

use super::input::{parse_count, RawDocument, TreeEntry};
use super::labels::LabelTreeBuilder;
use super::lexicon::Lexicon;
use super::like::LikeBase;
use super::order::TokenOrder;
use super::preprocess::{DuplicateIds, PreprocessOptions};
use super::sparse::DocTermMatrix;
use super::token_limits::{counted_tokens, TokenLimits};
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
    /// Token sequences over provisional ids while every document so far is text.
    order: Option<TokenOrder>,
    doc_ids: Vec<String>,
    /// Document id → index of the document that uses it.
    id_index: HashMap<String, usize>,
    /// Documents skipped as repeated ids (`duplicate_ids = keep_first`): count and ids.
    num_duplicates: usize,
    duplicate_ids: Vec<String>,
    doc_labels: Vec<Vec<u32>>,
    covariates: super::covariates::CovariateCollector,
    feature_index: HashMap<String, u32>,
    feature_names: Vec<String>,
    /// Per document `(feature id, value)`; empty when the document had none.
    features: Vec<Vec<(u32, f64)>>,
    splits: Vec<Option<String>>,
    any_split: bool,
    /// Per document its `meta` as compact JSON (see [`super::meta`]).
    meta: Vec<Option<String>>,
    any_meta: bool,
    /// Per document the excerpt of its text (see [`super::excerpt`]); `None` for counts.
    excerpts: Vec<Option<String>>,
    /// Scratch per-document counter over provisional ids (all zero between documents).
    counter: Vec<u32>,
    touched: Vec<u32>,
    row: Vec<(u32, u32)>,
    /// Caps on a document's and the upload's tokens ([`TokenLimits`]).
    token_limits: TokenLimits,
    /// Tokens of the documents accepted so far (before pruning).
    tokens_added: u64,
    /// The corpus these documents are preprocessed like ([`super::like`]): its words
    /// are the first provisional ids and keep their ids.
    like: Option<LikeBase>,
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
        let labels = LabelTreeBuilder::with_identity(tree, options.label_separator.as_deref(), options.label_identity)?;
        Ok(CorpusBuilder {
            pipeline: TextPipeline::new(&options),
            options,
            labels,
            vocab: HashMap::new(),
            words: Vec::new(),
            piece_cache: HashMap::new(),
            rows: DocTermMatrix::new(),
            order: Some(TokenOrder::new()),
            doc_ids: Vec::new(),
            id_index: HashMap::new(),
            num_duplicates: 0,
            duplicate_ids: Vec::new(),
            doc_labels: Vec::new(),
            feature_index: HashMap::new(),
            feature_names: Vec::new(),
            covariates: Default::default(),
            features: Vec::new(),
            splits: Vec::new(),
            any_split: false,
            meta: Vec::new(),
            any_meta: false,
            excerpts: Vec::new(),
            counter: Vec::new(),
            touched: Vec::new(),
            row: Vec::new(),
            token_limits: TokenLimits::NONE,
            tokens_added: 0,
            like: None,
        })
    }

    /// Starts an empty corpus preprocessed like `base` ([`super::like`]): its options,
    /// its label tree, and its words first, at their ids.
    pub fn like(base: LikeBase) -> Result<Self, CorpusError> {
        let mut b = Self::new(base.options.clone(), &[])?;
        b.labels = LabelTreeBuilder::from_tree(&base.labels, base.options.label_separator.as_deref(), base.options.label_identity);
        if base.unknown == super::like::Unknown::Drop {
            // New labels take ids after the tree's, and are dropped when the corpus is
            // finished ([`LikeBase::conform`]).
            b.labels = b.labels.accepting_new_labels();
        }
        for word in &base.words {
            intern(&mut b.vocab, &mut b.words, word);
        }
        b.like = Some(base);
        Ok(b)
    }

    /// Refuse documents and uploads over these caps (the server's flags).
    pub fn with_token_limits(mut self, limits: TokenLimits) -> Self {
        self.token_limits = limits;
        self
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
    /// values finite; labels consistent with the label tree; `meta` at most
    /// [`super::meta::MAX_META_BYTES`] as JSON.
    pub fn add_document(&mut self, doc: RawDocument, index: usize, line: Option<usize>) -> Result<(), CorpusError> {
        self.add_inner(doc, index).map_err(|e| e.with_line(line.unwrap_or(index)))
    }

    fn add_inner(&mut self, doc: RawDocument, index: usize) -> Result<(), CorpusError> {
        let at = |suffix: &str| format!("documents[{index}]{suffix}");

        // 1. Validate everything that does not change the builder.
        let id = match doc.id {
            Some(id) if id.is_empty() => return Err(CorpusError::field(at(".id"), "document id must not be empty")),
            Some(id) => id,
            None => index.to_string(),
        };
        if let Some(&other) = self.id_index.get(&id) {
            if self.options.duplicate_ids == DuplicateIds::KeepFirst {
                self.num_duplicates += 1;
                if self.duplicate_ids.len() < MAX_DROPPED_IDS {
                    self.duplicate_ids.push(id);
                }
                return Ok(());
            }
            return Err(CorpusError::field(
                at(".id"),
                format!(
                    "duplicate document id '{id}' (also used by documents[{other}]; a missing \
                     id defaults to the document's index)"
                ),
            ));
        }
        let content = document_content(doc.text, doc.counts, &at)?;
        let tokens_added = self.tokens_after(&content, &at)?;
        let features = doc.features.unwrap_or_default();
        if let Some((name, value)) = features.iter().find(|(_, v)| !v.is_finite()) {
            return Err(CorpusError::field(at(&format!(".features.{name}")), format!("feature values must be finite numbers, got {value}")));
        }
        let meta = doc.meta.as_ref().map(|m| super::meta::serialise(m, index)).transpose()?;
        let covariates = self.covariates.check(doc.covariates.as_ref().unwrap_or(&BTreeMap::new()), &features, &at(""))?;

        // 2. Labels (the label builder rolls itself back on error).
        let labels = self.labels.add_document_labels(doc.labels.as_deref().unwrap_or(&[]), doc.paths.as_deref().unwrap_or(&[]), index)?;

        // 3. Nothing can fail from here on: tokenize and record.
        self.tokens_added = tokens_added;
        match content {
            Content::Text(text) => {
                self.excerpts.push(Some(super::excerpt::excerpt(&text)));
                self.count_text(&text)
            }
            Content::Counts(counts) => {
                self.order = None;
                self.excerpts.push(None);
                self.count_bow(&counts)
            }
        }
        self.flush_row();
        self.id_index.insert(id.clone(), index);
        self.doc_ids.push(id);
        self.doc_labels.push(labels);
        self.covariates.push(index, covariates);
        let features = self.intern_features(features);
        self.features.push(features);
        self.any_split |= doc.split.is_some();
        self.splits.push(doc.split);
        self.any_meta |= meta.is_some();
        self.meta.push(meta);
        Ok(())
    }

    /// The builder's token count once `content` is added, refused naming the document's
    /// `.counts` or `.text` when the document or the whole input would pass its cap.
    fn tokens_after(&self, content: &Content, at: &dyn Fn(&str) -> String) -> Result<u64, CorpusError> {
        let tokens = match content {
            Content::Counts(counts) => counted_tokens(counts.iter().map(|(_, c)| c)),
            // A token takes at least one byte, so the length bounds the tokens; the pieces
            // are counted only where that bound is over the cap.
            Content::Text(text) if text.len() as u64 > self.token_limits.per_document => TextPipeline::pieces(text).count() as u64,
            Content::Text(text) => text.len() as u64,
        };
        let field = at(if matches!(content, Content::Counts(_)) { ".counts" } else { ".text" });
        self.token_limits.check_document(&field, tokens).map_err(|why| CorpusError::field(field.clone(), why))?;
        let tokens_added = self.tokens_added.saturating_add(tokens);
        self.token_limits.check_input(tokens_added).map_err(|why| CorpusError::field(field, why))?;
        Ok(tokens_added)
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
        let mut order = self.order.take();
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
                if let Some(o) = order.as_mut() {
                    o.tokens.push(id);
                }
            }
        }
        if let Some(o) = order.as_mut() {
            o.indptr.push(o.tokens.len() as u64);
        }
        self.order = order;
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
        let num_types = self.words.len();
        let passing_df = self.terms_within_df_bounds(num_uploaded);
        let after_df = passing_df.len();
        let mut kept = self.most_frequent_terms(passing_df);
        if let Some(base) = &self.like {
            kept = super::like::kept_terms(base.words.len(), kept);
        }
        let new_id = renumbering(&kept, num_types);
        let rows = self.remap_rows(&new_id);
        if rows.kept_docs.is_empty() {
            return Err(self.all_documents_empty(num_uploaded, after_df, kept.len()));
        }

        let lexicon = Lexicon::new(kept.iter().map(|&t| self.words[t as usize].clone()).collect(), self.options.clone());
        let doc_ids = kept_values(&self.doc_ids, &rows.kept_docs);
        let doc_labels = kept_values(&self.doc_labels, &rows.kept_docs);
        let features = self.feature_matrix(&rows.kept_docs);
        let token_order = self.remap_token_order(&rows.kept_docs, &new_id);
        let splits = self.any_split.then(|| kept_values(&self.splits, &rows.kept_docs));
        let doc_meta = self.any_meta.then(|| kept_values(&self.meta, &rows.kept_docs));
        let doc_excerpts = self.excerpts.iter().any(Option::is_some).then(|| kept_values(&self.excerpts, &rows.kept_docs));
        let labels = self.labels.finish();
        let covariates = self.covariates.finish(&rows.kept_docs)?;
        let upload_index: Vec<usize> = rows.kept_docs.iter().map(|&d| self.id_index[&self.doc_ids[d]]).collect();

        let stats = CorpusStats {
            num_documents: doc_ids.len(),
            num_terms: lexicon.len(),
            num_tokens: rows.counts.total_tokens(),
            num_labels: labels.len(),
            tree_depth: labels.depth(),
            num_dropped_empty: rows.num_dropped,
            dropped_ids: rows.dropped_ids,
            num_duplicates_skipped: self.num_duplicates,
            duplicate_ids: self.duplicate_ids,
            num_types_before_pruning: num_types,
            covariates: covariates.as_ref().map(|t| t.summaries()).unwrap_or_default(),
            unknown_dropped: None,
        };
        let mut corpus =
            Corpus { lexicon, counts: rows.counts, doc_ids, labels, doc_labels, features, splits, stats, token_order, doc_meta, doc_excerpts, covariates };
        if let Some(base) = &self.like {
            base.conform(&mut corpus, |d| upload_index[d])?;
        }
        Ok(corpus)
    }

    /// Provisional ids of the terms whose document frequency is within
    /// `[min_df, max_df × documents]`, in id order: the first pruning step, on counts
    /// only the whole upload gives.
    fn terms_within_df_bounds(&self, num_uploaded: usize) -> Vec<u32> {
        let opts = &self.options;
        let df = self.rows.column_document_frequencies(self.words.len());
        // The epsilon keeps e.g. 0.29 × 100 at 29.
        let max_count = (opts.max_df * num_uploaded as f64 + 1e-9).floor() as u64;
        (0..self.words.len() as u32)
            .filter(|&t| {
                let d = df[t as usize] as u64;
                d >= opts.min_df as u64 && d <= max_count
            })
            .collect()
    }

    /// Sorts `terms` most frequent first (ties by word), which is also the final
    /// numbering, and keeps the head that `top_n` and `top_fraction` allow.
    fn most_frequent_terms(&self, mut terms: Vec<u32>) -> Vec<u32> {
        let opts = &self.options;
        let tf = self.rows.column_totals(self.words.len());
        let words = &self.words;
        terms.sort_unstable_by(|&a, &b| tf[b as usize].cmp(&tf[a as usize]).then_with(|| words[a as usize].cmp(&words[b as usize])));
        let after_df = terms.len();
        let mut limit = after_df;
        if let Some(n) = opts.top_n {
            limit = limit.min(n);
        }
        if let Some(f) = opts.top_fraction {
            // ceil, tolerant of float noise (0.1 × 30 = 3.0000000000000004 → 3).
            let by_fraction = ((f * after_df as f64) - 1e-9).ceil().max(1.0) as usize;
            limit = limit.min(by_fraction);
        }
        terms.truncate(limit);
        terms
    }

    /// Rewrites every row over the final term ids, dropping pruned terms and then the
    /// documents left with none (counted, and the first [`MAX_DROPPED_IDS`] ids kept).
    fn remap_rows(&self, new_id: &[u32]) -> KeptRows {
        let mut kept = KeptRows { counts: DocTermMatrix::new(), kept_docs: Vec::with_capacity(self.doc_ids.len()), num_dropped: 0, dropped_ids: Vec::new() };
        let mut row = Vec::new();
        for (d, (terms, cs)) in self.rows.rows().enumerate() {
            row.clear();
            row.extend(terms.iter().zip(cs).filter_map(|(&t, &c)| {
                let n = new_id[t as usize];
                (n != u32::MAX).then_some((n, c))
            }));
            if row.is_empty() {
                kept.num_dropped += 1;
                if kept.dropped_ids.len() < MAX_DROPPED_IDS {
                    kept.dropped_ids.push(self.doc_ids[d].clone());
                }
                continue;
            }
            row.sort_unstable_by_key(|&(t, _)| t);
            kept.counts.push_sorted_row(&row);
            kept.kept_docs.push(d);
        }
        kept
    }

    /// The error for an upload whose every document is empty, telling apart nothing
    /// surviving preprocessing (no term at all) from pruning removing every term, and
    /// naming the options to relax.
    fn all_documents_empty(&self, num_uploaded: usize, after_df: usize, num_kept_terms: usize) -> CorpusError {
        let num_types = self.words.len();
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
                self.options.min_df, self.options.max_df, num_kept_terms
            )
        };
        CorpusError::field("documents", message)
    }

    /// The kept documents' features as a dense matrix with columns in name order
    /// (absent features 0), or `None` when no document had any.
    fn feature_matrix(&self, kept_docs: &[usize]) -> Option<FeatureMatrix> {
        (!self.feature_names.is_empty()).then(|| {
            // Sorted names; `col[old feature id]` = column in the sorted order.
            let mut order: Vec<u32> = (0..self.feature_names.len() as u32).collect();
            order.sort_unstable_by(|&a, &b| self.feature_names[a as usize].cmp(&self.feature_names[b as usize]));
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
        })
    }

    /// The kept documents' token sequences over the final term ids (pruned terms left
    /// out), or `None` when the upload had a bag-of-words document.
    fn remap_token_order(&self, kept_docs: &[usize], new_id: &[u32]) -> Option<TokenOrder> {
        self.order.as_ref().map(|o| {
            let mut out = TokenOrder::new();
            let mut doc = Vec::new();
            for &d in kept_docs {
                doc.clear();
                doc.extend(o.doc(d).iter().map(|&t| new_id[t as usize]).filter(|&n| n != u32::MAX));
                out.push(&doc);
            }
            out
        })
    }
}

/// The rows over final term ids of the documents that kept a term, from
/// [`CorpusBuilder::remap_rows`].
struct KeptRows {
    counts: DocTermMatrix,
    /// Index (among the accepted documents) of each kept row's document.
    kept_docs: Vec<usize>,
    /// Documents dropped as empty, and the first [`MAX_DROPPED_IDS`] of their ids.
    num_dropped: usize,
    dropped_ids: Vec<String>,
}

/// Provisional id → final id (`u32::MAX` for a pruned term), from the kept terms in
/// their final order.
fn renumbering(kept: &[u32], num_types: usize) -> Vec<u32> {
    let mut new_id = vec![u32::MAX; num_types];
    for (new, &old) in kept.iter().enumerate() {
        new_id[old as usize] = new as u32;
    }
    new_id
}

/// The entries of a per-document column that belong to the kept documents, in order.
fn kept_values<T: Clone>(values: &[T], kept_docs: &[usize]) -> Vec<T> {
    kept_docs.iter().map(|&d| values[d].clone()).collect()
}

/// A document's validated content, before tokenizing.
enum Content {
    Text(String),
    Counts(Vec<(String, u32)>),
}

/// A document's words: exactly one of its text and its counts, every count checked
/// (an error names the document, or the count, by `at`).
fn document_content(text: Option<String>, counts: Option<BTreeMap<String, f64>>, at: &dyn Fn(&str) -> String) -> Result<Content, CorpusError> {
    match (text, counts) {
        (Some(_), Some(_)) => Err(CorpusError::field(at(""), "a document must have either text or counts, not both")),
        (None, None) => Err(CorpusError::field(at(""), "a document needs either text or counts (a bag of words)")),
        (Some(text), None) => Ok(Content::Text(text)),
        (None, Some(counts)) => {
            let mut checked = Vec::with_capacity(counts.len());
            for (word, value) in counts {
                match parse_count(value) {
                    Ok(c) => checked.push((word, c)),
                    Err(why) => return Err(CorpusError::field(at(&format!(".counts.{word}")), format!("{why} (got {value} for '{word}')"))),
                }
            }
            Ok(Content::Counts(checked))
        }
    }
}

/// Builds a corpus from in-memory documents (document `i` has index `i`, no line).
pub fn build_corpus(options: PreprocessOptions, tree: &[TreeEntry], docs: impl IntoIterator<Item = RawDocument>) -> Result<Corpus, CorpusError> {
    let mut builder = CorpusBuilder::new(options, tree)?;
    for (i, doc) in docs.into_iter().enumerate() {
        builder.add_document(doc, i, None)?;
    }
    builder.finish()
}

#[cfg(test)]
#[path = "builder_tests.rs"]
mod tests;
