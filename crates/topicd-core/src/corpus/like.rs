//! New documents preprocessed like an existing corpus (`POST /v1/corpora?like=`).
//!
//! Why it exists: a model updated with new documents must read them in its own word,
//! label and covariate ids. A corpus built *like* another takes that corpus'
//! preprocessing options and label tree, and a lexicon that starts with the other
//! corpus' words at their ids:
//! - every old word keeps its id, whether or not the new documents use it;
//! - a new word enters the lexicon (after the old ones, most frequent first) when the
//!   new documents, preprocessed alone with the same options, would keep it
//!   (`min_df`, `max_df`, `top_n` and `top_fraction` are applied to them as to an
//!   upload of their own);
//! - a label the tree lacks, a covariate the other corpus does not carry, one of
//!   another kind, or a categorical level it never had is refused, naming the document
//!   and the label, covariate or level;
//! - unless the upload asks for them to be dropped ([`Unknown::Drop`]): then a label the
//!   tree lacks is left out of its documents and a level the corpus never had becomes
//!   a missing value, and the upload reports what it dropped ([`Dropped`]). For a
//!   family that reads neither labels nor that covariate (LDA, or DCNT without it in its
//!   design) the documents are then as good as any; the update of a model whose design
//!   reads the covariate refuses documents missing it.
//!
//! [`super::append`] then joins such a corpus to the one it was made like.

pub use super::built::Dropped;
use super::covariates::{CovariateKind, CovariateSummary, CovariateValues, MISSING_LEVEL};
use super::{Corpus, CorpusError, LabelTree, PreprocessOptions};
use std::collections::BTreeMap;

/// What a corpus made like another does with a label or categorical level the other
/// lacks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Unknown {
    /// A 422 naming the document and the label or level (the default).
    #[default]
    Refuse,
    /// Left out: the label from its documents, the level as a missing value.
    Drop,
}

/// What a corpus built like another keeps of it.
#[derive(Debug, Clone)]
pub struct LikeBase {
    /// The preprocessing in force (with the label identity the corpus was built with).
    pub options: PreprocessOptions,
    /// The old lexicon's words, by term id.
    pub words: Vec<String>,
    pub labels: LabelTree,
    pub covariates: Vec<CovariateSummary>,
    /// Labels and levels the base lacks: refused, or dropped.
    pub unknown: Unknown,
}

impl LikeBase {
    /// The base `corpus` gives, read with `options` (its lexicon's options with the
    /// label identity its summary keeps).
    pub fn of(corpus: &Corpus, options: PreprocessOptions) -> Self {
        LikeBase {
            options,
            words: corpus.lexicon.words.clone(),
            labels: corpus.labels.clone(),
            covariates: corpus.stats.covariates.clone(),
            unknown: Unknown::Refuse,
        }
    }

    /// This base, doing `unknown` with labels and levels it lacks.
    pub fn with_unknown(self, unknown: Unknown) -> Self {
        LikeBase { unknown, ..self }
    }

    /// Make a corpus built like this base conform to it (with [`Unknown::Drop`]; with
    /// [`Unknown::Refuse`] nothing changes), then refuse what still does not (see
    /// [`LikeBase::check`]). What was dropped lands in the corpus' stats.
    pub fn conform(&self, corpus: &mut Corpus, upload_index: impl Fn(usize) -> usize) -> Result<(), CorpusError> {
        if self.unknown == Unknown::Drop {
            let mut dropped = Dropped { labels: self.drop_labels(corpus), levels: BTreeMap::new() };
            dropped.levels = self.drop_levels(corpus);
            corpus.stats.unknown_dropped = Some(dropped);
        }
        self.check(corpus, upload_index)
    }

    /// Every label the base's tree lacks left out of its documents, the tree cut back to
    /// the base's (whose ids the builder kept: it started from that tree).
    fn drop_labels(&self, corpus: &mut Corpus) -> BTreeMap<String, usize> {
        let known = self.labels.len() as u32;
        let mut dropped = BTreeMap::new();
        for labels in &mut corpus.doc_labels {
            for &l in labels.iter().filter(|&&l| l >= known) {
                *dropped.entry(corpus.labels.name(l).to_string()).or_insert(0) += 1;
            }
            labels.retain(|&l| l < known);
        }
        corpus.labels = self.labels.clone();
        corpus.stats.num_labels = corpus.labels.len();
        corpus.stats.tree_depth = corpus.labels.depth();
        dropped
    }

    /// Every categorical level the base lacks (for a covariate the base has as
    /// categories) made a missing value, the column's levels cut back to those kept.
    fn drop_levels(&self, corpus: &mut Corpus) -> BTreeMap<String, BTreeMap<String, usize>> {
        let mut dropped = BTreeMap::new();
        let Some(table) = &mut corpus.covariates else { return dropped };
        for column in &mut table.columns {
            let Some(base) = self.covariates.iter().find(|s| s.name == column.name && s.kind == CovariateKind::Categorical) else { continue };
            let CovariateValues::Categorical { levels, codes } = &mut column.values else { continue };
            let kept: Vec<bool> = levels.iter().map(|level| base.levels.iter().any(|l| &l.level == level)).collect();
            let mut new_code = vec![MISSING_LEVEL; levels.len()];
            let mut next = 0;
            for (code, &keep) in kept.iter().enumerate() {
                if keep {
                    new_code[code] = next;
                    next += 1;
                }
            }
            let mut counts: BTreeMap<String, usize> = BTreeMap::new();
            for c in codes.iter_mut().filter(|c| **c != MISSING_LEVEL) {
                if !kept[*c as usize] {
                    *counts.entry(levels[*c as usize].clone()).or_insert(0) += 1;
                }
                *c = new_code[*c as usize];
            }
            let mut keep = kept.iter();
            levels.retain(|_| *keep.next().expect("one flag per level"));
            if !counts.is_empty() {
                dropped.insert(column.name.clone(), counts);
            }
        }
        corpus.stats.covariates = table.summaries();
        dropped
    }

    /// Refuse a corpus built like this base that brings a label, covariate or level
    /// the base lacks. `upload_index(d)` is kept document d's index in the upload (the
    /// errors' `documents[i]`).
    pub fn check(&self, corpus: &Corpus, upload_index: impl Fn(usize) -> usize) -> Result<(), CorpusError> {
        self.check_labels(corpus, &upload_index)?;
        self.check_covariates(corpus, &upload_index)
    }

    fn check_labels(&self, corpus: &Corpus, upload_index: &impl Fn(usize) -> usize) -> Result<(), CorpusError> {
        let known = self.labels.len() as u32;
        for (d, labels) in corpus.doc_labels.iter().enumerate() {
            if let Some(&new) = labels.iter().find(|&&l| l >= known) {
                let name = corpus.labels.name(new);
                let mut e = CorpusError::field(
                    format!("documents[{}].labels", upload_index(d)),
                    format!("label '{name}' is not in the label tree of the corpus these documents are preprocessed like; a model's labels cannot grow"),
                );
                e.label = Some(name.to_string());
                return Err(e);
            }
        }
        Ok(())
    }

    fn check_covariates(&self, corpus: &Corpus, upload_index: &impl Fn(usize) -> usize) -> Result<(), CorpusError> {
        let Some(table) = &corpus.covariates else { return Ok(()) };
        for column in &table.columns {
            let first_given = (0..table.num_documents()).find(|&d| !column.is_missing(d)).unwrap_or(0);
            let field = |d: usize| format!("documents[{}].covariates.{}", upload_index(d), column.name);
            let Some(base) = self.covariates.iter().find(|s| s.name == column.name) else {
                return Err(CorpusError::field(
                    field(first_given),
                    format!("the corpus these documents are preprocessed like has no covariate {:?}", column.name),
                ));
            };
            if base.kind != column.kind() {
                return Err(CorpusError::field(
                    field(first_given),
                    format!("{:?} is {} there and {} here", column.name, kind_name(base.kind), kind_name(column.kind())),
                ));
            }
            if let CovariateValues::Categorical { levels, codes } = &column.values {
                let unknown = |code: u32| code != MISSING_LEVEL && !base.levels.iter().any(|l| l.level == levels[code as usize]);
                if let Some(d) = codes.iter().position(|&c| unknown(c)) {
                    let level = &levels[codes[d] as usize];
                    return Err(CorpusError::field(
                        field(d),
                        format!("level {level:?} of {:?} is not one the corpus these documents are preprocessed like has", column.name),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn kind_name(kind: CovariateKind) -> &'static str {
    match kind {
        CovariateKind::Continuous => "numbers",
        CovariateKind::Date => "dates",
        CovariateKind::Categorical => "category names",
    }
}

/// The term ids a corpus built like a base of `base_terms` words keeps: every old word
/// at its id, then the new words among `batch_kept` (the terms the new documents alone
/// would keep, most frequent first), in that order.
pub fn kept_terms(base_terms: usize, batch_kept: Vec<u32>) -> Vec<u32> {
    let mut kept: Vec<u32> = (0..base_terms as u32).collect();
    kept.extend(batch_kept.into_iter().filter(|&t| t as usize >= base_terms));
    kept
}

#[cfg(test)]
#[path = "like_tests.rs"]
mod tests;
