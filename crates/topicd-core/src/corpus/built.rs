//! The built corpus: the numbered form every model reads (counts, labels, covariates,
//! splits) with its statistics, and the error a corpus that cannot be built reports.

use super::{covariates, DocTermMatrix, LabelTree, Lexicon, TokenOrder};
use serde::{Deserialize, Serialize};

/// A processed corpus: what is stored and what models fit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Corpus {
    /// Vocabulary and the preprocessing that produced it.
    pub lexicon: Lexicon,
    /// Documents × terms counts (rows = kept documents, in upload order).
    pub counts: DocTermMatrix,
    /// Each kept document's id (as uploaded, or its 0-based line number as a string).
    pub doc_ids: Vec<String>,
    /// The label tree (empty when no document has labels and no tree was given).
    pub labels: LabelTree,
    /// Each kept document's label ids (sorted, deduplicated), indexes into `labels`.
    pub doc_labels: Vec<Vec<u32>>,
    /// Numeric metadata, one row per kept document (absent names filled with 0).
    pub features: Option<FeatureMatrix>,
    /// Each kept document's `split` tag if the upload gave one ("train", "test", ...).
    pub splits: Option<Vec<Option<String>>>,
    /// Counts reported back to the uploader.
    pub stats: CorpusStats,
    /// Each document's tokens in text order, for text uploads (see [`order`]). Not part
    /// of the postcard encoding of this struct: stored as a versioned trailer by
    /// [`Corpus::encode`].
    #[serde(skip)]
    pub token_order: Option<TokenOrder>,
    /// Each kept document's `meta` as compact JSON text, when any document of the upload
    /// had one (see [`meta`]). Like `token_order`, stored as a trailer, not in the
    /// postcard encoding of this struct.
    #[serde(skip)]
    pub doc_meta: Option<Vec<Option<String>>>,
    /// Each kept document's excerpt of its uploaded text (see [`super::excerpt`]), for
    /// text uploads; `None` for a document given as counts. Stored as a trailer.
    #[serde(skip)]
    pub doc_excerpts: Option<Vec<Option<String>>>,
    /// Each kept document's covariates (and features), when any document had one (see
    /// [`covariates`]). Stored as a trailer, before the token order so that a fit reads
    /// it without the order.
    #[serde(skip)]
    pub covariates: Option<covariates::CovariateTable>,
}

/// Dense document × feature matrix for metadata (DCNT uses it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FeatureMatrix {
    /// Feature names, sorted.
    pub names: Vec<String>,
    /// Row-major values, `num_documents × names.len()`.
    pub values: Vec<f64>,
}

/// Summary numbers of a processed corpus.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CorpusStats {
    pub num_documents: usize,
    pub num_terms: usize,
    pub num_tokens: u64,
    pub num_labels: usize,
    /// Levels of labels below the implicit root (0 without labels, 1 for a flat set).
    pub tree_depth: usize,
    /// Documents uploaded but dropped because nothing was left after preprocessing.
    pub num_dropped_empty: usize,
    /// Ids of the dropped documents (at most the first 100).
    pub dropped_ids: Vec<String>,
    /// Documents skipped because their id was already used (`duplicate_ids =
    /// keep_first`), and their ids (at most the first 100).
    #[serde(default)]
    pub num_duplicates_skipped: usize,
    #[serde(default)]
    pub duplicate_ids: Vec<String>,
    /// Distinct token types seen before vocabulary pruning.
    pub num_types_before_pruning: usize,
    /// Each covariate's summary (kind, missing count, range or levels), for the checks
    /// a fit's params need before it is queued. Not part of this struct's encodings:
    /// filled from the covariate table when a corpus is built or decoded, and from the
    /// corpus summary's `covariates` at submit.
    #[serde(skip)]
    pub covariates: Vec<covariates::CovariateSummary>,
    /// What an upload made like another corpus with `unknown=drop` left out
    /// ([`super::like`]); `None` otherwise. Reported in the upload's summary, not part
    /// of this struct's encodings.
    #[serde(skip)]
    pub unknown_dropped: Option<Dropped>,
}

/// What an upload made like another corpus with `unknown=drop` left out
/// ([`super::like`]): each label with the documents that carried it, and each
/// covariate's levels with theirs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    pub labels: std::collections::BTreeMap<String, usize>,
    pub levels: std::collections::BTreeMap<String, std::collections::BTreeMap<String, usize>>,
}

impl Corpus {
    pub fn num_documents(&self) -> usize {
        self.doc_ids.len()
    }
    pub fn num_terms(&self) -> usize {
        self.lexicon.len()
    }
}
