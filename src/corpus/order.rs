//! Token order of text uploads, and the versioned trailer that stores it.
//!
//! Why it exists: the models read bags of words, but sliding-window coherence (gensim's
//! `c_v`, `c_npmi`, `c_uci`) needs each document's tokens in text order. Text uploads
//! keep that order here as a CSR of term ids: a document's kept tokens (after stop words
//! and vocabulary pruning, which remove their tokens from the sequence) in the order
//! they appeared. Bag-of-words uploads (`counts`) have no order, nor has a corpus that
//! mixes them with text.
//!
//! Storage: a stored corpus blob is the postcard encoding of [`Corpus`] (unversioned,
//! as written before token order existed), optionally followed by a trailer
//! `(ORDER_TRAILER_VERSION, TokenOrder)`. Blobs without a trailer (every corpus stored
//! before this module) decode with no order; readers that stop after the `Corpus`
//! (fits) never pay for the sequences, and older binaries, whose postcard decoding
//! ignores trailing bytes, still read new blobs.

use super::Corpus;
use serde::{Deserialize, Serialize};

/// Version of the token-order trailer of a stored corpus blob.
pub const ORDER_TRAILER_VERSION: u32 = 1;

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

/// Why a stored corpus blob could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("stored corpus is corrupt: {0}")]
pub struct BlobError(pub String);

impl Corpus {
    /// The stored form: the corpus, then the token-order trailer when there is one.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = postcard::to_allocvec(self).expect("a corpus always encodes");
        if let Some(order) = &self.token_order {
            out.extend(postcard::to_allocvec(&(ORDER_TRAILER_VERSION, order)).expect("token order encodes"));
        }
        out
    }

    /// Decodes a stored blob with its token order (if it has one).
    pub fn decode(blob: &[u8]) -> Result<Corpus, BlobError> {
        let err = |e: postcard::Error| BlobError(e.to_string());
        let (mut corpus, rest) = postcard::take_from_bytes::<Corpus>(blob).map_err(err)?;
        if rest.is_empty() {
            return Ok(corpus);
        }
        let (version, _) = postcard::take_from_bytes::<u32>(rest).map_err(err)?;
        if version != ORDER_TRAILER_VERSION {
            return Err(BlobError(format!("token-order trailer version {version} is not {ORDER_TRAILER_VERSION}")));
        }
        let (_, order): (u32, TokenOrder) = postcard::from_bytes(rest).map_err(err)?;
        if order.num_documents() != corpus.num_documents() {
            return Err(BlobError(format!("token order has {} documents, the corpus {}", order.num_documents(), corpus.num_documents())));
        }
        corpus.token_order = Some(order);
        Ok(corpus)
    }

    /// Decodes a stored blob without its token order (what fits read).
    pub fn decode_without_order(blob: &[u8]) -> Result<Corpus, BlobError> {
        postcard::take_from_bytes::<Corpus>(blob).map(|(c, _)| c).map_err(|e| BlobError(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use crate::corpus::Corpus;
    use crate::corpus::{build_corpus, PreprocessOptions, RawDocument, StopWords};
    use std::collections::BTreeMap;

    fn text(id: &str, t: &str) -> RawDocument {
        RawDocument { id: Some(id.into()), text: Some(t.into()), ..Default::default() }
    }

    fn options() -> PreprocessOptions {
        PreprocessOptions { stopwords: StopWords::None, min_df: 1, ..Default::default() }
    }

    #[test]
    fn text_uploads_keep_their_order_after_pruning_and_renumbering() {
        let docs = vec![text("a", "zeta alpha zeta beta"), text("b", "the"), text("c", "beta alpha alpha")];
        let opts = PreprocessOptions { stopwords: StopWords::English, ..options() };
        let c = build_corpus(opts, &[], docs).unwrap();
        let order = c.token_order.as_ref().expect("text upload keeps order");
        assert_eq!(order.num_documents(), 2, "the empty document is dropped from the order too");
        let words = |d: usize| order.doc(d).iter().map(|&t| c.lexicon.word(t).to_string()).collect::<Vec<_>>();
        assert_eq!(words(0), ["zeta", "alpha", "zeta", "beta"]);
        assert_eq!(words(1), ["beta", "alpha", "alpha"]);
        // The sequences agree with the counts.
        for d in 0..2 {
            let (terms, counts) = c.counts.row(d);
            for (&t, &n) in terms.iter().zip(counts) {
                assert_eq!(order.doc(d).iter().filter(|&&x| x == t).count(), n as usize);
            }
        }
        assert_eq!(order.max_len(), 4);
    }

    #[test]
    fn pruned_tokens_leave_the_sequence() {
        let docs = vec![text("a", "rare common other common"), text("b", "common other")];
        let c = build_corpus(PreprocessOptions { min_df: 2, ..options() }, &[], docs).unwrap();
        let order = c.token_order.as_ref().unwrap();
        let w: Vec<&str> = order.doc(0).iter().map(|&t| c.lexicon.word(t)).collect();
        assert_eq!(w, ["common", "other", "common"]);
    }

    #[test]
    fn counts_or_mixed_uploads_have_no_order() {
        let bow = RawDocument { id: Some("x".into()), counts: Some(BTreeMap::from([("alpha".to_string(), 2.0)])), ..Default::default() };
        let c = build_corpus(options(), &[], vec![text("a", "alpha beta"), bow]).unwrap();
        assert!(c.token_order.is_none());
    }

    #[test]
    fn blobs_round_trip_and_old_blobs_still_decode() {
        let c = build_corpus(options(), &[], vec![text("a", "alpha beta alpha"), text("b", "beta gamma")]).unwrap();
        let blob = c.encode();
        let back = Corpus::decode(&blob).unwrap();
        assert_eq!(back.token_order, c.token_order);
        assert_eq!(back.counts, c.counts);
        // What fits read, and what binaries before the trailer read: the corpus alone.
        assert!(Corpus::decode_without_order(&blob).unwrap().token_order.is_none());
        assert_eq!(postcard::from_bytes::<Corpus>(&blob).unwrap().counts, c.counts);
        // A blob stored before token order existed (no trailer) decodes without order.
        let old = postcard::to_allocvec(&c).unwrap();
        let back = Corpus::decode(&old).unwrap();
        assert!(back.token_order.is_none());
        assert_eq!(back.doc_ids, c.doc_ids);
        // An unknown trailer version is an error, not a silent loss.
        let mut future = old.clone();
        future.extend(postcard::to_allocvec(&(2u32, c.token_order.as_ref().unwrap())).unwrap());
        assert!(Corpus::decode(&future).is_err());
    }
}
