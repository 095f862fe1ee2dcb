//! What a finished fit hands back to the runner to store, and the corpus decoding every
//! fit path shares.
//!
//! Why it exists: the runner's fit paths (from scratch, over ranks, an edit's refit in
//! `model_start`) all end in the same blobs; keeping them here lets those paths live in
//! their own modules without importing the runner.

use crate::corpus::Corpus;
use crate::models::causes::{Internal, Stored};
use crate::models::registry::Fitted;
use crate::models::FitError;
use crate::store::FamilyName;

/// What a finished fit hands back to be stored.
pub(super) struct FittedBlobs {
    /// The family fitted (the model row's `family`).
    pub(super) family: FamilyName,
    pub(super) num_topics: usize,
    pub(super) diagnostics: serde_json::Value,
    /// Topic models keep their corpus' lexicon; relational models have none.
    pub(super) lexicon: Option<Vec<u8>>,
    pub(super) data: Vec<u8>,
    /// Names the topics start with (seeded topics', or an edit's kept names).
    pub(super) topic_names: Vec<(usize, String)>,
    /// The model it was made from and how (an edit's or update's record), if any.
    pub(super) parent: Option<(String, serde_json::Value)>,
    /// The corpora the model's documents came from, when more than its job's corpus
    /// (an update's); empty: the job's corpus alone.
    pub(super) corpus_ids: Vec<String>,
}

impl FittedBlobs {
    /// A fitted model's blobs, encoded here.
    pub(super) fn of(family: FamilyName, model: &Fitted, lexicon: Option<Vec<u8>>) -> Self {
        Self::encoded(family, model.num_components(), model.diagnostics(), lexicon, model.encode())
    }

    /// Blobs encoded elsewhere (rank 0 of a world), with no names or parent.
    pub(super) fn encoded(family: FamilyName, num_topics: usize, diagnostics: serde_json::Value, lexicon: Option<Vec<u8>>, data: Vec<u8>) -> Self {
        FittedBlobs { family, num_topics, diagnostics, lexicon, data, topic_names: Vec::new(), parent: None, corpus_ids: Vec::new() }
    }
}

/// Decode a stored corpus blob (on a blocking thread); fits read no token order.
pub(super) fn decode_corpus(blob: &[u8]) -> Result<Corpus, FitError> {
    Corpus::decode_without_order(blob).map_err(|e| FitError::Internal(Internal::Corrupt { what: Stored::Corpus, detail: e.to_string() }))
}
