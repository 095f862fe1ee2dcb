//! One corpus followed by another: the documents an updated model holds.
//!
//! Why it exists: `POST /v1/models/{id}/update` fits the parent's documents and new
//! ones as one corpus, whose first documents are the parent's in their order (so the
//! parent's per-document streams, split and posterior still name them). [`append`]
//! joins the two: the old corpus' words, labels and levels keep their ids, the new
//! corpus' words it lacks are added after them, and every per-document column (ids,
//! labels, covariates, features, split tags, meta, excerpts, token order) follows its
//! rows. Words, labels and levels are matched by name, so the new corpus may be made
//! like any corpus with the same preprocessing ([`super::like`]).

use super::covariates::{CovariateColumn, CovariateTable, CovariateValues, MISSING_LEVEL};
use super::order::TokenOrder;
use super::{Corpus, CorpusError, CorpusStats, DocTermMatrix, FeatureMatrix, Lexicon};
use std::collections::HashSet;

/// Most dropped or duplicate ids a joined corpus' summary lists (as an upload's).
const MAX_LISTED_IDS: usize = 100;

/// `old`'s documents then `new`'s, as one corpus. Errors (field `corpus_id`): the two
/// were preprocessed differently, a document id both use, a label or categorical level
/// of `new` that `old` lacks, or a covariate that is of another kind in each.
pub fn append(old: &Corpus, new: &Corpus) -> Result<Corpus, CorpusError> {
    if old.lexicon.options != new.lexicon.options {
        return Err(refusal("the new documents were preprocessed with other options than the model's corpus: upload them with ?like=<the model's corpus id>"));
    }
    let seen: HashSet<&str> = old.doc_ids.iter().map(String::as_str).collect();
    if let Some(dup) = new.doc_ids.iter().find(|id| seen.contains(id.as_str())) {
        return Err(refusal(format!("document id '{dup}' is used by the model's corpus too: an update adds documents, it does not replace them")));
    }
    let (lexicon, term) = joined_lexicon(&old.lexicon, &new.lexicon);
    let doc_labels = joined_labels(old, new)?;
    let counts = joined_counts(&old.counts, &new.counts, &term);
    let covariates = joined_covariates(old, new)?;
    let mut doc_ids = old.doc_ids.clone();
    doc_ids.extend(new.doc_ids.iter().cloned());
    let stats = CorpusStats {
        num_documents: doc_ids.len(),
        num_terms: lexicon.len(),
        num_tokens: counts.total_tokens(),
        num_labels: old.labels.len(),
        tree_depth: old.labels.depth(),
        num_dropped_empty: old.stats.num_dropped_empty + new.stats.num_dropped_empty,
        dropped_ids: listed(&old.stats.dropped_ids, &new.stats.dropped_ids),
        num_duplicates_skipped: old.stats.num_duplicates_skipped + new.stats.num_duplicates_skipped,
        duplicate_ids: listed(&old.stats.duplicate_ids, &new.stats.duplicate_ids),
        num_types_before_pruning: old.stats.num_types_before_pruning.max(lexicon.len()),
        covariates: covariates.as_ref().map(CovariateTable::summaries).unwrap_or_default(),
        unknown_dropped: None,
    };
    Ok(Corpus {
        lexicon,
        counts,
        doc_ids,
        labels: old.labels.clone(),
        doc_labels,
        features: joined_features(old, new),
        splits: joined_optional(&old.splits, &new.splits, old.num_documents(), new.num_documents()),
        stats,
        token_order: joined_order(old.token_order.as_ref(), new.token_order.as_ref(), &term),
        doc_meta: joined_optional(&old.doc_meta, &new.doc_meta, old.num_documents(), new.num_documents()),
        doc_excerpts: joined_optional(&old.doc_excerpts, &new.doc_excerpts, old.num_documents(), new.num_documents()),
        covariates,
    })
}

fn refusal(message: impl Into<String>) -> CorpusError {
    CorpusError::field("corpus_id", message)
}

fn listed(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().chain(b).take(MAX_LISTED_IDS).cloned().collect()
}

/// The old words at their ids, then the new corpus' other words in its order; and each
/// new term id's id in the joined lexicon.
fn joined_lexicon(old: &Lexicon, new: &Lexicon) -> (Lexicon, Vec<u32>) {
    let mut words = old.words.clone();
    let term = new
        .words
        .iter()
        .map(|w| {
            old.id(w).unwrap_or_else(|| {
                words.push(w.clone());
                (words.len() - 1) as u32
            })
        })
        .collect();
    (Lexicon::new(words, old.options.clone()), term)
}

fn joined_counts(old: &DocTermMatrix, new: &DocTermMatrix, term: &[u32]) -> DocTermMatrix {
    let mut out = old.clone();
    let mut row = Vec::new();
    for (terms, counts) in new.rows() {
        row.clear();
        row.extend(terms.iter().map(|&t| term[t as usize]).zip(counts.iter().copied()));
        row.sort_unstable_by_key(|&(t, _)| t);
        out.push_sorted_row(&row);
    }
    out
}

/// Each document's label ids in the old tree; a label of the new corpus the old tree
/// lacks is refused, naming it.
fn joined_labels(old: &Corpus, new: &Corpus) -> Result<Vec<Vec<u32>>, CorpusError> {
    let mut out = old.doc_labels.clone();
    for labels in &new.doc_labels {
        let mut ids = Vec::with_capacity(labels.len());
        for &l in labels {
            let name = new.labels.name(l);
            let id = old.labels.id(name).ok_or_else(|| {
                let mut e = refusal(format!("label '{name}' of the new documents is not in the model's label tree"));
                e.label = Some(name.to_string());
                e
            })?;
            ids.push(id);
        }
        ids.sort_unstable();
        ids.dedup();
        out.push(ids);
    }
    Ok(out)
}

/// A per-document column that either corpus may lack: `None` for the documents of the
/// one without it, `None` overall when neither has it.
fn joined_optional<T: Clone>(old: &Option<Vec<Option<T>>>, new: &Option<Vec<Option<T>>>, old_docs: usize, new_docs: usize) -> Option<Vec<Option<T>>> {
    if old.is_none() && new.is_none() {
        return None;
    }
    let mut out = old.clone().unwrap_or_else(|| vec![None; old_docs]);
    out.extend(new.clone().unwrap_or_else(|| vec![None; new_docs]));
    Some(out)
}

/// Both corpora's token sequences (new term ids mapped), when both kept them.
fn joined_order(old: Option<&TokenOrder>, new: Option<&TokenOrder>, term: &[u32]) -> Option<TokenOrder> {
    let (old, new) = (old?, new?);
    let mut out = old.clone();
    let mut doc = Vec::new();
    for d in 0..new.num_documents() {
        doc.clear();
        doc.extend(new.doc(d).iter().map(|&t| term[t as usize]));
        out.push(&doc);
    }
    Some(out)
}

/// The union of both corpora's features, by name (a feature a document lacks is 0, as
/// in an upload).
fn joined_features(old: &Corpus, new: &Corpus) -> Option<FeatureMatrix> {
    if old.features.is_none() && new.features.is_none() {
        return None;
    }
    let mut names: Vec<String> = old.features.iter().chain(&new.features).flat_map(|f| f.names.iter().cloned()).collect();
    names.sort_unstable();
    names.dedup();
    let width = names.len();
    let mut values = Vec::with_capacity((old.num_documents() + new.num_documents()) * width);
    for (corpus, features) in [(old, &old.features), (new, &new.features)] {
        for d in 0..corpus.num_documents() {
            values.extend(
                names
                    .iter()
                    .map(|name| features.as_ref().and_then(|f| f.names.iter().position(|n| n == name).map(|c| f.values[d * f.names.len() + c])).unwrap_or(0.0)),
            );
        }
    }
    Some(FeatureMatrix { names, values })
}

/// Both corpora's covariates, by name: a column one corpus lacks is missing for its
/// documents; a categorical column keeps the old levels' codes and refuses new levels.
fn joined_covariates(old: &Corpus, new: &Corpus) -> Result<Option<CovariateTable>, CorpusError> {
    if old.covariates.is_none() && new.covariates.is_none() {
        return Ok(None);
    }
    let empty = CovariateTable::default();
    let (a, b) = (old.covariates.as_ref().unwrap_or(&empty), new.covariates.as_ref().unwrap_or(&empty));
    let mut names: Vec<&str> = a.columns.iter().chain(&b.columns).map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let mut columns = Vec::with_capacity(names.len());
    for name in names {
        columns.push(joined_column(name, a.column(name), old.num_documents(), b.column(name), new.num_documents())?);
    }
    Ok(Some(CovariateTable { columns }))
}

fn joined_column(
    name: &str,
    old: Option<&CovariateColumn>,
    old_docs: usize,
    new: Option<&CovariateColumn>,
    new_docs: usize,
) -> Result<CovariateColumn, CorpusError> {
    let template = old.or(new).expect("a column of one of the corpora");
    let values = match &template.values {
        CovariateValues::Numeric { date, .. } => {
            let mut values = numbers(name, old, old_docs, *date)?;
            values.extend(numbers(name, new, new_docs, *date)?);
            CovariateValues::Numeric { date: *date, values }
        }
        CovariateValues::Categorical { levels, .. } => {
            let levels = levels.clone();
            let mut codes = codes_in(name, old, old_docs, &levels)?;
            codes.extend(codes_in(name, new, new_docs, &levels)?);
            CovariateValues::Categorical { levels, codes }
        }
    };
    Ok(CovariateColumn { name: name.to_string(), values })
}

fn kind_mismatch(name: &str) -> CorpusError {
    refusal(format!("covariate {name:?} is of another kind in the new documents than in the model's corpus"))
}

/// A numeric column's values (NaN for a corpus without it).
fn numbers(name: &str, column: Option<&CovariateColumn>, docs: usize, date: bool) -> Result<Vec<f64>, CorpusError> {
    match column.map(|c| &c.values) {
        None => Ok(vec![f64::NAN; docs]),
        Some(CovariateValues::Numeric { date: d, values }) if *d == date => Ok(values.clone()),
        Some(_) => Err(kind_mismatch(name)),
    }
}

/// A categorical column's codes in `levels` (missing for a corpus without it).
fn codes_in(name: &str, column: Option<&CovariateColumn>, docs: usize, levels: &[String]) -> Result<Vec<u32>, CorpusError> {
    match column.map(|c| &c.values) {
        None => Ok(vec![MISSING_LEVEL; docs]),
        Some(CovariateValues::Categorical { levels: own, codes }) => codes
            .iter()
            .map(|&c| {
                if c == MISSING_LEVEL {
                    return Ok(MISSING_LEVEL);
                }
                let level = &own[c as usize];
                levels
                    .iter()
                    .position(|l| l == level)
                    .map(|i| i as u32)
                    .ok_or_else(|| refusal(format!("level {level:?} of covariate {name:?} is not one the model's corpus has")))
            })
            .collect(),
        Some(_) => Err(kind_mismatch(name)),
    }
}

#[cfg(test)]
#[path = "append_tests.rs"]
mod tests;
