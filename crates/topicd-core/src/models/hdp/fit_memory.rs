//! HDP's fit memory estimate.
//!
//! Why it exists: the service admits fits by their estimated peak memory
//! ([`crate::models::memory`] holds the parts every family shares); this is HDP's own
//! formula, next to the buffers it counts, so a change to them is seen beside it.

use crate::corpus::CorpusStats;
use crate::models::memory::{corpus_bytes, peak, Sizes, W4, W8};

/// HDP: memoized variational inference over batches of documents.
pub fn estimate(c: &CorpusStats, p: &super::params::HdpParams, threads: usize) -> u64 {
    let s = Sizes::of(c);
    let k = p.topics as u64;
    let (v, d) = (s.v, s.d);
    let b = (p.batches as u64).clamp(1, d.max(1));
    // Distinct words summed over batches: each batch holds at most V words and at most
    // its non-zeros.
    let batch_words = b * v.min(s.nnz.div_ceil(b));
    // The training counts copied when documents are held out.
    let training = if p.test_fraction > 0.0 { W8 * (d + 1) + 2 * W4 * s.nnz } else { 0 };
    // `BatchLayout`s: each batch's distinct words (4 each) and each non-zero's slot (4).
    let layouts = W4 * batch_words + W4 * s.nnz;
    // The memo: each batch's summary (its words × K f64 and K-sized vectors), the total
    // (V × K f64), the batches' document-topic warm starts (D × K f64).
    let memo = W8 * batch_words * k + W8 * v * k + W8 * d * k;
    // `TopicWord`: E[log φ] and exp E[log φ] (V × K f64 each).
    let globals = 2 * W8 * v * k;
    // A batch's local step: its exact topic-word counts and the new summary of its
    // words (8 bytes a cell each), and its documents' rows (one batch's share of the
    // memo), while the old summary is still held.
    let local = W8 * (2 * batch_words.div_ceil(b) + d.div_ceil(b)) * k;
    let steady = training + layouts + memo + globals + local;
    // A checkpoint: the batch summaries, their document-topic rows and the total.
    let checkpoint = memo;
    // The end: topic-word (K × V f64) and the model's tables beside the memo, encoded.
    // With covariates, the training documents' q(π_d) (D × K f32) and design rows.
    let covariates = if p.design.covariates.is_empty() { 0 } else { W4 * s.d * k + W8 * s.d * 8 };
    let model = 2 * W8 * v * k + covariates;
    let end = steady + model;
    corpus_bytes(&s) + peak(steady, checkpoint, end, threads)
}
