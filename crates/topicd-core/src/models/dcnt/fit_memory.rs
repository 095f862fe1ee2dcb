//! DCNT's and SCNT's fit memory estimate.
//!
//! Why it exists: the service admits fits by their estimated peak memory
//! ([`crate::models::memory`] holds the parts every family shares); this is DCNT and SCNT's own
//! formula, next to the buffers it counts, so a change to them is seen beside it.

use crate::corpus::CorpusStats;
use crate::models::memory::{corpus_bytes, peak, Sizes, W4, W8};

/// DCNT and SCNT: Gibbs sampling of token topics with correlated
/// activations u, v per document.
pub fn estimate(c: &CorpusStats, p: &super::params::DcntParams, threads: usize) -> u64 {
    let s = Sizes::of(c);
    let k = p.topics as u64;
    let (v, d) = (s.v, s.d);
    // `Documents`: each row's terms and counts (two `Vec<u32>`: 48 bytes and 8 per
    // non-zero), token offsets (8 per document); metadata features are not in the
    // summary and count as none.
    let docs = 48 * d + 2 * W4 * s.nnz + W8 * d;
    // The training counts copied when documents are held out.
    let training = if p.test_fraction > 0.0 { W8 * (d + 1) + 2 * W4 * s.nnz } else { 0 };
    // `DcntState`: z (u16 per token), n_dk (D × K u32), M_kw (V × K u32), u and v
    // (D × K f64 each), A (K × K f64).
    let state = 2 * s.n + W4 * (d + v) * k + 2 * W8 * d * k + W8 * k * k;
    // Posterior sums: ω (K × V f64), proportions (D × K f64), A (K × K), and the kept
    // draws of A, η and λ_v (η's F columns are not in the summary: counted as a few).
    let draws = p.keep_draws as u64 * W8 * (k * k + 8 * k + 1);
    let sums = W8 * (v + d) * k + W8 * k * k + draws;
    // A scan's per-document updates (moves and new u, v rows) collected before they are
    // applied: about the state's per-document part again.
    let updates = 2 * W8 * d * k + 8 * s.n;
    let steady = docs + training + state + sums + updates;
    // A checkpoint: z (2 per token, postcard), u and v, and the sums.
    let checkpoint = 2 * s.n + 2 * W8 * d * k + sums;
    // The end: the model (ω, proportions, f64) beside the chain, then encoded.
    let model = W8 * (v + d) * k + draws;
    // With several chains, the finished chains' models are held until the last one
    // ends and they are pooled (each with its share of the draws).
    let chain_model = W8 * (v + d) * k + p.draws_per_chain() as u64 * W8 * (k * k + 8 * k + 1);
    let finished = (p.chains.max(1) as u64 - 1) * chain_model;
    let steady = steady + finished;
    let end = (steady + model).max(docs + finished + 2 * model);
    corpus_bytes(&s) + peak(steady, checkpoint, end, threads)
}
