//! HPC's and PCM's fit memory estimate.
//!
//! Why it exists: the service admits fits by their estimated peak memory
//! ([`crate::models::memory`] holds the parts every family shares); this is HPC and PCM's own
//! formula, next to the buffers it counts, so a change to them is seen beside it.

use super::rates::Curvature;
use super::variant::Supervision;
use crate::corpus::CorpusStats;
use crate::models::memory::{corpus_bytes, peak, Sizes, W4, W8};

/// HPC and PCM: Hamiltonian Monte Carlo on the log rates μ (V × N,
/// N = K + 1 nodes with the root) and the document affinities ξ (D × K).
pub fn estimate(c: &CorpusStats, p: &super::params::HpcParams, supervision: Supervision, threads: usize) -> u64 {
    let s = Sizes::of(c);
    let (v, d) = (s.v, s.d);
    // The topics K, the active nodes per document, the nodes a word's rate block
    // touches (the union of its documents' active nodes and their ancestors) and how
    // many times `HpcData` shapes the documents.
    let (k, active, touched, shaped) = match supervision {
        // HPC's topics are the label tree's nodes (inner ones included). Active: about
        // one label path (the summary has no labels-per-document count: `depth` stands
        // for it). Touched: about `depth` new nodes per document holding the word, at
        // most all of them. HPC shapes the training, validation and test documents and,
        // to refit, training and validation together: about twice the corpus.
        Supervision::Labelled => {
            let k = s.labels.max(1);
            (k, (s.depth.max(1) + 1).min(k), (1 + s.depth.max(1) * s.nnz.div_ceil(v.max(1))).min(k + 1), 2)
        }
        // PCM's topics are flat, every one active and touched, the documents shaped once.
        Supervision::Unsupervised => {
            let k = p.topics as u64;
            (k, k, k + 1, 1)
        }
    };
    let nodes = k + 1;
    // `HpcData`: the word-major rows ((u32, f64), 16 per non-zero), the document rows
    // (the same again) and the active nodes (4 each), `shaped` times.
    let data = shaped * (2 * 16 * s.nnz + W4 * d * active + W8 * 2 * d);
    // `HpcState`: μ and τ² (V × N f64 each), ξ (D × K f64).
    let state = 2 * W8 * v * nodes + W8 * d * k;
    // Off-diagonal entries of a word's rate Hessian. With the tree-plus-diagonal
    // curvature (above 200 topics unless the params say otherwise) one per touched node.
    // With the full curvature, every pair of nodes active together in one of the word's
    // documents: all pairs for PCM (every topic is active everywhere); for HPC about
    // active² / 2 new pairs per document holding the word, at most all pairs.
    let all_pairs = touched * touched.saturating_sub(1) / 2;
    let curvature = p.curvature(k as usize);
    let off = match (curvature, supervision) {
        (Curvature::TreeDiagonal, _) => touched,
        (Curvature::Full, Supervision::Labelled) => (s.nnz.div_ceil(v.max(1)) * active * active.saturating_sub(1) / 2 + touched).min(all_pairs.max(touched)),
        (Curvature::Full, Supervision::Unsupervised) => all_pairs,
    };
    // The full curvature's sparse factor pattern per word: a row index (4) per entry of
    // the factor (its fill-in counted as none) and order, position and column pointers
    // (4 each per touched node).
    let pattern = match curvature {
        Curvature::TreeDiagonal => 0,
        Curvature::Full => W4 * off + 3 * W4 * touched + 96,
    };
    // `Caches`: β = e^μ (V × N f64); each word's block (4 per touched node), its rate
    // Hessian's diagonal (8 per touched node) and off-diagonal (8 per entry) in two
    // vectors (48) and its pattern; each document's affinity Hessian (active² f64).
    let caches = W8 * v * nodes + v * (W4 * touched + W8 * (touched + off) + 48 + pattern) + W8 * d * active * active;
    // `EstimandSums`: frequency, exclusivity against siblings and against all (V × K
    // f64 each), μ (V × N f64).
    let sums = 3 * W8 * v * k + W8 * v * nodes;
    let steady = data + state + caches + sums;
    // A checkpoint: μ, τ² at parent nodes (at most N per word), ξ, the Hessians and the
    // sums, as raw f64 sections.
    let checkpoint = W8 * v * nodes * 2 + W8 * d * k + W8 * v * (touched + off) + W8 * d * active * active + sums;
    // The end: the model's tables (frequency, exclusivity ×2 over V × K and μ over
    // V × N, f32) are built while the chain lives, then encoded once it is gone.
    // The θ draws kept for covariate effects (f32, D × K each, within their cap).
    let draws = if p.design.covariates.is_empty() { 0 } else { p.keep_draws as u64 };
    let theta_draws = draws.min(crate::models::composition::THETA_DRAWS_BYTES as u64 / (W4 * d * k).max(1)) * W4 * d * k;
    let model = 3 * W4 * v * k + W4 * v * nodes + theta_draws;
    // With several chains, the finished chains' models are held until the last one ends
    // and they are pooled (in f64 while pooling: twice a model).
    let finished = (p.chains.max(1) as u64 - 1) * model;
    let pooling = if p.chains > 1 { model } else { 0 };
    let steady = steady + finished;
    let end = (steady + model).max(data + finished + 2 * model + pooling);
    corpus_bytes(&s) + peak(steady, checkpoint, end, threads)
}
