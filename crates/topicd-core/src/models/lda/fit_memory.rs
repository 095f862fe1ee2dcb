//! LDA's fit memory estimate.
//!
//! Why it exists: the service admits fits by their estimated peak memory
//! ([`crate::models::memory`] holds the parts every family shares); this is LDA's own
//! formula, next to the buffers it counts, so a change to them is seen beside it.

use crate::corpus::CorpusStats;
use crate::models::memory::{corpus_bytes, peak, Sizes, W4, W8};

/// LDA: collapsed Gibbs sampling over every token.
pub fn estimate(c: &CorpusStats, p: &super::params::LdaParams, threads: usize) -> u64 {
    let s = Sizes::of(c);
    let k = p.topics as u64;
    // The training documents' counts are copied when some documents are held out.
    let training = if p.test_fraction > 0.0 { W8 * (s.d + 1) + 2 * W4 * s.nnz } else { 0 };
    // `Tokens`: each token's word and its position in the word-major index (4 + 4),
    // `doc_ptr` (8 per document), the sync blocks (4 per document), `word_ptr` (8 per term).
    let tokens = 2 * W4 * s.n + (W8 + W4) * s.d + W8 * s.v;
    // `GibbsState`: z (4 per token) and the word-topic counts n_kw (V × K u32); a seeded
    // fit copies n_kw without the seeds' pseudo-counts at each kept sweep.
    let seeded_copy = if p.seed_words.is_empty() { 0 } else { W4 * s.v * k };
    let state = W4 * s.n + W4 * s.v * k + seeded_copy;
    // The sweep schedule: the dense kernel (K ≤ 256) keeps document-topic counts padded
    // to 16 topics (D × K̃ u32) and the partition's cell offsets (8 per document and
    // block, at most 17); the sparse kernel a float snapshot of φ (V × K f32) and its
    // row totals.
    let sweeps = if super::sampler::uses_dense_kernel(p.topics) { W4 * s.d * k.div_ceil(16) * 16 + W8 * s.d * 17 } else { W4 * s.v * k + W8 * s.v };
    // Posterior sums: φ (V × K f64) and θ (D × K f64).
    let sums = W8 * (s.v + s.d) * k;
    // A kept sample handed to the runner: the non-zero (word, topic) counts, at most one
    // per token, 6 bytes each.
    let sample = 6 * s.n.min(s.v * k);
    // The model (φ transposed and θ, f64).
    let model = W8 * (s.v + s.d) * k;
    // With several chains, the finished chains' models are held until the last one
    // ends, and written into every checkpoint.
    let finished = (p.chains.max(1) as u64 - 1) * model;
    // Kept draws of θ (f32) for effects by composition, capped as the chain caps them.
    let theta_draws = (p.keep_draws as u64).min(crate::models::composition::THETA_DRAWS_BYTES as u64 / (W4 * s.d * k).max(1)) * W4 * s.d * k;
    let steady = training + tokens + state + sweeps + sums + sample + finished + theta_draws;
    // A checkpoint: z as varints (1 byte below 128 topics, else 2), the sums and the
    // finished chains' models.
    let z_bytes = if k <= 128 { 1 } else { 2 };
    let checkpoint = z_bytes * s.n + sums + finished + theta_draws;
    // The end: the model is built while the sums and state live, then pooled with the
    // finished ones and encoded (the same again) once the chain is gone.
    let end = (training + tokens + state + sums + model + finished + theta_draws).max(training + tokens + 2 * (model + theta_draws) + finished);
    corpus_bytes(&s) + peak(steady, checkpoint, end, threads)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn corpus(documents: usize, terms: usize, tokens: u64) -> CorpusStats {
        CorpusStats { num_documents: documents, num_terms: terms, num_tokens: tokens, ..CorpusStats::default() }
    }

    /// LDA's formula by hand for a tiny case: 10 documents, 100 terms, 1 000 tokens,
    /// 8 topics (dense kernel), no held-out documents, one thread.
    #[test]
    fn lda_matches_a_hand_computation() {
        let stats = corpus(10, 100, 1_000);
        let p = super::super::params::LdaParams::from_json(&json!({"topics": 8, "test_fraction": 0.0})).unwrap();
        let (d, v, n, k) = (10u64, 100u64, 1_000u64, 8u64);
        // Corpus: CSR 8·11 + 8·1000; blob 3·1000 + 24·10 + 32·100; ids 40·10; lexicon
        // 96·100; labels 24·10.
        let corpus = 88 + 8_000 + (3_000 + 240 + 3_200) + 400 + 9_600 + 240;
        let tokens = 8 * n + 12 * d + 8 * v;
        let state = 4 * n + 4 * v * k;
        let sweeps = 4 * d * 16 + 8 * d * 17;
        let sums = 8 * (v + d) * k;
        let sample = 6 * n.min(v * k);
        let steady = tokens + state + sweeps + sums + sample;
        let checkpoint = n + sums;
        let end = (tokens + state + sums + sums).max(tokens + 2 * sums);
        let expected = corpus + (steady + 3 * checkpoint).max(end) + (1 << 20);
        assert_eq!(estimate(&stats, &p, 1), expected);
        assert_eq!(expected, 78_848 + (1 << 20));
    }
}
