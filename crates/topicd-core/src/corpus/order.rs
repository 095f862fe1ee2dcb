//! Token order of text uploads (stored as a trailer of the corpus blob, [`super::blob`]).
//!
//! Why it exists: the models read bags of words, but sliding-window coherence (gensim's
//! `c_v`, `c_npmi`, `c_uci`) needs each document's tokens in text order. Text uploads
//! keep that order here as a CSR of term ids: a document's kept tokens (after stop words
//! and vocabulary pruning, which remove their tokens from the sequence) in the order
//! they appeared. Bag-of-words uploads (`counts`) have no order, nor has a corpus that
//! mixes them with text.
//!

use serde::{Deserialize, Serialize};

/// Each document's token sequence (term ids in text order), row `d` of the corpus.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenOrder {
    /// Row offsets into `tokens`; `num_documents + 1` entries starting at 0.
    pub indptr: Vec<u64>,
    /// Term ids, document after document.
    pub tokens: Vec<u32>,
}

impl TokenOrder {
    pub fn new() -> Self {
        TokenOrder { indptr: vec![0], tokens: Vec::new() }
    }

    /// Appends one document's sequence.
    pub fn push(&mut self, doc: &[u32]) {
        self.tokens.extend_from_slice(doc);
        self.indptr.push(self.tokens.len() as u64);
    }

    pub fn num_documents(&self) -> usize {
        self.indptr.len().saturating_sub(1)
    }

    /// Document `d`'s tokens in order.
    pub fn doc(&self, d: usize) -> &[u32] {
        &self.tokens[self.indptr[d] as usize..self.indptr[d + 1] as usize]
    }

    /// The longest document, in tokens.
    pub fn max_len(&self) -> usize {
        self.indptr.windows(2).map(|w| (w[1] - w[0]) as usize).max().unwrap_or(0)
    }
}
