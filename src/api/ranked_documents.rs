//! The per-model data representative-document answers read, kept in the model cache
//! beside the decoded model.
//!
//! Why it exists: the model cache holds it and `topic_documents` builds and reads it;
//! as its own module neither has to import the other.

use crate::summaries::representative::DocumentTopics;
use serde_json::Value;

/// A model's documents as representative-document answers read them, computed once
/// per loaded model and kept beside it: the proportions, and for each of their rows the
/// document's id, first words, text excerpt and `meta` (so a request after the first
/// reads no corpus).
pub struct RankedDocuments {
    pub(super) topics: DocumentTopics,
    pub(super) ids: Vec<String>,
    pub(super) first_words: Vec<Option<String>>,
    /// The excerpt of each document's uploaded text (text uploads stored with excerpts).
    pub(super) texts: Vec<Option<String>>,
    pub(super) meta: Vec<Option<Value>>,
    /// Heap bytes of `meta`, estimated once from the stored texts (a parsed JSON value
    /// holds about four times its text: map nodes, keys and values).
    pub(super) meta_bytes: usize,
}

impl RankedDocuments {
    /// Bytes the proportions, ids, first words, excerpts and meta hold on the heap.
    pub fn memory_bytes(&self) -> usize {
        use crate::heap_size::{nested, string, strings, vec};
        let proportions = &self.topics.proportions;
        vec(&proportions.documents)
            + vec(&proportions.rows)
            + strings(&self.ids)
            + nested(&self.first_words, |w| w.as_deref().map_or(0, string))
            + nested(&self.texts, |w| w.as_deref().map_or(0, string))
            + vec(&self.meta)
            + self.meta_bytes
    }
}
